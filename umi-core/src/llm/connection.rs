//! How a wire client reaches its server: the base URL, the key, the two timeouts and the
//! extra headers that every format's config holds, and the one place a JSON `POST` is
//! built from them.
//!
//! Each format's config ([`crate::llm::openai::OpenAiConfig`], `AnthropicConfig`,
//! `ResponsesConfig`, `OllamaConfig`) is a `Connection`, the model it asks for, and what
//! only its format has (which field carries `max_tokens`, a reasoning summary). So the
//! rules for a key, a timeout or a secret header are written once: a key is sent the way
//! its format names ([`KeyHeader`]), and `Debug` and the [`Redactor`] hide it, the
//! credentials in the URL and every secret header.

use std::fmt;
use std::time::Duration;

use serde_json::Value;

use super::secrets::{ApiKey, Redactor, redact_headers, redact_url};
use super::transport::HttpRequest;
use crate::constants::HTTP_TIMEOUT_MS_DEFAULT;

/// How long a client waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Time to the response's headers.
    pub request: Duration,
    /// Time allowed between body chunks.
    pub idle: Duration,
}

/// How a format sends its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyHeader {
    /// `authorization: Bearer <key>`: the OpenAI formats, and Ollama behind an
    /// authenticating proxy or on ollama.com.
    Bearer,
    /// `x-api-key: <key>`: Anthropic's Messages API.
    XApiKey,
    /// `x-goog-api-key: <key>`: Google's Gemini API (googleapis/python-genai
    /// `google/genai/_api_client.py` sends the key so).
    XGoogApiKey,
}

/// Where a client sends its requests and how long it waits. `Debug` redacts the key, the
/// credentials in the URL and secret headers.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Connection {
    /// The server's base URL, as the format's paths continue it
    /// (`https://api.openai.com/v1`, `https://api.anthropic.com`, `http://localhost:11434`).
    pub base_url: String,
    /// The API key, if the server wants one.
    pub api_key: Option<ApiKey>,
    /// Time to the response's headers (a cold model load can take a while).
    pub timeout: Duration,
    /// Time allowed between body chunks.
    pub idle_timeout: Duration,
    /// Extra headers, sent after the format's own (OpenRouter's `HTTP-Referer`,
    /// `OpenAI-Organization`, `anthropic-beta`, a proxy's credentials).
    pub extra_headers: Vec<(String, String)>,
}

impl Connection {
    /// A connection to `base_url`, with no key, no extra headers and the default timeouts.
    pub fn new(base_url: impl Into<String>) -> Self {
        let timeout = Duration::from_millis(HTTP_TIMEOUT_MS_DEFAULT);
        Self {
            base_url: base_url.into(),
            api_key: None,
            timeout,
            idle_timeout: timeout,
            extra_headers: Vec::new(),
        }
    }

    /// Sets the API key.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(ApiKey::new(key));
        self
    }

    /// Sets both timeouts, to the headers and between body chunks, to `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        (self.timeout, self.idle_timeout) = (timeout, timeout);
        self
    }

    /// Sets the extra headers.
    pub fn with_extra_headers(mut self, headers: Vec<(String, String)>) -> Self {
        self.extra_headers = headers;
        self
    }

    /// The client's timeouts.
    pub fn timeouts(&self) -> Timeouts {
        Timeouts {
            request: self.timeout,
            idle: self.idle_timeout,
        }
    }

    /// The redactor of this connection's secrets: its key, the credentials in its URL and
    /// its secret headers.
    pub fn redactor(&self) -> Redactor {
        Redactor::new()
            .with_key(self.api_key.as_ref())
            .with_url(&self.base_url)
            .with_headers(&self.extra_headers)
    }

    /// A JSON `POST` of `body` to `path` below the base URL. Headers go in this order:
    /// `content-type`, the format's own (`format_headers`), the key as `key_header`
    /// says, then the extra headers.
    pub fn post_json(
        &self,
        path: &str,
        format_headers: &[(&str, &str)],
        key_header: KeyHeader,
        body: &Value,
    ) -> HttpRequest {
        let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        headers.extend(
            format_headers
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned())),
        );
        if let Some(key) = &self.api_key {
            headers.push(match key_header {
                KeyHeader::Bearer => (
                    "authorization".to_owned(),
                    format!("Bearer {}", key.expose()),
                ),
                KeyHeader::XApiKey => ("x-api-key".to_owned(), key.expose().to_owned()),
                KeyHeader::XGoogApiKey => ("x-goog-api-key".to_owned(), key.expose().to_owned()),
            });
        }
        headers.extend(self.extra_headers.iter().cloned());
        HttpRequest {
            method: "POST",
            url: format!("{}{path}", self.base_url.trim_end_matches('/')),
            headers,
            body: crate::canonical_json::to_vec(body),
        }
    }
}

impl From<&str> for Connection {
    fn from(base_url: &str) -> Self {
        Self::new(base_url)
    }
}

impl From<String> for Connection {
    fn from(base_url: String) -> Self {
        Self::new(base_url)
    }
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("base_url", &redact_url(&self.base_url))
            .field("api_key", &self.api_key)
            .field("timeout", &self.timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("extra_headers", &redact_headers(&self.extra_headers))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const KEY: &str = "sk-connection-test-4411";

    fn header_names(request: &HttpRequest) -> Vec<&str> {
        request
            .headers
            .iter()
            .map(|(name, _)| name.as_str())
            .collect()
    }

    #[test]
    fn a_post_carries_the_format_headers_then_the_key_then_the_extra_headers() {
        let connection = Connection::new("https://api.anthropic.com/")
            .with_api_key(KEY)
            .with_extra_headers(vec![("anthropic-beta".into(), "tools-1".into())]);
        let request = connection.post_json(
            "/v1/messages",
            &[("anthropic-version", "2023-06-01")],
            KeyHeader::XApiKey,
            &json!({"b": 1, "a": 2}),
        );
        assert_eq!(request.url, "https://api.anthropic.com/v1/messages");
        assert_eq!(
            header_names(&request),
            [
                "content-type",
                "anthropic-version",
                "x-api-key",
                "anthropic-beta"
            ]
        );
        assert_eq!(request.header("x-api-key"), Some(KEY));
        assert_eq!(request.body, br#"{"a":2,"b":1}"#);
    }

    #[test]
    fn a_bearer_key_is_sent_as_authorization_and_no_key_sends_no_header() {
        let keyed = Connection::new("http://h/v1").with_api_key(KEY);
        let request = keyed.post_json("/chat/completions", &[], KeyHeader::Bearer, &json!({}));
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        let keyless = Connection::new("http://h/v1");
        let request = keyless.post_json("/chat/completions", &[], KeyHeader::Bearer, &json!({}));
        assert_eq!(header_names(&request), ["content-type"]);
    }

    #[test]
    fn debug_and_the_redactor_hide_the_key_the_url_credentials_and_secret_headers() {
        let connection = Connection::new("https://user:pw-9913@proxy.example/v1")
            .with_api_key(KEY)
            .with_extra_headers(vec![("api-key".into(), "azure-secret-7781".into())]);
        let printed = format!("{connection:?}");
        let redactor = connection.redactor();
        for secret in [KEY, "pw-9913", "azure-secret-7781"] {
            assert!(!printed.contains(secret), "{secret} in {printed}");
            assert!(
                !redactor
                    .redact(&format!("failed with {secret}"))
                    .contains(secret),
                "{secret} passes the redactor"
            );
        }
    }

    #[test]
    fn with_timeout_sets_both_timeouts() {
        let timeouts = Connection::new("http://h")
            .with_timeout(Duration::from_millis(1_500))
            .timeouts();
        assert_eq!(timeouts.request, Duration::from_millis(1_500));
        assert_eq!(timeouts.idle, Duration::from_millis(1_500));
    }
}
