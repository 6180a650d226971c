//! The Gemini server's pure pieces, byte for byte: routes, key reading and masking,
//! request refusals in the API's words, whole bodies, both stream framings, errors.

use umi_core::llm::transport::HttpRequest;
use umi_core::llm::{
    CompletionRequest, CompletionResponse, FinishReason, LlmError, Message, StreamEvent,
    TokenUsage, ToolCall, ToolChoice,
};

use super::request::parse;
use super::stream::GeminiStream;
use super::{Era, GeminiFormat, Layout, errors, route, route_of_url};
use crate::network::format::{Flow, Parsed, Route, StreamEncoder};
use crate::network::headers::redact_url;

fn era(layout: Layout, route: Route) -> Era {
    Era {
        layout,
        model_version: "gemini-2.5-flash".into(),
        response_id: "bH6LaZW8Fp_3nsEPqtaSwQ4".into(),
        route,
        high_demand: false,
    }
}

fn http(path: &str, body: &str) -> HttpRequest {
    HttpRequest {
        method: "POST",
        url: format!("https://gemini.sim{path}"),
        headers: vec![("x-goog-api-key".into(), "AIza-test".into())],
        body: body.as_bytes().to_vec(),
    }
}

const GENERATE: &str = "/v1beta/models/gemini-2.5-flash:generateContent";

#[test]
fn paths_carry_the_model_and_the_method() {
    let generate = route(GENERATE, None).unwrap();
    assert_eq!(generate.model.as_deref(), Some("gemini-2.5-flash"));
    assert_eq!(generate.stream, Some(false));
    let sse = route("/v1beta/models/m:streamGenerateContent", Some("alt=sse")).unwrap();
    assert!(sse.sse && sse.stream == Some(true));
    let array = route("/v1/models/m:streamGenerateContent", None).unwrap();
    assert!(!array.sse && array.stream == Some(true));
    assert!(
        route("/v1beta/models/m:countTokens", None)
            .unwrap()
            .count_tokens
    );
    for refused in [
        "/v1beta/models/m:embedContent",
        "/v1beta/models/:generateContent",
        "/v1beta/models/a/b:generateContent",
        "/v1beta/models/m",
        "/v2/models/m:generateContent",
        "/chat/completions",
    ] {
        assert_eq!(route(refused, None), None, "{refused}");
    }
    let below_prefix =
        route_of_url("http://umi.serve/g/v1beta/models/m:streamGenerateContent?alt=sse");
    assert!(below_prefix.unwrap().sse);
}

#[test]
fn a_key_in_the_query_is_read_and_never_recorded() {
    let url = "https://g.sim/v1beta/models/m:generateContent?alt=sse&key=AIzaSyDSNiWYH2IYvkiP9cVy";
    assert_eq!(
        super::query_key(url).as_deref(),
        Some("AIzaSyDSNiWYH2IYvkiP9cVy")
    );
    let redacted = redact_url(url).unwrap();
    assert_eq!(
        redacted,
        "https://g.sim/v1beta/models/m:generateContent?alt=sse&key=AIzaSyDS***9cVy"
    );
    assert_eq!(
        redact_url("https://g.sim/v1beta/models/m:generateContent?alt=sse"),
        None
    );
    let request = HttpRequest {
        headers: Vec::new(),
        ..http(&format!("{GENERATE}?key=AIza-query-key-12345"), "{}")
    };
    assert_eq!(
        crate::network::surface::Surface::presented_key(&GeminiFormat, &request).as_deref(),
        Some("AIza-query-key-12345")
    );
}

#[test]
fn bad_requests_are_refused_in_the_apis_words_naming_the_field() {
    let user = r#"{"role":"user","parts":[{"text":"hi"}]}"#;
    let call = r#"{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}},{"functionCall":{"name":"g","args":{}}}]}"#;
    let cases: [(String, &str, &str); 10] = [
        ("{}".into(), "contents", "* GenerateContentRequest.contents: contents is not specified"),
        (r#"{"contents":[]}"#.into(), "contents", "* GenerateContentRequest.contents: contents is not specified"),
        ("{not json".into(), "body", "Invalid JSON payload received."),
        (format!(r#"{{"contents":[{user}],"temperatur":1}}"#), "temperatur", "Invalid JSON payload received. Unknown name \"temperatur\": Cannot find field."),
        (r#"{"contents":[{"role":"user","parts":[]}]}"#.into(), "contents[0].parts", "* GenerateContentRequest.contents[0].parts: contents.parts must not be empty."),
        (r#"{"contents":[{"role":"user","parts":[{"foo":1}]}]}"#.into(), "contents[0].parts[0].data", "* GenerateContentRequest.contents[0].parts[0].data: required oneof field 'data' must have one initialized field"),
        (r#"{"contents":[{"role":"assistant","parts":[{"text":"x"}]}]}"#.into(), "contents[0].role", "Please use a valid role: user, model."),
        (r#"{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}"#.into(), "contents[0]", "Please ensure that function response turn comes immediately after a function call turn."),
        (
            format!(r#"{{"contents":[{user},{call},{{"role":"user","parts":[{{"functionResponse":{{"name":"f","response":{{}}}}}}]}}]}}"#),
            "contents[2]",
            "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
        ),
        (
            format!(r#"{{"contents":[{user}],"tools":[{{"functionDeclarations":[{{"description":"d"}}]}}]}}"#),
            "tools[0].function_declarations[0].name",
            "* GenerateContentRequest.tools[0].function_declarations[0].name: Name cannot be empty.",
        ),
    ];
    for (body, param, words) in cases {
        let refused = parse(&http(GENERATE, &body)).expect_err(&body);
        assert_eq!(refused.param.as_deref(), Some(param), "{body}");
        assert!(
            refused.message.starts_with(words),
            "{body}: {:?} does not start with {words:?}",
            refused.message
        );
    }
}

#[test]
fn a_function_round_trip_parses_to_the_conversation_the_client_sent() {
    let body = r#"{"contents":[
        {"role":"user","parts":[{"text":"weather in Rome?"}]},
        {"role":"model","parts":[{"text":"checking"},{"functionCall":{"name":"weather","args":{"city":"Rome"}}}]},
        {"role":"user","parts":[{"functionResponse":{"name":"weather","response":{"result":"30 C"}}}]}],
      "systemInstruction":{"parts":[{"text":"be brief"}]},
      "tools":[{"functionDeclarations":[{"name":"weather","description":"d","parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING"}},"propertyOrdering":["city"]}}]}],
      "toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["weather"]}},
      "generationConfig":{"maxOutputTokens":64,"temperature":0.5,"stopSequences":["END"],
        "responseMimeType":"application/json","responseSchema":{"type":"OBJECT","properties":{"a":{"type":"INTEGER"}}},
        "thinkingConfig":{"includeThoughts":true}}}"#;
    let parsed = parse(&http(
        "/v1beta/models/m:streamGenerateContent?alt=sse",
        body,
    ))
    .unwrap();
    let request = &parsed.request;
    assert!(parsed.stream && parsed.reasoning_requested);
    assert_eq!(request.model, "m");
    assert_eq!(request.max_tokens, Some(64));
    assert_eq!(request.stop, ["END"]);
    assert_eq!(
        request.tool_choice,
        Some(ToolChoice::Tool("weather".into()))
    );
    assert_eq!(
        request.tools[0].parameters,
        serde_json::json!({"type":"object","properties":{"city":{"type":"string"}}})
    );
    let schema = &request.output_schema.as_ref().unwrap().schema;
    assert_eq!(schema["properties"]["a"]["type"], "integer");
    assert!(
        !request.json_output,
        "a schema is a structured output, not JSON mode"
    );
    assert_eq!(
        request.messages,
        vec![
            Message::system("be brief"),
            Message::user("weather in Rome?"),
            Message::assistant_tool_calls(
                "checking",
                vec![ToolCall::new(
                    "call_0",
                    "weather",
                    serde_json::json!({"city":"Rome"})
                )]
            ),
            Message::tool_result("call_0", "30 C", true),
        ]
    );
}

fn text_response(text: &str, finish: FinishReason) -> CompletionResponse {
    CompletionResponse {
        text: text.into(),
        tool_calls: Vec::new(),
        reasoning: None,
        finish_reason: finish,
        usage: Some(TokenUsage::new(9, 5)),
        model: "gemini-2.5-flash".into(),
    }
}

fn responder(layout: Layout, route: Route) -> super::GeminiResponder {
    super::GeminiResponder {
        era: era(layout, route),
        marks: Vec::new(),
    }
}

#[test]
fn whole_answers_are_googles_bytes() {
    use crate::network::format::Responder;
    let mut y2025 = responder(Layout::Y2025, Route::default());
    let body = String::from_utf8(y2025.whole(&text_response("Hi", FinishReason::Stop))).unwrap();
    assert_eq!(
        body,
        "{\n  \"candidates\": [\n    {\n      \"content\": {\n        \"parts\": [\n          {\n            \"text\": \"Hi\"\n          }\n        ],\n        \"role\": \"model\"\n      },\n      \"finishReason\": \"STOP\",\n      \"index\": 0\n    }\n  ],\n  \"usageMetadata\": {\n    \"promptTokenCount\": 9,\n    \"candidatesTokenCount\": 5,\n    \"totalTokenCount\": 14,\n    \"promptTokensDetails\": [\n      {\n        \"modality\": \"TEXT\",\n        \"tokenCount\": 9\n      }\n    ]\n  },\n  \"modelVersion\": \"gemini-2.5-flash\",\n  \"responseId\": \"bH6LaZW8Fp_3nsEPqtaSwQ4\"\n}\n"
    );
    let mut calls = text_response("", FinishReason::ToolCalls);
    calls.tool_calls = vec![
        ToolCall::new("a", "weather", serde_json::json!({"city": "Oslo"})),
        ToolCall::new("b", "weather", serde_json::json!({"city": "Rome"})),
    ];
    let value: serde_json::Value = serde_json::from_slice(&y2025.whole(&calls)).unwrap();
    let candidate = &value["candidates"][0];
    assert_eq!(
        candidate["content"]["parts"][1]["functionCall"]["args"]["city"],
        "Rome"
    );
    assert_eq!(candidate["finishReason"], "STOP");
    assert_eq!(
        candidate["finishMessage"],
        "Model generated function call(s)."
    );
    calls.tool_calls[1].arguments = serde_json::json!("{\"city\": \"Ro");
    let value: serde_json::Value = serde_json::from_slice(&y2025.whole(&calls)).unwrap();
    assert_eq!(
        value["candidates"][0]["finishReason"],
        "MALFORMED_FUNCTION_CALL"
    );
    assert!(value["candidates"][0].get("content").is_none());
    let blocked: serde_json::Value =
        serde_json::from_slice(&y2025.whole(&text_response("", FinishReason::ContentFilter)))
            .unwrap();
    assert_eq!(
        blocked["promptFeedback"]["blockReason"],
        "PROHIBITED_CONTENT"
    );
    let mut y2024 = responder(Layout::Y2024, Route::default());
    let old: serde_json::Value =
        serde_json::from_slice(&y2024.whole(&text_response("x", FinishReason::Length))).unwrap();
    assert_eq!(old["candidates"][0]["finishReason"], "MAX_TOKENS");
    assert_eq!(
        old["candidates"][0]["safetyRatings"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    assert!(old.get("responseId").is_none());
}

fn parsed(stream: bool) -> Parsed {
    Parsed {
        request: CompletionRequest::new(vec![Message::user("hi")]),
        stream,
        include_usage: true,
        reasoning_requested: false,
    }
}

fn run(layout: Layout, sse: bool, events: &[StreamEvent]) -> String {
    let route = Route {
        stream: Some(true),
        sse,
        ..Route::default()
    };
    let mut stream = GeminiStream::new(era(layout, route), &parsed(true), Vec::new());
    let mut out = Vec::new();
    for event in events {
        stream.event(event, &mut out);
    }
    String::from_utf8(out).unwrap()
}

fn text(text: &str) -> StreamEvent {
    StreamEvent::TextDelta { text: text.into() }
}

fn done() -> StreamEvent {
    StreamEvent::Done {
        finish_reason: FinishReason::Stop,
        usage: Some(TokenUsage::new(9, 4)),
    }
}

#[test]
fn sse_events_are_one_line_and_crlf_framed_the_last_with_the_finish() {
    let body = run(Layout::Y2025, true, &[text("Hel"), text("lo"), done()]);
    let events: Vec<&str> = body.split("\r\n\r\n").collect();
    assert_eq!(events.len(), 3, "{body}");
    assert_eq!(
        events[2], "",
        "the body ends with its last event's CRLF pair"
    );
    assert!(
        events[0].starts_with(r#"data: {"candidates": [{"content": {"parts": [{"text": "Hel"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": "#),
        "{}",
        events[0]
    );
    assert!(
        events[1]
            .contains(r#"{"text": "lo"}],"role": "model"},"finishReason": "STOP","index": 0}"#)
    );
    assert!(events[1].contains(r#""candidatesTokenCount": 4,"totalTokenCount": 13"#));
    assert!(events[1].ends_with(r#""responseId": "bH6LaZW8Fp_3nsEPqtaSwQ4"}"#));
}

#[test]
fn a_json_array_stream_is_written_as_the_model_goes() {
    let body = run(Layout::Y2024, false, &[text("a"), text("b"), done()]);
    assert!(body.starts_with("[{\n  \"candidates\": ["), "{body}");
    assert_eq!(body.matches("\n,\r\n{").count(), 1, "{body}");
    assert!(body.ends_with("}\n]"), "{body}");
    let whole: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(whole.as_array().unwrap().len(), 2);
    assert_eq!(whole[1]["candidates"][0]["finishReason"], "STOP");
    assert_eq!(
        whole[1]["candidates"][0]["content"]["parts"][0]["text"],
        "b"
    );
}

#[test]
fn calls_stream_whole_and_parallel_calls_share_a_chunk() {
    let call = |index: u32, name: Option<&str>, fragment: &str| StreamEvent::ToolCallDelta {
        index,
        id: name.map(|_| format!("call_{index}")),
        name: name.map(str::to_owned),
        arguments_fragment: Some(fragment.into()),
    };
    let events = [
        call(0, Some("weather"), "{\"city\":"),
        call(0, None, " \"Oslo\"}"),
        call(1, Some("weather"), "{\"city\": \"Rome\"}"),
        StreamEvent::Done {
            finish_reason: FinishReason::ToolCalls,
            usage: None,
        },
    ];
    let body = run(Layout::Y2025, true, &events);
    let chunks: Vec<serde_json::Value> = body
        .split("\r\n\r\n")
        .filter(|e| !e.is_empty())
        .map(|e| serde_json::from_str(e.strip_prefix("data: ").unwrap()).unwrap())
        .collect();
    assert_eq!(chunks.len(), 1, "{body}");
    let parts = chunks[0]["candidates"][0]["content"]["parts"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(parts[0]["functionCall"]["args"]["city"], "Oslo");
    assert_eq!(parts[1]["functionCall"]["name"], "weather");
    assert_eq!(chunks[0]["candidates"][0]["finishReason"], "STOP");
}

#[test]
fn errors_after_the_200_break_the_connection() {
    let mut stream = GeminiStream::new(
        era(Layout::Y2025, Route::default()),
        &parsed(true),
        Vec::new(),
    );
    let mut out = Vec::new();
    let error = LlmError::ServiceUnavailable {
        status: Some(503),
        message: String::new(),
    };
    assert_eq!(stream.error(&error, &mut out), Flow::Reset);
    assert!(out.is_empty());
}

#[test]
fn every_fault_has_its_google_envelope() {
    let era = era(Layout::Y2025, Route::default());
    let cases: [(LlmError, u16, &str, &str); 7] = [
        (
            LlmError::RateLimit {
                retry_after_ms: Some(34_400),
            },
            429,
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota",
        ),
        (
            LlmError::ContextOverflow {
                prompt_tokens: Some(200_000),
                limit: Some(131_072),
            },
            400,
            "INVALID_ARGUMENT",
            "The input token count (200000) exceeds the maximum number of tokens allowed (131072).",
        ),
        (
            LlmError::Auth {
                status: 401,
                message: "***".into(),
            },
            400,
            "INVALID_ARGUMENT",
            "API key not valid. Please pass a valid API key.",
        ),
        (
            LlmError::ModelNotFound {
                status: Some(404),
                message: "gemini-x".into(),
            },
            404,
            "NOT_FOUND",
            "models/gemini-x is not found for API version v1beta",
        ),
        (
            LlmError::ServiceUnavailable {
                status: Some(503),
                message: String::new(),
            },
            503,
            "UNAVAILABLE",
            "The model is overloaded. Please try again later.",
        ),
        (
            LlmError::ServerTimeout {
                status: Some(504),
                message: String::new(),
            },
            504,
            "DEADLINE_EXCEEDED",
            "Deadline expired",
        ),
        (
            LlmError::StreamTruncated { events_received: 0 },
            500,
            "INTERNAL",
            "An internal error has occurred.",
        ),
    ];
    for (error, status, name, words) in cases {
        assert_envelope(&era, &error, status, name, words);
    }
}

/// `error`'s refusal in `era` has `status`, Google's status `name`, and a message
/// starting with `words`.
fn assert_envelope(era: &Era, error: &LlmError, status: u16, name: &str, words: &str) {
    let (got, body) = errors::refusal(era, error);
    let value: serde_json::Value = serde_json::from_slice(&super::whole_bytes(&body)).unwrap();
    assert_eq!(got, status, "{error:?}");
    assert_eq!(value["error"]["code"], u64::from(status));
    assert_eq!(value["error"]["status"], name);
    let message = value["error"]["message"].as_str().unwrap();
    assert!(message.starts_with(words), "{message}");
}

/// A 429 carries its wait in a `RetryInfo` detail; a bad key its `ErrorInfo`.
#[test]
fn rate_limits_and_bad_keys_carry_their_details() {
    let era = era(Layout::Y2025, Route::default());
    let (_, limited) = errors::refusal(
        &era,
        &LlmError::RateLimit {
            retry_after_ms: Some(34_400),
        },
    );
    let value: serde_json::Value = serde_json::from_slice(&super::whole_bytes(&limited)).unwrap();
    let details = value["error"]["details"].as_array().unwrap();
    assert_eq!(
        details[2]["@type"],
        "type.googleapis.com/google.rpc.RetryInfo"
    );
    assert_eq!(details[2]["retryDelay"], "34.4s");
    assert_eq!(errors::duration_text(38_000), "38s");
    let (_, key) = errors::refusal(
        &era,
        &LlmError::Auth {
            status: 401,
            message: String::new(),
        },
    );
    let value: serde_json::Value = serde_json::from_slice(&super::whole_bytes(&key)).unwrap();
    assert_eq!(value["error"]["details"][0]["reason"], "API_KEY_INVALID");
}

#[test]
fn a_stream_requests_refusal_is_an_array_of_one_error() {
    use crate::network::format::Responder;
    let route = route("/v1beta/models/m:streamGenerateContent", None).unwrap();
    let mut responder = responder(Layout::Y2025, Route::default());
    responder.routed(&route);
    let (status, body) = responder.refusal(
        &LlmError::RateLimit {
            retry_after_ms: None,
        },
        None,
    );
    assert_eq!(status, 429);
    let text = String::from_utf8(body).unwrap();
    assert!(
        text.starts_with("[{\n  \"error\": {\n    \"code\": 429,"),
        "{text}"
    );
    assert!(text.ends_with("}\n]"), "{text}");
}

/// A request with no key is a caller Google cannot identify (403 PERMISSION_DENIED); one
/// with the wrong key is an invalid argument (400 `API_KEY_INVALID`); the right key
/// passes.
#[test]
fn a_missing_key_and_a_wrong_key_are_refused_apart() {
    use crate::network::headers::key_refusal;
    let era = era(Layout::Y2025, Route::default());
    let keyless = HttpRequest {
        headers: Vec::new(),
        ..http(GENERATE, "{}")
    };
    let missing = key_refusal(&GeminiFormat, &keyless, "AIza-test").unwrap();
    assert_envelope(
        &era,
        &missing,
        403,
        "PERMISSION_DENIED",
        "Method doesn't allow unregistered callers",
    );
    let wrong = key_refusal(&GeminiFormat, &http(GENERATE, "{}"), "AIza-other").unwrap();
    assert_envelope(&era, &wrong, 400, "INVALID_ARGUMENT", "API key not valid.");
    assert!(key_refusal(&GeminiFormat, &http(GENERATE, "{}"), "AIza-test").is_none());
}
