//! The embedding clients against canned server answers: requests as sent, answers
//! decoded in both encodings, every malformed answer a typed error naming its field,
//! refusals classified, keys never in errors.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};

use super::*;
use crate::env::SystemEnvironment;
use crate::llm::transport::{HttpResponse, TransportError};

const KEY: &str = "sk-embed-test-key-99183";

/// A server that answers every request with one canned response, and keeps the requests.
#[derive(Debug)]
struct Canned {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
    seen: Mutex<Vec<HttpRequest>>,
}

impl Canned {
    fn new(status: u16, body: impl Into<String>) -> Arc<Self> {
        Self::with_headers(status, Vec::new(), body)
    }

    fn with_headers(
        status: u16,
        headers: Vec<(String, String)>,
        body: impl Into<String>,
    ) -> Arc<Self> {
        Arc::new(Self {
            status,
            headers,
            body: body.into(),
            seen: Mutex::new(Vec::new()),
        })
    }

    fn sent(&self) -> Value {
        let seen = self.seen.lock().unwrap();
        serde_json::from_slice(&seen.last().unwrap().body).unwrap()
    }
}

#[async_trait]
impl Transport for Canned {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        self.seen.lock().unwrap().push(request);
        let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        headers.extend(self.headers.iter().cloned());
        Ok(HttpResponse {
            status: self.status,
            headers,
            body: futures::stream::iter([Ok(self.body.clone().into_bytes())]).boxed(),
        })
    }
}

fn openai(server: Arc<Canned>, encoding: EncodingFormat) -> OpenAiEmbedder {
    let config = OpenAiEmbedConfig::new(
        Connection::new("https://api.openai.example/v1").with_api_key(KEY),
        "text-embedding-3-small",
    )
    .with_encoding(encoding);
    EmbedClient::new(config, server, Arc::new(SystemEnvironment::new()))
}

fn ollama(server: Arc<Canned>) -> OllamaEmbedder {
    let config = OllamaEmbedConfig::new("http://localhost:11434", "nomic-embed-text");
    EmbedClient::new(config, server, Arc::new(SystemEnvironment::new()))
}

fn two() -> EmbeddingRequest {
    EmbeddingRequest::new("", vec!["a cat".into(), "a dog".into()])
}

fn reason(error: LlmError) -> String {
    match error {
        LlmError::InvalidResponse { reason, .. } => reason,
        other => panic!("not an InvalidResponse: {other:?}"),
    }
}

#[tokio::test]
async fn openai_asks_for_base64_by_default_and_decodes_it_in_index_order() {
    let body = json!({
        "object": "list",
        "data": [
            {"object": "embedding", "index": 1, "embedding": encode_base64_f32(&[0.0, 1.0])},
            {"object": "embedding", "index": 0, "embedding": encode_base64_f32(&[1.0, 0.0])},
        ],
        "model": "text-embedding-3-small",
        "usage": {"prompt_tokens": 4, "total_tokens": 4},
    });
    let server = Canned::new(200, body.to_string());
    let client = openai(server.clone(), EncodingFormat::default());
    let out = client.embed(&two().with_dimensions(2)).await.unwrap();
    assert_eq!(out.vectors, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
    assert_eq!(
        (out.input_tokens, out.model.as_str()),
        (4, "text-embedding-3-small")
    );
    let sent = server.sent();
    assert_eq!(sent["encoding_format"], "base64");
    assert_eq!(sent["dimensions"], 2);
    assert_eq!(sent["input"], json!(["a cat", "a dog"]));
    let url = &server.seen.lock().unwrap()[0].url;
    assert_eq!(url, "https://api.openai.example/v1/embeddings");
}

#[tokio::test]
async fn openai_float_and_ollama_arrays_decode_to_the_same_vectors() {
    let float = json!({"object": "list", "data": [
        {"object": "embedding", "index": 0, "embedding": [0.5, -0.25]},
        {"object": "embedding", "index": 1, "embedding": [0.125, 1.0]}],
        "model": "m", "usage": {"prompt_tokens": 2, "total_tokens": 2}});
    let server = Canned::new(200, float.to_string());
    let from_openai = openai(server.clone(), EncodingFormat::Float)
        .embed(&two())
        .await
        .unwrap();
    assert_eq!(server.sent()["encoding_format"], "float");
    let native = json!({"model": "m", "embeddings": [[0.5, -0.25], [0.125, 1.0]],
        "total_duration": 14_000_000, "load_duration": 1_000, "prompt_eval_count": 2});
    let server = Canned::new(200, native.to_string());
    let from_ollama = ollama(server.clone()).embed(&two()).await.unwrap();
    assert_eq!(from_openai.vectors, from_ollama.vectors);
    assert_eq!(from_ollama.input_tokens, 2);
    assert_eq!(server.sent()["model"], "nomic-embed-text");
}

#[tokio::test]
async fn malformed_answers_are_invalid_responses_naming_the_field() {
    let item = |i: usize, v: Value| json!({"object": "embedding", "index": i, "embedding": v});
    let cases = [
        (
            json!([item(0, json!([1.0, 0.0]))]),
            "1 embeddings for 2 inputs",
        ),
        (
            json!([item(0, json!([1.0, 0.0])), item(1, json!([1.0]))]),
            "data[1].embedding: 1 dimensions, expected 2",
        ),
        (
            json!([item(0, json!([1.0, 0.0])), item(0, json!([1.0, 0.0]))]),
            "appears twice",
        ),
        (
            json!([item(0, json!([1.0, 0.0])), item(1, json!("AAA"))]),
            "data[1].embedding",
        ),
        (
            json!([item(0, json!([1.0, "x"])), item(1, json!([1.0, 0.0]))]),
            "data[0].embedding[1]",
        ),
    ];
    for (data, expected) in cases {
        let body = json!({"object": "list", "data": data, "model": "m"});
        let error = openai(Canned::new(200, body.to_string()), EncodingFormat::Float)
            .embed(&two().with_dimensions(2))
            .await
            .unwrap_err();
        let text = reason(error);
        assert!(text.contains(expected), "{text} lacks {expected}");
    }
    let wrong = json!({"model": "m", "embeddings": [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]});
    let error = ollama(Canned::new(200, wrong.to_string()))
        .embed(&two().with_dimensions(2))
        .await
        .unwrap_err();
    assert_eq!(reason(error), "embeddings[0]: 3 dimensions, expected 2");
}

#[test]
fn non_finite_numbers_and_ragged_vectors_are_refused() {
    let field = |i: usize| format!("v[{i}]");
    let nan = check_vectors(&[vec![1.0, f32::NAN]], 1, None, field).unwrap_err();
    assert!(reason(nan).contains("v[0][1]: NaN is not a finite number"));
    let ragged = check_vectors(&[vec![1.0, 0.0], vec![1.0]], 2, None, field).unwrap_err();
    assert_eq!(reason(ragged), "v[1]: 1 dimensions, expected 2");
    let empty = check_vectors(&[vec![]], 1, None, field).unwrap_err();
    assert!(reason(empty).contains("0 dimensions"));
    assert_eq!(
        decode_base64_f32(&encode_base64_f32(&[1.5, -2.0])),
        Ok(vec![1.5, -2.0])
    );
    assert!(
        decode_base64_f32("AAAAAAA=")
            .unwrap_err()
            .contains("4-byte")
    );
}

#[tokio::test]
async fn refusals_are_classified_and_never_carry_the_key() {
    let limited = Canned::with_headers(
        429,
        vec![("retry-after".into(), "2".into())],
        json!({"error": {"message": format!("Rate limit reached for key {KEY}"), "type": "requests", "code": "rate_limit_exceeded"}}).to_string(),
    );
    let error = openai(limited, EncodingFormat::Float)
        .embed(&two())
        .await
        .unwrap_err();
    assert_eq!(
        error,
        LlmError::RateLimit {
            retry_after_ms: Some(2_000)
        }
    );
    let echoed = Canned::new(
        400,
        json!({"error": {"message": format!("'$.input' is invalid; key {KEY}"), "type": "invalid_request_error", "param": null, "code": null}}).to_string(),
    );
    let error = openai(echoed, EncodingFormat::Float)
        .embed(&two())
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            LlmError::BadRequest {
                status: Some(400),
                ..
            }
        ),
        "{error:?}"
    );
    assert!(!error.to_string().contains(KEY), "{error}");
    let down = Canned::new(503, "{\"error\":\"server busy\"}");
    let error = ollama(down).embed(&two()).await.unwrap_err();
    assert!(
        matches!(error, LlmError::ServiceUnavailable { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn requests_no_server_could_answer_never_leave_the_client() {
    let server = Canned::new(200, "{}");
    let client = openai(server.clone(), EncodingFormat::Float);
    for request in [
        EmbeddingRequest::new("m", Vec::new()),
        two().with_dimensions(0),
        EmbeddingRequest::new("m", vec![String::new(); EMBED_INPUTS_MAX + 1]),
    ] {
        let error = client.embed(&request).await.unwrap_err();
        assert!(matches!(error, LlmError::InvalidPrompt { .. }), "{error:?}");
    }
    assert!(server.seen.lock().unwrap().is_empty());
}

const GOOGLE_KEY: &str = "AIza-embed-test-key-5521";

fn gemini(server: Arc<Canned>) -> GeminiEmbedder {
    let config = GeminiEmbedConfig::new(
        Connection::new("https://generativelanguage.example").with_api_key(GOOGLE_KEY),
        "gemini-embedding-001",
    );
    EmbedClient::new(config, server, Arc::new(SystemEnvironment::new()))
}

fn seen_request(server: &Canned) -> HttpRequest {
    server.seen.lock().unwrap().last().unwrap().clone()
}

#[tokio::test]
async fn gemini_embeds_one_text_with_embed_content_and_the_key_in_its_header() {
    let body = json!({"embedding": {"values": [0.6, 0.8]}});
    let server = Canned::new(200, body.to_string());
    let request = EmbeddingRequest::new("", vec!["a cat".into()]).with_dimensions(2);
    let out = gemini(server.clone()).embed(&request).await.unwrap();
    assert_eq!(out.vectors, vec![vec![0.6, 0.8]]);
    assert_eq!(out.model, "gemini-embedding-001");
    let sent = seen_request(&server);
    assert_eq!(
        sent.url,
        "https://generativelanguage.example/v1beta/models/gemini-embedding-001:embedContent"
    );
    assert!(
        sent.headers
            .iter()
            .any(|(name, value)| name == "x-goog-api-key" && value == GOOGLE_KEY)
    );
    assert_eq!(
        server.sent(),
        json!({"model": "models/gemini-embedding-001",
            "content": {"parts": [{"text": "a cat"}]}, "outputDimensionality": 2})
    );
    // Review finding: the answer named the client's default model, not the one asked.
    let asked = EmbeddingRequest::new("text-embedding-004", vec!["a cat".into()]);
    let out = gemini(server.clone()).embed(&asked).await.unwrap();
    assert_eq!(out.model, "text-embedding-004");
}

#[tokio::test]
async fn gemini_embeds_several_texts_with_one_batch_request_each_naming_the_model() {
    let body = json!({"embeddings": [{"values": [1.0, 0.0]}, {"values": [0.0, 1.0]}]});
    let server = Canned::new(200, body.to_string());
    let config = GeminiEmbedConfig::new("https://g.example/v1beta", "models/text-embedding-004")
        .with_task_type("RETRIEVAL_DOCUMENT");
    let client = EmbedClient::new(config, server.clone(), Arc::new(SystemEnvironment::new()));
    let out = client.embed(&two()).await.unwrap();
    assert_eq!(out.vectors, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
    assert_eq!(
        seen_request(&server).url,
        "https://g.example/v1beta/models/text-embedding-004:batchEmbedContents"
    );
    let one = |text: &str| {
        json!({"model": "models/text-embedding-004", "taskType": "RETRIEVAL_DOCUMENT",
            "content": {"parts": [{"text": text}]}})
    };
    assert_eq!(
        server.sent(),
        json!({"requests": [one("a cat"), one("a dog")]})
    );
}

#[tokio::test]
async fn gemini_malformed_answers_name_the_json_path() {
    let values = |n: usize| json!({"values": vec![0.5; n]});
    let three = EmbeddingRequest::new("", vec!["a".into(), "b".into(), "c".into()]);
    let cases = [
        (
            json!({"embeddings": [values(512), values(512), values(511)]}),
            three.clone().with_dimensions(512),
            "embeddings[2].values: 511 dimensions, expected 512",
        ),
        (
            json!({"embeddings": [values(2), {"value": [1.0]}, values(2)]}),
            three.clone(),
            "embeddings[1].values: missing",
        ),
        (
            json!({"embeddings": [values(2), values(2)]}),
            three.clone(),
            "2 embeddings for 3 inputs",
        ),
        (
            json!({"embeddings": [values(2), values(2), {"values": [1.0, "x"]}]}),
            three,
            "embeddings[2].values[1]",
        ),
        (
            json!({"embedding": {"values": [1.0]}}),
            EmbeddingRequest::new("", vec!["a".into()]).with_dimensions(2),
            "embedding.values: 1 dimensions, expected 2",
        ),
        (
            json!({}),
            EmbeddingRequest::new("", vec!["a".into()]),
            "embeddings: missing",
        ),
    ];
    for (body, request, expected) in cases {
        let error = gemini(Canned::new(200, body.to_string()))
            .embed(&request)
            .await
            .unwrap_err();
        let text = reason(error);
        assert!(text.contains(expected), "{text} lacks {expected}");
    }
}

#[tokio::test]
async fn gemini_refusals_are_typed_and_batches_over_the_limit_stay_unsent() {
    let limited = json!({"error": {"code": 429, "message": "You exceeded your current quota",
        "status": "RESOURCE_EXHAUSTED", "details": [
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"}]}});
    let error = gemini(Canned::new(429, limited.to_string()))
        .embed(&two())
        .await
        .unwrap_err();
    assert_eq!(
        error,
        LlmError::RateLimit {
            retry_after_ms: Some(1_500)
        }
    );
    let bad = json!({"error": {"code": 400, "status": "INVALID_ARGUMENT",
        "message": format!("API key {GOOGLE_KEY} is odd")}});
    let error = gemini(Canned::new(400, bad.to_string()))
        .embed(&two())
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::BadRequest { .. }), "{error:?}");
    assert!(!error.to_string().contains(GOOGLE_KEY), "{error}");
    let server = Canned::new(200, "{}");
    let many = vec!["t".to_owned(); GEMINI_BATCH_REQUESTS_MAX + 1];
    let error = gemini(server.clone())
        .embed(&EmbeddingRequest::new("", many))
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::InvalidPrompt { .. }), "{error:?}");
    assert!(server.seen.lock().unwrap().is_empty());
}
