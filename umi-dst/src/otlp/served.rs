//! One request `dst serve` answered, as spans (`GET /umi/trace?scope=S&format=otlp`,
//! `umi_dst::serve`'s `otlp_trace.rs`): a SERVER span for the request as the server
//! received it (`POST /v1/chat/completions`, with the HTTP semantic conventions'
//! `http.request.method`, `url.path`, `http.response.status_code`, and what the server's
//! log says of it: `umi.request.hash`, `umi.occurrence`, `umi.arrival`, `umi.end`,
//! `umi.cut`), and under it the spans of the request's own simulation, mapped as a run's
//! trace is (the walk of [`super`]: the model call as a CLIENT `chat {model}` span with
//! its `gen_ai.*` attributes, an MCP `tools/call` as `execute_tool {name}`, the faults as
//! `umi.fault` events).
//!
//! A served request's simulation starts at simulated time 0; its events are moved to
//! where the request sits on the scope's time line (`start`: the agent's clock when it
//! sent the request, or the previous request's end).

use std::time::Duration;

use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;

use super::semconv as sc;
use super::spans::{SpanSpec, Spans};
use super::walk::Walk;
use crate::trace::TraceEvent;

/// `http.request.method` (HTTP semantic conventions).
pub const HTTP_REQUEST_METHOD: &str = "http.request.method";
/// `url.path` (URL semantic conventions).
pub const URL_PATH: &str = "url.path";

/// One served request, as the server's log knows it.
#[derive(Debug, Clone)]
pub struct ServedRequest<'a> {
    /// The path it was served at (under the endpoint's prefix).
    pub path: &'a str,
    /// The status sent, `None` when the connection was closed without a response.
    pub status: Option<u16>,
    /// How the body ended: `complete`, `reset`, `stall`.
    pub ending: &'a str,
    /// Whether a 200's body ended short of a whole answer.
    pub cut: bool,
    /// Where it starts on the scope's time line, since the epoch.
    pub start: Duration,
    /// How long the response took, when the server recorded it (`timing.end_us`);
    /// else the end of its simulation's last span.
    pub length: Option<Duration>,
    /// Further attributes of the request's span (`umi.*`).
    pub attributes: Vec<KeyValue>,
    /// Its simulation's events, at times from the simulation's start.
    pub events: &'a [TraceEvent],
}

/// Adds `request` to `spans`: its SERVER span and its simulation's spans under it. Gives
/// back the spans and where the request ended on the time line.
pub fn served_request(mut spans: Spans, request: &ServedRequest<'_>) -> (Spans, Duration) {
    let mut attributes = vec![
        sc::string(HTTP_REQUEST_METHOD, "POST"),
        sc::string(URL_PATH, request.path),
    ];
    if let Some(status) = request.status {
        attributes.push(sc::int(sc::HTTP_RESPONSE_STATUS_CODE, status));
    }
    attributes.extend(request.attributes.iter().cloned());
    let planned_end = request.start + request.length.unwrap_or_default();
    let parent = spans.span(SpanSpec {
        parent: None,
        name: format!("POST {}", request.path),
        kind: SpanKind::Server,
        start: request.start,
        end: planned_end,
        attributes,
        error: None,
        faults: Vec::new(),
    });
    let mut walk = Walk::new(spans, parent);
    for event in request.events {
        let mut moved = event.clone();
        moved.at = event.at + request.start;
        walk.event(&moved);
    }
    let (mut spans, walked_end) = walk.finish(planned_end);
    let end = if request.length.is_some() {
        planned_end
    } else {
        walked_end
    };
    if let Some(parent) = parent {
        spans.set_end(parent, end);
        if let Some(message) = failure(request) {
            spans.set_status(parent, StatusCode::Error, &message);
        }
    }
    (spans, end)
}

/// Why the request's span is an error (HTTP semantic conventions: a server span fails on
/// a 5xx, and here on a response that never came whole), or `None`.
fn failure(request: &ServedRequest<'_>) -> Option<String> {
    match request.status {
        None => Some(format!(
            "the connection ended without a response ({})",
            request.ending
        )),
        Some(status) if status >= 500 => Some(format!("status {status}")),
        Some(_) if request.cut => Some(format!("the body was cut ({})", request.ending)),
        Some(_) => None,
    }
}
