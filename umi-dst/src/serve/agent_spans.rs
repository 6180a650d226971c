//! The agent's own OpenTelemetry spans, kept per scope: what `POST /v1/traces`
//! (`spans_in.rs`) filed, read back by `GET /umi/spans?scope=S` (this file's JSON view),
//! counted in `GET /umi/trace`'s summary line (`agent_spans`) and exported beside the
//! served requests by `GET /umi/trace?format=otlp` (`otlp_trace.rs`).
//!
//! A span is kept as received (the OTLP `Span` with its `Resource` and
//! `InstrumentationScope`), in arrival order. Nothing here feeds a seed, an answer or a
//! trace hash: spans are what the agent says it did, shown beside what the server did.
//! Memory is bounded three ways: at most [`AGENT_SPANS_PER_SCOPE_MAX`] spans and
//! [`AGENT_SPAN_BYTES_PER_SCOPE_MAX`] bytes per scope (the ingest rejects the rest, as
//! OTLP's `partial_success.rejected_spans`), at most [`AGENT_SPAN_SCOPES_MAX`] scopes
//! (past it the least recently used one is forgotten), and at most [`AGENT_SPAN_BYTES_MAX`]
//! bytes across every scope (past it the least recently used other scopes are forgotten
//! to make room, and what still does not fit is rejected). The spans of one `ResourceSpans`
//! share its resource, and those of one `ScopeSpans` its instrumentation scope (an
//! [`Arc`], kept and counted once), so a large resource sent with many spans costs its
//! size once, not once per span.
//! `POST /umi/reset` forgets them as it forgets the scope's log.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;
use serde_json::{Map, Value, json};
use umi_core::hex::lower as hex;

/// Spans kept per scope; past it a scope's new spans are rejected (`rejected_spans`).
pub const AGENT_SPANS_PER_SCOPE_MAX: usize = 10_000;

/// Bytes kept per scope (OTLP protobuf sizes, prost's `encoded_len`: each span, plus each
/// resource and instrumentation scope once per `ResourceSpans`/`ScopeSpans` it came in);
/// past it a scope's new spans are rejected (`rejected_spans`).
pub const AGENT_SPAN_BYTES_PER_SCOPE_MAX: usize = 64 * 1024 * 1024;

/// Scopes holding spans at most; past it the least recently used one is forgotten.
pub const AGENT_SPAN_SCOPES_MAX: usize = 1_000;

/// Bytes kept across every scope (counted as [`AGENT_SPAN_BYTES_PER_SCOPE_MAX`] counts
/// them): eight full scopes. Past it the least recently used other scopes are forgotten
/// to make room for a scope's new spans; what still does not fit is rejected.
pub const AGENT_SPAN_BYTES_MAX: usize = 8 * AGENT_SPAN_BYTES_PER_SCOPE_MAX;

/// The bounds [`AgentSpans::add`] keeps (the constants above; smaller in the tests).
#[derive(Debug, Clone, Copy)]
struct Limits {
    spans_per_scope: usize,
    bytes_per_scope: usize,
    bytes: usize,
    scopes: usize,
}

const LIMITS: Limits = Limits {
    spans_per_scope: AGENT_SPANS_PER_SCOPE_MAX,
    bytes_per_scope: AGENT_SPAN_BYTES_PER_SCOPE_MAX,
    bytes: AGENT_SPAN_BYTES_MAX,
    scopes: AGENT_SPAN_SCOPES_MAX,
};

/// Depth of nested array/kvlist attribute values rendered in `/umi/spans` (deeper ones
/// are shown as `null`): a bound on the recursion a hostile body could ask for.
const ATTRIBUTE_DEPTH_MAX: usize = 16;

/// A resource with its schema URL, shared by the spans of one `ResourceSpans`.
pub(crate) type Resourced = Arc<(Option<Resource>, String)>;

/// An instrumentation scope with its schema URL, shared by the spans of one `ScopeSpans`.
pub(crate) type Scoped = Arc<(Option<InstrumentationScope>, String)>;

/// One span as the agent sent it, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Kept {
    /// The resource it was sent under (`service.name`, ...), with its schema URL, shared
    /// by the spans of its `ResourceSpans`.
    pub(crate) resource: Resourced,
    /// The instrumentation scope that made it (`pydantic-ai`, ...), with its schema URL,
    /// shared by the spans of its `ScopeSpans`.
    pub(crate) instrumentation: Scoped,
    /// The span.
    pub(crate) span: Span,
}

impl Kept {
    /// The bytes this span adds after `previous` (the scope's last kept span): its own
    /// encoded size, plus its resource's and instrumentation scope's when it does not
    /// share them with `previous`.
    fn bytes_after(&self, previous: Option<&Kept>) -> usize {
        let mut bytes = self.span.encoded_len();
        if previous.is_none_or(|p| !Arc::ptr_eq(&p.resource, &self.resource)) {
            let (resource, url) = &*self.resource;
            bytes += resource.as_ref().map_or(0, Message::encoded_len) + url.len();
        }
        if previous.is_none_or(|p| !Arc::ptr_eq(&p.instrumentation, &self.instrumentation)) {
            let (scope, url) = &*self.instrumentation;
            bytes += scope.as_ref().map_or(0, Message::encoded_len) + url.len();
        }
        bytes
    }
}

/// Which bound a rejected span met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bound {
    /// [`AGENT_SPANS_PER_SCOPE_MAX`].
    Spans,
    /// [`AGENT_SPAN_BYTES_PER_SCOPE_MAX`], or [`AGENT_SPAN_BYTES_MAX`] with no other
    /// scope left to forget.
    Bytes,
}

/// One scope's spans, their bytes, and when it was last used.
#[derive(Debug, Default)]
struct ScopeSpansKept {
    spans: Vec<Kept>,
    bytes: usize,
    last_used: u64,
}

#[derive(Debug, Default)]
struct Store {
    scopes: BTreeMap<String, ScopeSpansKept>,
    /// The bytes of every scope, summed.
    bytes: usize,
    tick: u64,
}

impl Store {
    /// Forgets `name`'s spans and their bytes.
    fn forget(&mut self, name: &str) {
        if let Some(gone) = self.scopes.remove(name) {
            assert!(
                self.bytes >= gone.bytes,
                "the total holds every scope's bytes"
            );
            self.bytes -= gone.bytes;
        }
    }

    /// The least recently used scope other than `scope`.
    fn oldest_but(&self, scope: &str) -> Option<String> {
        (self.scopes.iter())
            .filter(|(name, _)| name.as_str() != scope)
            .min_by_key(|(_, kept)| kept.last_used)
            .map(|(name, _)| name.clone())
    }

    /// Forgets the least recently used scopes other than `scope` until `incoming` more
    /// bytes fit under `bytes_max`, or none is left.
    fn make_room(&mut self, scope: &str, incoming: usize, bytes_max: usize) {
        while self.bytes.saturating_add(incoming) > bytes_max {
            let Some(oldest) = self.oldest_but(scope) else {
                return;
            };
            self.forget(&oldest);
        }
    }
}

/// Every scope's agent spans.
#[derive(Debug, Default)]
pub(crate) struct AgentSpans {
    store: Mutex<Store>,
}

impl AgentSpans {
    fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Files `spans` under `scope` in order; how many were rejected because the scope
    /// held [`AGENT_SPANS_PER_SCOPE_MAX`] spans or would pass
    /// [`AGENT_SPAN_BYTES_PER_SCOPE_MAX`] bytes, and the bound the first one met.
    pub(crate) fn add(&self, scope: &str, spans: Vec<Kept>) -> (usize, Option<Bound>) {
        add_within(&mut self.store(), scope, spans, LIMITS)
    }

    /// Forgets `scope`'s spans, or every scope's.
    pub(crate) fn reset(&self, scope: Option<&str>) {
        let mut store = self.store();
        match scope {
            Some(scope) => store.forget(scope),
            None => {
                store.scopes.clear();
                store.bytes = 0;
            }
        }
    }

    /// How many spans `scope` holds (every scope, when none is named).
    pub(crate) fn count(&self, scope: Option<&str>) -> usize {
        let store = self.store();
        match scope {
            Some(scope) => store.scopes.get(scope).map_or(0, |kept| kept.spans.len()),
            None => store.scopes.values().map(|kept| kept.spans.len()).sum(),
        }
    }

    /// A copy of `scope`'s spans in arrival order (every scope's, by scope name, when
    /// none is named).
    pub(crate) fn spans(&self, scope: Option<&str>) -> Vec<Kept> {
        let store = self.store();
        (store.scopes.iter())
            .filter(|(name, _)| scope.is_none_or(|scope| scope == name.as_str()))
            .flat_map(|(_, kept)| kept.spans.iter().cloned())
            .collect()
    }
}

/// [`AgentSpans::add`] under `limits`.
fn add_within(
    store: &mut Store,
    scope: &str,
    spans: Vec<Kept>,
    limits: Limits,
) -> (usize, Option<Bound>) {
    store.tick += 1;
    let tick = store.tick;
    if !store.scopes.contains_key(scope)
        && store.scopes.len() >= limits.scopes
        && let Some(oldest) = store.oldest_but(scope)
    {
        store.forget(&oldest);
    }
    let incoming = (spans.iter().enumerate())
        .map(|(i, span)| span.bytes_after(i.checked_sub(1).map(|p| &spans[p])))
        .fold(0usize, usize::saturating_add);
    let held = store.scopes.get(scope).map_or(0, |kept| kept.bytes);
    let room = limits.bytes_per_scope.saturating_sub(held);
    store.make_room(scope, incoming.min(room), limits.bytes);
    let Store {
        scopes,
        bytes: total,
        ..
    } = store;
    let kept = scopes.entry(scope.to_owned()).or_default();
    kept.last_used = tick;
    let (mut rejected, mut bound) = (0, None);
    for span in spans {
        let bytes = span.bytes_after(kept.spans.last());
        let over = if kept.spans.len() >= limits.spans_per_scope {
            Some(Bound::Spans)
        } else if kept.bytes.saturating_add(bytes) > limits.bytes_per_scope
            || total.saturating_add(bytes) > limits.bytes
        {
            Some(Bound::Bytes)
        } else {
            None
        };
        if over.is_some() {
            rejected += 1;
            bound = bound.or(over);
            continue;
        }
        kept.bytes += bytes;
        *total += bytes;
        kept.spans.push(span);
    }
    assert!(*total <= limits.bytes, "the spans kept fit the total");
    (rejected, bound)
}

/// `GET /umi/spans[?scope=S]`: `{"scope": S, "spans": [...]}` (SCHEMA.md section 2).
pub(crate) fn spans_json(spans: &AgentSpans, scope: Option<&str>) -> String {
    let listed: Vec<Value> = spans.spans(scope).iter().map(span_json).collect();
    umi_core::canonical_json::to_string(&json!({"scope": scope, "spans": listed}))
}

/// One kept span as `/umi/spans` lists it.
fn span_json(kept: &Kept) -> Value {
    let span = &kept.span;
    let kind = SpanKind::try_from(span.kind).map_or("unspecified", |kind| match kind {
        SpanKind::Unspecified => "unspecified",
        SpanKind::Internal => "internal",
        SpanKind::Server => "server",
        SpanKind::Client => "client",
        SpanKind::Producer => "producer",
        SpanKind::Consumer => "consumer",
    });
    let status = span
        .status
        .as_ref()
        .map_or(json!({"code": "unset", "message": ""}), |status| {
            let code = StatusCode::try_from(status.code).map_or("unset", |code| match code {
                StatusCode::Unset => "unset",
                StatusCode::Ok => "ok",
                StatusCode::Error => "error",
            });
            json!({"code": code, "message": status.message})
        });
    let events: Vec<Value> = (span.events.iter())
        .map(|event| {
            json!({"name": event.name, "time_unix_nano": event.time_unix_nano,
                   "attributes": attributes(&event.attributes)})
        })
        .collect();
    let parent = (!span.parent_span_id.is_empty()).then(|| hex(&span.parent_span_id));
    let resource = (kept.resource.0.as_ref()).map_or(&[][..], |r| &r.attributes);
    let instrumentation = kept.instrumentation.0.as_ref().map(|s| s.name.as_str());
    json!({
        "trace_id": hex(&span.trace_id),
        "span_id": hex(&span.span_id),
        "parent_span_id": parent,
        "name": span.name,
        "kind": kind,
        "start_unix_nano": span.start_time_unix_nano,
        "end_unix_nano": span.end_time_unix_nano,
        "attributes": attributes(&span.attributes),
        "events": events,
        "status": status,
        "resource": attributes(resource),
        "instrumentation_scope": instrumentation,
    })
}

/// OTLP attributes as a JSON object, key to value (a repeated key: the last one).
pub(crate) fn attributes(pairs: &[KeyValue]) -> Value {
    let mut out = Map::new();
    for pair in pairs {
        out.insert(pair.key.clone(), any_json(pair.value.as_ref(), 0));
    }
    Value::Object(out)
}

/// An OTLP `AnyValue` as plain JSON: strings, booleans, integers and doubles as
/// themselves, arrays as arrays, key-value lists as objects, bytes as lowercase hex.
fn any_json(value: Option<&AnyValue>, depth: usize) -> Value {
    let Some(value) = value.and_then(|v| v.value.as_ref()) else {
        return Value::Null;
    };
    if depth >= ATTRIBUTE_DEPTH_MAX {
        return Value::Null;
    }
    match value {
        Any::StringValue(text) => Value::String(text.clone()),
        Any::BoolValue(flag) => Value::Bool(*flag),
        Any::IntValue(number) => json!(number),
        Any::DoubleValue(number) => json!(number),
        Any::ArrayValue(array) => Value::Array(
            (array.values.iter())
                .map(|v| any_json(Some(v), depth + 1))
                .collect(),
        ),
        Any::KvlistValue(list) => {
            let mut out = Map::new();
            for pair in &list.values {
                out.insert(pair.key.clone(), any_json(pair.value.as_ref(), depth + 1));
            }
            Value::Object(out)
        }
        Any::BytesValue(bytes) => Value::String(hex(bytes)),
        #[allow(unreachable_patterns)] // newer protos add kinds (string table references)
        _ => Value::Null,
    }
}

/// Kept spans grouped back into OTLP's shape: consecutive spans of one resource and
/// instrumentation scope share a `ResourceSpans`/`ScopeSpans`, in arrival order.
pub(crate) fn regrouped(spans: Vec<Kept>) -> Vec<ResourceSpans> {
    let mut out: Vec<ResourceSpans> = Vec::new();
    let mut previous: Option<(Resourced, Scoped)> = None;
    for kept in spans {
        let same_resource = previous.as_ref().is_some_and(|(resource, _)| {
            Arc::ptr_eq(resource, &kept.resource) || *resource == kept.resource
        });
        if !same_resource {
            out.push(ResourceSpans {
                resource: kept.resource.0.clone(),
                scope_spans: Vec::new(),
                schema_url: kept.resource.1.clone(),
            });
        }
        let resource = out.last_mut().expect("pushed above");
        let same_scope = same_resource
            && previous.as_ref().is_some_and(|(_, scope)| {
                Arc::ptr_eq(scope, &kept.instrumentation) || *scope == kept.instrumentation
            });
        if !same_scope {
            resource.scope_spans.push(ScopeSpans {
                scope: kept.instrumentation.0.clone(),
                spans: Vec::new(),
                schema_url: kept.instrumentation.1.clone(),
            });
        }
        let scope = resource.scope_spans.last_mut().expect("pushed above");
        scope.spans.push(kept.span);
        previous = Some((kept.resource, kept.instrumentation));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A span of about `bytes` bytes (its name) under its own small resource.
    fn span(bytes: usize) -> Kept {
        Kept {
            resource: Arc::new((None, String::new())),
            instrumentation: Arc::new((None, String::new())),
            span: Span {
                name: "x".repeat(bytes),
                ..Span::default()
            },
        }
    }

    const SMALL: Limits = Limits {
        spans_per_scope: 100,
        bytes_per_scope: 3_000,
        bytes: 5_000,
        scopes: 10,
    };

    /// Past the total, the least recently used other scopes are forgotten to make room;
    /// with none left to forget, the rest is rejected as over the byte bound. (Before the
    /// total existed, 1,000 scopes of 64 MiB each could be kept: 64 GB.)
    #[test]
    fn the_total_forgets_the_oldest_scopes_then_rejects() {
        let mut store = Store::default();
        for scope in ["a", "b"] {
            let added = add_within(&mut store, scope, vec![span(1_000), span(1_000)], SMALL);
            assert_eq!(added, (0, None), "{scope}");
        }
        assert!(
            store.bytes > 4_000 && store.bytes <= 5_000,
            "{}",
            store.bytes
        );
        // "c" needs about 2,000 more: "a", the oldest, is forgotten; "b" stays.
        assert_eq!(
            add_within(&mut store, "c", vec![span(1_000), span(1_000)], SMALL),
            (0, None)
        );
        let names: Vec<&str> = store.scopes.keys().map(String::as_str).collect();
        assert_eq!(names, ["b", "c"]);
        // "c"'s own bound rejects what passes 3,000 bytes.
        let (rejected, bound) = add_within(&mut store, "c", vec![span(1_000); 3], SMALL);
        assert_eq!((rejected, bound), (3, Some(Bound::Bytes)));
        let total: usize = store.scopes.values().map(|kept| kept.bytes).sum();
        assert_eq!(store.bytes, total, "the total is the scopes' sum");
        store.forget("c");
        let left: usize = store.scopes.values().map(|kept| kept.bytes).sum();
        assert_eq!(store.bytes, left, "forgetting a scope takes its bytes off");
    }

    /// With no other scope to forget, what passes the total is rejected even under the
    /// scope's own bound.
    #[test]
    fn alone_past_the_total_the_rest_is_rejected() {
        let mut store = Store::default();
        let tight = Limits {
            bytes: 2_500,
            ..SMALL
        };
        let (rejected, bound) = add_within(&mut store, "solo", vec![span(1_000); 3], tight);
        assert_eq!((rejected, bound), (1, Some(Bound::Bytes)));
        assert_eq!(store.scopes["solo"].spans.len(), 2);
        assert!(store.bytes <= 2_500);
    }
}
