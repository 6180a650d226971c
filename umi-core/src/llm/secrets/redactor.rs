//! `Redactor`: a client's own secrets, removed from every text it hands back.
//!
//! Built once per client from its config (the key, secret headers, the credentials in
//! its base URL), it replaces each secret, in the forms a server may echo it (as sent,
//! percent-encoded, JSON-escaped), and a piece of one that ends a cut text (an error
//! snippet cut at its limit mid-key), then applies the patterns
//! ([`super::redact_patterns`]) for credentials nobody configured.

use std::fmt;

use super::key::ApiKey;
use super::patterns::{REDACTED, credential_spans, is_secret_header, redact_patterns};
use crate::constants::SECRET_PREFIX_CHARS_MIN;
use crate::llm::error::LlmError;

/// A client's secrets, and the redaction of any text against them.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Every form of every secret, longest first (so a secret inside another goes last).
    secrets: Vec<String>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.secrets.len())
            .finish()
    }
}

/// `secret` percent-encoded (RFC 3986 unreserved characters kept).
fn percent_encoded(secret: &str) -> String {
    let mut out = String::with_capacity(secret.len());
    for byte in secret.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `secret` as it appears inside a JSON string.
fn json_escaped(secret: &str) -> String {
    let quoted = serde_json::Value::from(secret).to_string();
    quoted[1..quoted.len() - 1].to_owned()
}

impl Redactor {
    /// A redactor with no secrets of its own (patterns only).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `secret` (an empty one is ignored), with its encodings.
    pub fn with_secret(mut self, secret: &str) -> Self {
        if secret.is_empty() {
            return self;
        }
        for form in [
            secret.to_owned(),
            percent_encoded(secret),
            json_escaped(secret),
        ] {
            if !self.secrets.contains(&form) {
                self.secrets.push(form);
            }
        }
        self.secrets
            .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        self
    }

    /// Adds `key`, if there is one.
    pub fn with_key(self, key: Option<&ApiKey>) -> Self {
        match key {
            Some(key) => self.with_secret(key.expose()),
            None => self,
        }
    }

    /// Adds the values of the secret headers among `headers` (and, for `Bearer x`, `x`).
    pub fn with_headers(mut self, headers: &[(String, String)]) -> Self {
        for (name, value) in headers {
            if is_secret_header(name) {
                let credential = value.split_once(' ').map_or("", |(_, rest)| rest.trim());
                self = self.with_secret(value).with_secret(credential);
            }
        }
        self
    }

    /// Adds the credentials in `url`: the userinfo's password (or a user alone), and
    /// the values of its query parameters that redact by pattern (`key`, `token`, …).
    pub fn with_url(mut self, url: &str) -> Self {
        for span in credential_spans(url) {
            self = self.with_secret(&url[span]);
        }
        self
    }

    /// Whether it holds no secrets of its own.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// `text` with every secret (and a secret's start ending the text, before a `…`)
    /// replaced by `[REDACTED]`, then credentials found by pattern.
    pub fn redact(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), REDACTED);
            }
        }
        for secret in &self.secrets {
            text = redact_cut_prefix(&text, secret);
        }
        redact_patterns(&text)
    }

    /// `error` with every text in it redacted.
    pub fn redact_error(&self, error: LlmError) -> LlmError {
        error.map_text(&|text| self.redact(text))
    }
}

/// `text` with a start of `secret` (at least `SECRET_PREFIX_CHARS_MIN` characters, and
/// short of the whole) that ends it, or ends it before a `…`, redacted.
fn redact_cut_prefix(text: &str, secret: &str) -> String {
    let (body, tail) = match text.strip_suffix('…') {
        Some(body) => (body, "…"),
        None => (text, ""),
    };
    let ends: Vec<usize> = secret
        .char_indices()
        .map(|(i, _)| i)
        .skip(SECRET_PREFIX_CHARS_MIN)
        .collect();
    for &end in ends.iter().rev() {
        if body.ends_with(&secret[..end]) {
            let kept = &body[..body.len() - end];
            return format!("{kept}{REDACTED}{tail}");
        }
    }
    text.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-live-Zq81/x+y";

    fn redactor() -> Redactor {
        Redactor::new()
            .with_secret(KEY)
            .with_url("https://bob:pw-4422@proxy.example/v1?api-version=1&key=AIza77")
            .with_headers(&[
                ("api-key".to_owned(), "azure-k-009".to_owned()),
                ("HTTP-Referer".to_owned(), "https://app.example".to_owned()),
            ])
    }

    #[test]
    fn configured_secrets_are_redacted_in_every_form() {
        let table = [
            (
                format!("your key {KEY} is wrong"),
                "your key [REDACTED] is wrong",
            ),
            (
                format!("{{\"error\":\"bad key {}\"}}", json_escaped(KEY)),
                "{\"error\":\"bad key [REDACTED]\"}",
            ),
            (
                format!("GET /?k={} failed", percent_encoded(KEY)),
                "GET /?k=[REDACTED] failed",
            ),
            (
                "user bob, pass pw-4422".to_owned(),
                "user bob, pass [REDACTED]",
            ),
            ("echo AIza77 back".to_owned(), "echo [REDACTED] back"),
            ("header azure-k-009".to_owned(), "header [REDACTED]"),
            // A snippet cut in the middle of the key.
            (format!("got {}…", &KEY[..7]), "got [REDACTED]…"),
            (format!("ends {}", &KEY[..5]), "ends [REDACTED]"),
            // Too short a start to be told from text; other header values are kept.
            ("ends sk-".to_owned(), "ends sk-"),
            (
                "api-version=1 from https://app.example".to_owned(),
                "api-version=1 from https://app.example",
            ),
        ];
        let redactor = redactor();
        for (text, expected) in table {
            assert_eq!(redactor.redact(&text), expected, "{text}");
        }
    }

    #[test]
    fn a_url_gives_up_exactly_its_credentials() {
        let from_url = Redactor::new().with_url("https://u:p@h/?key=k&x=1");
        assert_eq!(from_url.secrets, ["k", "p"]);
        assert!(
            Redactor::new()
                .with_url("https://api.openai.com/v1")
                .is_empty()
        );
        assert!(!format!("{:?}", redactor()).contains("pw-4422"));
    }

    #[test]
    fn errors_are_redacted_in_every_field() {
        let error = LlmError::Exhausted {
            reason: "every model failed".into(),
            attempts: vec![crate::llm::FailedAttempt {
                model: "openai/gpt".into(),
                attempt: 0,
                error: Some(Box::new(LlmError::Auth {
                    status: 401,
                    message: format!("bad key {KEY}"),
                })),
            }],
        };
        let redacted = redactor().redact_error(error);
        assert!(
            !format!("{redacted} {redacted:?}").contains(KEY),
            "{redacted:?}"
        );
        assert!(redacted.to_string().contains("bad key [REDACTED]"));
    }
}
