//! What a recorder removes before a line is written: keys, cookies and credentials,
//! wherever a request or response can carry them, and the fields a user names.
//!
//! The rules are the clients' own ([`crate::llm::secrets`]), applied to everything:
//!
//! - request headers: only [`REQUEST_HEADERS_KEPT`] are
//!   kept, and never a credential;
//! - response headers: cookies, framing headers and every header whose name says key,
//!   token, secret or auth are dropped; the rest are redacted by pattern;
//! - the URL: credentials in the query or the userinfo are redacted;
//! - bodies, both ways: every known secret (the request's own credentials, the keys the
//!   recorder was given) in any of its encodings, and text that looks like a
//!   credential, become `[REDACTED]`; in a streamed body this runs over the whole body,
//!   so a key split across two reads is found too;
//! - the fields the user names ([`Redaction::with_field`]) in a JSON body become
//!   `[REDACTED]`; a cassette's header lists them, and a replay ignores them when it
//!   matches requests.

use serde_json::Value;

use super::{
    BodyEnd, Piece, REQUEST_HEADERS_KEPT, RESPONSE_HEADERS_DROPPED, RecordedRequest,
    RecordedResponse,
};
use crate::llm::secrets::{REDACTED, Redactor, is_secret_header};
use crate::llm::transport::HttpRequest;

/// The secrets and fields a recorder removes beyond the clients' rules.
#[derive(Clone, Default)]
pub struct Redaction {
    secrets: Vec<String>,
    fields: Vec<String>,
}

impl std::fmt::Debug for Redaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redaction")
            .field("secrets", &self.secrets.len())
            .field("fields", &self.fields)
            .finish()
    }
}

impl Redaction {
    /// The clients' rules and nothing more.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also removes `secret` (a key the recorder adds itself, say) wherever it appears.
    pub fn with_secret(mut self, secret: &str) -> Self {
        self.secrets.push(secret.to_owned());
        self
    }

    /// Also replaces the field at dotted `path` (`user`, `metadata.customer`,
    /// `messages.*.name`) in JSON bodies with `[REDACTED]`.
    pub fn with_field(mut self, path: &str) -> Self {
        self.fields.push(path.to_owned());
        self
    }

    /// The fields it replaces.
    pub fn fields(&self) -> &[String] {
        &self.fields
    }

    /// The redactor for one exchange: the request's credentials and the configured
    /// secrets.
    pub fn redactor(&self, request: &HttpRequest) -> Redactor {
        let mut redactor = Redactor::new()
            .with_headers(&request.headers)
            .with_url(&request.url);
        for secret in &self.secrets {
            redactor = redactor.with_secret(secret);
        }
        redactor
    }

    fn redact_json(&self, value: &Value, redactor: &Redactor) -> Value {
        let mut value = redact_strings(value, redactor);
        for field in &self.fields {
            let path: Vec<&str> = field.split('.').collect();
            replace_field(&mut value, &path);
        }
        value
    }
}

fn redact_strings(value: &Value, redactor: &Redactor) -> Value {
    match value {
        Value::String(text) => Value::String(redactor.redact(text)),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| redact_strings(item, redactor))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, child)| {
                    let child = if super::key::is_secret_field(key) && !child.is_null() {
                        Value::String(REDACTED.to_owned())
                    } else {
                        redact_strings(child, redactor)
                    };
                    (key.clone(), child)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn replace_field(value: &mut Value, path: &[&str]) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    let children: Vec<&mut Value> = match value {
        Value::Object(map) => map
            .iter_mut()
            .filter(|(key, _)| *first == "*" || key == first)
            .map(|(_, child)| child)
            .collect(),
        Value::Array(items) => items
            .iter_mut()
            .enumerate()
            .filter(|(at, _)| *first == "*" || first.parse::<usize>().ok() == Some(*at))
            .map(|(_, child)| child)
            .collect(),
        _ => Vec::new(),
    };
    for child in children {
        if rest.is_empty() {
            *child = Value::String(REDACTED.to_owned());
        } else {
            replace_field(child, rest);
        }
    }
}

/// `url`'s path and query below `root` (or below its host, when it is not under
/// `root`).
pub fn path_below(url: &str, root: &str) -> String {
    let root = root.trim_end_matches('/');
    if !root.is_empty()
        && let Some(rest) = url.strip_prefix(root)
        && (rest.is_empty() || rest.starts_with('/') || rest.starts_with('?'))
    {
        return if rest.starts_with('/') {
            rest.to_owned()
        } else {
            format!("/{rest}")
        };
    }
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    match after_scheme.find(['/', '?']) {
        Some(at) if after_scheme[at..].starts_with('/') => after_scheme[at..].to_owned(),
        Some(at) => format!("/{}", &after_scheme[at..]),
        None => "/".to_owned(),
    }
}

impl Redaction {
    /// `request` as a cassette keeps it, its path taken below `root`.
    pub fn request(
        &self,
        request: &HttpRequest,
        root: &str,
        redactor: &Redactor,
    ) -> RecordedRequest {
        let headers = request
            .headers
            .iter()
            .filter(|(name, _)| {
                let name = name.to_ascii_lowercase();
                REQUEST_HEADERS_KEPT.contains(&name.as_str()) && !is_secret_header(&name)
            })
            .map(|(name, value)| (name.to_ascii_lowercase(), redactor.redact(value)))
            .collect();
        let (body, body_text) = match serde_json::from_slice::<Value>(&request.body) {
            Ok(value) => (Some(self.redact_json(&value, redactor)), None),
            Err(_) if request.body.is_empty() => (None, None),
            Err(_) => (
                None,
                Some(redactor.redact(&String::from_utf8_lossy(&request.body))),
            ),
        };
        RecordedRequest {
            method: request.method.to_owned(),
            path: redactor.redact(&super::key::redact_path(&path_below(&request.url, root))),
            headers,
            body,
            body_text,
        }
    }

    /// A response as a cassette keeps it.
    pub fn response(&self, raw: RawResponse, redactor: &Redactor) -> RecordedResponse {
        let headers = raw
            .headers
            .iter()
            .filter(|(name, _)| {
                let name = name.to_ascii_lowercase();
                !RESPONSE_HEADERS_DROPPED.contains(&name.as_str())
                    && (!is_secret_header(&name) || is_rate_limit_header(&name))
            })
            .map(|(name, value)| (name.to_ascii_lowercase(), redactor.redact(value)))
            .collect();
        let (body, body_base64, pieces) = self.redact_body(&raw.body, raw.pieces, redactor);
        RecordedResponse {
            status: raw.status,
            headers,
            headers_ms: raw.headers_ms,
            body,
            body_base64,
            pieces,
            end: raw.end,
        }
    }

    fn redact_body(
        &self,
        body: &[u8],
        pieces: Vec<Piece>,
        redactor: &Redactor,
    ) -> (Option<String>, Option<String>, Vec<Piece>) {
        if body.is_empty() {
            return (None, None, Vec::new());
        }
        let text = String::from_utf8_lossy(body);
        let mut redacted = redactor.redact(&text);
        if !self.fields.is_empty()
            && let Ok(value) = serde_json::from_str::<Value>(&redacted)
        {
            let again = self.redact_json(&value, redactor);
            if again != value {
                redacted = crate::canonical_json::to_string(&again);
            }
        }
        if redacted == text && std::str::from_utf8(body).is_err() {
            use base64::Engine;
            let encoded = base64::engine::general_purpose::STANDARD.encode(body);
            return (None, Some(encoded), pieces);
        }
        if redacted == text {
            return (Some(redacted), None, pieces);
        }
        let pieces = remap_pieces(body, &redacted, &pieces, redactor);
        (Some(redacted), None, pieces)
    }
}

/// The pieces of a body whose text redaction changed, moved to where their bytes are in
/// the redacted text; a piece whose start cannot be placed (inside a redacted secret)
/// joins the piece before it.
fn remap_pieces(body: &[u8], redacted: &str, pieces: &[Piece], redactor: &Redactor) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::with_capacity(pieces.len());
    for piece in pieces {
        if piece.offset() == 0 {
            out.push(*piece);
            continue;
        }
        let prefix = String::from_utf8_lossy(&body[..piece.offset().min(body.len())]);
        let prefix = redactor.redact(&prefix);
        let last = out.last().map_or(0, |p| p.offset());
        if redacted.starts_with(prefix.as_str())
            && prefix.len() > last
            && prefix.len() < redacted.len()
        {
            out.push(Piece(prefix.len(), piece.at_ms()));
        }
    }
    out
}

/// Whether a response header is a rate-limit report (`x-ratelimit-remaining-tokens`,
/// `anthropic-ratelimit-input-tokens-limit`): clients back off by them, and their names
/// say "token" without holding one.
fn is_rate_limit_header(name: &str) -> bool {
    ["x-ratelimit-", "anthropic-ratelimit-", "ratelimit-"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

/// A response as it came off the wire, before redaction.
#[derive(Debug, Clone)]
pub struct RawResponse {
    /// The status.
    pub status: u16,
    /// The headers.
    pub headers: Vec<(String, String)>,
    /// When the headers arrived, in ms after the request.
    pub headers_ms: u64,
    /// Every body byte.
    pub body: Vec<u8>,
    /// The reads.
    pub pieces: Vec<Piece>,
    /// How the body ended.
    pub end: BodyEnd,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_taken_below_the_root_or_the_host() {
        let table = [
            (
                "http://h:1/v1/chat/completions",
                "http://h:1/v1",
                "/chat/completions",
            ),
            (
                "http://h:1/v1/chat/completions",
                "http://h:1",
                "/v1/chat/completions",
            ),
            ("http://h:1/v1?key=1", "http://other", "/v1?key=1"),
            ("http://h:1", "", "/"),
            ("http://h:1/v10/x", "http://h:1/v1", "/v10/x"),
        ];
        for (url, root, expected) in table {
            assert_eq!(path_below(url, root), expected, "{url} below {root}");
        }
    }

    #[test]
    fn a_key_split_across_reads_is_redacted_and_the_pieces_follow() {
        let key = "sk-test-0123456789abcdefghij";
        let body = format!("data: {{\"echo\":\"{key}\"}}\n\ndata: [DONE]\n\n");
        let split = body.find("0123").unwrap();
        let pieces = vec![
            Piece(0, 1),
            Piece(split, 2),
            Piece(body.find("data: [").unwrap(), 3),
        ];
        let redaction = Redaction::new().with_secret(key);
        let request = HttpRequest {
            method: "POST",
            url: "http://h/v1".into(),
            headers: vec![],
            body: vec![],
        };
        let redactor = redaction.redactor(&request);
        let (text, _, pieces) = redaction.redact_body(body.as_bytes(), pieces, &redactor);
        let text = text.unwrap();
        assert!(!text.contains("0123456789"), "{text}");
        // The read that began inside the key begins after its redaction instead.
        assert_eq!(pieces.len(), 3);
        assert_eq!(&text[pieces[1].offset()..pieces[2].offset()], "\"}\n\n");
        assert_eq!(&text[pieces[2].offset()..], "data: [DONE]\n\n");
    }
}
