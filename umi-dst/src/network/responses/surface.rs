//! The Responses API's facts beyond request and response: OpenAI's (its API under
//! `/v1`, the model list, the error envelope, the bearer key), with umi-core's
//! Responses client, which asks for reasoning summaries when told to.

use std::sync::Arc;

use serde_json::Value;
use umi_core::env::Env;
use umi_core::llm::responses::{EventDecoder, ResponsesClient, ResponsesConfig};
use umi_core::llm::transport::{HttpRequest, Transport};
use umi_core::llm::wire::reader::Decoded;
use umi_core::llm::{CompletionResponse, Connection, LanguageModel, LlmError, ModelRef};

use super::ResponsesFormat;
use crate::network::chat::surface::{openai_credential, openai_model_list, openai_own_error};
use crate::network::clients::ClientOptions;
use crate::network::embed::{EmbedWire, OpenAiEmbeddings};
use crate::network::profile::Profile;
use crate::network::surface::{Surface, bearer, decode_with};

impl Surface for ResponsesFormat {
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
        options: &ClientOptions,
        transport: Arc<dyn Transport>,
        env: Env,
    ) -> Arc<dyn LanguageModel> {
        let mut config = ResponsesConfig::new(connection, model_ref);
        if options.reasoning_summary {
            config.reasoning_summary = Some("auto".to_owned());
        }
        Arc::new(ResponsesClient::new(config, transport, env))
    }

    fn parse_as_client(&self, body: &str) -> Result<CompletionResponse, LlmError> {
        umi_core::llm::responses::parse_response(body, "")
    }

    fn decode_as_client(&self, reads: &[&[u8]]) -> Decoded {
        decode_with(EventDecoder::new(), reads)
    }

    fn embeddings(&self) -> Option<&'static dyn EmbedWire> {
        Some(&OpenAiEmbeddings)
    }

    /// Its own list: the eras, the in-stream error, `incomplete`, the summary.
    fn shape_marks(&self, _profile: Profile) -> Vec<&'static str> {
        super::RESPONSES_MARKS.to_vec()
    }

    /// A reasoning summary streams to a request that asks for one, which Umi's client
    /// can (`reasoning.summary`).
    fn streams_reasoning(&self, _profile: Profile) -> bool {
        true
    }

    /// OpenAI's 429 with Retry-After (OPENAI-SPEC).
    fn rate_limits(&self, _profile: Profile) -> bool {
        true
    }

    /// A bearer token, as OpenAI's whole API (OPENAI-SPEC `ApiKeyAuth`).
    fn presented_key(&self, request: &HttpRequest) -> Option<String> {
        bearer(request).map(str::to_owned)
    }

    /// The key itself is presented.
    fn admits_key(&self, presented: &str, key: &str) -> bool {
        presented == key
    }

    /// No source shows a CDN's own page in front of it: nginx's, as for every server without one.
    fn behind_cdn(&self, _profile: Profile) -> bool {
        false
    }

    /// `model_not_found` (OPENAI-SPEC; the Responses API shares OpenAI's errors).
    fn checks_model(&self, _profile: Profile) -> bool {
        true
    }

    /// `tool_choice: "required"` answers with a tool call like any other.
    fn serves_required_tool_choice(&self, _profile: Profile) -> bool {
        true
    }

    /// OpenAI's `model_not_found` (ENVOY `chat-unknown-model.yaml`, in the envelope the
    /// Responses API shares).
    fn model_not_found_sourced(&self, _profile: Profile) -> bool {
        true
    }
}
