//! Cassettes: real provider traffic, recorded once, for a simulation to replay under its
//! seed.
//!
//! A cassette is a file of exchanges: each request as the client sent it (method, path,
//! the headers that matter, the body as canonical JSON) and the response as the server
//! sent it (status, headers, every body byte, where each read arrived and when, and how
//! the body ended: cleanly, with a reset, or with the server falling silent). The file is
//! one JSON header line, then one exchange per line in the order the exchanges completed,
//! every object's keys sorted, so two recordings diff line by line ([`mod@file`], ADR 0013).
//!
//! The recording side is production code and lives here: [`RecordingTransport`] wraps
//! any [`Transport`](crate::llm::transport::Transport) (the reqwest one in production or
//! staging; `dst record` puts it behind a proxy) and appends each exchange once its body
//! has ended, with every key, cookie and credential removed first ([`redact`]). The
//! replaying side is umi-dst's SimNetwork: the recording supplies the bytes, the seed
//! decides the reads, the latency and the faults over them. What a replay matches a
//! live request on, and how it explains a request it does not hold, is in [`key`].

pub mod file;
pub mod har;
pub mod key;
pub mod record;
pub mod redact;

use serde::{Deserialize, Serialize};

pub use file::{Cassette, CassetteError, CassetteWriter};
pub use key::{IgnoreRules, RequestKey, diff_paths};
pub use record::RecordingTransport;
pub use redact::Redaction;

/// The cassette format version this build reads and writes.
pub const CASSETTE_VERSION: u32 = 1;

/// Most exchanges a cassette may hold (a larger file is refused, not half loaded).
pub const CASSETTE_EXCHANGES_MAX: usize = 1_000_000;

/// Most body bytes one recorded response may hold.
pub const RESPONSE_BODY_BYTES_MAX: usize = 64 * 1024 * 1024;

/// Most reads one recorded response may keep (beyond it, later reads are merged into
/// the last: the bytes are all kept, their timing coarsened).
pub const RESPONSE_PIECES_MAX: usize = 100_000;

/// The request headers a cassette keeps (the ones that change what a provider answers);
/// every other request header, and every credential, is dropped.
pub const REQUEST_HEADERS_KEPT: &[&str] = &[
    "accept",
    "anthropic-beta",
    "anthropic-version",
    "content-type",
    "openai-beta",
];

/// The response headers a cassette never keeps: cookies, and the framing headers the
/// replaying server sets itself.
pub const RESPONSE_HEADERS_DROPPED: &[&str] = &[
    "connection",
    "content-encoding",
    "content-length",
    "keep-alive",
    "set-cookie",
    "transfer-encoding",
];

/// The first line of a cassette: which format version it is and what recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// The format version ([`CASSETTE_VERSION`]).
    pub umi_cassette: u32,
    /// What recorded it (`dst record 0.1.0`, `RecordingTransport 0.1.0`, `dst cassette
    /// import-har 0.1.0`).
    pub recorded_by: String,
    /// Where the traffic went (redacted), if one upstream is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// The JSON body fields the recorder replaced with `[REDACTED]` (dotted paths); a
    /// replay ignores them when it matches requests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted_fields: Vec<String>,
}

impl Header {
    /// A header for this version, recorded by `recorded_by`.
    pub fn new(recorded_by: &str, upstream: Option<&str>) -> Self {
        Self {
            umi_cassette: CASSETTE_VERSION,
            recorded_by: recorded_by.to_owned(),
            upstream: upstream.map(key::redact_path),
            redacted_fields: Vec::new(),
        }
    }
}

/// One request and the response it got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exchange {
    /// What the client sent.
    pub request: RecordedRequest,
    /// What the server sent back.
    pub response: RecordedResponse,
}

/// A request as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedRequest {
    /// `GET`, `POST`, `DELETE`.
    pub method: String,
    /// The path and query below the server's root (`/v1/chat/completions`), credentials
    /// in the query redacted.
    pub path: String,
    /// The headers of [`REQUEST_HEADERS_KEPT`] it carried, names lowercase, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, String)>,
    /// The body, when it was JSON (written with sorted keys).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_optional_json"
    )]
    pub body: Option<serde_json::Value>,
    /// The body, when it was text but not JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_text: Option<String>,
}

/// A response as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedResponse {
    /// The status code.
    pub status: u16,
    /// The headers, names lowercase, in order (none of [`RESPONSE_HEADERS_DROPPED`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, String)>,
    /// When the headers arrived, in ms after the request was sent.
    pub headers_ms: u64,
    /// The whole body as text (every byte, when it is UTF-8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The whole body in standard base64, when it is not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_base64: Option<String>,
    /// The reads as they arrived: each one's first byte's offset in the body and its
    /// arrival in ms after the request was sent; offsets strictly increase from 0.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pieces: Vec<Piece>,
    /// How the body ended.
    pub end: BodyEnd,
}

/// One read of a recorded body: `[offset, at_ms]` in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Piece(pub usize, pub u64);

impl Piece {
    /// The read's first byte's offset in the body.
    pub fn offset(self) -> usize {
        self.0
    }

    /// When the read arrived, in ms after the request was sent.
    pub fn at_ms(self) -> u64 {
        self.1
    }
}

/// How a recorded body ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BodyEnd {
    /// The server ended the body.
    Clean,
    /// The connection broke after the last piece.
    Reset,
    /// The server fell silent after the last piece (the recorder's idle timeout fired).
    Timeout,
    /// The client stopped reading after the last piece (an OpenAI client stops at
    /// `data: [DONE]`); what came after is not known, and a replay ends the body there.
    Dropped,
}

fn serialize_optional_json<S: serde::Serializer>(
    value: &Option<serde_json::Value>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => crate::canonical_json::serialize(value, serializer),
        None => serializer.serialize_none(),
    }
}

impl RecordedResponse {
    /// Every body byte.
    pub fn body_bytes(&self) -> Vec<u8> {
        use base64::Engine;
        match (&self.body, &self.body_base64) {
            (Some(text), _) => text.as_bytes().to_vec(),
            (None, Some(encoded)) => base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .unwrap_or_default(),
            (None, None) => Vec::new(),
        }
    }

    /// The body as reads: each piece's bytes and arrival time, in order (one read at the
    /// headers' time for a body recorded without pieces).
    pub fn reads(&self) -> Vec<(Vec<u8>, u64)> {
        let body = self.body_bytes();
        let mut reads = Vec::with_capacity(self.pieces.len().max(1));
        let mut start = 0;
        // Total over any pieces (a cassette built in code is not checked as a loaded one
        // is): every byte is delivered once, in order; a piece out of range or out of
        // order joins the read before it.
        for (index, piece) in self.pieces.iter().enumerate() {
            let next = self
                .pieces
                .get(index + 1)
                .map_or(body.len(), |n| n.offset());
            let end = if index + 1 == self.pieces.len() {
                body.len()
            } else {
                next.clamp(start, body.len())
            };
            if end > start {
                reads.push((body[start..end].to_vec(), piece.at_ms()));
                start = end;
            }
        }
        if start < body.len() {
            let at_ms = self.pieces.last().map_or(self.headers_ms, |p| p.at_ms());
            reads.push((body[start..].to_vec(), at_ms));
        }
        reads
    }

    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}
