//! The Messages decoder on bytes recorded from api.anthropic.com (charmbracelet/fantasy
//! `providertests/testdata`, padding and all), under every split into two reads, and the
//! request body as the API takes it.

use serde_json::json;

use super::{AnthropicConfig, EventDecoder, parse_response, request_body};
use crate::llm::client::ClientFormat;
use crate::llm::error::LlmError;
use crate::llm::message::{Message, ToolCall};
use crate::llm::request::CompletionRequest;
use crate::llm::response::{FinishReason, ModelRef};
use crate::llm::wire::reader::{Decoded, decode_reads};

fn decode(bytes: &str) -> Decoded {
    let bytes = bytes.as_bytes();
    let whole = decode_reads(EventDecoder::new(), [bytes]);
    for cut in 0..=bytes.len() {
        let split = decode_reads(EventDecoder::new(), [&bytes[..cut], &bytes[cut..]]);
        assert_eq!(split, whole, "split at byte {cut}");
    }
    whole
}

/// FANTASY `TestAnthropicCommon/claude-sonnet-4/simple_streaming.yaml` (shortened).
const TEXT: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-sonnet-4-20250514\",\"id\":\"msg_01R8GdyyLQUhUfyjqSCMbnWg\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":16,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"cache_creation\":{\"ephemeral_5m_input_tokens\":0,\"ephemeral_1h_input_tokens\":0},\"output_tokens\":5,\"service_tier\":\"standard\",\"inference_geo\":\"not_available\"}}   }\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}            }\n\n\
event: ping\ndata: {\"type\": \"ping\"}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Olá! (\"}         }\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"That\"}           }\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0            }\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"input_tokens\":16,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":38}            }\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"       }\n\n";

#[test]
fn a_recorded_text_stream_collects_with_its_usage() {
    let response = decode(TEXT).collect("claude").unwrap();
    assert_eq!(response.text, "Olá! (That");
    assert_eq!(response.finish_reason, FinishReason::Stop);
    let usage = response.usage.unwrap();
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cached_prompt_tokens
        ),
        (16, 38, Some(0))
    );
}

#[test]
fn thinking_then_a_tool_call_split_inside_keys() {
    let bytes = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":400,\"cache_read_input_tokens\":320,\"cache_creation_input_tokens\":10,\"output_tokens\":1}}}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"The user asks\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EtYDCkYICxgC\"}}\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01N2eM4V43kGCDkq2Lw7ChWQ\",\"name\":\"weather\",\"input\":{},\"caller\":{\"type\":\"direct\"}}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"locati\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"on\\\": \\\"Florence,Italy\\\"}\"}}\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":83}}\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let response = decode(bytes).collect("claude").unwrap();
    assert_eq!(response.reasoning.as_deref(), Some("The user asks"));
    assert_eq!(
        response.tool_calls,
        vec![ToolCall::new(
            "toolu_01N2eM4V43kGCDkq2Lw7ChWQ",
            "weather",
            json!({"location": "Florence,Italy"})
        )]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    let usage = response.usage.unwrap();
    // Every input token counts as prompt: uncached, read from and written to the cache.
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.cached_prompt_tokens,
            usage.cache_write_tokens,
            usage.completion_tokens
        ),
        (730, Some(320), Some(10), 83)
    );
}

#[test]
fn an_error_event_keeps_what_came_before_and_is_typed() {
    // anthropics/claude-code#309: `details: null` and padding.
    let bytes = format!(
        "{}event: error\ndata: {{\"type\":\"error\",\"error\":{{\"details\":null,\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}    }}\n\n",
        &TEXT[..TEXT.find("event: content_block_stop").unwrap()]
    );
    let decoded = decode(&bytes);
    assert_eq!(decoded.events.len(), 2, "{decoded:?}");
    assert!(matches!(
        decoded.error,
        Some(LlmError::ServiceUnavailable { .. })
    ));
}

#[test]
fn stop_reasons_map_and_unknown_ones_stay_raw() {
    for (reason, expected) in [
        ("max_tokens", FinishReason::Length),
        ("stop_sequence", FinishReason::Stop),
        ("refusal", FinishReason::ContentFilter),
        ("pause_turn", FinishReason::Other("pause_turn".into())),
        ("model_context_window_exceeded", FinishReason::Length),
        ("brand_new", FinishReason::Other("brand_new".into())),
    ] {
        let body = json!({"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "x"}], "stop_reason": reason, "stop_sequence": null, "usage": {"input_tokens": 3, "output_tokens": 1}});
        let response = parse_response(&body.to_string(), "claude").unwrap();
        assert_eq!(response.finish_reason, expected, "{reason}");
    }
}

#[test]
fn requests_are_what_the_api_takes() {
    let request = CompletionRequest::new(vec![
        Message::system("Be brief."),
        Message::user("Weather?"),
        Message::assistant_tool_calls(
            "",
            vec![ToolCall::new("toolu_1", "weather", json!({"city": "Oslo"}))],
        ),
        Message::tool_result("toolu_1", "no such city", false),
    ]);
    let body = request_body(&request, "claude-x", 256, true);
    assert_eq!(body["system"], "Be brief.");
    assert_eq!(body["max_tokens"], 256);
    assert_eq!(body["messages"][1]["content"][0]["type"], "tool_use");
    let result = &body["messages"][2]["content"][0];
    assert_eq!(
        (result["type"].as_str(), result["is_error"].as_bool()),
        (Some("tool_result"), Some(true))
    );
    // No max_tokens anywhere: refused before sending.
    let mut config = AnthropicConfig::new(
        "https://api.anthropic.com",
        ModelRef::new("anthropic", "claude-x", 200_000, 8_192),
    );
    config.default_max_tokens = None;
    let refused = config.http_request(&CompletionRequest::new(vec![Message::user("hi")]), false);
    assert!(
        matches!(refused, Err(LlmError::InvalidPrompt { ref reason }) if reason.contains("max_tokens"))
    );
}

/// Counts past `u32` saturate (4294967301 is not 5); `null` counts are absent.
#[test]
fn counts_past_u32_saturate_and_null_counts_are_absent() {
    let body = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "end_turn",
        "usage": {
            "input_tokens": 4_294_967_301u64, "output_tokens": null,
            "cache_read_input_tokens": null, "cache_creation_input_tokens": 4_294_967_301u64
        }
    });
    let usage = parse_response(&body.to_string(), "claude")
        .unwrap()
        .usage
        .unwrap();
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cached_prompt_tokens,
            usage.cache_write_tokens
        ),
        (u32::MAX, 0, None, Some(u32::MAX))
    );
}
