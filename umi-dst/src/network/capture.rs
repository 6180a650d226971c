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
            url: super::headers::redact_url(&request.url).unwrap_or_else(|| request.url.clone()),
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
    // What the network hands over: an exchange whose body nobody has read yet.
    debug_assert!(
        exchange.end == BodyEnd::Open && exchange.reads.is_empty(),
        "capture: {} handed over with its body already read ({:?}, {} reads)",
        exchange.url,
        exchange.end,
        exchange.reads.len()
    );
    let index = {
        let mut log = log.lock().unwrap_or_else(PoisonError::into_inner);
        log.push(exchange);
        log.len() - 1
    };
    let update = move |log: &Arc<Mutex<Vec<Exchange>>>, edit: &dyn Fn(&mut Exchange)| {
        let mut log = log.lock().unwrap_or_else(PoisonError::into_inner);
        let exchange = &mut log[index];
        // What the body hands the capture: reads, then one end, nothing after it.
        debug_assert_eq!(
            exchange.end,
            BodyEnd::Open,
            "capture: {} got a read or an end after its body ended",
            exchange.url
        );
        edit(exchange);
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

#[cfg(test)]
mod tests {
    use umi_core::llm::transport::TransportError;

    use super::*;

    fn exchange(end: BodyEnd) -> Exchange {
        Exchange {
            url: "https://api.openai.sim/v1/chat/completions".into(),
            profile: Profile::OpenAi,
            status: 200,
            headers: Vec::new(),
            reads: Vec::new(),
            end,
            retry_after_meant_ms: None,
        }
    }

    fn body(chunks: &[&[u8]]) -> BodyStream {
        let chunks: Vec<Result<Vec<u8>, TransportError>> =
            chunks.iter().map(|chunk| Ok(chunk.to_vec())).collect();
        futures::stream::iter(chunks).boxed()
    }

    #[test]
    fn the_reads_and_the_end_are_recorded_as_the_client_reads() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let read = crate::Simulation::new(crate::SimConfig::new(0)).block_on(async |_| {
            record(log.clone(), exchange(BodyEnd::Open), body(&[b"ab", b"c"]))
                .collect::<Vec<_>>()
                .await
        });
        assert_eq!(read.len(), 2);
        let log = log.lock().unwrap();
        assert_eq!(log[0].body(), b"abc");
        assert_eq!(log[0].end, BodyEnd::Ended);
    }

    /// The receiving side of the network's handover: an exchange whose body was already
    /// read (planted; `Exchange::new` makes them open) trips the assertion.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "handed over with its body already read")]
    fn an_exchange_already_ended_trips_the_seam_assertion() {
        let log = Arc::new(Mutex::new(Vec::new()));
        drop(record(log, exchange(BodyEnd::Ended), body(&[b"x"])));
    }
}
