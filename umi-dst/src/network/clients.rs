//! The real client that talks to a profile's server: umi-core's client for the
//! profile's wire format, configured as a user of that provider would configure it.
//! Tests and scenarios that sweep every profile build their clients here, so a new
//! format is reachable from all of them at once.

use std::time::Duration;

use umi_core::llm::secrets::ApiKey;

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
