//! The Responses decoder on bytes recorded from api.openai.com, under every split into
//! two reads; the whole response object; the checks of sequence numbers and item ids;
//! the request body as the API takes it; stop sequences applied by the client.
//!
//! Fixtures (in `fixtures/`):
//! - `gomodel_stream.sse`, `gomodel_whole.json`: ENTERPILOT/GoModel
//!   `tests/contract/testdata/openai/responses_stream.txt` and `responses.json`
//!   (@06f79eb1), raw bytes from api.openai.com, gpt-4o-mini, 2026-02. The stream's last
//!   event ends with one newline, not a blank line, as recorded.
//! - `vercel_reasoning_then_call.chunks.txt`: vercel/ai
//!   `packages/openai/src/responses/__fixtures__/openai-reasoning-encrypted-content.1.chunks.txt`
//!   (@55cd1a40), live, one event's data per line; `encrypted_content` values shortened
//!   to 16 characters here.
//! - `vercel_error.chunks.txt`: vercel/ai `.../__fixtures__/openai-error.1.chunks.txt`
//!   (@23f132b4), a quota error streamed live: `error` (nested), then `response.failed`.

use serde_json::json;

use super::{EventDecoder, ResponsesConfig, parse_response, request_body};
use crate::llm::Connection;
use crate::llm::client::ClientFormat;
use crate::llm::error::LlmError;
use crate::llm::message::{Message, ToolCall, ToolDefinition};
use crate::llm::request::{CompletionRequest, ToolChoice};
use crate::llm::response::{FinishReason, ModelRef};
use crate::llm::wire::reader::{Decoded, WireDecoder, decode_reads};

const GOMODEL_STREAM: &str = include_str!("fixtures/gomodel_stream.sse");
const GOMODEL_WHOLE: &str = include_str!("fixtures/gomodel_whole.json");
const VERCEL_CALL: &str = include_str!("fixtures/vercel_reasoning_then_call.chunks.txt");
const VERCEL_ERROR: &str = include_str!("fixtures/vercel_error.chunks.txt");

/// Two-read splits tried per fixture at most.
const SPLITS_PER_FIXTURE_MAX: usize = 8_000;

/// One-JSON-per-line fixtures in the API's framing: `event: <type>` and `data:`.
fn framed(lines: &str) -> String {
    let mut out = String::new();
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        let name = value["type"].as_str().unwrap();
        out.push_str(&format!("event: {name}\ndata: {line}\n\n"));
    }
    out
}

fn decode_with(new: impl Fn() -> Box<dyn WireDecoder>, bytes: &str) -> Decoded {
    let bytes = bytes.as_bytes();
    let whole = decode_reads(new(), [bytes]);
    // Every byte of the small fixtures; every few bytes of the 38 KB one, to stay fast.
    let step = (bytes.len() / SPLITS_PER_FIXTURE_MAX).max(1);
    for cut in (0..=bytes.len()).step_by(step) {
        let split = decode_reads(new(), [&bytes[..cut], &bytes[cut..]]);
        assert_eq!(split, whole, "split at byte {cut}");
    }
    whole
}

fn decode(bytes: &str) -> Decoded {
    decode_with(|| Box::new(EventDecoder::new()), bytes)
}

#[test]
fn a_recorded_text_stream_collects_with_its_usage() {
    let response = decode(GOMODEL_STREAM).collect("gpt").unwrap();
    assert_eq!(response.text, "Hello, World!");
    assert_eq!(response.finish_reason, FinishReason::Stop);
    let usage = response.usage.unwrap();
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cached_prompt_tokens,
            usage.reasoning_tokens
        ),
        (17, 5, Some(0), Some(0))
    );
    let whole = parse_response(GOMODEL_WHOLE, "gpt").unwrap();
    assert_eq!(
        (whole.text.as_str(), &whole.finish_reason),
        ("Hello, World!", &FinishReason::Stop)
    );
    assert_eq!(whole.usage, response.usage);
}

#[test]
fn reasoning_then_a_call_collects_the_call_and_its_arguments() {
    let response = decode(&framed(VERCEL_CALL)).collect("gpt").unwrap();
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.tool_calls.len(), 1);
    let call = &response.tool_calls[0];
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("call_AB6AaRZ1FYZB2RwS6A5vbdqn", "calculator")
    );
    assert_eq!(call.arguments, json!({"a": 12, "b": 7, "op": "add"}));
    assert!(
        response
            .reasoning
            .as_deref()
            .is_some_and(|r| r.starts_with("**Calculating"))
    );
}

#[test]
fn a_streamed_failure_is_typed_after_what_came_before() {
    let decoded = decode(&framed(VERCEL_ERROR));
    let error = decoded.error.clone().expect("the stream failed");
    // Quota exhausted: retrying will not help, so it is an authentication-class error.
    assert!(matches!(error, LlmError::Auth { .. }), "{error:?}");
    // The spec's flat form is typed the same way.
    let flat = "event: error\ndata: {\"type\":\"error\",\"sequence_number\":0,\"code\":\"context_length_exceeded\",\"message\":\"Your input exceeds the context window of this model. Please adjust your input and try again.\",\"param\":\"input\"}\n\n";
    assert!(matches!(
        decode(flat).error,
        Some(LlmError::ContextOverflow { .. })
    ));
}

#[test]
fn lost_events_and_unknown_items_are_invalid_responses() {
    let start = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{}}\n\n";
    let skipped = format!(
        "{start}event: response.in_progress\ndata: {{\"type\":\"response.in_progress\",\"sequence_number\":2,\"response\":{{}}}}\n\n"
    );
    let error = decode(&skipped).error.unwrap();
    assert!(
        error
            .to_string()
            .contains("sequence_number 2 where 1 was due"),
        "{error}"
    );
    // The largest number a server can send is refused, not added to (a panic before,
    // where overflow checks are on).
    let last = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":18446744073709551615,\"response\":{}}\n\n";
    let error = decode(last).error.unwrap();
    assert!(
        error
            .to_string()
            .contains("leaves no number for the next event"),
        "{error}"
    );
    let stray = format!(
        "{start}event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_x\",\"output_index\":0,\"content_index\":0,\"delta\":\"hi\"}}\n\n"
    );
    let error = decode(&stray).error.unwrap();
    assert!(
        error
            .to_string()
            .contains("\"msg_x\", which the stream never added"),
        "{error}"
    );
    // Cut before `response.completed`: truncated, never a clean answer.
    let cut = &GOMODEL_STREAM[..GOMODEL_STREAM.find("event: response.completed").unwrap()];
    assert!(matches!(
        decode(cut).error,
        Some(LlmError::StreamTruncated { .. })
    ));
}

#[test]
fn incomplete_and_refused_answers_finish_as_they_say() {
    let body = |status: &str, extra: &str| {
        format!(
            r#"{{"id":"resp_1","object":"response","status":"{status}"{extra},"output":[{{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{{"type":"output_text","annotations":[],"text":"Hi"}}]}}]}}"#
        )
    };
    let cases = [
        (
            body(
                "incomplete",
                r#","incomplete_details":{"reason":"max_output_tokens"}"#,
            ),
            FinishReason::Length,
        ),
        (
            body(
                "incomplete",
                r#","incomplete_details":{"reason":"content_filter"}"#,
            ),
            FinishReason::ContentFilter,
        ),
        (body("completed", ""), FinishReason::Stop),
    ];
    for (text, finish) in cases {
        assert_eq!(
            parse_response(&text, "gpt").unwrap().finish_reason,
            finish,
            "{text}"
        );
    }
    let failed = r#"{"id":"resp_1","object":"response","status":"failed","error":{"code":"rate_limit_exceeded","message":"Rate limit reached"},"output":[]}"#;
    assert!(matches!(
        parse_response(failed, "gpt"),
        Err(LlmError::RateLimit { .. })
    ));
    let envelope = r#"{"error":{"message":"Invalid 'temperature'","type":"invalid_request_error","param":"temperature","code":"decimal_below_min_value"}}"#;
    assert!(matches!(
        parse_response(envelope, "gpt"),
        Err(LlmError::BadRequest { .. })
    ));
}

#[test]
fn requests_are_what_the_api_takes() {
    let request = CompletionRequest::new(vec![
        Message::system("be brief"),
        Message::user("capital of PotatoLand?"),
        Message::assistant_tool_calls(
            "",
            vec![ToolCall::new(
                "call_1",
                "get_capital",
                json!({"country": "PotatoLand"}),
            )],
        ),
        Message::tool_result("call_1", "Potato City", true),
    ])
    .with_tools(vec![ToolDefinition::new(
        "get_capital",
        "d",
        json!({"type": "object"}),
    )])
    .with_tool_choice(ToolChoice::Tool("get_capital".into()));
    let body = request_body(&request, "gpt-4o", None, true);
    assert_eq!(body["instructions"], "be brief");
    assert_eq!(
        body["input"][0],
        json!({"role": "user", "content": "capital of PotatoLand?"})
    );
    assert_eq!(body["input"][1]["type"], "function_call");
    assert_eq!(
        body["input"][1]["arguments"],
        "{\"country\":\"PotatoLand\"}"
    );
    assert_eq!(
        body["input"][2],
        json!({"type": "function_call_output", "call_id": "call_1", "output": "Potato City"})
    );
    assert_eq!(body["tools"][0]["parameters"], json!({"type": "object"}));
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "name": "get_capital"})
    );
    assert_eq!(body["stream"], true);
    let config = ResponsesConfig::new(
        Connection::new("https://api.openai.com/v1/").with_api_key("sk-test"),
        ModelRef::new("openai", "gpt-4o", 128_000, 4_096),
    );
    let http = config.http_request(&request, false).unwrap();
    assert_eq!(http.url, "https://api.openai.com/v1/responses");
    assert_eq!(http.header("authorization"), Some("Bearer sk-test"));
}

#[test]
fn stop_sequences_are_applied_by_the_client() {
    let config = ResponsesConfig::new(
        "https://api.openai.com/v1",
        ModelRef::new("openai", "gpt", 8_192, 1_024),
    );
    let request = CompletionRequest::new(vec![Message::user("hi")]).with_stop(vec![", Wor".into()]);
    let decoded = decode_with(
        || Box::new(config.stream_decoder_for(&request)),
        GOMODEL_STREAM,
    );
    let response = decoded.collect("gpt").unwrap();
    assert_eq!(
        (response.text.as_str(), &response.finish_reason),
        ("Hello", &FinishReason::Stop)
    );
    assert!(response.usage.is_some(), "the server's usage is kept");
    let whole = config.parse_response_for(&request, GOMODEL_WHOLE).unwrap();
    assert_eq!(
        (whole.text.as_str(), &whole.finish_reason),
        ("Hello", &FinishReason::Stop)
    );
}

/// Counts past `u32` saturate (4294967301 is not 5); `null` counts are absent.
#[test]
fn counts_past_u32_saturate_and_null_counts_are_absent() {
    let mut whole: serde_json::Value = serde_json::from_str(GOMODEL_WHOLE).unwrap();
    whole["usage"] = json!({
        "input_tokens": 4_294_967_301u64, "output_tokens": null,
        "input_tokens_details": {"cached_tokens": null},
        "output_tokens_details": {"reasoning_tokens": 4_294_967_301u64}
    });
    let usage = parse_response(&whole.to_string(), "gpt")
        .unwrap()
        .usage
        .unwrap();
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cached_prompt_tokens,
            usage.reasoning_tokens
        ),
        (u32::MAX, 0, None, Some(u32::MAX))
    );
}
