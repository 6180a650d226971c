//! HAR import: traffic a user already captured (browser devtools, mitmproxy, Charles)
//! becomes a cassette.
//!
//! HAR 1.2 (<http://www.softwareishard.com/blog/har-12-spec/>) keeps each entry's request
//! (method, URL, headers, `postData.text`), its response (status, headers,
//! `content.text`, base64 when `content.encoding` says so) and its `timings`. A HAR has
//! no reads, so each body becomes one piece arriving when the response did
//! (`blocked + dns + connect + send + wait`, the parts HAR marks unknown with -1 left
//! out). Entries are taken in file order, those under `root` only (all, when `root` is
//! empty), through the same redaction as a recording; cookies are never kept.

use serde::Deserialize;

use super::redact::RawResponse;
use super::{BodyEnd, Exchange, Piece, Redaction};
use crate::llm::transport::HttpRequest;

/// Why a HAR file could not be imported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarError {
    /// It is not a HAR file: what is wrong and where.
    #[error("not a HAR file: {0}")]
    Shape(String),
    /// An entry cannot become an exchange.
    #[error("log.entries[{index}]: {reason}")]
    Entry {
        /// The entry, from 0.
        index: usize,
        /// What is wrong.
        reason: String,
    },
}

#[derive(Deserialize)]
struct Har {
    log: Log,
}

#[derive(Deserialize)]
struct Log {
    entries: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    request: Request,
    response: Response,
    #[serde(default)]
    timings: Option<Timings>,
}

#[derive(Deserialize)]
struct NameValue {
    name: String,
    value: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    method: String,
    url: String,
    #[serde(default)]
    headers: Vec<NameValue>,
    #[serde(default)]
    post_data: Option<PostData>,
}

#[derive(Deserialize)]
struct PostData {
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct Response {
    status: u16,
    #[serde(default)]
    headers: Vec<NameValue>,
    content: Content,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    encoding: Option<String>,
}

#[derive(Deserialize, Default)]
struct Timings {
    #[serde(default)]
    blocked: Option<f64>,
    #[serde(default)]
    dns: Option<f64>,
    #[serde(default)]
    connect: Option<f64>,
    #[serde(default)]
    send: Option<f64>,
    #[serde(default)]
    wait: Option<f64>,
}

impl Timings {
    /// When the response began, in whole ms after the request (unknown parts, -1, left
    /// out).
    fn headers_ms(&self) -> u64 {
        let parts = [self.blocked, self.dns, self.connect, self.send, self.wait];
        let total: f64 = parts.into_iter().flatten().filter(|ms| *ms > 0.0).sum();
        // Not a seeded path: an import runs once, outside any simulation.
        total.round().clamp(0.0, u64::MAX as f64) as u64
    }
}

/// The exchanges of HAR `text` under `root`, redacted by `redaction`.
pub fn import(text: &str, root: &str, redaction: &Redaction) -> Result<Vec<Exchange>, HarError> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let har: Har = serde_path_to_error::deserialize(&mut deserializer)
        .map_err(|error| HarError::Shape(format!("at {}: {}", error.path(), error.inner())))?;
    let mut exchanges = Vec::new();
    for (index, entry) in har.log.entries.into_iter().enumerate() {
        if !root.is_empty() && !entry.request.url.starts_with(root.trim_end_matches('/')) {
            continue;
        }
        let exchange = exchange_of(entry, root, redaction)
            .map_err(|reason| HarError::Entry { index, reason })?;
        exchanges.push(exchange);
    }
    Ok(exchanges)
}

fn exchange_of(entry: Entry, root: &str, redaction: &Redaction) -> Result<Exchange, String> {
    let method = match entry.request.method.to_ascii_uppercase().as_str() {
        "GET" => "GET",
        "POST" => "POST",
        "DELETE" => "DELETE",
        "PUT" => "PUT",
        "PATCH" => "PATCH",
        other => {
            return Err(format!(
                "request.method `{other}` is not one a provider takes"
            ));
        }
    };
    let pairs = |list: Vec<NameValue>| -> Vec<(String, String)> {
        list.into_iter().map(|nv| (nv.name, nv.value)).collect()
    };
    let request = HttpRequest {
        method,
        url: entry.request.url,
        headers: pairs(entry.request.headers),
        body: entry
            .request
            .post_data
            .and_then(|data| data.text)
            .unwrap_or_default()
            .into_bytes(),
    };
    let text = entry.response.content.text.unwrap_or_default();
    let body = match entry.response.content.encoding.as_deref() {
        Some("base64") => {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(text.as_bytes())
                .map_err(|error| format!("response.content.text: not base64: {error}"))?
        }
        _ => text.into_bytes(),
    };
    let headers_ms = entry.timings.unwrap_or_default().headers_ms();
    let pieces = if body.is_empty() {
        Vec::new()
    } else {
        vec![Piece(0, headers_ms)]
    };
    let redactor = redaction.redactor(&request);
    Ok(Exchange {
        request: redaction.request(&request, root, &redactor),
        response: redaction.response(
            RawResponse {
                status: entry.response.status,
                headers: pairs(entry.response.headers),
                headers_ms,
                body,
                pieces,
                end: BodyEnd::Clean,
            },
            &redactor,
        ),
    })
}
