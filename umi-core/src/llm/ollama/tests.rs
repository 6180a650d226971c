//! The NDJSON decoder on bytes Ollama sends, under every split into reads.

use super::NdjsonDecoder;
use crate::llm::error::LlmError;
use crate::llm::event::StreamEvent;
use crate::llm::response::FinishReason;
use crate::llm::wire::reader::{Decoded, decode_reads};

fn decode(bytes: &str) -> Decoded {
    let bytes = bytes.as_bytes();
    let whole = decode_reads(NdjsonDecoder::new(), [bytes]);
    for cut in 0..=bytes.len() {
        let split = decode_reads(NdjsonDecoder::new(), [&bytes[..cut], &bytes[cut..]]);
        assert_eq!(split, whole, "split at byte {cut}");
    }
    whole
}

#[test]
fn an_error_line_after_text_keeps_the_text_and_is_a_server_fault() {
    // A built-in tool parser failing mid-stream (ollama model/parsers/qwen3.go).
    let bytes = "{\"model\":\"qwen3\",\"created_at\":\"2025-10-26T17:21:21.196249Z\",\"message\":{\"role\":\"assistant\",\"content\":\"Let me\"},\"done\":false}\n\
                 {\"error\":\"failed to parse JSON: invalid character 'x' looking for beginning of value\"}\n";
    let decoded = decode(bytes);
    assert_eq!(decoded.events, vec![StreamEvent::text("Let me")]);
    assert!(matches!(
        decoded.error,
        Some(LlmError::ServiceUnavailable { .. })
    ));
}

#[test]
fn done_reasons_and_counts_are_read_as_sent() {
    let bytes = "{\"model\":\"m\",\"created_at\":\"x\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":\"load\"}\n";
    let decoded = decode(bytes);
    assert_eq!(
        decoded.events,
        vec![StreamEvent::done(FinishReason::Other("load".into()), None)],
        "no counts sent: usage absent, not zero"
    );
    let closed = "{\"model\":\"m\",\"created_at\":\"x\",\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"done\":true,\"prompt_eval_count\":26,\"eval_count\":1}\n";
    let decoded = decode(closed);
    match decoded.events.last() {
        Some(StreamEvent::Done {
            finish_reason,
            usage,
        }) => {
            assert_eq!(*finish_reason, FinishReason::Missing);
            assert_eq!(usage.map(|u| u.prompt_tokens), Some(26));
        }
        other => panic!("{other:?}"),
    }
}

/// Counts past `u32` saturate (4294967301 is not 5); a `null` count is absent.
#[test]
fn counts_past_u32_saturate_and_null_counts_are_absent() {
    for (line, expected) in [
        (
            "{\"model\":\"m\",\"created_at\":\"x\",\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"done\":true,\"done_reason\":\"stop\",\"prompt_eval_count\":4294967301,\"eval_count\":null}\n",
            Some((u32::MAX, 0)),
        ),
        (
            "{\"model\":\"m\",\"created_at\":\"x\",\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"done\":true,\"done_reason\":\"stop\",\"prompt_eval_count\":null,\"eval_count\":null}\n",
            None,
        ),
    ] {
        let decoded = decode(line);
        assert_eq!(decoded.error, None, "{line}");
        match decoded.events.last() {
            Some(StreamEvent::Done { usage, .. }) => assert_eq!(
                usage.map(|u| (u.prompt_tokens, u.completion_tokens)),
                expected,
                "{line}"
            ),
            other => panic!("{other:?}"),
        }
    }
}
