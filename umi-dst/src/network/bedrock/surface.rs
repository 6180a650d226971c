//! Bedrock's facts beyond request and response: its paths from the root (no `/v1`),
//! the foundation-model list (`ListFoundationModels`, which the control-plane host
//! `bedrock.{region}.amazonaws.com` serves; one simulated host serves both), its
//! `{"message"}` error body, keys that sign rather than travel, and umi-core's client.

use std::sync::Arc;

use serde_json::{Value, json};
use umi_core::env::Env;
use umi_core::llm::bedrock::{BedrockClient, BedrockConfig, BedrockDecoder};
use umi_core::llm::secrets::ApiKey;
use umi_core::llm::transport::{HttpRequest, Transport};
use umi_core::llm::wire::reader::Decoded;
use umi_core::llm::{CompletionResponse, Connection, LanguageModel, LlmError, ModelRef};

use super::BedrockFormat;
use crate::network::clients::ClientOptions;
use crate::network::embed::EmbedWire;
use crate::network::profile::Profile;
use crate::network::surface::{Surface, decode_with};

/// The key pair a simulated Bedrock client signs with when its user gave none: AWS's
/// documented example pair (the SigV4 test suite's), since every Bedrock request is
/// signed and a caller always has some credentials.
pub(crate) const EXAMPLE_KEY_PAIR: &str = "AKIDEXAMPLE:wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

impl Surface for BedrockFormat {
    fn api_root(&self) -> &'static str {
        ""
    }

    /// BEDROCK-API `ListFoundationModels`: `GET /foundation-models`.
    fn models_path(&self) -> &'static str {
        "/foundation-models"
    }

    /// BEDROCK-API `ListFoundationModels` "Response Syntax": `modelSummaries`, each
    /// with its ARN, id, name, provider, modalities and whether it streams.
    fn model_list(&self, names: &[String]) -> Value {
        json!({
            "modelSummaries": names.iter().map(|name| json!({
                "modelArn": format!("arn:aws:bedrock:us-east-1::foundation-model/{name}"),
                "modelId": name,
                "modelName": name,
                "providerName": "Umi",
                "inputModalities": ["TEXT"],
                "outputModalities": ["TEXT"],
                "responseStreamingSupported": true,
                "inferenceTypesSupported": ["ON_DEMAND"],
                "modelLifecycle": {"status": "ACTIVE"},
            })).collect::<Vec<_>>(),
        })
    }

    /// Its models path is its own.
    fn listing_header(&self) -> Option<&'static str> {
        None
    }

    /// `{"message": ...}` (BEDROCK-API "Errors"; the exception's name goes in
    /// `x-amzn-errortype`, which a server's own error does not need).
    fn own_error(&self, _status: u16, message: &str) -> Value {
        json!({ "message": message })
    }

    /// None: a SigV4 request carries a signature made with the key, never the key, so
    /// no one header presents it (the simulator admits a request signed with the key's
    /// access key id, [`Surface::admits_key`]).
    fn credential(&self, _profile: Profile, _key: &str) -> Option<(String, String)> {
        None
    }

    /// The path says (`/converse-stream`), never the body.
    fn streams_by_default(&self) -> bool {
        false
    }

    fn client(
        &self,
        mut connection: Connection,
        model_ref: ModelRef,
        _options: &ClientOptions,
        transport: Arc<dyn Transport>,
        env: Env,
    ) -> Arc<dyn LanguageModel> {
        if connection.api_key.is_none() {
            connection.api_key = Some(ApiKey::new(EXAMPLE_KEY_PAIR));
        }
        let config = BedrockConfig::new(connection, model_ref, env.clone());
        Arc::new(BedrockClient::new(config, transport, env))
    }

    fn parse_as_client(&self, body: &str) -> Result<CompletionResponse, LlmError> {
        umi_core::llm::bedrock::parse_response(body, "")
    }

    fn decode_as_client(&self, reads: &[&[u8]]) -> Decoded {
        decode_with(BedrockDecoder::new(), reads)
    }

    /// Bedrock's embeddings are `InvokeModel` on an embedding model, not a Converse
    /// operation: not served.
    fn embeddings(&self) -> Option<&'static dyn EmbedWire> {
        None
    }

    /// Its own list: tool use, an HTTP exception, an exception inside the stream.
    fn shape_marks(&self, _profile: Profile) -> Vec<&'static str> {
        super::BEDROCK_MARKS.to_vec()
    }

    /// Claude on Bedrock reasons only when a request enables it in
    /// `additionalModelRequestFields` (BEDROCK-API `ConverseStream`,
    /// `reasoningContent`), which Umi's client does not send.
    fn streams_reasoning(&self, _profile: Profile) -> bool {
        false
    }

    /// 429 `ThrottlingException` (BEDROCK-API "Errors"; BEDROCK-CAPTURES).
    fn rate_limits(&self, _profile: Profile) -> bool {
        true
    }

    /// The access key id of a signature in shape (`Credential=<id>/...`, AWS docs
    /// "Create a signed AWS API request"): a SigV4 request carries no key. A signature
    /// out of shape presents [`super::request::UNREADABLE_SIGNATURE`].
    fn presented_key(&self, request: &HttpRequest) -> Option<String> {
        super::request::presented_key(request).map(str::to_owned)
    }

    /// A signature made with `key`'s access key id (`ACCESS_KEY_ID:SECRET_ACCESS_KEY`,
    /// or the id alone) is the key's: the simulator checks a signature's shape, not its
    /// HMAC. A signature out of shape is let through to the parser, which answers it
    /// `IncompleteSignatureException` (400) before any key is looked at, as AWS does
    /// ([`super::request`]'s docs).
    fn admits_key(&self, presented: &str, key: &str) -> bool {
        if presented == super::request::UNREADABLE_SIGNATURE {
            return true;
        }
        let id = key.split(':').next().unwrap_or_default();
        !id.is_empty() && presented == id
    }

    /// No source shows a CDN's own page in front of `bedrock-runtime`.
    fn behind_cdn(&self, _profile: Profile) -> bool {
        false
    }

    /// 400 `ValidationException` "The provided model identifier is invalid."
    /// (BEDROCK-CAPTURES, earendil-works/pi #4993).
    fn checks_model(&self, _profile: Profile) -> bool {
        true
    }

    /// `toolChoice: {"any": {}}` answers with a tool use like any other (BEDROCK-API
    /// `ToolChoice`).
    fn serves_required_tool_choice(&self, _profile: Profile) -> bool {
        true
    }

    /// Its unknown model is a 400 `ValidationException`, which the shared classifier
    /// types as a bad request, not model-not-found: a sweep does not hold a client to it.
    fn model_not_found_sourced(&self, _profile: Profile) -> bool {
        false
    }
}
