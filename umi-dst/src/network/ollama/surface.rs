//! Ollama's native API's facts beyond request and response: its paths from the root
//! (`/api/chat`, `/api/tags`), its `{"error": "..."}` envelope, no key, streaming by
//! default, and umi-core's Ollama client.

use std::sync::Arc;

use serde_json::{Value, json};
use sha2::Digest;
use umi_core::env::Env;
use umi_core::llm::ollama::{NdjsonDecoder, OllamaClient, OllamaConfig};
use umi_core::llm::transport::{HttpRequest, Transport};
use umi_core::llm::wire::reader::Decoded;
use umi_core::llm::{CompletionResponse, Connection, LanguageModel, LlmError, ModelRef};

use super::OllamaFormat;
use crate::network::clients::ClientOptions;
use crate::network::embed::{EmbedWire, OllamaEmbeddings};
use crate::network::profile::Profile;
use crate::network::surface::{Surface, bearer, decode_with};

impl Surface for OllamaFormat {
    fn api_root(&self) -> &'static str {
        ""
    }

    fn models_path(&self) -> &'static str {
        "/api/tags"
    }

    /// Ollama's `GET /api/tags` (ollama/ollama docs/api.md, "List Local Models").
    fn model_list(&self, names: &[String]) -> Value {
        json!({"models": names.iter().map(|m| json!({
            "name": m, "model": m, "modified_at": "2024-01-01T00:00:00Z", "size": 0,
            "digest": umi_core::hex::lower(&sha2::Sha256::digest(m.as_bytes())),
            "details": {"format": "gguf", "family": "umi", "parameter_size": "", "quantization_level": ""},
        })).collect::<Vec<_>>()})
    }

    fn listing_header(&self) -> Option<&'static str> {
        None
    }

    /// Ollama's `{"error": "..."}` (ollama/ollama server/routes.go).
    fn own_error(&self, _status: u16, message: &str) -> Value {
        json!({"error": message})
    }

    /// Ollama's native API takes no key.
    fn credential(&self, _profile: Profile, _key: &str) -> Option<(String, String)> {
        None
    }

    /// `stream` defaults to true (ollama/ollama docs/api.md, "Generate a chat completion").
    fn streams_by_default(&self) -> bool {
        true
    }

    fn client(
        &self,
        mut connection: Connection,
        model_ref: ModelRef,
        _options: &ClientOptions,
        transport: Arc<dyn Transport>,
        env: Env,
    ) -> Arc<dyn LanguageModel> {
        // Ollama's native API takes no key (see `ClientOptions::api_key`).
        connection.api_key = None;
        let config = OllamaConfig::new(connection, model_ref);
        Arc::new(OllamaClient::new(config, transport, env))
    }

    fn parse_as_client(&self, body: &str) -> Result<CompletionResponse, LlmError> {
        umi_core::llm::ollama::parse_response(body, "")
    }

    fn decode_as_client(&self, reads: &[&[u8]]) -> Decoded {
        decode_with(NdjsonDecoder::new(), reads)
    }

    fn embeddings(&self) -> Option<&'static dyn EmbedWire> {
        Some(&OllamaEmbeddings)
    }

    /// Its own list: the versions and how each shows bad arguments.
    fn shape_marks(&self, _profile: Profile) -> Vec<&'static str> {
        super::OLLAMA_MARKS.to_vec()
    }

    /// A thinking model's `thinking` field streams unless the request turns it off
    /// (ollama/ollama docs/api.md, "think").
    fn streams_reasoning(&self, _profile: Profile) -> bool {
        true
    }

    /// A local server: it queues rather than answering 429 (OLLAMA `server/sched.go`).
    fn rate_limits(&self, _profile: Profile) -> bool {
        false
    }

    /// A local server checks no key; one behind a proxy (or ollama.com's API) reads a
    /// bearer token (ollama/ollama docs/api.md, "Authentication"; ollama-python sends
    /// `OLLAMA_API_KEY` so).
    fn presented_key(&self, request: &HttpRequest) -> Option<String> {
        bearer(request).map(str::to_owned)
    }

    /// The key itself is presented.
    fn admits_key(&self, presented: &str, key: &str) -> bool {
        presented == key
    }

    /// A local server: behind nginx when behind anything.
    fn behind_cdn(&self, _profile: Profile) -> bool {
        false
    }

    /// `model 'x' not found` (OLLAMA `server/routes.go`).
    fn checks_model(&self, _profile: Profile) -> bool {
        true
    }

    /// It has no `tool_choice` and ignores the field (OLLAMA `api/types.go`).
    fn serves_required_tool_choice(&self, _profile: Profile) -> bool {
        true
    }

    /// `model 'x' not found`, or `model "x" not found, try pulling it first` up to
    /// v0.11.11 (OLLAMA `server/routes.go`).
    fn model_not_found_sourced(&self, _profile: Profile) -> bool {
        true
    }
}
