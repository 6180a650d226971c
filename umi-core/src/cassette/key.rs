//! What a replay matches a live request on, and how it explains a request it does not
//! hold.
//!
//! Two requests match when their [`RequestKey`]s are equal: the method, the path and
//! query, and the body as canonical JSON (sorted keys), after three edits made to both
//! sides alike:
//!
//! - the fields the user said to ignore ([`IgnoreRules`]: a `user` id, `metadata`, a
//!   `messages.*.name`) are removed;
//! - text that looks like a credential is redacted, as the recorder redacted it;
//! - nothing else: a changed prompt, model or temperature is a different request.
//!
//! When a live request matches nothing, [`diff_paths`] names the JSON paths where it
//! differs from the closest recorded one (the reason a cassette stops matching is
//! almost always a field the user did not expect to change).

use serde_json::Value;

use crate::llm::secrets::{
    REDACTED, changed_by_redaction, is_secret_header, redact_patterns, redaction_if_changed,
};

/// Most differing paths an explanation lists.
pub const DIFF_PATHS_MAX: usize = 12;

/// Fields removed from both sides before two request bodies are compared: dotted paths
/// where `*` stands for any array index or object key (`user`, `metadata`,
/// `messages.*.name`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IgnoreRules {
    paths: Vec<Vec<String>>,
}

impl IgnoreRules {
    /// Ignores nothing.
    pub fn none() -> Self {
        Self::default()
    }

    /// Also ignores the field at dotted `path`.
    pub fn with_path(mut self, path: &str) -> Self {
        let segments = path.split('.').map(str::to_owned).collect();
        self.paths.push(segments);
        self
    }

    /// Removes the ignored fields from `value`.
    pub fn strip(&self, value: &mut Value) {
        for path in &self.paths {
            strip_path(value, path);
        }
    }
}

fn strip_path(value: &mut Value, path: &[String]) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    match value {
        Value::Object(map) if rest.is_empty() => {
            if first == "*" {
                map.clear();
            } else {
                map.remove(first);
            }
        }
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if first == "*" || first == key {
                    strip_path(child, rest);
                }
            }
        }
        Value::Array(items) => {
            let index = first.parse::<usize>().ok();
            for (at, child) in items.iter_mut().enumerate() {
                if first == "*" || index == Some(at) {
                    if rest.is_empty() {
                        *child = Value::Null;
                    } else {
                        strip_path(child, rest);
                    }
                }
            }
        }
        _ => {}
    }
}

/// What a replay matches a request on: method, path and query, and the body as
/// canonical JSON with the ignored fields removed and credentials redacted.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestKey {
    /// The method.
    pub method: String,
    /// The path and query, credentials redacted.
    pub path: String,
    /// The body as compared (canonical JSON, or the text of a body that is not JSON).
    pub body: String,
}

impl RequestKey {
    /// The key of a request with `method`, `path` (below the server root) and `body`.
    pub fn new(
        method: &str,
        path: &str,
        body: Option<&Value>,
        text: Option<&str>,
        ignore: &IgnoreRules,
    ) -> Self {
        let body = match (body, text) {
            (Some(value), _) => crate::canonical_json::to_string(&comparable(value, ignore)),
            (None, Some(text)) => redact_patterns(text),
            (None, None) => String::new(),
        };
        Self::with_body(method, path, body)
    }

    /// The key of `body` (already as compared), with the method and path normalized.
    fn with_body(method: &str, path: &str, body: String) -> Self {
        Self {
            method: method.to_ascii_uppercase(),
            path: redact_path(path),
            body,
        }
    }

    /// The key of a live request: `body` is parsed as JSON when it is JSON (and made
    /// comparable in place, as [`RequestKey::new`] does on a copy).
    pub fn of_bytes(method: &str, path: &str, body: &[u8], ignore: &IgnoreRules) -> Self {
        match serde_json::from_slice::<Value>(body) {
            Ok(value) => {
                let value = comparable_owned(value, ignore);
                Self::with_body(method, path, crate::canonical_json::to_string(&value))
            }
            Err(_) if body.is_empty() => Self::new(method, path, None, None, ignore),
            Err(_) => Self::new(
                method,
                path,
                None,
                Some(&String::from_utf8_lossy(body)),
                ignore,
            ),
        }
    }

    /// The key of a live JSON request as [`RequestKey::of_bytes`] makes it but with its
    /// body's strings left unredacted (`None`: the body is not JSON). Redaction scans
    /// every string; where this key equals a recorded key that redaction leaves as it is
    /// (see `Replay`'s index), the redacted key is that same key, so the scan is skipped.
    pub fn of_json_unredacted(
        method: &str,
        path: &str,
        body: &[u8],
        ignore: &IgnoreRules,
    ) -> Option<Self> {
        let mut value = serde_json::from_slice::<Value>(body).ok()?;
        ignore.strip(&mut value);
        let body = crate::canonical_json::to_string(&value);
        Some(Self::with_body(method, path, body))
    }

    /// Whether redacting this key's body (and path) again would leave it as it is, so a
    /// live body equal to it before redaction is equal to it after.
    pub fn is_redaction_fixed_point(&self, ignore: &IgnoreRules) -> bool {
        let Ok(mut value) = serde_json::from_str::<Value>(&self.body) else {
            return false;
        };
        if changed_by_redaction_anywhere(&value) {
            return Self::new(&self.method, &self.path, Some(&value), None, ignore) == *self;
        }
        // Redaction leaves `value` as it is, so its comparable form is `value` stripped:
        // what `new` computes, without the copy and the scans that would change nothing.
        ignore.strip(&mut value);
        self.method == self.method.to_ascii_uppercase()
            && self.path == redact_path(&self.path)
            && self.body == crate::canonical_json::to_string(&value)
    }

    /// The key of a recorded request.
    pub fn of_recorded(request: &super::RecordedRequest, ignore: &IgnoreRules) -> Self {
        Self::new(
            &request.method,
            &request.path,
            request.body.as_ref(),
            request.body_text.as_deref(),
            ignore,
        )
    }
}

/// `value` as a replay compares it: ignored fields removed, credential-like text in its
/// strings redacted.
pub fn comparable(value: &Value, ignore: &IgnoreRules) -> Value {
    comparable_owned(value.clone(), ignore)
}

/// [`comparable`], editing `value` rather than a copy.
fn comparable_owned(mut value: Value, ignore: &IgnoreRules) -> Value {
    redact_strings(&mut value);
    ignore.strip(&mut value);
    value
}

/// Redacts credential-like text in every string of `value`, and the whole value of a
/// field whose name says it holds a credential ([`is_secret_field`]).
fn redact_strings(value: &mut Value) {
    match value {
        Value::String(text) => {
            if let Some(redacted) = redaction_if_changed(text) {
                *text = redacted;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_strings),
        Value::Object(map) => {
            for (name, child) in map.iter_mut() {
                if is_secret_field(name) && !child.is_null() {
                    *child = Value::String(REDACTED.to_owned());
                } else {
                    redact_strings(child);
                }
            }
        }
        _ => {}
    }
}

/// Whether [`redact_strings`] would change `value`: a string redaction changes, or a
/// field named as a credential whose value is neither `null` nor already [`REDACTED`].
fn changed_by_redaction_anywhere(value: &Value) -> bool {
    match value {
        Value::String(text) => changed_by_redaction(text),
        Value::Array(items) => items.iter().any(changed_by_redaction_anywhere),
        Value::Object(map) => map.iter().any(|(name, child)| {
            if is_secret_field(name) {
                !child.is_null() && child.as_str() != Some(REDACTED)
            } else {
                changed_by_redaction_anywhere(child)
            }
        }),
        _ => false,
    }
}

/// The JSON field names that hold credentials: the well-known ones (`api_key`,
/// `authorization`, `password`, `client_secret`, ...) and any ending in `_token`,
/// `_secret`, `_password` or `api_key` (never `max_tokens` or `prompt_cache_key`).
pub fn is_secret_field(name: &str) -> bool {
    const EXACT: [&str; 12] = [
        "api-key",
        "api_key",
        "apikey",
        "authorization",
        "cookie",
        "credential",
        "credentials",
        "password",
        "secret",
        "token",
        "x-api-key",
        "x-goog-api-key",
    ];
    let name = name.to_ascii_lowercase();
    EXACT.contains(&name.as_str())
        || name.starts_with("authorization")
        || [
            "_token",
            "-token",
            "_secret",
            "_password",
            "api_key",
            "apikey",
        ]
        .iter()
        .any(|end| name.ends_with(end))
}

/// `path` (a path and query, or a whole URL) with every query value whose parameter's
/// name says it holds a credential (`subscription-key`, `auth`, `session_token`: the
/// header rule, [`is_secret_header`]) replaced, then credentials found by pattern.
pub fn redact_path(path: &str) -> String {
    let Some((before, query)) = path.split_once('?') else {
        return redact_patterns(path);
    };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if is_secret_header(name) => format!("{name}={REDACTED}"),
            _ => pair.to_owned(),
        })
        .collect();
    redact_patterns(&format!("{before}?{}", pairs.join("&")))
}

/// The JSON paths (`$.messages[2].content`) where `a` and `b` differ, in document order
/// of `a` then of `b`, at most [`DIFF_PATHS_MAX`]; a path is listed where the two stop
/// being alike (a changed type or value, a key or item only one side has).
pub fn diff_paths(a: &Value, b: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk_diff(a, b, "$", &mut out);
    out
}

fn walk_diff(a: &Value, b: &Value, at: &str, out: &mut Vec<String>) {
    if out.len() >= DIFF_PATHS_MAX || a == b {
        return;
    }
    match (a, b) {
        (Value::Object(left), Value::Object(right)) => {
            let mut keys: Vec<&String> = left.keys().chain(right.keys()).collect();
            keys.sort_unstable();
            keys.dedup();
            for key in keys {
                let path = format!("{at}.{key}");
                match (left.get(key), right.get(key)) {
                    (Some(l), Some(r)) => walk_diff(l, r, &path, out),
                    _ => push(out, path),
                }
            }
        }
        (Value::Array(left), Value::Array(right)) => {
            for index in 0..left.len().max(right.len()) {
                let path = format!("{at}[{index}]");
                match (left.get(index), right.get(index)) {
                    (Some(l), Some(r)) => walk_diff(l, r, &path, out),
                    _ => push(out, path),
                }
            }
        }
        _ => push(out, at.to_owned()),
    }
}

fn push(out: &mut Vec<String>, path: String) {
    if out.len() < DIFF_PATHS_MAX {
        out.push(path);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ignored_fields_do_not_change_the_key() {
        let ignore = IgnoreRules::none()
            .with_path("user")
            .with_path("metadata")
            .with_path("messages.*.name");
        let a = json!({"model": "m", "user": "u1", "metadata": {"t": 1},
            "messages": [{"role": "user", "content": "hi", "name": "ann"}]});
        let b = json!({"model": "m", "user": "u2",
            "messages": [{"role": "user", "content": "hi", "name": "bob"}]});
        let key = |v: &Value| RequestKey::new("POST", "/v1/x", Some(v), None, &ignore);
        assert_eq!(key(&a), key(&b));
        let c = json!({"model": "m", "messages": [{"role": "user", "content": "ho"}]});
        assert_ne!(key(&a), key(&c));
        assert_ne!(
            RequestKey::new("POST", "/v1/y", Some(&a), None, &ignore),
            key(&a)
        );
    }

    #[test]
    fn an_unredacted_key_equals_the_key_only_where_redaction_changes_nothing() {
        let ignore = IgnoreRules::none().with_path("user");
        let key = |body: &Value| {
            let bytes = serde_json::to_vec(body).unwrap();
            let unredacted =
                RequestKey::of_json_unredacted("post", "/v1/x", &bytes, &ignore).unwrap();
            (
                unredacted,
                RequestKey::of_bytes("post", "/v1/x", &bytes, &ignore),
            )
        };
        let plain = json!({"user": "u1", "messages": [{"content": "hi"}], "n": 2});
        let (unredacted, redacted) = key(&plain);
        assert_eq!(unredacted, redacted);
        assert!(redacted.is_redaction_fixed_point(&ignore));
        let keyed =
            json!({"messages": [{"content": "use Bearer abcdefghijklmnopqrstuvwxyz012345"}]});
        let (unredacted, redacted) = key(&keyed);
        assert_ne!(
            unredacted, redacted,
            "the credential is in the unredacted key"
        );
        assert!(redacted.is_redaction_fixed_point(&ignore));
        assert!(!unredacted.is_redaction_fixed_point(&ignore));
        assert!(RequestKey::of_json_unredacted("POST", "/v1/x", b"not json", &ignore).is_none());
    }

    #[test]
    fn the_fixed_point_check_agrees_with_redacting_again() {
        // What `is_redaction_fixed_point` computed before it skipped the copy: the key
        // made again from its own body.
        let again = |key: &RequestKey, ignore: &IgnoreRules| {
            serde_json::from_str::<Value>(&key.body).is_ok_and(|value| {
                RequestKey::new(&key.method, &key.path, Some(&value), None, ignore) == *key
            })
        };
        let bodies = [
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
            json!({"api_key": "[REDACTED]", "n": 1}),
            json!({"api_key": null}),
            json!({"api_key": "k"}),
            json!({"api_key": 7}),
            json!({"api_key": {"nested": "[REDACTED]"}}),
            json!({"messages": [{"content": "Bearer abcdefghijklmnopqrstuvwxyz012345"}]}),
            json!({"messages": [{"content": "Bearer [REDACTED]"}]}),
            json!({"messages": [{"content": "see https://u:[REDACTED]@h/x and the key"}]}),
            json!({"user": "u1", "metadata": {"password": "p"}, "list": [1, "token=x"]}),
            json!(["?key=abc", {"x_token": "[REDACTED]"}]),
            json!("just a string"),
            json!(12.5),
        ];
        let rules = [
            IgnoreRules::none(),
            IgnoreRules::none().with_path("user").with_path("metadata"),
            IgnoreRules::none().with_path("api_key"),
        ];
        for ignore in &rules {
            for body in &bodies {
                for (method, path) in [("POST", "/v1/x"), ("post", "/v1/x?key=abc")] {
                    let unredacted = RequestKey::with_body(method, path, body.to_string());
                    let made = RequestKey::new(method, path, Some(body), None, ignore);
                    let text = RequestKey::new(method, path, None, Some("not json"), ignore);
                    let raw = RequestKey {
                        method: method.to_owned(),
                        path: path.to_owned(),
                        body: format!(" {body}"),
                    };
                    for key in [unredacted, made, text, raw] {
                        assert_eq!(
                            key.is_redaction_fixed_point(ignore),
                            again(&key, ignore),
                            "{key:?} ignoring {ignore:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn secret_fields_and_query_values_are_redacted_and_the_rest_kept() {
        let body = json!({"api_key": "abc", "max_tokens": 9, "prompt_cache_key": "k",
            "mcp_servers": [{"authorization_token": "t0k"}], "auth": {"password": "p"},
            "messages": [{"content": "plain"}]});
        let key = RequestKey::new("POST", "/v1/x", Some(&body), None, &IgnoreRules::none());
        for secret in ["abc", "t0k", "\"p\""] {
            assert!(!key.body.contains(secret), "{secret} in {}", key.body);
        }
        for kept in ["\"max_tokens\":9", "\"prompt_cache_key\":\"k\"", "plain"] {
            assert!(key.body.contains(kept), "{kept} not in {}", key.body);
        }
        let table = [
            (
                "/v1/x?subscription-key=s3cret&api-version=2024",
                "/v1/x?subscription-key=[REDACTED]&api-version=2024",
            ),
            ("/v1/x?session_token=abc", "/v1/x?session_token=[REDACTED]"),
            ("/v1/x?alt=sse", "/v1/x?alt=sse"),
            ("/v1/x", "/v1/x"),
        ];
        for (path, expected) in table {
            assert_eq!(redact_path(path), expected);
        }
    }

    #[test]
    fn diff_paths_name_where_two_bodies_part() {
        let a = json!({"model": "m", "messages": [{"content": "hi"}, {"content": "x"}], "n": 1});
        let b = json!({"model": "m", "messages": [{"content": "ho"}], "n": "1", "extra": true});
        assert_eq!(
            diff_paths(&a, &b),
            vec!["$.extra", "$.messages[0].content", "$.messages[1]", "$.n"]
        );
        assert!(diff_paths(&a, &a).is_empty());
    }

    #[test]
    fn a_credential_in_a_prompt_matches_its_redacted_recording() {
        let live = json!({"messages": [{"content": "send Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345"}]});
        let recorded = comparable(&live, &IgnoreRules::none());
        assert_ne!(live, recorded);
        let key = |v: &Value| RequestKey::new("POST", "/v1/x", Some(v), None, &IgnoreRules::none());
        assert_eq!(key(&live), key(&recorded));
    }
}
