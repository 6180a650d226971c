//! The chat-completions decoder on bytes real providers send, each stream decoded under
//! every split of its bytes into two reads and as single bytes: the outcome (events, then
//! success or the typed error) never depends on where reads end.

use serde_json::json;

use super::ChunkDecoder;
use crate::llm::error::LlmError;
use crate::llm::event::StreamEvent;
use crate::llm::response::FinishReason;
use crate::llm::wire::reader::{Decoded, decode_reads};

/// The outcome of `bytes`, checked to be the same for every split.
fn decode(bytes: &str) -> Decoded {
    let bytes = bytes.as_bytes();
    let whole = decode_reads(ChunkDecoder::new(), [bytes]);
    for cut in 0..=bytes.len() {
        let split = decode_reads(ChunkDecoder::new(), [&bytes[..cut], &bytes[cut..]]);
        assert_eq!(split, whole, "split at byte {cut}");
    }
    let singles = decode_reads(ChunkDecoder::new(), bytes.chunks(1));
    assert_eq!(singles, whole, "single-byte reads");
    whole
}

fn chunk(delta: &serde_json::Value, finish: Option<&str>) -> String {
    let body = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {body}\n\n")
}

#[test]
fn an_error_in_the_same_read_never_erases_the_events_before_it() {
    // vLLM: an error after the 200, by json.dumps, then [DONE].
    let bytes = format!(
        "{}{}data: {{\"error\": {{\"message\": \"Internal server error\", \"type\": \"InternalServerError\", \"param\": null, \"code\": 500}}}}\n\ndata: [DONE]\n\n",
        chunk(&json!({"role": "assistant", "content": ""}), None),
        chunk(&json!({"content": "Hello"}), None),
    );
    let decoded = decode(&bytes);
    assert_eq!(decoded.events, vec![StreamEvent::text("Hello")]);
    assert!(
        matches!(decoded.error, Some(LlmError::ServiceUnavailable { .. })),
        "{:?}",
        decoded.error
    );
}

#[test]
fn finish_reasons_that_are_not_a_clean_stop_stay_what_they_are() {
    let cases = [
        (Some("error"), FinishReason::Error),
        (Some("sensitive"), FinishReason::ContentFilter),
        // TGI 2.0's name for a natural end.
        (Some("eos_token"), FinishReason::Stop),
        (
            Some("insufficient_system_resource"),
            FinishReason::Other("insufficient_system_resource".into()),
        ),
        (None, FinishReason::Missing),
    ];
    for (finish, expected) in cases {
        let bytes = format!(
            "{}{}data: [DONE]\n\n",
            chunk(&json!({"content": "Hi"}), None),
            chunk(&json!({}), finish)
        );
        let response = decode(&bytes).collect("m").unwrap();
        assert_eq!(response.finish_reason, expected, "{finish:?}");
        assert!(!response.finish_reason.is_clean() || expected == FinishReason::Stop);
    }
}

#[test]
fn every_in_stream_error_shape_maps_to_its_kind() {
    let text = chunk(&json!({"content": "Hi"}), None);
    let cases = [
        // llama.cpp before PR 16486: an `error:` field, then [DONE].
        (
            format!(
                "{text}error: {{\"code\":400,\"message\":\"the request exceeds the available context size, try increasing it\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":5000,\"n_ctx\":4096}}\n\ndata: [DONE]\n\n"
            ),
            "context_overflow",
        ),
        // OpenRouter: an error chunk with a numeric code and finish_reason "error".
        (
            format!(
                "{text}data: {{\"id\":\"gen-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"provider\":\"x\",\"error\":{{\"code\":429,\"message\":\"Rate limit exceeded\"}},\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"\"}},\"finish_reason\":\"error\"}}]}}\n\ndata: [DONE]\n\n"
            ),
            "rate_limit",
        ),
        // OpenRouter's documented string code.
        (
            format!(
                "{text}data: {{\"error\":{{\"code\":\"server_error\",\"message\":\"Provider disconnected unexpectedly\"}},\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"\"}},\"finish_reason\":\"error\"}}]}}\n\n"
            ),
            "service_unavailable",
        ),
        // An `event: error` whose data is the bare error object.
        (
            format!(
                "{text}event: error\ndata: {{\"message\":\"Overloaded\",\"type\":\"overloaded_error\"}}\n\n"
            ),
            "service_unavailable",
        ),
    ];
    for (bytes, kind) in cases {
        let decoded = decode(&bytes);
        assert_eq!(decoded.events, vec![StreamEvent::text("Hi")], "{bytes}");
        assert_eq!(
            decoded.error.as_ref().map(|e| e.kind().as_str()),
            Some(kind),
            "{bytes}"
        );
    }
}

#[test]
fn usage_is_absent_unless_sent_and_keeps_its_details() {
    let no_usage = format!(
        "{}{}data: [DONE]\n\n",
        chunk(&json!({"content": "Hi"}), None),
        chunk(&json!({}), Some("stop"))
    );
    assert_eq!(decode(&no_usage).collect("m").unwrap().usage, None);
    // DeepSeek: usage on the finish chunk, with its cache counts; `"usage": null` before.
    let deepseek = "data: {\"id\":\"u\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"deepseek-reasoner\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n\
        data: {\"id\":\"u\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"deepseek-reasoner\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"logprobs\":null,\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":339,\"completion_tokens\":83,\"total_tokens\":422,\"prompt_tokens_details\":{\"cached_tokens\":320},\"completion_tokens_details\":{\"reasoning_tokens\":39},\"prompt_cache_hit_tokens\":320,\"prompt_cache_miss_tokens\":19}}\n\ndata: [DONE]\n\n";
    let usage = decode(deepseek).collect("m").unwrap().usage.unwrap();
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cached_prompt_tokens,
            usage.reasoning_tokens
        ),
        (339, 83, Some(320), Some(39))
    );
    // A count past u32 saturates instead of wrapping (4294967301 is not 5).
    let huge = format!(
        "{}data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":4294967301,\"completion_tokens\":null}}}}\n\ndata: [DONE]\n\n",
        chunk(&json!({}), Some("stop"))
    );
    let usage = decode(&huge).collect("m").unwrap().usage.unwrap();
    assert_eq!(
        (usage.prompt_tokens, usage.completion_tokens),
        (u32::MAX, 0)
    );
}

#[test]
fn dashscope_continuations_with_empty_ids_continue_the_call() {
    let bytes = format!(
        "{}{}{}{}data: [DONE]\n\n",
        chunk(
            &json!({"content": null, "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "weather", "arguments": ""}}], "role": "assistant"}),
            None
        ),
        chunk(
            &json!({"content": null, "tool_calls": [{"index": 0, "id": "", "type": "function", "function": {"arguments": "{\"city\": \"Oslo"}}]}),
            None
        ),
        chunk(
            &json!({"tool_calls": [{"function": {"arguments": "\"}"}, "index": 0, "id": "", "type": "function"}]}),
            None
        ),
        chunk(&json!({}), Some("tool_calls")),
    );
    let response = decode(&bytes).collect("m").unwrap();
    assert_eq!(response.tool_calls.len(), 1);
    assert_eq!(response.tool_calls[0].id, "call_1");
    assert_eq!(response.tool_calls[0].arguments, json!({"city": "Oslo"}));
}

#[test]
fn a_stream_without_a_finish_or_end_marker_is_truncated() {
    let bytes = chunk(&json!({"content": "Hi"}), None);
    let decoded = decode(&bytes);
    assert_eq!(decoded.events, vec![StreamEvent::text("Hi")]);
    assert!(matches!(
        decoded.error,
        Some(LlmError::StreamTruncated { events_received: 1 })
    ));
    // TGI before 2.2 sends no [DONE]: a finish reason then the end is a whole answer.
    let tgi = format!(
        "{}{}",
        chunk(&json!({"content": "Hi"}), None),
        chunk(&json!({}), Some("stop"))
    );
    assert_eq!(decode(&tgi).collect("m").unwrap().text, "Hi");
}

/// Issue 29, the fourth defect: a flat `{"object": "error", ...}` inside a stream (vLLM's
/// HTTP error body, as a proxy relays it) was skipped, and the stream, a tool call's
/// header then the error then `[DONE]`, came back as success with finish `missing` and
/// a tool call whose arguments were `{}`: an answer the model never gave.
#[test]
fn an_error_object_in_a_stream_ends_it_in_every_known_shape() {
    let header = chunk(
        &json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "pay", "arguments": ""}}]}),
        None,
    );
    let payloads = [
        // vLLM up to 0.10.0: the flat HTTP body.
        json!({"object": "error", "message": "Internal server error", "type": "InternalServerError", "param": null, "code": 500}),
        // vLLM's streaming wrapper around it.
        json!({"error": {"object": "error", "message": "Internal server error", "type": "InternalServerError", "param": null, "code": 500}}),
        // Xinference: `json.dumps({"error": str(ex)})`.
        json!({"error": "Model is loading, please retry later"}),
        // FastAPI's HTTP body, relayed.
        json!({"detail": "Internal server error"}),
        // TGI.
        json!({"error": "Request failed during generation: Server error: out of memory", "error_type": "generation"}),
    ];
    for payload in payloads {
        let bytes = format!("{header}data: {payload}\n\ndata: [DONE]\n\n");
        let decoded = decode(&bytes);
        let error = decoded
            .error
            .clone()
            .unwrap_or_else(|| panic!("{payload}: no error in {decoded:?}"));
        assert!(error.is_retryable(), "{payload}: {error:?}");
        assert!(decoded.collect("m").is_err(), "{payload}");
    }
}

#[test]
fn a_stream_of_nothing_but_its_end_marker_is_an_empty_stream() {
    for bytes in [
        "data: [DONE]\n\n".to_owned(),
        // A usage chunk is not an answer either.
        format!(
            "data: {}\n\ndata: [DONE]\n\n",
            json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 0, "total_tokens": 3}})
        ),
    ] {
        let decoded = decode(&bytes);
        assert_eq!(decoded.error, Some(LlmError::EmptyStream), "{bytes}");
        assert_eq!(decoded.collect("m"), Err(LlmError::EmptyStream));
    }
    // An empty answer the server finished is an answer.
    let finished = format!(
        "{}data: [DONE]\n\n",
        chunk(&json!({"content": ""}), Some("stop"))
    );
    let response = decode(&finished).collect("m").unwrap();
    assert_eq!(
        (response.text.as_str(), response.finish_reason),
        ("", FinishReason::Stop)
    );
}

#[test]
fn a_tool_call_whose_arguments_never_came_is_never_handed_on_as_empty() {
    let header = chunk(
        &json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "pay", "arguments": ""}}]}),
        None,
    );
    // No finish reason, no arguments: cut, not `{}`.
    let cut = format!("{header}data: [DONE]\n\n");
    let error = decode(&cut).collect("m").unwrap_err();
    assert!(
        matches!(&error, LlmError::InvalidResponse { reason, .. } if reason.contains("pay") && reason.contains("without its arguments")),
        "{error:?}"
    );
    // The server's finish vouches for a call without parameters.
    let finished = format!(
        "{header}{}data: [DONE]\n\n",
        chunk(&json!({}), Some("tool_calls"))
    );
    let response = decode(&finished).collect("m").unwrap();
    assert_eq!(response.tool_calls[0].arguments, json!({}));
}
