//! `Redactor`: a client's own secrets, removed from every text it hands back.
//!
//! Built once per client from its config (the key, secret headers, the credentials in
//! its base URL), it replaces each secret, in the forms a server may echo it (as sent,
//! trimmed of the surrounding whitespace a header parser drops (RFC 9110, section 5.5),
//! percent-encoded, JSON-escaped, and masked the way OpenAI's 401 masks it: the key's
//! first characters, a run of `*`, its last four), and a piece of one that ends a cut
//! text (an error snippet cut at its limit mid-key), then applies the patterns
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
    /// Each secret as given and trimmed, unencoded: what a mask shows the ends of.
    plain: Vec<String>,
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

    /// Adds `secret` (an empty one is ignored), as given and trimmed, with their
    /// encodings.
    pub fn with_secret(mut self, secret: &str) -> Self {
        for given in [secret, secret.trim()] {
            if given.is_empty() {
                continue;
            }
            if !self.plain.iter().any(|plain| plain == given) {
                self.plain.push(given.to_owned());
            }
            for form in [
                given.to_owned(),
                percent_encoded(given),
                json_escaped(given),
            ] {
                if !self.secrets.contains(&form) {
                    self.secrets.push(form);
                }
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
        text = redact_masked(&text, &self.plain);
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

/// A run of at least this many `*` is a mask whatever follows it; a shorter one only
/// with `MASK_TAIL_CHARS_SHORT_MIN` characters of the key's end after it.
const MASK_STARS_MIN: usize = 4;

/// The characters of a key's end that make a short run of `*` a mask
/// (`sk-PMafP***E873`).
const MASK_TAIL_CHARS_SHORT_MIN: usize = 2;

/// The most characters of a key's end that a mask shows (OpenAI's shows four).
const MASK_TAIL_CHARS_MAX: usize = 4;

/// `text` with every masked echo of one of `secrets` redacted: a run of `*` (and `…`)
/// preceded by a start of the secret (at least `SECRET_PREFIX_CHARS_MIN` characters)
/// and followed by up to `MASK_TAIL_CHARS_MAX` characters of its end. OpenAI's 401 reads
/// "Incorrect API key provided: sk-proj-****…****AbCd" (or, in older captures,
/// `sk-PMafP***E873`): the masked form still shows the key's ends, and the ends of a key
/// are a guess's head start.
fn redact_masked(text: &str, secrets: &[String]) -> String {
    if !text.contains('*') || secrets.is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((start, end)) = next_mask(rest, secrets) {
        out.push_str(&rest[..start]);
        out.push_str(REDACTED);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The next masked echo of one of `secrets` in `text`, as a byte range from the shown
/// start to the end of the shown tail (the secret that explains most of it).
fn next_mask(text: &str, secrets: &[String]) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(offset) = text[from..].find('*') {
        let marker = from + offset;
        let marker_end = marker
            + text[marker..]
                .chars()
                .take_while(|c| *c == '*' || *c == '…')
                .map(char::len_utf8)
                .sum::<usize>();
        let stars = text[marker..marker_end].matches('*').count();
        let best = secrets
            .iter()
            .filter_map(|secret| {
                let shown = shown_start(&text[..marker], secret)?;
                Some((shown, mask_tail(&text[marker_end..], secret)))
            })
            .max_by_key(|(shown, tail)| shown + tail);
        if let Some((shown, tail)) = best {
            let tail_chars = text[marker_end..marker_end + tail].chars().count();
            if stars >= MASK_STARS_MIN || tail_chars >= MASK_TAIL_CHARS_SHORT_MIN {
                return Some((marker - shown, marker_end + tail));
            }
        }
        from = marker_end;
    }
    None
}

/// How many bytes of `before`'s end are a start of `secret` (the longest, of at least
/// `SECRET_PREFIX_CHARS_MIN` characters).
fn shown_start(before: &str, secret: &str) -> Option<usize> {
    secret
        .char_indices()
        .map(|(i, c)| i + c.len_utf8())
        .skip(SECRET_PREFIX_CHARS_MIN - 1)
        .filter(|&end| before.ends_with(&secret[..end]))
        .last()
}

/// How many bytes at `after`'s start are an end of `secret` (at most
/// `MASK_TAIL_CHARS_MAX` characters; the longest).
fn mask_tail(after: &str, secret: &str) -> usize {
    let starts: Vec<usize> = secret
        .char_indices()
        .map(|(i, _)| i)
        .rev()
        .take(MASK_TAIL_CHARS_MAX)
        .collect();
    starts
        .iter()
        .rev()
        .map(|&start| &secret[start..])
        .find(|tail| after.starts_with(tail))
        .map_or(0, str::len)
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
            // Masked as OpenAI's 401 masks it: start, stars, last four.
            (
                format!(
                    "provided: {}{}{}. You can",
                    &KEY[..8],
                    "*".repeat(40),
                    &KEY[KEY.len() - 4..]
                ),
                "provided: [REDACTED]. You can",
            ),
            ("a **** b ******".to_owned(), "a **** b ******"),
            // Umi's own simulated 401, and the older captures: three stars, the last four.
            (
                format!("provided: {}***{}.", &KEY[..8], &KEY[KEY.len() - 4..]),
                "provided: [REDACTED].",
            ),
            (
                format!("provided: {}***…***{}", &KEY[..6], &KEY[KEY.len() - 4..]),
                "provided: [REDACTED]",
            ),
            // A short run with nothing of the key after it is not a mask.
            (format!("{} * 2", &KEY[..5]), "sk-li * 2"),
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
    fn a_secret_with_surrounding_whitespace_is_redacted_as_a_server_reads_it() {
        // A header value as configured ("api-key: <key> "): the server reads it
        // trimmed, and echoes that.
        let redactor = Redactor::new().with_headers(&[("api-key".to_owned(), format!("{KEY} \n"))]);
        assert_eq!(
            redactor.redact(&format!("Incorrect API key provided: {KEY}.")),
            "Incorrect API key provided: [REDACTED]."
        );
        assert_eq!(
            redactor.redact(&format!("{{\"key\":\"{}\"}}", json_escaped(KEY))),
            "{\"key\":\"[REDACTED]\"}"
        );
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
