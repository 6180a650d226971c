//! The Gemini format on shapes the API really sends: chunks recorded by vercel/ai
//! (`packages/google/src/__fixtures__`, signatures shortened), error bodies quoted in
//! issue threads, decoded under every split into two reads; the request body as the
//! API takes it; one whole client round trip through a scripted transport.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};

use super::{GeminiClient, GeminiConfig, GeminiDecoder, parse_response, request_body};
use crate::env::{Env, SystemEnvironment};
use crate::llm::client::ClientFormat;
use crate::llm::error::LlmError;
use crate::llm::message::{Message, ToolCall, ToolDefinition};
use crate::llm::provider::LanguageModel;
use crate::llm::request::{CompletionRequest, ToolChoice};
use crate::llm::response::{FinishReason, ModelRef};
use crate::llm::transport::{HttpRequest, HttpResponse, Transport, TransportError};
use crate::llm::wire::reader::{Decoded, decode_reads};

fn decode(bytes: &str) -> Decoded {
    let bytes = bytes.as_bytes();
    let whole = decode_reads(GeminiDecoder::new(), [bytes]);
    for cut in 0..=bytes.len() {
        let split = decode_reads(GeminiDecoder::new(), [&bytes[..cut], &bytes[cut..]]);
        assert_eq!(split, whole, "split at byte {cut}");
    }
    whole
}

/// `chunks` framed as `alt=sse` frames them (`data: ` and a blank line).
fn sse(chunks: &[&str]) -> String {
    chunks
        .iter()
        .map(|c| format!("data: {c}\r\n\r\n"))
        .collect()
}

fn model_ref() -> ModelRef {
    ModelRef::new("gemini", "gemini-2.5-flash", 1_048_576, 65_536)
}

/// VERCEL-FIXTURES `google-stream-gemini-3.7-flash-2026-09-16.chunks.txt` (1eea90a0),
/// as recorded (spaces after colons, LF framing), the signature shortened.
const RECORDED: &str = "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"fixture ok\"}],\"role\": \"model\"},\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 7,\"candidatesTokenCount\": 2,\"totalTokenCount\": 103,\"promptTokensDetails\": [{\"modality\": \"TEXT\",\"tokenCount\": 7}],\"thoughtsTokenCount\": 94,\"serviceTier\": \"standard\"},\"modelVersion\": \"gemini-3.7-flash\",\"responseId\": \"WQuqavG5KbfUjMcPuP_n6QI\"}\n\n\
data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"\",\"thoughtSignature\": \"EqkECqYEARFNMg+gQi3aPkE2hRW/Bg4A\"}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 7,\"candidatesTokenCount\": 2,\"totalTokenCount\": 103,\"promptTokensDetails\": [{\"modality\": \"TEXT\",\"tokenCount\": 7}],\"thoughtsTokenCount\": 94,\"serviceTier\": \"standard\"},\"modelVersion\": \"gemini-3.7-flash\",\"responseId\": \"WQuqavG5KbfUjMcPuP_n6QI\"}\n\n";

/// The first chunk of [`RECORDED`], with its blank line: a stream cut before its end.
fn first_chunk() -> &'static str {
    let second = RECORDED[1..]
        .find("data: ")
        .map_or(RECORDED.len(), |i| i + 1);
    &RECORDED[..second]
}

#[test]
fn a_recorded_stream_collects_with_its_thinking_tokens() {
    let decoded = decode(RECORDED);
    let response = decoded.collect("gemini").unwrap();
    assert_eq!(response.text, "fixture ok");
    assert_eq!(response.finish_reason, FinishReason::Stop);
    let usage = response.usage.unwrap();
    // Thoughts are output the API counts apart: 2 + 94, the total's 103 with the prompt.
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.reasoning_tokens
        ),
        (7, 96, Some(94))
    );
    // No end marker: the Done comes from the end of the body.
    assert!(decoded.events.last().unwrap().is_done());
}

/// VERCEL-FIXTURES `google-tool-call.chunks.txt` (6b056ab1): the call whole in one
/// chunk, no id, then `STOP`; a second call added to show parallel numbering, and a
/// thought part (`thought: true`, PYTHON-GENAI `Part.thought`).
#[test]
fn a_tool_call_stream_numbers_calls_and_ends_as_tool_calls() {
    let bytes = sse(&[
        r#"{"candidates":[{"content":{"parts":[{"text":"Checking","thought":true}],"role":"model"},"index":0}]}"#,
        r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"weather","args":{"location":"San Francisco"}},"thoughtSignature":"EqUCCqICAb4+"},{"functionCall":{"name":"weather","args":{"location":"Paris"},"id":"fc-2"}}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":29,"candidatesTokenCount":15,"totalTokenCount":89,"thoughtsTokenCount":45},"modelVersion":"gemini-3-pro-preview","responseId":"b36LacjwM668nsEP2tbsgQQ"}"#,
        r#"{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":29,"candidatesTokenCount":15,"totalTokenCount":89,"thoughtsTokenCount":45},"modelVersion":"gemini-3-pro-preview","responseId":"b36LacjwM668nsEP2tbsgQQ"}"#,
    ]);
    let response = decode(&bytes).collect("gemini").unwrap();
    assert_eq!(response.reasoning.as_deref(), Some("Checking"));
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCall::new(
                "gemini-call-0",
                "weather",
                json!({"location": "San Francisco"})
            ),
            ToolCall::new("fc-2", "weather", json!({"location": "Paris"})),
        ]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage.unwrap().completion_tokens, 60);
}

#[test]
fn an_error_chunk_keeps_what_came_before_and_is_typed() {
    // PYTHON-GENAI `_api_client.py` raises a chunk starting `{"error":` by its code;
    // the envelope is Google's (VERCEL-FIXTURES `google-429-retry-info.json`).
    let error = r#"{"error":{"code":429,"message":"You exceeded your current quota, please check your plan.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.5s"}]}}"#;
    let bytes = format!("{}{}", first_chunk(), sse(&[error]));
    let decoded = decode(&bytes);
    assert_eq!(
        decoded.events,
        vec![crate::llm::event::StreamEvent::text("fixture ok")]
    );
    assert_eq!(
        decoded.error,
        Some(LlmError::RateLimit {
            retry_after_ms: Some(1500)
        })
    );
}

#[test]
fn a_stream_without_a_finish_reason_is_truncated_and_a_blocked_prompt_is_filtered() {
    let cut = first_chunk();
    assert!(matches!(
        decode(cut).error,
        Some(LlmError::StreamTruncated { events_received: 1 })
    ));
    // VERCEL-FIXTURES `issue-19758-prompt-block.chunks.txt` (fd803aaa): one chunk, no
    // candidates.
    let blocked = sse(&[
        r#"{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9,"promptTokensDetails":[{"modality":"TEXT","tokenCount":9}],"serviceTier":"standard"},"modelVersion":"gemini-3.7-flash","responseId":"EXCPatOAKMrQjMcPteHVmQo"}"#,
    ]);
    let response = decode(&blocked).collect("gemini").unwrap();
    assert_eq!(response.finish_reason, FinishReason::ContentFilter);
    assert!(!response.finish_reason.is_clean());
    assert_eq!(response.usage.unwrap().prompt_tokens, 9);
}

#[test]
fn whole_bodies_parse_calls_thoughts_and_usage() {
    // VERCEL-FIXTURES `issue-19822-complete-usage.json` (b1de6857), with a thought part
    // and two parallel calls added.
    let body = json!({
        "candidates": [{"content": {"parts": [
            {"text": "Let me think.", "thought": true},
            {"text": "42"},
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
            {"functionCall": {"name": "get_weather", "args": {"city": "Tokyo"}}}
        ], "role": "model"}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 19, "cachedContentTokenCount": 3, "candidatesTokenCount": 4,
            "toolUsePromptTokenCount": 63, "thoughtsTokenCount": 56, "totalTokenCount": 142},
        "modelVersion": "gemini-2.5-flash", "responseId": "sanitized-issue-19822-generate"
    });
    let response = parse_response(&body.to_string(), "gemini-2.5-flash").unwrap();
    assert_eq!(
        (response.text.as_str(), response.reasoning.as_deref()),
        ("42", Some("Let me think."))
    );
    let ids: Vec<&str> = response.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["gemini-call-0", "gemini-call-1"]);
    assert_eq!(response.tool_calls[1].arguments, json!({"city": "Tokyo"}));
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    let usage = response.usage.unwrap();
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cached_prompt_tokens,
            usage.reasoning_tokens
        ),
        (82, 60, Some(3), Some(56))
    );
    assert_eq!(usage.total(), 142);
}

#[test]
fn finish_reasons_map_and_unknown_or_missing_ones_are_never_clean() {
    for (reason, expected) in [
        (Some("STOP"), FinishReason::Stop),
        (Some("MAX_TOKENS"), FinishReason::Length),
        (Some("SAFETY"), FinishReason::ContentFilter),
        (Some("RECITATION"), FinishReason::ContentFilter),
        (Some("PROHIBITED_CONTENT"), FinishReason::ContentFilter),
        (Some("BLOCKLIST"), FinishReason::ContentFilter),
        (Some("SPII"), FinishReason::ContentFilter),
        (Some("LANGUAGE"), FinishReason::ContentFilter),
        (Some("IMAGE_SAFETY"), FinishReason::ContentFilter),
        (
            Some("MALFORMED_FUNCTION_CALL"),
            FinishReason::Other("MALFORMED_FUNCTION_CALL".into()),
        ),
        (Some("OTHER"), FinishReason::Other("OTHER".into())),
        (
            Some("FINISH_REASON_UNSPECIFIED"),
            FinishReason::Other("FINISH_REASON_UNSPECIFIED".into()),
        ),
        (Some("BRAND_NEW"), FinishReason::Other("BRAND_NEW".into())),
        (None, FinishReason::Missing),
    ] {
        let mut candidate =
            json!({"content": {"parts": [{"text": "x"}], "role": "model"}, "index": 0});
        if let Some(reason) = reason {
            candidate["finishReason"] = json!(reason);
        }
        let body = json!({"candidates": [candidate]}).to_string();
        let response = parse_response(&body, "gemini").unwrap();
        assert_eq!(response.finish_reason, expected, "{reason:?}");
        assert_eq!(
            response.finish_reason.is_clean(),
            matches!(reason, Some("STOP" | "MAX_TOKENS")),
            "{reason:?}"
        );
    }
    // VERCEL-FIXTURES `issue-19758-prompt-block.json`: a blocked prompt, no candidates.
    let blocked = r#"{"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9}}"#;
    let response = parse_response(blocked, "gemini").unwrap();
    assert_eq!(
        (response.text.as_str(), response.finish_reason),
        ("", FinishReason::ContentFilter)
    );
    assert!(matches!(
        parse_response("{}", "gemini"),
        Err(LlmError::InvalidResponse { .. })
    ));
}

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition::new(
        name,
        "Weather by city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}),
    )
}

#[test]
fn requests_carry_system_tools_results_and_settings() {
    let request = CompletionRequest::new(vec![
        Message::system("Be brief."),
        Message::user("Weather in Paris and Tokyo?"),
        Message::assistant_tool_calls(
            "Checking.",
            vec![
                ToolCall::new("gemini-call-0", "weather", json!({"city": "Paris"})),
                ToolCall::new("fc-2", "weather", json!({"city": "Tokyo"})),
            ],
        ),
        Message::tool_result("gemini-call-0", "sunny", true),
        Message::tool_result("fc-2", "no such city", false),
    ])
    .with_tools(vec![tool("weather")])
    .with_tool_choice(ToolChoice::Tool("weather".into()))
    .with_temperature(0.5)
    .with_max_tokens(256)
    .with_stop(vec!["END".into(), String::new()]);
    let body = request_body(&request).unwrap();
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "Be brief."}]})
    );
    let roles: Vec<&str> = body["contents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["role"].as_str().unwrap())
        .collect();
    // Both results in one user turn.
    assert_eq!(roles, ["user", "model", "user"]);
    let model = &body["contents"][1]["parts"];
    assert_eq!(model[0], json!({"text": "Checking."}));
    // A synthetic id is not sent back; the API's own is; the first call carries the
    // documented stand-in signature.
    assert_eq!(
        model[1],
        json!({"functionCall": {"name": "weather", "args": {"city": "Paris"}}, "thoughtSignature": "skip_thought_signature_validator"})
    );
    assert_eq!(model[2]["functionCall"]["id"], "fc-2");
    let results = &body["contents"][2]["parts"];
    assert_eq!(
        results[0],
        json!({"functionResponse": {"name": "weather", "response": {"output": "sunny"}}})
    );
    assert_eq!(
        results[1],
        json!({"functionResponse": {"name": "weather", "id": "fc-2", "response": {"error": "no such city"}}})
    );
    let declaration = &body["tools"][0]["functionDeclarations"][0];
    assert_eq!(
        declaration["parametersJsonSchema"]["additionalProperties"],
        false
    );
    assert_eq!(
        body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["weather"]}})
    );
    assert_eq!(
        body["generationConfig"],
        json!({"temperature": 0.5, "maxOutputTokens": 256, "stopSequences": ["END"]})
    );
}

#[test]
fn structured_output_tool_modes_and_an_orphan_result() {
    let schema =
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let request =
        CompletionRequest::new(vec![Message::user("n?")]).with_output_schema("n", schema.clone());
    let body = request_body(&request).unwrap();
    assert_eq!(
        body["generationConfig"],
        json!({"responseMimeType": "application/json", "responseJsonSchema": schema})
    );
    assert!(body.get("tools").is_none() && body.get("systemInstruction").is_none());
    let json_mode =
        request_body(&CompletionRequest::new(vec![Message::user("q")]).with_json_output()).unwrap();
    assert_eq!(
        json_mode["generationConfig"]["responseMimeType"],
        "application/json"
    );
    for (choice, mode) in [
        (None, None),
        (Some(ToolChoice::Auto), Some("AUTO")),
        (Some(ToolChoice::None), Some("NONE")),
        (Some(ToolChoice::Required), Some("ANY")),
    ] {
        let mut request =
            CompletionRequest::new(vec![Message::user("q")]).with_tools(vec![tool("t")]);
        request.tool_choice = choice;
        let body = request_body(&request).unwrap();
        assert_eq!(
            body.pointer("/toolConfig/functionCallingConfig/mode")
                .and_then(Value::as_str),
            mode
        );
    }
    let orphan = CompletionRequest::new(vec![
        Message::user("q"),
        Message::tool_result("nope", "x", true),
    ]);
    assert!(
        matches!(request_body(&orphan), Err(LlmError::InvalidPrompt { ref reason }) if reason.contains("\"nope\""))
    );
}

#[test]
fn paths_take_the_model_as_one_segment_and_the_key_as_a_header() {
    let config = GeminiConfig::new(
        crate::llm::Connection::new("https://generativelanguage.googleapis.com/")
            .with_api_key("AIza-test-key-0001"),
        model_ref(),
    );
    let request =
        CompletionRequest::new(vec![Message::user("hi")]).with_model("models/gemini-2.5-pro");
    let http = config.http_request(&request, true).unwrap();
    assert_eq!(
        http.url,
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
    assert_eq!(http.header("x-goog-api-key"), Some("AIza-test-key-0001"));
    assert_eq!(
        config.path("a/b:c", false),
        "/v1beta/models/a%2Fb%3Ac:generateContent"
    );
    // A base that already names the version; a key given in the URL stays after the path.
    let versioned = GeminiConfig::new(
        "https://proxy.example/v1beta?key=AIza-in-url-77",
        model_ref(),
    );
    let http = versioned
        .http_request(&CompletionRequest::new(vec![Message::user("hi")]), true)
        .unwrap();
    assert_eq!(
        http.url,
        "https://proxy.example/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key=AIza-in-url-77"
    );
    assert!(!format!("{versioned:?} {http:?}").contains("AIza-in-url-77"));
    assert!(
        !versioned
            .redactor()
            .redact("bad key AIza-in-url-77")
            .contains("AIza-in-url-77")
    );
}

/// Replays one scripted response per request and keeps the requests.
#[derive(Debug)]
struct Scripted {
    status: u16,
    content_type: &'static str,
    body: String,
    requests: Mutex<Vec<HttpRequest>>,
}

impl Scripted {
    fn new(status: u16, content_type: &'static str, body: impl Into<String>) -> Arc<Self> {
        Arc::new(Self {
            status,
            content_type,
            body: body.into(),
            requests: Mutex::default(),
        })
    }
}

#[async_trait]
impl Transport for Scripted {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        if let Ok(mut requests) = self.requests.lock() {
            requests.push(request);
        }
        // Seven-byte reads: every chunk crosses an event boundary somewhere.
        let chunks: Vec<Result<Vec<u8>, TransportError>> = self
            .body
            .as_bytes()
            .chunks(7)
            .map(|c| Ok(c.to_vec()))
            .collect();
        Ok(HttpResponse {
            status: self.status,
            headers: vec![("content-type".into(), self.content_type.into())],
            body: futures::stream::iter(chunks).boxed(),
        })
    }
}

fn client(transport: Arc<Scripted>, key: &str) -> GeminiClient {
    let env: Env = Arc::new(SystemEnvironment::new());
    let connection =
        crate::llm::Connection::new("https://generativelanguage.googleapis.com").with_api_key(key);
    GeminiClient::new(GeminiConfig::new(connection, model_ref()), transport, env)
}

#[tokio::test]
async fn a_client_completes_and_streams_through_a_transport() {
    let whole = r#"{"candidates":[{"content":{"parts":[{"text":"fixture ok"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":2,"totalTokenCount":9}}"#;
    let transport = Scripted::new(200, "application/json; charset=UTF-8", whole);
    let request = CompletionRequest::new(vec![Message::user("hi")]);
    let response = client(transport.clone(), "AIza-k1")
        .complete(&request)
        .await
        .unwrap();
    assert_eq!(
        (response.text.as_str(), response.finish_reason),
        ("fixture ok", FinishReason::Stop)
    );
    let sent = transport.requests.lock().unwrap()[0].clone();
    assert!(
        sent.url
            .ends_with("/v1beta/models/gemini-2.5-flash:generateContent"),
        "{}",
        sent.url
    );
    assert_eq!(
        serde_json::from_slice::<Value>(&sent.body).unwrap()["contents"][0]["parts"][0]["text"],
        "hi"
    );

    let transport = Scripted::new(200, "text/event-stream", RECORDED);
    let events: Vec<_> = client(transport, "AIza-k1")
        .stream(&request)
        .await
        .unwrap()
        .collect()
        .await;
    let collected = crate::llm::StreamCollector::collect_items("gemini", events).unwrap();
    assert_eq!(
        (collected.text.as_str(), collected.finish_reason),
        ("fixture ok", FinishReason::Stop)
    );
}

#[tokio::test]
async fn a_key_the_server_echoes_never_reaches_the_caller() {
    // google/timesketch#3703: the 400 for a bad key echoes it in a DebugInfo detail.
    let key = "AIzaSyEchoedKey-4411-abcdefgh";
    let body = format!(
        r#"{{"error":{{"code":400,"message":"API key not valid. Please pass a valid API key. ({key})","status":"INVALID_ARGUMENT","details":[{{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}},{{"@type":"type.googleapis.com/google.rpc.DebugInfo","detail":"Invalid API key: {key}"}}]}}}}"#
    );
    let transport = Scripted::new(400, "application/json", body);
    let request = CompletionRequest::new(vec![Message::user("hi")]);
    let error = client(transport, key).complete(&request).await.unwrap_err();
    assert!(
        matches!(error, LlmError::Auth { status: 400, .. }),
        "{error:?}"
    );
    let shown = format!("{error} {error:?}");
    assert!(
        !shown.contains(key) && shown.contains("[REDACTED]"),
        "{shown}"
    );
}
