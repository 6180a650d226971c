//! The Gemini API's facts beyond request and response: its paths from the root
//! (`/v1beta/models/…`, no `/v1` root), Google's model list and error envelope, the key
//! in `x-goog-api-key`, and umi-core's Gemini client.

use std::sync::Arc;

use serde_json::{Value, json};
use umi_core::env::Env;
use umi_core::llm::gemini::{GeminiClient, GeminiConfig, GeminiDecoder};
use umi_core::llm::transport::{HttpRequest, Transport};
use umi_core::llm::wire::reader::Decoded;
use umi_core::llm::{CompletionResponse, Connection, LanguageModel, LlmError, ModelRef};

use super::GeminiFormat;
use super::errors::status_name;
use crate::network::clients::ClientOptions;
use crate::network::embed::{EmbedWire, GeminiEmbeddings};
use crate::network::profile::Profile;
use crate::network::surface::{Surface, decode_with};

impl Surface for GeminiFormat {
    fn api_root(&self) -> &'static str {
        ""
    }

    /// GEMINI-REST `models.list` under `v1`, the version google-genai 3 calls (a
    /// server lists under `v1beta` too; one path is served).
    fn models_path(&self) -> &'static str {
        "/v1/models"
    }

    /// GEMINI-REST `ListModelsResponse` and `Model`: each `models/{name}` with its
    /// display name and the methods it supports.
    fn model_list(&self, names: &[String]) -> Value {
        json!({
            "models": names.iter().map(|name| json!({
                "name": format!("models/{name}"),
                "version": "001",
                "displayName": name,
                "description": "A model simulated by Umi.",
                "supportedGenerationMethods": ["generateContent", "countTokens"],
            })).collect::<Vec<_>>(),
        })
    }

    /// `/v1/models` is OpenAI's and Anthropic's path too: Google's SDKs send the key in
    /// `x-goog-api-key`, which no other client sends.
    fn listing_header(&self) -> Option<&'static str> {
        Some("x-goog-api-key")
    }

    /// Google's envelope (GEMINI-TROUBLE): `{"error": {code, message, status}}`.
    fn own_error(&self, status: u16, message: &str) -> Value {
        json!({"error": {"code": status, "message": message, "status": status_name(status)}})
    }

    /// GEMINI-REST: the key in `x-goog-api-key` (what the SDKs send; `?key=` works too).
    fn credential(&self, _profile: Profile, key: &str) -> Option<(String, String)> {
        Some(("x-goog-api-key".to_owned(), key.to_owned()))
    }

    /// The method says (`:streamGenerateContent`), never the body.
    fn streams_by_default(&self) -> bool {
        false
    }

    fn client(
        &self,
        connection: Connection,
        model_ref: ModelRef,
        _options: &ClientOptions,
        transport: Arc<dyn Transport>,
        env: Env,
    ) -> Arc<dyn LanguageModel> {
        let config = GeminiConfig::new(connection, model_ref);
        Arc::new(GeminiClient::new(config, transport, env))
    }

    fn parse_as_client(&self, body: &str) -> Result<CompletionResponse, LlmError> {
        umi_core::llm::gemini::parse_response(body, "")
    }

    fn decode_as_client(&self, reads: &[&[u8]]) -> Decoded {
        decode_with(GeminiDecoder::new(), reads)
    }

    /// `:embedContent` and `:batchEmbedContents` (GEMINI-REST).
    fn embeddings(&self) -> Option<&'static dyn EmbedWire> {
        Some(&GeminiEmbeddings)
    }

    /// Its own list: the eras, function calls, safety ratings, `RetryInfo`.
    fn shape_marks(&self, _profile: Profile) -> Vec<&'static str> {
        super::GEMINI_MARKS.to_vec()
    }

    /// Thoughts stream only to a request that asks (`thinkingConfig.includeThoughts`,
    /// GEMINI-REST), which Umi's client does not.
    fn streams_reasoning(&self, _profile: Profile) -> bool {
        false
    }

    /// 429 `RESOURCE_EXHAUSTED` with `RetryInfo` (GEMINI-TROUBLE).
    fn rate_limits(&self, _profile: Profile) -> bool {
        true
    }

    /// `x-goog-api-key`, or `?key=` in the query (GEMINI-REST).
    fn presented_key(&self, request: &HttpRequest) -> Option<String> {
        request
            .header("x-goog-api-key")
            .map(str::to_owned)
            .or_else(|| super::query_key(&request.url))
    }

    /// The key itself is presented.
    fn admits_key(&self, presented: &str, key: &str) -> bool {
        presented == key
    }

    /// No source shows a CDN's own page in front of it: nginx's, as for every server without one.
    fn behind_cdn(&self, _profile: Profile) -> bool {
        false
    }

    /// 404 `NOT_FOUND` for an unknown model (GEMINI-TROUBLE).
    fn checks_model(&self, _profile: Profile) -> bool {
        true
    }

    /// `toolConfig.functionCallingConfig.mode: ANY` answers with a call like any other.
    fn serves_required_tool_choice(&self, _profile: Profile) -> bool {
        true
    }

    /// 404 `NOT_FOUND` `models/x is not found for API version v1beta, …` (quoted in
    /// agent logs; see `errors.rs`).
    fn model_not_found_sourced(&self, _profile: Profile) -> bool {
        true
    }
}
