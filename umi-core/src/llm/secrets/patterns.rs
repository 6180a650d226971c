//! Redaction by pattern: what looks like a credential, whoever configured it.
//!
//! A client's [`super::Redactor`] removes the secrets it was configured with; these pure
//! functions catch the rest, and are what a text with no client behind it (a trace
//! line, a seed comment, a request's `Debug`) can still be passed through: the token
//! after `Bearer ` or `Basic ` (at least `SECRET_TOKEN_CHARS_MIN` characters, not all
//! letters: "Bearer authentication" is prose), the value of a secret header or field (`x-api-key: …`,
//! `"api_key": "…"`), a URL's userinfo (`https://user:[REDACTED]@host`) and secret query
//! parameters (`?key=…`, `&access_token=…`).

use std::ops::Range;

use crate::constants::SECRET_TOKEN_CHARS_MIN;

/// What a redacted secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Header names whose values are credentials, whatever the provider.
const SECRET_HEADERS: [&str; 8] = [
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "ocp-apim-subscription-key",
    "cookie",
    "set-cookie",
];

/// Parts of a header name that mark it secret (`x-custom-token`, `x-auth-signature`).
const SECRET_HEADER_PARTS: [&str; 7] = [
    "key",
    "token",
    "secret",
    "password",
    "auth",
    "signature",
    "credential",
];

/// Names that, followed by `:` or `=`, introduce a credential anywhere in a text (a
/// header dump, a JSON body, a query string).
const SECRET_FIELDS: [&str; 11] = [
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "api_key",
    "apikey",
    "x-goog-api-key",
    "access_token",
    "refresh_token",
    "client_secret",
    "password",
];

/// Query parameters that carry a credential (only after `?` or `&`: as words they are
/// too common).
const SECRET_QUERY_PARAMS: [&str; 5] = ["key", "token", "sig", "signature", "secret"];

/// Authorization schemes whose credential follows a space.
const AUTH_SCHEMES: [&str; 2] = ["bearer", "basic"];

/// Whether a header named `name` carries a credential (case-insensitive): the
/// well-known ones, and any whose name says key, token, secret, password, auth,
/// signature or credential.
pub fn is_secret_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_HEADERS.contains(&name.as_str())
        || SECRET_HEADER_PARTS.iter().any(|part| name.contains(part))
}

/// `headers` with the values of secret headers (see [`is_secret_header`]) replaced by
/// [`REDACTED`] (an auth scheme such as `Bearer` is kept).
pub fn redact_headers(headers: &[(String, String)]) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            if !is_secret_header(name) {
                return (name.clone(), value.clone());
            }
            let redacted = match scheme_len(value.as_bytes(), 0) {
                Some(len) => format!("{}{REDACTED}", &value[..len]),
                None => REDACTED.to_owned(),
            };
            (name.clone(), redacted)
        })
        .collect()
}

/// `url` with its credentials redacted: the userinfo's password (or a user that is a
/// token) and secret query parameters.
pub fn redact_url(url: &str) -> String {
    redact_patterns(url)
}

/// `text` with everything that looks like a credential replaced by [`REDACTED`]; text
/// already redacted is left as it is.
pub fn redact_patterns(text: &str) -> String {
    if !may_hold_credential(text) {
        return text.to_owned();
    }
    replace_spans(text, credential_spans(text))
}

/// Whether [`redact_patterns`] would change `text` (a quick scan when it holds nothing
/// any pattern starts with).
pub fn changed_by_redaction(text: &str) -> bool {
    redaction_if_changed(text).is_some()
}

/// [`redact_patterns`] of `text`, or `None` when that is `text` as it is (found without
/// a copy when `text` holds nothing any pattern starts with).
pub fn redaction_if_changed(text: &str) -> Option<String> {
    if !may_hold_credential(text) {
        return None;
    }
    let redacted = replace_spans(text, credential_spans(text));
    (redacted != text).then_some(redacted)
}

/// The first byte (either case) of every name a pattern starts at: an auth scheme, a
/// secret field, a secret query parameter.
const NAME_FIRST_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut at = 0;
    while at < PATTERN_NAMES.len() {
        let first = PATTERN_NAMES[at].as_bytes()[0];
        table[first.to_ascii_lowercase() as usize] = true;
        table[first.to_ascii_uppercase() as usize] = true;
        at += 1;
    }
    table
};

/// Every name a pattern starts at (a word beginning with one of them), but `://`.
const PATTERN_NAMES: [&str; 18] = [
    AUTH_SCHEMES[0],
    AUTH_SCHEMES[1],
    SECRET_FIELDS[0],
    SECRET_FIELDS[1],
    SECRET_FIELDS[2],
    SECRET_FIELDS[3],
    SECRET_FIELDS[4],
    SECRET_FIELDS[5],
    SECRET_FIELDS[6],
    SECRET_FIELDS[7],
    SECRET_FIELDS[8],
    SECRET_FIELDS[9],
    SECRET_FIELDS[10],
    SECRET_QUERY_PARAMS[0],
    SECRET_QUERY_PARAMS[1],
    SECRET_QUERY_PARAMS[2],
    SECRET_QUERY_PARAMS[3],
    SECRET_QUERY_PARAMS[4],
];

// A name added to any of the three lists and not here would be skipped by the quick pass
// (a credential left in a cassette or a log): the lengths must add up, and a test checks
// every listed name is here. A new kind of pattern must start at one of these names or at
// `://`, or `may_hold_credential` must learn where it starts.
const _: () = assert!(
    PATTERN_NAMES.len() == AUTH_SCHEMES.len() + SECRET_FIELDS.len() + SECRET_QUERY_PARAMS.len()
);

/// Whether [`credential_spans`] may find anything in `text`: one pass over it, where the
/// patterns take one per name. Each pattern starts at a word beginning with one of
/// [`PATTERN_NAMES`] (case-insensitive, at a word boundary, as [`word_starts`] finds
/// them) or at a `://`; a text with neither holds no span, and is left as it is.
fn may_hold_credential(text: &str) -> bool {
    let bytes = text.as_bytes();
    if text.contains("://") {
        return true;
    }
    let mut at_boundary = true;
    for (at, &byte) in bytes.iter().enumerate() {
        if at_boundary && NAME_FIRST_BYTES[usize::from(byte)] {
            let rest = &bytes[at..];
            let starts_name = PATTERN_NAMES.iter().any(|name| {
                rest.len() >= name.len() && rest[..name.len()].eq_ignore_ascii_case(name.as_bytes())
            });
            if starts_name {
                return true;
            }
        }
        at_boundary = !is_word_byte(byte);
    }
    false
}

/// Where the credentials found by pattern are in `text` (unsorted, may overlap).
pub(super) fn credential_spans(text: &str) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    scheme_tokens(text, &mut spans);
    secret_fields(text, &mut spans);
    query_params(text, &mut spans);
    url_userinfo(text, &mut spans);
    spans.retain(|span| !span.is_empty() && &text[span.clone()] != REDACTED);
    spans
}

fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_'
}

fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"-._~+/=".contains(&byte) || byte >= 0x80
}

/// Whether a value (of a field, a parameter, userinfo) ends at `byte`.
fn ends_value(byte: u8) -> bool {
    byte.is_ascii_whitespace() || b"\"',;&#)}]<>[\\".contains(&byte)
}

/// Every start of `needle` (ASCII, case-insensitive) in `text` at a word boundary.
fn word_starts<'a>(text: &'a str, needle: &'a str) -> impl Iterator<Item = usize> + 'a {
    let bytes = text.as_bytes();
    let n = needle.len();
    // The first byte alone rules out almost every position, cheaply.
    let first = needle.as_bytes()[0];
    (0..bytes.len().saturating_sub(n - 1)).filter(move |&i| {
        bytes[i].eq_ignore_ascii_case(&first)
            && bytes[i..i + n].eq_ignore_ascii_case(needle.as_bytes())
            && (i == 0 || !is_word_byte(bytes[i - 1]))
    })
}

/// The length of an auth scheme and its spaces at `at` (`Bearer `), if one starts there.
fn scheme_len(bytes: &[u8], at: usize) -> Option<usize> {
    AUTH_SCHEMES.iter().find_map(|scheme| {
        let end = at + scheme.len();
        let matches = bytes.len() > end
            && bytes[at..end].eq_ignore_ascii_case(scheme.as_bytes())
            && bytes[end] == b' ';
        matches.then(|| skip(bytes, end, |b| b == b' ') - at)
    })
}

fn skip(bytes: &[u8], mut at: usize, what: impl Fn(u8) -> bool) -> usize {
    while at < bytes.len() && what(bytes[at]) {
        at += 1;
    }
    at
}

/// Tokens after `Bearer ` or `Basic ` that do not read as prose (long enough, and not
/// all letters).
fn scheme_tokens(text: &str, spans: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    for scheme in AUTH_SCHEMES {
        for start in word_starts(text, scheme) {
            let Some(len) = scheme_len(bytes, start) else {
                continue;
            };
            let from = start + len;
            let to = skip(bytes, from, is_token_byte);
            let token = &text[from..to];
            let prose = token.chars().all(|c| c.is_ascii_alphabetic());
            if token.chars().count() >= SECRET_TOKEN_CHARS_MIN && !prose {
                spans.push(from..to);
            }
        }
    }
}

/// The value after `name` and its `:` or `=` (quotes and spaces around allowed), with
/// an auth scheme kept.
fn value_after(bytes: &[u8], name_end: usize) -> Option<Range<usize>> {
    let mut at = skip(bytes, name_end, |b| b == b'"' || b == b'\'' || b == b' ');
    if at >= bytes.len() || (bytes[at] != b':' && bytes[at] != b'=') {
        return None;
    }
    at = skip(bytes, at + 1, |b| b == b' ' || b == b'"' || b == b'\'');
    if let Some(len) = scheme_len(bytes, at) {
        at += len;
    }
    let end = skip(bytes, at, |b| !ends_value(b));
    (end > at).then_some(at..end)
}

fn secret_fields(text: &str, spans: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    for name in SECRET_FIELDS {
        for start in word_starts(text, name) {
            let end = start + name.len();
            if end < bytes.len() && is_word_byte(bytes[end]) {
                continue;
            }
            spans.extend(value_after(bytes, end));
        }
    }
}

fn query_params(text: &str, spans: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    for name in SECRET_QUERY_PARAMS {
        for start in word_starts(text, name) {
            let end = start + name.len();
            let after_separator =
                start > 0 && (bytes[start - 1] == b'?' || bytes[start - 1] == b'&');
            if after_separator && end < bytes.len() && bytes[end] == b'=' {
                let to = skip(bytes, end + 1, |b| !ends_value(b));
                if to > end + 1 {
                    spans.push(end + 1..to);
                }
            }
        }
    }
}

/// `scheme://user:password@host`: the password (or a lone user, a token) redacted.
fn url_userinfo(text: &str, spans: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(found) = text[from..].find("://") {
        let start = from + found + 3;
        let end = skip(bytes, start, |b| !ends_value(b) && b != b'/' && b != b'?');
        if let Some(at) = text[start..end].rfind('@') {
            let userinfo = start..start + at;
            match text[userinfo.clone()].find(':') {
                Some(colon) if userinfo.start + colon + 1 < userinfo.end => {
                    spans.push(userinfo.start + colon + 1..userinfo.end);
                }
                Some(_) => {}
                None if !userinfo.is_empty() => spans.push(userinfo),
                None => {}
            }
        }
        from = end.max(start);
    }
}

/// `text` with each span replaced by [`REDACTED`] (overlapping spans merged).
fn replace_spans(text: &str, mut spans: Vec<Range<usize>>) -> String {
    spans.sort_by_key(|span| (span.start, span.end));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for span in spans {
        if span.end <= at {
            continue;
        }
        let start = span.start.max(at);
        out.push_str(&text[at..start]);
        if start == span.start {
            out.push_str(REDACTED);
        }
        at = span.end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_redact_what_looks_like_a_credential() {
        let table = [
            // (text, redacted)
            (
                "Authorization: Bearer sk-live-abcdefghij",
                "Authorization: Bearer [REDACTED]",
            ),
            ("use Bearer auth", "use Bearer auth"),
            (
                "Bearer authentication failed",
                "Bearer authentication failed",
            ),
            (
                "(i.e. Authorization: Bearer YOUR_KEY)",
                "(i.e. Authorization: Bearer [REDACTED])",
            ),
            ("basic dXNlcjpwYXNzd29yZA==", "basic [REDACTED]"),
            ("x-api-key: ant-0123", "x-api-key: [REDACTED]"),
            ("{\"api-key\": \"az-99\"}", "{\"api-key\": \"[REDACTED]\"}"),
            (
                "\"api_key\":\"k1\",\"model\":\"m\"",
                "\"api_key\":\"[REDACTED]\",\"model\":\"m\"",
            ),
            ("invalid_api_key: try again", "invalid_api_key: try again"),
            (
                "https://host/v1?api-version=2024&key=AIzaSy123",
                "https://host/v1?api-version=2024&key=[REDACTED]",
            ),
            ("a key=value in prose", "a key=value in prose"),
            (
                "error sending request for url (https://bob:hunter2@proxy.example/v1/chat)",
                "error sending request for url (https://bob:[REDACTED]@proxy.example/v1/chat)",
            ),
            ("https://ghp_token123@host/x", "https://[REDACTED]@host/x"),
            (
                "mailto-free https://host/a@b",
                "mailto-free https://host/a@b",
            ),
            ("already Bearer [REDACTED]", "already Bearer [REDACTED]"),
            ("x-api-key: [REDACTED]", "x-api-key: [REDACTED]"),
            ("nothing here", "nothing here"),
            ("", ""),
        ];
        for (text, expected) in table {
            assert_eq!(redact_patterns(text), expected, "{text}");
        }
    }

    /// The quick pass knows every name a pattern starts at (review of issue 41: the list
    /// is written out by hand, so a name added to a source list must be added there).
    #[test]
    fn every_listed_name_is_a_pattern_name() {
        for name in AUTH_SCHEMES
            .iter()
            .chain(&SECRET_FIELDS)
            .chain(&SECRET_QUERY_PARAMS)
        {
            assert!(
                PATTERN_NAMES.contains(name),
                "{name} is not in PATTERN_NAMES"
            );
            assert!(may_hold_credential(&format!("x {name}")), "{name}");
        }
    }

    /// Texts around every pattern name: before it a word byte or not, the name in
    /// either case, after it what each pattern reads next.
    fn texts_around_names() -> Vec<String> {
        let mut texts = Vec::new();
        for name in PATTERN_NAMES {
            for before in ["", " ", "x", "?", "&", "-", "_", "\"", "é", "a?"] {
                for after in [
                    "",
                    ":",
                    "=",
                    " ",
                    "s",
                    "=abcdefgh12",
                    ": Bearer sk-0123456789",
                    " abcdefgh12",
                    "\": \"v4lue\"",
                ] {
                    texts.push(format!("{before}{name}{after}"));
                    texts.push(format!("{before}{}{after}", name.to_ascii_uppercase()));
                }
            }
        }
        texts
    }

    #[test]
    fn the_quick_scan_never_skips_a_text_a_pattern_redacts() {
        let mut texts = texts_around_names();
        texts.extend(
            [
                "https://bob:hunter2@proxy.example/v1",
                "ftp://tok@h",
                "a :// b",
                "plain prose with no names in it at all",
                "kebab-key=1 and snake_key=2",
                "the keys, tokens and secrets",
                "",
                "x",
                "東京 bearer 東京東京東京東京東京",
            ]
            .map(str::to_owned),
        );
        for text in &texts {
            let spans = credential_spans(text);
            if !may_hold_credential(text) {
                assert!(spans.is_empty(), "{text:?} skipped but has {spans:?}");
            }
            let redacted = replace_spans(text, spans);
            assert_eq!(redact_patterns(text), redacted, "{text:?}");
            assert_eq!(
                redaction_if_changed(text),
                (redacted != *text).then(|| redacted.clone()),
                "{text:?}"
            );
        }
        assert!(!may_hold_credential("the model answered in prose"));
        assert!(may_hold_credential("pass a Token"));
    }

    #[test]
    fn secret_headers_are_recognised_by_name() {
        for name in [
            "Authorization",
            "x-api-key",
            "api-key",
            "X-Custom-Token",
            "cookie",
        ] {
            assert!(is_secret_header(name), "{name}");
        }
        for name in [
            "content-type",
            "anthropic-version",
            "HTTP-Referer",
            "accept",
        ] {
            assert!(!is_secret_header(name), "{name}");
        }
        let headers = [
            ("authorization".to_owned(), "Bearer sk-1".to_owned()),
            ("x-api-key".to_owned(), "ant".to_owned()),
            ("content-type".to_owned(), "application/json".to_owned()),
        ];
        assert_eq!(
            redact_headers(&headers),
            [
                ("authorization".to_owned(), "Bearer [REDACTED]".to_owned()),
                ("x-api-key".to_owned(), "[REDACTED]".to_owned()),
                ("content-type".to_owned(), "application/json".to_owned()),
            ]
        );
    }
}
