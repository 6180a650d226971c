//! Bedrock's facts beyond request and response: its paths from the root (no `/v1`),
//! the foundation-model list (`ListFoundationModels`, which the control-plane host
//! `bedrock.{region}.amazonaws.com` serves; one simulated host serves both), its
//! `{"message"}` error body, keys that sign rather than travel, and umi-core's client.

use std::sync::Arc;

use serde_json::{Value, json};
use umi_core::env::Env;
use umi_core::llm::bedrock::{BedrockClient, BedrockConfig, BedrockDecoder};
use umi_core::llm::secrets::ApiKey;
use umi_core::llm::transport::Transport;
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
    /// access key id, [`super::signed_by`]).
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
}
