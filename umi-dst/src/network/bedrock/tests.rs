//! The simulated Bedrock server against umi-core's client: the client's signed requests
//! are admitted and read back as sent, malformed signatures are refused in Bedrock's
//! words, and what the server writes (whole, streamed, refused) the client reads back.

use std::sync::Arc;

use serde_json::json;
use umi_core::env::SystemEnvironment;
use umi_core::llm::bedrock::BedrockConfig;
use umi_core::llm::client::ClientFormat;
use umi_core::llm::{
    CompletionRequest, CompletionResponse, Connection, FinishReason, LlmError, Message, ModelRef,
    StreamEvent, TokenUsage, ToolCall, ToolChoice, ToolDefinition,
};

use super::request::signature;
use super::*;
use crate::network::format::Flow;
use crate::network::surface::Surface;

const MODEL: &str = "anthropic.claude-3-5-haiku-20241022-v1:0";

fn client_request(request: &CompletionRequest, stream: bool) -> HttpRequest {
    let connection = Connection::new("https://bedrock-runtime.us-east-1.amazonaws.com")
        .with_api_key(surface::EXAMPLE_KEY_PAIR);
    let model = ModelRef::new("bedrock", MODEL, 200_000, 4_096);
    let config = BedrockConfig::new(connection, model, Arc::new(SystemEnvironment::new()));
    config.http_request(request, stream).unwrap()
}

fn responder() -> Box<dyn Responder> {
    BedrockFormat.responder(
        Profile::Bedrock,
        DeterministicRng::new(1),
        DeterministicRng::new(2),
        0,
        MODEL,
    )
}

#[test]
fn routes_carry_the_model_and_the_method() {
    // Table: path, the model read, whether it streams (None: not routed).
    let cases = [
        (
            "/model/anthropic.claude-v2%3A1/converse",
            Some(("anthropic.claude-v2:1", false)),
        ),
        ("/model/m/converse-stream", Some(("m", true))),
        ("/model//converse", None),
        ("/model/a/b/converse", None),
        ("/model/m/invoke", None),
        ("/v1/chat/completions", None),
    ];
    for (path, expected) in cases {
        let got = route(path).map(|r| (r.model.unwrap(), r.stream.unwrap()));
        assert_eq!(got, expected.map(|(m, s)| (m.to_owned(), s)), "{path}");
    }
}

#[test]
fn the_clients_request_reads_back_as_sent() {
    let call = ToolCall::new("tooluse_1", "get_weather", json!({"city": "Oslo"}));
    let weather = ToolDefinition::new("get_weather", "Weather.", json!({"type": "object"}));
    let request = CompletionRequest::new(vec![
        Message::system("Be brief."),
        Message::user("Weather?"),
        Message::assistant_tool_calls("Checking.", vec![call]),
        Message::tool_result("tooluse_1", "12 C", false),
        Message::user("Thanks"),
    ])
    .with_tools(vec![weather])
    .with_tool_choice(ToolChoice::Tool("get_weather".into()))
    .with_stop(vec!["END".into()])
    .with_output_schema("city", json!({"type": "object"}));
    let http = client_request(&request, true);
    let parsed = BedrockFormat.parse(&http, Profile::Bedrock).unwrap();
    assert!(parsed.stream);
    let read = parsed.request;
    assert_eq!(read.model, MODEL);
    assert_eq!(read.messages, request.messages);
    assert_eq!(read.tools, request.tools);
    assert_eq!(read.tool_choice, request.tool_choice);
    assert_eq!(read.stop, request.stop);
    assert_eq!(
        read.output_schema.map(|o| o.schema),
        Some(json!({"type": "object"}))
    );
}

#[test]
fn signatures_are_checked_for_shape() {
    let good = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240229/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31";
    let parsed = signature(good).unwrap();
    assert_eq!(parsed.access_key_id, "AKIDEXAMPLE");
    assert_eq!(parsed.region, "us-east-1");
    // Table: what is broken, the header.
    let bad = [
        (
            "another algorithm",
            good.replace("AWS4-HMAC-SHA256", "AWS4-HMAC-SHA1"),
        ),
        ("another service", good.replace("/bedrock/", "/s3/")),
        ("no terminator", good.replace("/aws4_request", "")),
        ("a short date", good.replace("20240229", "2024022")),
        ("a short signature", good.replace("5fa00f", "5fa")),
        ("an uppercase signature", good.replace("5fa00f", "5FA00F")),
        (
            "unsorted headers",
            good.replace("content-type;host", "host;content-type"),
        ),
        (
            "host unsigned",
            good.replace("content-type;host;", "content-type;"),
        ),
        (
            "no SignedHeaders",
            good.replace("SignedHeaders=content-type;host;x-amz-date, ", ""),
        ),
        ("a Bearer token", "Bearer abc".to_owned()),
    ];
    for (what, header) in bad {
        assert!(signature(&header).is_err(), "{what}: {header}");
    }
}

#[test]
fn an_unsigned_or_badly_signed_request_is_refused_as_bedrock_refuses_it() {
    let request = CompletionRequest::new(vec![Message::user("hi")]);
    let signed = client_request(&request, false);
    let mut unsigned = signed.clone();
    unsigned.headers.retain(|(name, _)| name != "authorization");
    let dated = |date: &str| {
        let mut http = signed.clone();
        for (name, value) in &mut http.headers {
            if name == "x-amz-date" {
                *value = date.into();
            }
        }
        http
    };
    let wrong_date = dated("19990101T000000Z");
    // Sixteen bytes with a character across byte 8: a typed refusal, never a panic on
    // slicing inside the character (the review's case).
    let not_ascii = dated("2024022\u{e9}T00000Z");
    assert_eq!("2024022\u{e9}T00000Z".len(), 16);
    // Table: the request, the status and exception answered.
    for (what, http, status, exception) in [
        (
            "unsigned",
            unsigned,
            403,
            "MissingAuthenticationTokenException",
        ),
        (
            "dated apart from its scope",
            wrong_date,
            400,
            "IncompleteSignatureException",
        ),
        (
            "dated in text that is not ASCII",
            not_ascii,
            400,
            "IncompleteSignatureException",
        ),
    ] {
        let refused = BedrockFormat.parse(&http, Profile::Bedrock).unwrap_err();
        let error = LlmError::BadRequest {
            status: Some(400),
            message: refused.message.clone(),
        };
        let mut responder = responder();
        let (got, body) = responder.refusal(&error, refused.param.as_deref());
        assert_eq!(got, status, "{what}");
        let headers = responder.own_headers(got, 0);
        let error_type = headers
            .iter()
            .find(|(n, _)| n == "x-amzn-errortype")
            .unwrap();
        assert!(
            error_type.1.starts_with(&format!("{exception}:")),
            "{what}: {headers:?}"
        );
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert!(body["message"].is_string(), "{what}");
    }
}

#[test]
fn the_key_check_admits_the_pairs_access_key_id_only() {
    let http = client_request(&CompletionRequest::new(vec![Message::user("hi")]), false);
    let admitted = |key: &str| crate::network::headers::key_refusal(&BedrockFormat, &http, key);
    assert!(admitted(surface::EXAMPLE_KEY_PAIR).is_none());
    assert!(admitted("AKIDEXAMPLE").is_none());
    assert!(matches!(
        admitted("AKIDOTHER:secret"),
        Some(LlmError::Auth { status: 401, .. })
    ));
    assert!(admitted("").is_some());
    let mut unsigned = http.clone();
    unsigned
        .headers
        .retain(|(name, _)| !name.eq_ignore_ascii_case("authorization"));
    assert!(matches!(
        crate::network::headers::key_refusal(&BedrockFormat, &unsigned, "AKIDEXAMPLE"),
        Some(LlmError::Auth { status: 403, .. })
    ));
}

/// The status and exception a keyed endpoint answers `http` with, in the order the
/// simulator's admission runs its checks (`network::admit`: the key, then the parser).
fn keyed_answer(http: &HttpRequest, key: &str) -> (u16, &'static str) {
    if let Some(error) = crate::network::headers::key_refusal(&BedrockFormat, http, key) {
        let (status, exception, _) = errors::kind_of(&error, None);
        return (status, exception);
    }
    match BedrockFormat.parse(http, Profile::Bedrock) {
        Ok(_) => (200, ""),
        Err(refused) => {
            let error = LlmError::BadRequest {
                status: Some(400),
                message: refused.message,
            };
            let (status, exception, _) = errors::kind_of(&error, refused.param.as_deref());
            (status, exception)
        }
    }
}

/// `http` with its `Authorization` value replaced.
fn with_authorization(http: &HttpRequest, value: &str) -> HttpRequest {
    let mut http = http.clone();
    for (name, header) in &mut http.headers {
        if name.eq_ignore_ascii_case("authorization") {
            *header = value.to_owned();
        }
    }
    http
}

/// A keyed case: what the request is, the request, the endpoint's key, the status and
/// exception answered.
type KeyedCase = (&'static str, HttpRequest, &'static str, u16, &'static str);

/// Table: requests a keyed endpoint answers, from the client's signed `http`.
fn keyed_cases(http: &HttpRequest) -> Vec<KeyedCase> {
    let good = http.header("authorization").unwrap().to_owned();
    let no_equals = good.replacen("Credential=", "Credential ", 1);
    let long_signature = good.replace("Signature=", "Signature=ab");
    let mut wrong_date = http.clone();
    for (name, value) in &mut wrong_date.headers {
        if name == "x-amz-date" {
            *value = "19990101T000000Z".into();
        }
    }
    let mut unsigned = http.clone();
    unsigned
        .headers
        .retain(|(name, _)| !name.eq_ignore_ascii_case("authorization"));
    let (other, incomplete) = ("AKIDOTHER:secret", "IncompleteSignatureException");
    vec![
        ("signed with the key", http.clone(), "AKIDEXAMPLE", 200, ""),
        (
            "another key",
            http.clone(),
            other,
            403,
            "UnrecognizedClientException",
        ),
        (
            "unsigned",
            unsigned,
            other,
            403,
            "MissingAuthenticationTokenException",
        ),
        (
            "no `=`",
            with_authorization(http, &no_equals),
            other,
            400,
            incomplete,
        ),
        (
            "long, the key",
            with_authorization(http, &long_signature),
            "AKIDEXAMPLE",
            400,
            incomplete,
        ),
        (
            "a Bearer token",
            with_authorization(http, "Bearer abc"),
            other,
            400,
            incomplete,
        ),
        (
            "dated apart, another key",
            wrong_date,
            other,
            400,
            incomplete,
        ),
    ]
}

#[test]
fn a_keyed_endpoint_reads_a_signatures_form_before_its_key() {
    // AWS "Common Errors": MissingAuthenticationToken 403, IncompleteSignature 400,
    // an unknown access key id 403; the form is read first (request.rs's docs).
    let http = client_request(&CompletionRequest::new(vec![Message::user("hi")]), false);
    for (what, request, key, status, exception) in keyed_cases(&http) {
        assert_eq!(keyed_answer(&request, key), (status, exception), "{what}");
    }
    // AWS's words for a part with no `=` (aws/aws-sdk-go #289).
    let good = http.header("authorization").unwrap();
    let no_equals = with_authorization(&http, &good.replacen("Credential=", "Credential ", 1));
    let refused = BedrockFormat
        .parse(&no_equals, Profile::Bedrock)
        .unwrap_err();
    assert!(
        refused
            .message
            .contains("not a valid key=value pair (missing equal-sign) in Authorization header"),
        "{}",
        refused.message
    );
    // A broken header never reaches the refusal (the trace and reports): a client that
    // put its secret in it (review of issue 42's second stop) keeps it.
    for broken in [
        "AWS4-HMAC-SHA256 AKIDEXAMPLE:wJalrXUtnFEMI/K7MDENG",
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/bedrock/aws4_request, Secret=wJalrXUtnFEMI/K7MDENG",
    ] {
        let request = with_authorization(&http, broken);
        let refused = BedrockFormat.parse(&request, Profile::Bedrock).unwrap_err();
        assert!(
            !refused.message.contains("wJalrXUtnFEMI"),
            "{}",
            refused.message
        );
    }
}

#[test]
fn refusals_read_back_as_the_error_they_stand_for() {
    for (served, expected) in refusal_cases() {
        refusal_reads_back(&served, expected);
    }
}

/// The error served, and what the client must make of Bedrock's answer.
type RefusalCase = (LlmError, fn(&LlmError) -> bool);

/// Table: the error served, what the client must make of Bedrock's answer.
fn refusal_cases() -> [RefusalCase; 5] {
    [
        (
            LlmError::RateLimit {
                retry_after_ms: Some(1_000),
            },
            |e| {
                matches!(
                    e,
                    LlmError::RateLimit {
                        retry_after_ms: None
                    }
                )
            },
        ),
        (
            LlmError::ContextOverflow {
                prompt_tokens: Some(210_000),
                limit: Some(200_000),
            },
            |e| {
                matches!(
                    e,
                    LlmError::ContextOverflow {
                        prompt_tokens: Some(210_000),
                        limit: Some(200_000)
                    }
                )
            },
        ),
        (
            LlmError::ServiceUnavailable {
                status: Some(503),
                message: String::new(),
            },
            |e| matches!(e, LlmError::ServiceUnavailable { .. }),
        ),
        (
            LlmError::ServerTimeout {
                status: None,
                message: String::new(),
            },
            |e| matches!(e, LlmError::ServerTimeout { .. }),
        ),
        (
            LlmError::Auth {
                status: 401,
                message: String::new(),
            },
            |e| matches!(e, LlmError::Auth { status: 403, .. }),
        ),
    ]
}

fn refusal_reads_back(served: &LlmError, expected: fn(&LlmError) -> bool) {
    let mut responder = responder();
    let (status, body) = responder.refusal(served, None);
    let headers = responder.own_headers(status, 0);
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let body = String::from_utf8(body).unwrap();
    let read = umi_core::llm::wire::errors::from_status(status, header, &body, 0);
    assert!(expected(&read), "{served:?} came back as {read:?}");
    // And inside a stream, as its exception message.
    let mut encoder = responder.into_stream(&parsed());
    let mut bytes = Vec::new();
    assert_eq!(encoder.error(served, &mut bytes), Flow::Close);
    let decoded = BedrockFormat.decode_as_client(&[&bytes]);
    assert!(decoded.error.is_some(), "{served:?}");
}

fn parsed() -> Parsed {
    Parsed {
        request: CompletionRequest::new(vec![Message::user("hi")]),
        stream: true,
        include_usage: true,
        reasoning_requested: false,
    }
}

fn answer() -> CompletionResponse {
    CompletionResponse {
        text: "Checking.".into(),
        tool_calls: vec![ToolCall::new(
            "call_1",
            "get_weather",
            json!({"city": "Oslo"}),
        )],
        reasoning: None,
        finish_reason: FinishReason::ToolCalls,
        usage: Some(TokenUsage::new(40, 12)),
        model: MODEL.into(),
    }
}

#[test]
fn a_whole_answer_reads_back_with_bedrocks_ids() {
    let body = responder().whole(&answer());
    let read = BedrockFormat
        .parse_as_client(std::str::from_utf8(&body).unwrap())
        .unwrap();
    assert_eq!(read.text, "Checking.");
    assert_eq!(read.tool_calls[0].name, "get_weather");
    assert_eq!(read.tool_calls[0].arguments, json!({"city": "Oslo"}));
    assert!(read.tool_calls[0].id.starts_with("tooluse_"));
    assert_eq!(read.tool_calls[0].id.len(), "tooluse_".len() + 22);
    assert_eq!(read.finish_reason, FinishReason::ToolCalls);
    assert_eq!(read.usage, Some(TokenUsage::new(40, 12)));
}

#[test]
fn a_stream_reads_back_the_same_split_anywhere() {
    let mut encoder = responder().into_stream(&parsed());
    let mut bytes = Vec::new();
    encoder.preamble(&mut bytes);
    let events = [
        StreamEvent::text("Check"),
        StreamEvent::text("ing."),
        StreamEvent::ToolCallDelta {
            index: 0,
            id: Some("call_1".into()),
            name: Some("get_weather".into()),
            arguments_fragment: Some(String::new()),
        },
        StreamEvent::ToolCallDelta {
            index: 0,
            id: None,
            name: None,
            arguments_fragment: Some("{\"city\":".into()),
        },
        StreamEvent::ToolCallDelta {
            index: 0,
            id: None,
            name: None,
            arguments_fragment: Some("\"Oslo\"}".into()),
        },
    ];
    for event in &events {
        assert_eq!(encoder.event(event, &mut bytes), Flow::Continue);
    }
    let done = StreamEvent::done(FinishReason::ToolCalls, Some(TokenUsage::new(40, 12)));
    assert_eq!(encoder.event(&done, &mut bytes), Flow::End);
    let whole = BedrockFormat.decode_as_client(&[&bytes]);
    assert_eq!(whole.error, None);
    let read = whole.collect(MODEL).unwrap();
    assert_eq!(read.text, "Checking.");
    assert_eq!(read.tool_calls[0].arguments, json!({"city": "Oslo"}));
    assert_eq!(read.finish_reason, FinishReason::ToolCalls);
    assert_eq!(read.usage, Some(TokenUsage::new(40, 12)));
    for cut in 0..bytes.len() {
        let split = BedrockFormat.decode_as_client(&[&bytes[..cut], &bytes[cut..]]);
        assert_eq!(split, whole, "cut at {cut}");
    }
}
