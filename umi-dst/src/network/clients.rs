//! The real client that talks to a profile's server: umi-core's client for the
//! profile's wire format, configured as a user of that provider would configure it.
//! Tests and scenarios that sweep every profile build their clients here, so a new
//! format is reachable from all of them at once.

use std::sync::Arc;
use std::time::Duration;

use umi_core::env::Env;
use umi_core::llm::secrets::ApiKey;
use umi_core::llm::transport::Transport;
use umi_core::llm::{Connection, LanguageModel, ModelRef};

use super::profile::Profile;

/// How a client for a profile is set up.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientOptions {
    /// The API key to present (Ollama's native API takes none); an `ApiKey`, so `Debug`
    /// prints `[REDACTED]`.
    pub api_key: Option<ApiKey>,
    /// Time to the headers and between body chunks.
    pub timeout: Option<Duration>,
    /// Ask the Responses API for reasoning summaries.
    pub reasoning_summary: bool,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            api_key: None,
            timeout: None,
            reasoning_summary: true,
        }
    }
}

/// The client for `profile`'s server at `base_url` (as the endpoint was given it),
/// asking for `model_ref`.
pub fn client_for(
    profile: Profile,
    base_url: &str,
    model_ref: ModelRef,
    options: &ClientOptions,
    transport: Arc<dyn Transport>,
    env: Env,
) -> Arc<dyn LanguageModel> {
    let mut connection = Connection::new(base_url);
    connection.api_key = options.api_key.clone();
    if let Some(timeout) = options.timeout {
        connection = connection.with_timeout(timeout);
    }
    profile
        .format()
        .client(connection, model_ref, options, transport, env)
}

/// A base URL for `profile`'s server on host `host`, as its clients expect it: with
/// `/v1` for the OpenAI formats, without for Ollama's native API and Anthropic's (whose
/// clients add their own paths).
pub fn base_url_for(profile: Profile, host: &str) -> String {
    format!("https://{host}{}", profile.format().api_root())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_prints_the_key() {
        let options = ClientOptions {
            api_key: Some("sk-client-secret-8830".into()),
            ..ClientOptions::default()
        };
        let printed = format!("{options:?}");
        assert!(!printed.contains("sk-client-secret-8830"), "{printed}");
        assert!(printed.contains("[REDACTED]"), "{printed}");
    }
}
