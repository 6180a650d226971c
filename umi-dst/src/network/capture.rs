//! What crossed the wire, kept for checkers: each exchange's request, status, headers,
//! the reads the client got, and how the body ended.

use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use umi_core::llm::transport::{BodyStream, HttpRequest};

use super::Endpoint;
use super::profile::Profile;

/// How a body ended, as far as the client read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyEnd {
    /// The client stopped reading before the body ended (or it is still being read).
    Open,
    /// The server ended the body (its end marker or not): every byte is in the reads.
    Ended,
    /// The connection broke.
    Reset,
}

/// One request and its response.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The request's URL.
    pub url: String,
    /// The endpoint's profile.
    pub profile: Profile,
    /// The response status (0 until the response is made).
    pub status: u16,
    /// The response headers.
    pub headers: Vec<(String, String)>,
    /// The reads the client got, in order.
    pub reads: Vec<Vec<u8>>,
    /// How the body ended.
    pub end: BodyEnd,
    /// For a 429: the wait the server meant by its Retry-After (none: it sent none).
    pub retry_after_meant_ms: Option<u64>,
}

impl Exchange {
    pub(crate) fn new(request: &HttpRequest, endpoint: &Endpoint) -> Self {
        Self {
            url: super::gemini::redact_url(&request.url).unwrap_or_else(|| request.url.clone()),
            profile: endpoint.profile(),
            status: 0,
            headers: Vec::new(),
            reads: Vec::new(),
            end: BodyEnd::Open,
            retry_after_meant_ms: None,
        }
    }

    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every byte of the body the client read, joined.
    pub fn body(&self) -> Vec<u8> {
        self.reads.concat()
    }
}

/// Adds `exchange` to `log` and records the body's reads into it as the client reads.
pub(crate) fn record(
    log: Arc<Mutex<Vec<Exchange>>>,
    exchange: Exchange,
    body: BodyStream,
) -> BodyStream {
    let index = {
        let mut log = log.lock().unwrap_or_else(PoisonError::into_inner);
        log.push(exchange);
        log.len() - 1
    };
    let update = move |log: &Arc<Mutex<Vec<Exchange>>>, edit: &dyn Fn(&mut Exchange)| {
        let mut log = log.lock().unwrap_or_else(PoisonError::into_inner);
        edit(&mut log[index]);
    };
    futures::stream::unfold(
        (body, log, false),
        move |(mut body, log, done)| async move {
            if done {
                return None;
            }
            match body.next().await {
                Some(Ok(bytes)) => {
                    update(&log, &|e| e.reads.push(bytes.clone()));
                    Some((Ok(bytes), (body, log, false)))
                }
                Some(Err(error)) => {
                    update(&log, &|e| e.end = BodyEnd::Reset);
                    Some((Err(error), (body, log, true)))
                }
                None => {
                    update(&log, &|e| e.end = BodyEnd::Ended);
                    None
                }
            }
        },
    )
    .boxed()
}
