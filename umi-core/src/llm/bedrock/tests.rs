//! The Bedrock client against the API reference's shapes: the request it sends (body,
//! path, signature), a whole answer, and streams of event-stream messages split anywhere.

use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::env::SystemEnvironment;
use crate::llm::message::{Message, ToolCall, ToolDefinition};
use crate::llm::request::{CompletionRequest, ToolChoice};
use crate::llm::response::FinishReason;
use crate::llm::wire::reader::decode_reads;
use crate::llm::{LlmError, StreamEvent};

const KEY: &str = "AKIDEXAMPLE:wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

fn config(base: &str) -> BedrockConfig {
    let connection = Connection::new(base).with_api_key(KEY);
    let model = ModelRef::new(
        "bedrock",
        "anthropic.claude-3-5-haiku-20241022-v1:0",
        200_000,
        4_096,
    );
    BedrockConfig::new(connection, model, Arc::new(SystemEnvironment::new()))
}

/// One event-stream message, encoded by hand from the specification (a test helper;
/// the simulator has its own encoder).
fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in headers {
        block.push(name.len() as u8);
        block.extend_from_slice(name.as_bytes());
        block.push(7);
        block.extend_from_slice(&(value.len() as u16).to_be_bytes());
        block.extend_from_slice(value.as_bytes());
    }
    let total = (16 + block.len() + payload.len()) as u32;
    let mut out = total.to_be_bytes().to_vec();
    out.extend_from_slice(&(block.len() as u32).to_be_bytes());
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(&block);
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

fn event(kind: &str, payload: &serde_json::Value) -> Vec<u8> {
    frame(
        &[
            (":event-type", kind),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

fn exception(kind: &str, message: &str) -> Vec<u8> {
    frame(
        &[
            (":exception-type", kind),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        json!({ "message": message }).to_string().as_bytes(),
    )
}

/// A text answer, then a tool call whose input comes in two pieces.
fn tool_stream() -> Vec<u8> {
    let mut body = event("messageStart", &json!({"role": "assistant"}));
    body.extend(event(
        "contentBlockDelta",
        &json!({"contentBlockIndex": 0, "delta": {"text": "Let me "}}),
    ));
    body.extend(event(
        "contentBlockDelta",
        &json!({"contentBlockIndex": 0, "delta": {"text": "check."}}),
    ));
    body.extend(event("contentBlockStop", &json!({"contentBlockIndex": 0})));
    body.extend(event("contentBlockStart", &json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "tooluse_abc", "name": "get_weather"}}})));
    body.extend(event(
        "contentBlockDelta",
        &json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"city\":"}}}),
    ));
    body.extend(event(
        "contentBlockDelta",
        &json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "\"Oslo\"}"}}}),
    ));
    body.extend(event("contentBlockStop", &json!({"contentBlockIndex": 1})));
    body.extend(event("messageStop", &json!({"stopReason": "tool_use"})));
    body.extend(event("metadata", &json!({"usage": {"inputTokens": 12, "outputTokens": 30, "totalTokens": 42}, "metrics": {"latencyMs": 812}})));
    body
}

#[test]
fn the_request_is_the_converse_body_on_the_model_path_signed() {
    let call = ToolCall::new("tooluse_1", "get_weather", json!({"city": "Oslo"}));
    let weather = ToolDefinition::new("get_weather", "Weather.", json!({"type": "object"}));
    let request = CompletionRequest::new(vec![
        Message::system("Be brief."),
        Message::user("Weather?"),
        Message::assistant_tool_calls("", vec![call]),
        Message::tool_result("tooluse_1", "12 C", true),
        Message::user("Thanks"),
    ])
    .with_tools(vec![weather])
    .with_tool_choice(ToolChoice::Required)
    .with_stop(vec!["END".into()]);
    let config = config("https://bedrock-runtime.eu-west-1.amazonaws.com");
    let http = config.http_request(&request, true).unwrap();
    assert_eq!(
        http.url,
        "https://bedrock-runtime.eu-west-1.amazonaws.com/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream"
    );
    let body: serde_json::Value = serde_json::from_slice(&http.body).unwrap();
    assert_eq!(body["system"], json!([{"text": "Be brief."}]));
    assert_eq!(
        body["messages"][1]["content"][0]["toolUse"]["toolUseId"],
        "tooluse_1"
    );
    // The tool result and the next user text share one user message.
    assert_eq!(body["messages"][2]["role"], "user");
    assert_eq!(
        body["messages"][2]["content"][0]["toolResult"]["status"],
        "success"
    );
    assert_eq!(body["messages"][2]["content"][1]["text"], "Thanks");
    assert_eq!(body["toolConfig"]["toolChoice"], json!({"any": {}}));
    assert_eq!(
        body["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"],
        json!({"type": "object"})
    );
    assert_eq!(body["inferenceConfig"]["stopSequences"], json!(["END"]));
    let authorization = http.header("authorization").unwrap();
    let date = http.header("x-amz-date").unwrap();
    assert!(
        authorization.starts_with(&format!(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/{}/eu-west-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=",
            &date[..8]
        )),
        "{authorization}"
    );
    let signature = authorization.rsplit('=').next().unwrap();
    assert_eq!(signature.len(), 64);
    assert!(
        !format!("{http:?}").contains("EXAMPLEKEY"),
        "the secret is never shown"
    );
}

#[test]
fn the_signature_is_the_one_sigv4_gives_for_the_request_as_sent() {
    // Table: the base URL, the path sent, the host signed (a scheme's default port is
    // not: botocore's `_canonical_host`, and the `Host` hyper sends).
    for (base, path, host) in [
        (
            "http://127.0.0.1:8080/bedrock",
            "/bedrock/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse",
            "127.0.0.1:8080",
        ),
        (
            "https://bedrock-runtime.us-east-1.amazonaws.com:443",
            "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse",
            "bedrock-runtime.us-east-1.amazonaws.com",
        ),
        (
            "http://127.0.0.1:80",
            "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse",
            "127.0.0.1",
        ),
    ] {
        let config = config(base);
        let request = CompletionRequest::new(vec![Message::user("hi")]);
        let http = config.http_request(&request, false).unwrap();
        let headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("host".to_owned(), host.to_owned()),
            (
                "x-amz-date".to_owned(),
                http.header("x-amz-date").unwrap().to_owned(),
            ),
        ];
        let signable = sigv4::Signable {
            method: "POST",
            path,
            query: "",
            headers: &headers,
            body: &http.body,
        };
        let scope = sigv4::Scope {
            region: DEFAULT_REGION,
            service: "bedrock",
            amz_date: http.header("x-amz-date").unwrap(),
        };
        let (id, secret) = KEY.split_once(':').unwrap();
        assert_eq!(
            http.header("authorization"),
            Some(sigv4::authorization(&signable, id, secret, &scope).as_str()),
            "{base}"
        );
    }
}

#[test]
fn no_key_or_a_key_that_is_not_a_pair_is_refused_before_sending() {
    let mut config = config("https://bedrock-runtime.us-east-1.amazonaws.com");
    let request = CompletionRequest::new(vec![Message::user("hi")]);
    config.connection.api_key = None;
    assert!(matches!(
        config.http_request(&request, false),
        Err(LlmError::Auth { .. })
    ));
    config.connection.api_key = Some(ApiKey::new("just-a-token"));
    assert!(matches!(
        config.http_request(&request, false),
        Err(LlmError::Auth { .. })
    ));
}

#[test]
fn a_whole_answer_reads_text_calls_stop_and_usage() {
    // BEDROCK-API `Converse` "Response Syntax".
    let body = r#"{"metrics":{"latencyMs":1203},"output":{"message":{"content":[{"text":"Checking."},{"toolUse":{"input":{"city":"Oslo"},"name":"get_weather","toolUseId":"tooluse_kZJMlvQmRJ6eAyJE5GIl7Q"}}],"role":"assistant"}},"stopReason":"tool_use","usage":{"inputTokens":401,"outputTokens":54,"totalTokens":455,"cacheReadInputTokens":100}}"#;
    let response = parse_response(body, "m").unwrap();
    assert_eq!(response.text, "Checking.");
    assert_eq!(response.tool_calls[0].id, "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q");
    assert_eq!(response.tool_calls[0].arguments, json!({"city": "Oslo"}));
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    let usage = response.usage.unwrap();
    assert_eq!((usage.prompt_tokens, usage.completion_tokens), (401, 54));
    assert_eq!(usage.cached_prompt_tokens, Some(100));
    assert!(matches!(
        parse_response("{\"output\":{}}", "m"),
        Err(LlmError::InvalidResponse { .. })
    ));
}

#[test]
fn stop_reasons() {
    for (wire, finish) in [
        ("end_turn", FinishReason::Stop),
        ("stop_sequence", FinishReason::Stop),
        ("tool_use", FinishReason::ToolCalls),
        ("max_tokens", FinishReason::Length),
        ("guardrail_intervened", FinishReason::ContentFilter),
        ("content_filtered", FinishReason::ContentFilter),
        ("something_new", FinishReason::Other("something_new".into())),
    ] {
        assert_eq!(stop_reason(wire), finish, "{wire}");
    }
}

#[test]
fn a_stream_decodes_the_same_split_anywhere() {
    let body = tool_stream();
    let whole = decode_reads(BedrockDecoder::new(), [body.as_slice()]);
    assert_eq!(whole.error, None);
    let response = whole.collect("m").unwrap();
    assert_eq!(response.text, "Let me check.");
    assert_eq!(response.tool_calls[0].name, "get_weather");
    assert_eq!(response.tool_calls[0].arguments, json!({"city": "Oslo"}));
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage.map(|u| u.completion_tokens), Some(30));
    for cut in (0..body.len()).step_by(7) {
        let split = decode_reads(BedrockDecoder::new(), [&body[..cut], &body[cut..]]);
        assert_eq!(split, whole, "cut at {cut}");
    }
    let bytes: Vec<&[u8]> = body.chunks(1).collect();
    assert_eq!(decode_reads(BedrockDecoder::new(), bytes), whole);
}

#[test]
fn a_stream_cut_before_message_stop_is_truncated_and_one_without_metadata_ends_well() {
    let body = tool_stream();
    let metadata_at = body.len() - event("metadata", &json!({"usage": {"inputTokens": 12, "outputTokens": 30, "totalTokens": 42}, "metrics": {"latencyMs": 812}})).len();
    let stop_at = metadata_at - event("messageStop", &json!({"stopReason": "tool_use"})).len();
    let cut = decode_reads(BedrockDecoder::new(), [&body[..stop_at]]);
    assert!(
        matches!(cut.error, Some(LlmError::StreamTruncated { .. })),
        "{cut:?}"
    );
    let no_metadata = decode_reads(BedrockDecoder::new(), [&body[..metadata_at]]);
    assert_eq!(no_metadata.error, None);
    assert!(matches!(
        no_metadata.events.last(),
        Some(StreamEvent::Done {
            finish_reason: FinishReason::ToolCalls,
            usage: None
        })
    ));
    let mid_metadata = decode_reads(BedrockDecoder::new(), [&body[..metadata_at + 5]]);
    assert!(matches!(
        mid_metadata.error,
        Some(LlmError::StreamTruncated { .. })
    ));
}

#[test]
fn exceptions_in_the_stream_are_typed_after_the_events_before_them() {
    for (kind, message, expected) in exception_cases() {
        let mut body = event("messageStart", &json!({"role": "assistant"}));
        body.extend(event(
            "contentBlockDelta",
            &json!({"contentBlockIndex": 0, "delta": {"text": "Hi"}}),
        ));
        body.extend(exception(kind, message));
        let decoded = decode_reads(BedrockDecoder::new(), [body.as_slice()]);
        assert_eq!(
            decoded.events,
            [StreamEvent::TextDelta { text: "Hi".into() }],
            "{kind}"
        );
        let error = decoded.error.unwrap();
        assert!(expected(&error), "{kind}: {error:?}");
    }
    // The HTTP form of a timeout: `ModelTimeoutException` with its 408.
    assert!(matches!(
        exception_error(
            "ModelTimeoutException",
            br#"{"message":"Model has timed out in processing the request."}"#
        ),
        LlmError::ServerTimeout { .. }
    ));
}

/// An exception's name, its message, and the error kind it must become.
type ExceptionCase = (&'static str, &'static str, fn(&LlmError) -> bool);

/// Table: the exceptions of BEDROCK-API `ConverseStreamOutput`, with their messages.
fn exception_cases() -> [ExceptionCase; 6] {
    [
        (
            "throttlingException",
            "Too many requests, please wait before trying again.",
            |e| matches!(e, LlmError::RateLimit { .. }),
        ),
        // daisuke-awaji/moca #254; strands-agents/harness-sdk #1663.
        (
            "validationException",
            "The model returned the following errors: prompt is too long: 200049 tokens > 200000 maximum",
            |e| {
                matches!(
                    e,
                    LlmError::ContextOverflow {
                        prompt_tokens: Some(200_049),
                        limit: Some(200_000)
                    }
                )
            },
        ),
        ("validationException", "Malformed input request", |e| {
            matches!(e, LlmError::BadRequest { .. })
        }),
        ("modelStreamErrorException", "The model stopped", |e| {
            matches!(e, LlmError::ServiceUnavailable { .. })
        }),
        ("serviceUnavailableException", "Service unavailable", |e| {
            matches!(e, LlmError::ServiceUnavailable { .. })
        }),
        ("internalServerException", "Internal error", |e| {
            matches!(e, LlmError::ServiceUnavailable { .. })
        }),
    ]
}

#[test]
fn the_region_comes_from_the_regional_endpoint() {
    for (base, region) in [
        (
            "https://bedrock-runtime.eu-central-1.amazonaws.com",
            "eu-central-1",
        ),
        (
            "https://bedrock-runtime.us-east-1.amazonaws.com/",
            "us-east-1",
        ),
        ("http://127.0.0.1:9000", DEFAULT_REGION),
        ("https://bedrock-runtime.evil.example", DEFAULT_REGION),
    ] {
        assert_eq!(config(base).signing_region(), region, "{base}");
    }
}

#[test]
fn the_secret_is_redacted_from_errors() {
    let redactor = config("https://h").redactor();
    let shown = redactor.redact("echo wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY back");
    assert!(!shown.contains("EXAMPLEKEY"), "{shown}");
}

/// Table: Bedrock's messages for a refused request, and whether each is an overflow.
const OVERFLOW_MESSAGES: [(&str, bool); 5] = [
    // aws-samples/assessment-generator #2 (Converse, HTTP 400 `ValidationException`).
    ("Input is too long for requested model.", true),
    // continuedev/continue #6005, #9592.
    (
        "The model returned the following errors: Input is too long for requested model.",
        true,
    ),
    // daisuke-awaji/moca #254 (the shared classifier's own marker).
    (
        "The model returned the following errors: prompt is too long: 200049 tokens > 200000 maximum",
        true,
    ),
    // charmbracelet/crush #946: the answer's limit, not the prompt's.
    (
        "The maximum tokens you requested exceeds the model limit of 32768",
        false,
    ),
    (
        "Malformed input request, please reformat your input and try again.",
        false,
    ),
];

#[test]
fn bedrocks_overflow_words_are_a_context_overflow_whole_and_streamed() {
    use crate::llm::client::ClientFormat;
    use crate::llm::wire::errors::from_status;
    use crate::llm::wire::exchange::Refused;

    let config = config("https://bedrock-runtime.us-east-1.amazonaws.com");
    for (message, overflow) in OVERFLOW_MESSAGES {
        let body = json!({ "message": message }).to_string();
        let error_type = "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/";
        let header = |name: &str| (name == "x-amzn-errortype").then(|| error_type.to_owned());
        let whole = config.refusal(Refused {
            error: from_status(400, header, &body, 0),
            body: body.clone(),
            status: Some(400),
            headers: vec![("x-amzn-errortype".into(), error_type.into())],
        });
        let mut stream = event("messageStart", &json!({"role": "assistant"}));
        stream.extend(exception("validationException", message));
        let streamed = decode_reads(BedrockDecoder::new(), [stream.as_slice()])
            .error
            .unwrap();
        for (path, error) in [("whole", whole), ("streamed", streamed)] {
            assert_eq!(
                matches!(error, LlmError::ContextOverflow { .. }),
                overflow,
                "{path}: {message}: {error:?}"
            );
            if !overflow {
                assert!(
                    matches!(error, LlmError::BadRequest { .. }),
                    "{path}: {message}: {error:?}"
                );
            }
        }
    }
}

#[test]
fn a_stream_cut_at_any_byte_is_typed_and_never_half_an_event() {
    // A connection can drop anywhere, inside a frame's prelude, headers, payload or
    // CRC: what came whole is delivered, and the cut is a typed truncation.
    let body = tool_stream();
    let whole = decode_reads(BedrockDecoder::new(), [body.as_slice()]);
    assert_eq!(whole.error, None);
    let not_done = |events: &[StreamEvent]| -> Vec<StreamEvent> {
        events
            .iter()
            .filter(|e| !matches!(e, StreamEvent::Done { .. }))
            .cloned()
            .collect()
    };
    let whole_events = not_done(&whole.events);
    // The frames' ends, from each prelude's total length (smithy.io "Amazon Event
    // Stream Specification": the first 4 bytes, big-endian).
    let mut boundaries = vec![0];
    while let Some(&at) = boundaries.last().filter(|&&at| at < body.len()) {
        let total = u32::from_be_bytes(body[at..at + 4].try_into().unwrap()) as usize;
        boundaries.push(at + total);
    }
    assert_eq!(boundaries.last(), Some(&body.len()));
    let mut inside = 0;
    for cut in 1..body.len() {
        let decoded = decode_reads(BedrockDecoder::new(), [&body[..cut]]);
        let events = not_done(&decoded.events);
        assert_eq!(
            events[..],
            whole_events[..events.len()],
            "cut at {cut}: a prefix of the whole events"
        );
        if !boundaries.contains(&cut) {
            inside += 1;
            assert!(
                matches!(decoded.error, Some(LlmError::StreamTruncated { .. })),
                "cut at {cut}, inside a frame: {:?}",
                decoded.error
            );
        }
    }
    assert!(inside > body.len() / 2, "{inside} cuts inside a frame");
}
