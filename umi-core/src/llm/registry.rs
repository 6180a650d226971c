//! The wire formats a configured provider may speak, and the client for each: the one
//! place a new format registers (its module implements
//! [`crate::llm::client::ClientFormat`]; docs/adr/0009-one-seam-per-wire-format.md).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::anthropic::AnthropicConfig;
use super::bedrock::BedrockConfig;
use super::client::WireClient;
use super::connection::Connection;
use super::gemini::GeminiConfig;
use super::ollama::OllamaConfig;
use super::openai::{MaxTokensField, OpenAiConfig};
use super::provider::LanguageModel;
use super::response::ModelRef;
use super::responses::ResponsesConfig;
use super::secrets::{ApiKey, redact_headers, redact_url};
use super::transport::Transport;
use crate::env::Env;

/// The wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// OpenAI chat completions (OpenAI, DeepSeek, Qwen, GLM, OpenRouter, vLLM, llama.cpp, Ollama's /v1).
    Openai,
    /// Ollama's native `/api/chat`.
    Ollama,
    /// Anthropic's Messages API (`/v1/messages`).
    Anthropic,
    /// OpenAI's Responses API (`/v1/responses`).
    OpenaiResponses,
    /// Google's Gemini API (`/v1beta/models/{model}:generateContent`).
    Gemini,
    /// Amazon Bedrock's Converse API (`/model/{modelId}/converse`, SigV4-signed; the key
    /// is `ACCESS_KEY_ID:SECRET_ACCESS_KEY`).
    Bedrock,
}

/// How to reach one provider. `Debug` redacts secret headers (an Azure `api-key` given
/// here rather than through `api_key_env`) and the endpoint's credentials.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// Its wire format.
    #[serde(rename = "type")]
    pub kind: ProviderKind,
    /// Base URL (`https://api.deepseek.com/v1`, `http://localhost:11434`).
    pub endpoint: String,
    /// The environment variable holding the API key, if it needs one.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Extra headers to send.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Which field carries `max_tokens` (OpenAI format only).
    #[serde(default)]
    pub max_tokens_field: MaxTokensField,
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<(String, String)> = self
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("endpoint", &redact_url(&self.endpoint))
            .field("api_key_env", &self.api_key_env)
            .field("headers", &redact_headers(&headers))
            .field("max_tokens_field", &self.max_tokens_field)
            .finish()
    }
}

/// The client for `model_ref` at `provider`, in the provider's format, with `timeout`
/// to the headers and between body chunks. The provider's headers go with every format.
pub fn client(
    provider: &ProviderConfig,
    model_ref: ModelRef,
    api_key: Option<ApiKey>,
    timeout: Duration,
    transport: Arc<dyn Transport>,
    env: Env,
) -> Arc<dyn LanguageModel> {
    let headers = provider
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    let mut connection = Connection::new(provider.endpoint.clone())
        .with_timeout(timeout)
        .with_extra_headers(headers);
    connection.api_key = api_key;
    match provider.kind {
        ProviderKind::Openai => {
            let mut config = OpenAiConfig::new(connection, model_ref);
            config.max_tokens_field = provider.max_tokens_field;
            Arc::new(WireClient::new(config, transport, env))
        }
        ProviderKind::Ollama => {
            let config = OllamaConfig::new(connection, model_ref);
            Arc::new(WireClient::new(config, transport, env))
        }
        ProviderKind::Anthropic => {
            let config = AnthropicConfig::new(connection, model_ref);
            Arc::new(WireClient::new(config, transport, env))
        }
        ProviderKind::OpenaiResponses => {
            let config = ResponsesConfig::new(connection, model_ref);
            Arc::new(WireClient::new(config, transport, env))
        }
        ProviderKind::Gemini => {
            let config = GeminiConfig::new(connection, model_ref);
            Arc::new(WireClient::new(config, transport, env))
        }
        ProviderKind::Bedrock => {
            let config = BedrockConfig::new(connection, model_ref, env.clone());
            Arc::new(WireClient::new(config, transport, env))
        }
    }
}
