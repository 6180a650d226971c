//! The Messages API's facts beyond request and response: its paths from the root
//! (`/v1/messages`), Anthropic's model list and error envelope, the key in
//! `x-api-key`, and umi-core's Anthropic client.

use std::sync::Arc;

use serde_json::{Value, json};
use umi_core::env::Env;
use umi_core::llm::anthropic::{AnthropicClient, AnthropicConfig, EventDecoder};
use umi_core::llm::transport::{HttpRequest, Transport};
use umi_core::llm::wire::reader::Decoded;
use umi_core::llm::{CompletionResponse, Connection, LanguageModel, LlmError, ModelRef};

use super::AnthropicFormat;
use crate::network::clients::ClientOptions;
use crate::network::embed::EmbedWire;
use crate::network::profile::Profile;
use crate::network::surface::{Surface, decode_with};

impl Surface for AnthropicFormat {
    fn api_root(&self) -> &'static str {
        ""
    }

    fn models_path(&self) -> &'static str {
        "/v1/models"
    }

    /// Anthropic's `GET /v1/models` (docs.anthropic.com, "List Models").
    fn model_list(&self, names: &[String]) -> Value {
        json!({
            "data": names.iter().map(|m| json!({
                "type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z",
            })).collect::<Vec<_>>(),
            "has_more": false, "first_id": names.first(), "last_id": names.last(),
        })
    }

    /// Every Anthropic SDK sends `anthropic-version`.
    fn listing_header(&self) -> Option<&'static str> {
        Some("anthropic-version")
    }

    /// Anthropic's error shapes and types (docs.anthropic.com, "Errors").
    fn own_error(&self, status: u16, message: &str) -> Value {
        let kind = match status {
            413 => "request_too_large",
            503 => "overloaded_error",
            404 => "not_found_error",
            _ => "invalid_request_error",
        };
        json!({"type": "error", "error": {"type": kind, "message": message}})
    }

    fn credential(&self, _profile: Profile, key: &str) -> Option<(String, String)> {
        Some(("x-api-key".to_owned(), key.to_owned()))
    }

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
        let config = AnthropicConfig::new(connection, model_ref);
        Arc::new(AnthropicClient::new(config, transport, env))
    }

    fn parse_as_client(&self, body: &str) -> Result<CompletionResponse, LlmError> {
        umi_core::llm::anthropic::parse_response(body, "")
    }

    fn decode_as_client(&self, reads: &[&[u8]]) -> Decoded {
        decode_with(EventDecoder::new(), reads)
    }

    /// Anthropic serves no embeddings (docs.anthropic.com, "Embeddings": use another provider).
    fn embeddings(&self) -> Option<&'static dyn EmbedWire> {
        None
    }

    /// Its own list: the eras, the pings, the in-stream error, the 529, the refusal.
    fn shape_marks(&self, _profile: Profile) -> Vec<&'static str> {
        super::ANTHROPIC_MARKS.to_vec()
    }

    /// Claude shows its thinking only to a request that enables it (`thinking`), which
    /// [`crate::network::format::Parsed::reasoning_requested`] carries.
    fn streams_reasoning(&self, _profile: Profile) -> bool {
        false
    }

    /// 429 `rate_limit_error` with `retry-after` (the Messages API's errors and rate
    /// limits references).
    fn rate_limits(&self, _profile: Profile) -> bool {
        true
    }

    /// `x-api-key` (the Messages API's reference, "Authentication").
    fn presented_key(&self, request: &HttpRequest) -> Option<String> {
        request.header("x-api-key").map(str::to_owned)
    }

    /// The key itself is presented.
    fn admits_key(&self, presented: &str, key: &str) -> bool {
        presented == key
    }

    /// No source shows a CDN's own page in front of it: nginx's, as for every server without one.
    fn behind_cdn(&self, _profile: Profile) -> bool {
        false
    }

    /// `not_found_error` for an unknown model (the Messages API's errors reference).
    fn checks_model(&self, _profile: Profile) -> bool {
        true
    }

    /// `tool_choice: {"type": "any"}` answers with a tool call like any other.
    fn serves_required_tool_choice(&self, _profile: Profile) -> bool {
        true
    }

    /// `not_found_error` naming the model (`model: <id>`,
    /// continuedev/continue #12161).
    fn model_not_found_sourced(&self, _profile: Profile) -> bool {
        true
    }
}
