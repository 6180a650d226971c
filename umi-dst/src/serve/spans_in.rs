//! `POST /v1/traces`: the agent under test sends its own OpenTelemetry spans to `dst
//! serve`, which files them under the run's scope (`agent_spans.rs`), so a run's page,
//! `umi.trace()` and `GET /umi/trace?format=otlp` show them beside the simulated model,
//! tools and faults.
//!
//! As the OTLP/HTTP spec says (<https://opentelemetry.io/docs/specs/otlp/#otlphttp>):
//! the body is an `ExportTraceServiceRequest` (opentelemetry-proto's
//! `collector/trace/v1/trace_service.proto`), binary protobuf with `Content-Type:
//! application/x-protobuf` or OTLP JSON with `application/json`, optionally
//! `Content-Encoding: gzip`; the answer is an `ExportTraceServiceResponse` in the same
//! encoding (200), with `partial_success.rejected_spans` for spans not kept; a body that
//! does not decode gets 400 with a `google.rpc.Status` whose message names what failed; an
//! unsupported content type or encoding 415. Decoding is prost's (protobuf) and the
//! official types' serde (JSON): nothing is parsed by hand.
//!
//! The scope (per `ResourceSpans`): the request's own (`/scope/{name}/v1/traces`,
//! `x-umi-scope`), else the resource attribute `umi.scope`, else `""`. Spans with
//! malformed ids (a trace id not 16 bytes or all zero, a span id not 8 bytes or all
//! zero, a parent id neither empty nor 8 bytes) are rejected, as are spans past
//! [`super::agent_spans::AGENT_SPANS_PER_SCOPE_MAX`] or
//! [`super::agent_spans::AGENT_SPAN_BYTES_PER_SCOPE_MAX`] in a scope. A full success
//! answers an empty `ExportTraceServiceResponse` (`{}` in JSON, no bytes in protobuf), as
//! the Collector does.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Request, Response};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, Span};
use prost::Message;

use super::address::{Address, checked_scope};
use super::agent_spans::{
    AGENT_SPAN_BYTES_MAX, AGENT_SPAN_BYTES_PER_SCOPE_MAX, AGENT_SPANS_PER_SCOPE_MAX, Bound, Kept,
};
use super::read;
use super::reply::{Body, State, full, respond};

/// Where OTLP/HTTP exporters send traces (the spec's default path), under any
/// `/seed/N` and `/scope/S` prefix.
pub(crate) const TRACES_PATH: &str = "/v1/traces";

/// The resource attribute that names a scope when the request does not.
pub const SCOPE_ATTRIBUTE: &str = "umi.scope";

/// `google.rpc.Status.code` for a request that does not decode (`INVALID_ARGUMENT`,
/// googleapis `google/rpc/code.proto`).
const RPC_INVALID_ARGUMENT: i32 = 3;

/// `google.rpc.Status` (googleapis `google/rpc/status.proto`: `int32 code = 1; string
/// message = 2; repeated google.protobuf.Any details = 3;`), the body OTLP/HTTP sends with
/// a 4xx; `details` are never filled here, so they are left out.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
struct RpcStatus {
    code: i32,
    message: String,
}

impl RpcStatus {
    /// The protobuf encoding, by prost's field encoders.
    fn encode_to_vec(&self) -> Vec<u8> {
        let mut out = Vec::new();
        prost::encoding::int32::encode(1, &self.code, &mut out);
        prost::encoding::string::encode(2, &self.message, &mut out);
        out
    }
}

/// The encodings OTLP/HTTP defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Protobuf,
    Json,
}

impl Encoding {
    fn content_type(self) -> &'static str {
        match self {
            Self::Protobuf => "application/x-protobuf",
            Self::Json => "application/json",
        }
    }
}

/// A refusal: the status and what was wrong.
struct Refusal {
    status: u16,
    message: String,
}

fn refused(status: u16, message: impl Into<String>) -> Refusal {
    Refusal {
        status,
        message: message.into(),
    }
}

/// Answers one `POST /v1/traces`.
pub(super) async fn handle(
    state: &State,
    request: Request<Incoming>,
    address: &Address,
) -> Response<Body> {
    let encoding = match request_encoding(&request) {
        Ok(encoding) => encoding,
        Err(refusal) => return status_response(Encoding::Json, &refusal),
    };
    match ingest(state, request, address, encoding).await {
        Ok(answer) => answer_response(encoding, &answer),
        Err(refusal) => status_response(encoding, &refusal),
    }
}

/// The method and content type checked: the encoding the body is in.
fn request_encoding(request: &Request<Incoming>) -> Result<Encoding, Refusal> {
    if request.method() != hyper::Method::POST {
        return Err(refused(
            405,
            format!(
                "{TRACES_PATH} takes POST (OTLP/HTTP), not {}",
                request.method()
            ),
        ));
    }
    let value = (request.headers().get(hyper::header::CONTENT_TYPE))
        .map(|v| v.to_str().unwrap_or("(not text)"))
        .unwrap_or("(none)");
    let essence = value
        .parse::<mime::Mime>()
        .map(|m| m.essence_str().to_ascii_lowercase());
    match essence.as_deref() {
        Ok("application/x-protobuf") => Ok(Encoding::Protobuf),
        Ok("application/json") => Ok(Encoding::Json),
        _ => Err(refused(
            415,
            format!(
                "header content-type {value:?}: OTLP/HTTP traces are application/x-protobuf or application/json"
            ),
        )),
    }
}

/// Reads, decodes and files the request's spans; the response to send.
async fn ingest(
    state: &State,
    request: Request<Incoming>,
    address: &Address,
    encoding: Encoding,
) -> Result<ExportTraceServiceResponse, Refusal> {
    let gzipped = content_encoding(&request)?;
    let limit = state.config.body_bytes_max;
    let body = read::request(request, limit)
        .await
        .map_err(|(status, message)| refused(status, message))?
        .body;
    let body = if gzipped { gunzip(&body, limit)? } else { body };
    let decoded = decode(&body, encoding)?;
    let (by_scope, mut rejected, mut why) = sorted(decoded, &address.scope)?;
    for (scope, spans) in by_scope {
        let (over, bound) = state.agent_spans.add(&scope, spans);
        rejected += over;
        if let Some(bound) = bound {
            why.get_or_insert_with(|| over_bound(&scope, bound));
        }
    }
    Ok(ExportTraceServiceResponse {
        partial_success: (rejected > 0).then(|| ExportTracePartialSuccess {
            rejected_spans: i64::try_from(rejected).unwrap_or(i64::MAX),
            error_message: why.unwrap_or_default(),
        }),
    })
}

/// Why spans of `scope` were rejected at `bound`.
fn over_bound(scope: &str, bound: Bound) -> String {
    let held = match bound {
        Bound::Spans => format!(
            "holds {AGENT_SPANS_PER_SCOPE_MAX} spans, this server's limit per scope (AGENT_SPANS_PER_SCOPE_MAX)"
        ),
        Bound::Bytes => format!(
            "would pass {AGENT_SPAN_BYTES_PER_SCOPE_MAX} bytes of spans, this server's limit per scope \
             (AGENT_SPAN_BYTES_PER_SCOPE_MAX), or the {AGENT_SPAN_BYTES_MAX} bytes of every scope \
             together (AGENT_SPAN_BYTES_MAX) with no other scope left to forget"
        ),
    };
    format!("scope {scope:?} {held}; POST /umi/reset?scope={scope} forgets them")
}

/// Whether the body is gzipped (`Content-Encoding: gzip`); identity or none: not.
fn content_encoding(request: &Request<Incoming>) -> Result<bool, Refusal> {
    let Some(value) = request.headers().get(hyper::header::CONTENT_ENCODING) else {
        return Ok(false);
    };
    match value.to_str().map(|v| v.trim().to_ascii_lowercase()) {
        Ok(v) if v == "gzip" => Ok(true),
        Ok(v) if v == "identity" || v.is_empty() => Ok(false),
        _ => Err(refused(
            415,
            format!("header content-encoding {value:?}: OTLP/HTTP bodies are sent as is or gzip"),
        )),
    }
}

/// The gzipped `body` inflated (every member, as `gzip -d` does), refused past `limit` bytes (`--body-bytes-max`: a small
/// body must not inflate into a large one).
fn gunzip(body: &[u8], limit: usize) -> Result<Vec<u8>, Refusal> {
    let mut out = Vec::new();
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    flate2::read::MultiGzDecoder::new(body)
        .take(cap)
        .read_to_end(&mut out)
        .map_err(|error| {
            refused(
                400,
                format!("the body is not gzip (header content-encoding: gzip): {error}"),
            )
        })?;
    if out.len() > limit {
        return Err(refused(
            413,
            format!(
                "the gzipped body inflates past this server's limit of {limit} bytes (--body-bytes-max)"
            ),
        ));
    }
    Ok(out)
}

/// The body as an `ExportTraceServiceRequest` (`otlp::from_protobuf`, `otlp::from_json`),
/// or a 400 naming what failed (for JSON, the path in the document).
fn decode(body: &[u8], encoding: Encoding) -> Result<ExportTraceServiceRequest, Refusal> {
    let decoded = match encoding {
        Encoding::Protobuf => crate::otlp::from_protobuf(body),
        Encoding::Json => crate::otlp::from_json(body),
    };
    decoded.map_err(|error| refused(400, format!("the body is {error}")))
}

/// Spans to keep, by scope, in the request's order; how many were rejected for their
/// ids and why the first one was.
type Sorted = (BTreeMap<String, Vec<Kept>>, usize, Option<String>);

/// The request's spans sorted by scope (the request's, else each resource's `umi.scope`,
/// else `""`), spans with malformed ids counted out.
fn sorted(request: ExportTraceServiceRequest, scope: &str) -> Result<Sorted, Refusal> {
    let mut by_scope: BTreeMap<String, Vec<Kept>> = BTreeMap::new();
    let (mut rejected, mut why) = (0, None);
    for (at, resource_spans) in request.resource_spans.into_iter().enumerate() {
        let scope = if scope.is_empty() {
            resource_scope(&resource_spans, at)?
        } else {
            scope.to_owned()
        };
        let kept = by_scope.entry(scope).or_default();
        let ResourceSpans {
            resource,
            scope_spans,
            schema_url,
        } = resource_spans;
        let resource = Arc::new((resource, schema_url));
        for (s, scope_spans) in scope_spans.into_iter().enumerate() {
            let instrumentation = Arc::new((scope_spans.scope, scope_spans.schema_url));
            for (n, span) in scope_spans.spans.into_iter().enumerate() {
                if let Err(reason) = ids_valid(&span) {
                    rejected += 1;
                    why.get_or_insert_with(|| {
                        format!("resourceSpans[{at}].scopeSpans[{s}].spans[{n}].{reason}")
                    });
                    continue;
                }
                kept.push(Kept {
                    resource: Arc::clone(&resource),
                    instrumentation: Arc::clone(&instrumentation),
                    span,
                });
            }
        }
    }
    by_scope.retain(|_, spans| !spans.is_empty());
    Ok((by_scope, rejected, why))
}

/// The scope a resource names (`umi.scope`, a string attribute), `""` for none; a 400
/// naming the attribute when it is not a scope name.
fn resource_scope(resource_spans: &ResourceSpans, at: usize) -> Result<String, Refusal> {
    let attributes = resource_spans
        .resource
        .as_ref()
        .map_or(&[][..], |r| &r.attributes);
    let Some(pair) = attributes.iter().find(|kv| kv.key == SCOPE_ATTRIBUTE) else {
        return Ok(String::new());
    };
    let where_ = format!("resourceSpans[{at}].resource.attributes[{SCOPE_ATTRIBUTE:?}]");
    match pair.value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(Any::StringValue(name)) => checked_scope(name)
            .map_err(|reason| refused(400, format!("{where_} {name:?}: {reason}"))),
        _ => Err(refused(400, format!("{where_}: not a string"))),
    }
}

/// Whether a span's ids are what OTLP requires (`trace.proto`: a 16-byte trace id and an
/// 8-byte span id, neither all zero; a parent id empty for a root span, else 8 bytes);
/// else the field and what is wrong.
fn ids_valid(span: &Span) -> Result<(), String> {
    let check = |field: &str, id: &[u8], len: usize| {
        if id.len() != len {
            Err(format!("{field}: {} bytes, not {len}", id.len()))
        } else if id.iter().all(|b| *b == 0) {
            Err(format!("{field}: all zero, which OTLP forbids"))
        } else {
            Ok(())
        }
    };
    check("traceId", &span.trace_id, 16)?;
    check("spanId", &span.span_id, 8)?;
    if span.parent_span_id.is_empty() {
        return Ok(());
    }
    check("parentSpanId", &span.parent_span_id, 8)
}

/// A 200 with `answer` in `encoding`.
fn answer_response(encoding: Encoding, answer: &ExportTraceServiceResponse) -> Response<Body> {
    let body = match (encoding, &answer.partial_success) {
        (Encoding::Protobuf, _) => answer.encode_to_vec(),
        // The official types' serde writes `{"partialSuccess":null}`; the Collector sends
        // `{}` for a full success, the safer bytes for a strict client.
        (Encoding::Json, None) => b"{}".to_vec(),
        (Encoding::Json, Some(_)) => {
            serde_json::to_vec(answer).expect("an OTLP response serializes")
        }
    };
    respond(
        200,
        vec![("content-type".into(), encoding.content_type().into())],
        full(body),
    )
}

/// A refusal as a `google.rpc.Status` in `encoding`.
fn status_response(encoding: Encoding, refusal: &Refusal) -> Response<Body> {
    let status = RpcStatus {
        code: RPC_INVALID_ARGUMENT,
        message: format!("umi: {}", refusal.message),
    };
    let body = match encoding {
        Encoding::Protobuf => status.encode_to_vec(),
        Encoding::Json => serde_json::to_vec(&status).expect("a status serializes"),
    };
    respond(
        refusal.status,
        vec![("content-type".into(), encoding.content_type().into())],
        full(body),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::InstrumentationScope;
    use opentelemetry_proto::tonic::resource::v1::Resource;
    use opentelemetry_proto::tonic::trace::v1::ScopeSpans;

    fn span(n: u8) -> Span {
        Span {
            trace_id: vec![7; 16],
            span_id: vec![n; 8],
            ..Default::default()
        }
    }

    fn scope_spans(name: &str, spans: Vec<Span>) -> ScopeSpans {
        ScopeSpans {
            scope: Some(InstrumentationScope {
                name: name.into(),
                ..Default::default()
            }),
            spans,
            schema_url: String::new(),
        }
    }

    #[test]
    fn the_spans_of_a_resource_share_it_and_those_of_a_scope_share_that() {
        let request = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource::default()),
                scope_spans: vec![
                    scope_spans("a", vec![span(1), span(2)]),
                    scope_spans("b", vec![span(3)]),
                ],
                schema_url: String::new(),
            }],
        };
        let (by_scope, rejected, _) = sorted(request, "s").unwrap_or_else(|_| panic!("sorted"));
        assert_eq!(rejected, 0);
        let kept = &by_scope["s"];
        assert_eq!(kept.len(), 3);
        assert!(
            kept.iter()
                .all(|k| Arc::ptr_eq(&k.resource, &kept[0].resource))
        );
        assert!(Arc::ptr_eq(
            &kept[0].instrumentation,
            &kept[1].instrumentation
        ));
        assert!(!Arc::ptr_eq(
            &kept[1].instrumentation,
            &kept[2].instrumentation
        ));
        assert_eq!(
            Arc::strong_count(&kept[0].resource),
            3,
            "one resource, not three"
        );
    }
}
