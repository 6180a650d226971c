//! OpenAI chat completions' facts beyond request and response: its API under `/v1`,
//! OpenAI's model list and error envelope (which the Responses API shares), the key as a
//! bearer token (Azure's `api-key`), and umi-core's OpenAI client.

use std::sync::Arc;

use serde_json::{Value, json};
use umi_core::env::Env;
use umi_core::llm::openai::{ChunkDecoder, OpenAiClient, OpenAiConfig};
use umi_core::llm::transport::{HttpRequest, Transport};
use umi_core::llm::wire::reader::Decoded;
use umi_core::llm::{CompletionResponse, Connection, LanguageModel, LlmError, ModelRef};

use super::{ChatFormat, shapes_of};
use crate::network::chat_shapes::ReasoningField;
use crate::network::clients::ClientOptions;
use crate::network::embed::{EmbedWire, OpenAiEmbeddings};
use crate::network::profile::Profile;
use crate::network::surface::{Surface, bearer, decode_with};

/// OpenAI's `GET /v1/models` (platform.openai.com API reference, "List models").
#[cfg_attr(
    not(feature = "serve"),
    allow(dead_code, reason = "read by `dst serve`")
)]
pub(crate) fn openai_model_list(names: &[String]) -> Value {
    json!({"object": "list", "data": names.iter().map(|m| json!({
        "id": m, "object": "model", "created": 1_704_067_200, "owned_by": "umi",
    })).collect::<Vec<_>>()})
}

/// OpenAI's `{"error": {message, type, param, code}}` (OPENAI-SPEC `ErrorResponse`).
#[cfg_attr(
    not(feature = "serve"),
    allow(dead_code, reason = "read by `dst serve`")
)]
pub(crate) fn openai_own_error(status: u16, message: &str) -> Value {
    let kind = if status >= 500 {
        "server_error"
    } else {
        "invalid_request_error"
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
}

/// The key as a bearer token; Azure's own `api-key` header (AZ-DOC, "Authentication").
pub(crate) fn openai_credential(profile: Profile, key: &str) -> Option<(String, String)> {
    Some(if profile == Profile::AzureOpenAi {
        ("api-key".to_owned(), key.to_owned())
    } else {
        ("authorization".to_owned(), format!("Bearer {key}"))
    })
}

impl Surface for ChatFormat {
    fn api_root(&self) -> &'static str {
        "/v1"
    }

    fn models_path(&self) -> &'static str {
        "/v1/models"
    }

    fn model_list(&self, names: &[String]) -> Value {
        openai_model_list(names)
    }

    fn listing_header(&self) -> Option<&'static str> {
        None
    }

    fn own_error(&self, status: u16, message: &str) -> Value {
        openai_own_error(status, message)
    }

    fn credential(&self, profile: Profile, key: &str) -> Option<(String, String)> {
        openai_credential(profile, key)
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
        let config = OpenAiConfig::new(connection, model_ref);
        Arc::new(OpenAiClient::new(config, transport, env))
    }

    fn parse_as_client(&self, body: &str) -> Result<CompletionResponse, LlmError> {
        umi_core::llm::openai::parse_response(body, "")
    }

    fn decode_as_client(&self, reads: &[&[u8]]) -> Decoded {
        decode_with(ChunkDecoder::new(), reads)
    }

    fn embeddings(&self) -> Option<&'static dyn EmbedWire> {
        Some(&OpenAiEmbeddings)
    }

    /// The marks of the profile's table (`ChatShapes::marks`).
    fn shape_marks(&self, profile: Profile) -> Vec<&'static str> {
        shapes_of(profile).marks()
    }

    /// Whether the table lists a reasoning field.
    fn streams_reasoning(&self, profile: Profile) -> bool {
        !matches!(shapes_of(profile).reasoning, [ReasoningField::None])
    }

    /// Whether the table lists a Retry-After form (the hosted APIs; local servers list
    /// none).
    fn rate_limits(&self, profile: Profile) -> bool {
        !shapes_of(profile).retry_after.is_empty()
    }

    /// A bearer token (OPENAI-SPEC `ApiKeyAuth`), or Azure's `api-key` (AZ-DOC,
    /// "Authentication").
    fn presented_key(&self, request: &HttpRequest) -> Option<String> {
        bearer(request)
            .or_else(|| request.header("api-key"))
            .map(str::to_owned)
    }

    /// The key itself is presented.
    fn admits_key(&self, presented: &str, key: &str) -> bool {
        presented == key
    }

    /// The table's `proxy_pages` (Cloudflare in front, per its sources).
    fn behind_cdn(&self, profile: Profile) -> bool {
        shapes_of(profile).proxy_pages
    }

    /// The table's `checks_model`.
    fn checks_model(&self, profile: Profile) -> bool {
        shapes_of(profile).checks_model
    }

    /// Every table but one whose tools need a choice (TGI 2.0, whose answer to one is a
    /// grammar call in a shape of its own, not simulated).
    fn serves_required_tool_choice(&self, profile: Profile) -> bool {
        !shapes_of(profile).tools_need_choice
    }

    /// The table's `model_not_found_sourced`.
    fn model_not_found_sourced(&self, profile: Profile) -> bool {
        shapes_of(profile).model_not_found_sourced
    }
}
