//! `GET /umi/trace?scope=S&format=otlp`: a scope's run as OpenTelemetry, one OTLP JSON
//! `ExportTraceServiceRequest` (<https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding>)
//! holding two kinds of resource:
//!
//! - the served requests, under `service.name = umi.dst-serve`, `umi.seed`, `umi.scope`:
//!   one trace per scope (its id from the seed and the scope: `otlp::ids`), a SERVER span
//!   per request in arrival order with its simulation's spans under it (`otlp::served`:
//!   the model call as `chat {model}` with the GenAI semantic conventions' attributes,
//!   MCP `tools/call` as `execute_tool {name}`, faults as `umi.fault` events);
//! - the agent's own spans (`POST /v1/traces`, `agent_spans.rs`), kept as received,
//!   under their own resources.
//!
//! One time line, in the run's simulated time from Umi's epoch (2024-01-01T00:00:00Z): a
//! request that carried the agent's clock (`x-umi-clock-us`, its log entry's `clock_us`)
//! starts at epoch + `clock_us`; one without starts where the previous one ended. An
//! agent on Umi's clock stamps its own spans on the same clock, so both line up. The
//! same run exports the same bytes (ids derived, times simulated, entries in arrival
//! order); nothing here goes into a hash or an answer.

use std::collections::BTreeMap;
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;

use super::agent_spans::regrouped;
use super::reply::State;
use super::session::Entry;
use crate::constants::SIM_EPOCH_UNIX_MS_DEFAULT;
use crate::otlp::semconv as sc;
use crate::otlp::{ServedRequest, Spans, ids, served_request, to_json};
use crate::trace::KeptEvent;

/// The `service.name` of the served requests' resource.
pub const SERVICE_NAME_SERVE: &str = "umi.dst-serve";

/// The scope's (every scope's, when none is named) requests and agent spans as OTLP JSON.
pub(crate) fn otlp_json(state: &State, scope: Option<&str>) -> Vec<u8> {
    let by_scope: BTreeMap<String, Vec<Entry>> = state.session.read_log(scope, |logged, _, _| {
        let mut by_scope: BTreeMap<String, Vec<Entry>> = BTreeMap::new();
        for entry in logged {
            by_scope
                .entry(entry.scope.clone())
                .or_default()
                .push(entry.clone());
        }
        by_scope
    });
    let mut resource_spans = Vec::new();
    for (name, mut entries) in by_scope {
        entries.sort_by_key(|entry| entry.arrival);
        resource_spans.push(scope_spans(&name, &entries, state.config.seed));
    }
    if let Some(name) = scope
        && resource_spans.is_empty()
    {
        resource_spans.push(scope_spans(name, &[], state.config.seed));
    }
    resource_spans.extend(regrouped(state.agent_spans.spans(scope)));
    to_json(&ExportTraceServiceRequest { resource_spans })
}

/// One scope's requests, in arrival order, as one trace under the server's resource.
fn scope_spans(
    scope: &str,
    entries: &[Entry],
    session_seed: u64,
) -> opentelemetry_proto::tonic::trace::v1::ResourceSpans {
    let seeds: std::collections::BTreeSet<u64> = entries.iter().map(|e| e.seed).collect();
    let seed = seeds.first().copied().unwrap_or(session_seed);
    let seeds_text: Vec<String> = seeds.iter().map(u64::to_string).collect();
    let resource = vec![
        sc::string(sc::SERVICE_NAME, SERVICE_NAME_SERVE),
        sc::string(
            sc::UMI_SEED,
            if seeds_text.is_empty() {
                seed.to_string()
            } else {
                seeds_text.join(",")
            },
        ),
        sc::string(sc::UMI_SCOPE, scope),
    ];
    let mut spans = Spans::new(
        ids::trace_id(seed, scope),
        SIM_EPOCH_UNIX_MS_DEFAULT,
        resource,
    );
    let mut previous_end = Duration::ZERO;
    for entry in entries {
        let start = clock_of(entry).map_or(previous_end, Duration::from_micros);
        let events: Vec<_> = entry.events.iter().map(KeptEvent::event).collect();
        let request = ServedRequest {
            path: &entry.path,
            status: entry.status,
            ending: entry.end,
            cut: entry.cut,
            start,
            length: length_of(entry),
            attributes: entry_attributes(entry),
            events: &events,
        };
        let (next, end) = served_request(spans, &request);
        spans = next;
        previous_end = end;
    }
    spans.resource_spans()
}

/// The agent's clock when it sent the request (`x-umi-clock-us`), if it sent it.
fn clock_of(entry: &Entry) -> Option<u64> {
    entry.clock_us
}

/// How long the response took in simulated time (`timing`): to its end, or for a stall
/// to its last byte (the server's 600 s hold on a stalled connection is no part of the
/// run: the client's own timeout ends it first).
fn length_of(entry: &Entry) -> Option<Duration> {
    let timing = &entry.timing;
    let end_us = if timing.ending == "stall" {
        timing.last_us
    } else {
        timing.end_us
    };
    Some(Duration::from_micros(end_us))
}

/// What the server's log says of a request, as `umi.*` attributes of its span.
fn entry_attributes(entry: &Entry) -> Vec<opentelemetry_proto::tonic::common::v1::KeyValue> {
    let mut attributes = vec![
        sc::string("umi.endpoint", entry.endpoint.clone()),
        sc::string("umi.request.hash", entry.request_hash.clone()),
        sc::int("umi.occurrence", entry.occurrence),
        sc::int("umi.arrival", entry.arrival),
        sc::string("umi.run_seed", entry.run_seed.to_string()),
        sc::string("umi.end", entry.end),
        sc::boolean("umi.cut", entry.cut),
    ];
    if !entry.faults.is_empty() {
        attributes.push(sc::strings("umi.faults", &entry.faults));
    }
    if let Some(clock_us) = clock_of(entry) {
        attributes.push(sc::int("umi.clock_us", clock_us));
    }
    attributes
}

/// Whether `GET /umi/trace`'s query asks for OTLP (`format=otlp`); absent or `jsonl`:
/// the log's JSON lines; anything else is refused, naming the query parameter.
pub(crate) fn wants_otlp(query: Option<&str>) -> Result<bool, String> {
    let named = query.and_then(|query| {
        form_urlencoded::parse(query.as_bytes())
            .find(|(key, _)| key == "format")
            .map(|(_, value)| value.into_owned())
    });
    match named.as_deref() {
        None | Some("jsonl") => Ok(false),
        Some("otlp") => Ok(true),
        Some(other) => Err(format!(
            "query format={other:?}: GET /umi/trace is format=jsonl (the log, the default) or format=otlp (OTLP JSON)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_is_read_from_the_query_and_an_unknown_one_named() {
        assert_eq!(wants_otlp(None), Ok(false));
        assert_eq!(wants_otlp(Some("scope=a&format=otlp")), Ok(true));
        assert_eq!(wants_otlp(Some("format=jsonl")), Ok(false));
        let refused = wants_otlp(Some("format=zipkin")).unwrap_err();
        assert!(refused.starts_with("query format=\"zipkin\""), "{refused}");
    }
}
