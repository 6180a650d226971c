//! The OpenTelemetry export from the command line's side: `--otlp-export` posting to a
//! collector as the `OTEL_EXPORTER_OTLP_*` variables say (a test collector here: a hyper
//! server that decodes the body with the official types and keeps the headers), a
//! collector's refusal as a typed error, and `dst sweep --otlp`'s files.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use prost::Message;
use umi_dst::otlp::{self, Fault, ModelCall, Spans};
use umi_sweep::otlp_http::{self, ExporterConfig, OtlpHttpError, Protocol};

use super::{Misbehaviour, options, temp_dir, toy};

/// What the test collector was sent.
#[derive(Debug, Clone)]
struct Received {
    path: String,
    headers: BTreeMap<String, String>,
    /// The body decoded by its content type with the official types.
    request: Option<ExportTraceServiceRequest>,
}

type Seen = Arc<Mutex<Vec<Received>>>;

/// Answers `/v1/traces` as a collector does (an `ExportTraceServiceResponse` in the
/// request's encoding, here with a partial success), anything else with 404.
async fn collect(
    request: Request<hyper::body::Incoming>,
    seen: Seen,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = request.uri().path().to_owned();
    let headers: BTreeMap<String, String> = request
        .headers()
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_str().unwrap_or("?").to_owned()))
        .collect();
    let body = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let json = headers.get("content-type").map(String::as_str) == Some("application/json");
    let decoded = if json {
        serde_json::from_slice::<ExportTraceServiceRequest>(&body).ok()
    } else {
        ExportTraceServiceRequest::decode(body.as_ref()).ok()
    };
    seen.lock().unwrap().push(Received {
        path: path.clone(),
        headers,
        request: decoded,
    });
    if path != "/v1/traces" {
        let mut response = Response::new(Full::new(Bytes::from_static(b"404 page not found")));
        *response.status_mut() = hyper::StatusCode::NOT_FOUND;
        return Ok(response);
    }
    let answer = ExportTraceServiceResponse {
        partial_success: Some(ExportTracePartialSuccess {
            rejected_spans: 1,
            error_message: "one span too old".into(),
        }),
    };
    let bytes = if json {
        serde_json::to_vec(&answer).unwrap()
    } else {
        answer.encode_to_vec()
    };
    Ok(Response::new(Full::new(Bytes::from(bytes))))
}

/// A collector on a loopback port, on a thread of its own, for the rest of the process.
#[allow(
    clippy::disallowed_methods,
    reason = "a real HTTP server beside the test, outside any simulation"
)]
fn start_collector() -> (SocketAddr, Seen) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let address = listener.local_addr().unwrap();
    let seen: Seen = Arc::default();
    let kept = seen.clone();
    std::thread::spawn(move || {
        // A real runtime: a real collector on a real socket, on its own thread.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let seen = kept.clone();
                tokio::spawn(async move {
                    let service =
                        hyper::service::service_fn(move |request| collect(request, seen.clone()));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
    });
    (address, seen)
}

/// A small export made with the builder `dst serve` uses too: a model call with a fault.
fn small_export() -> ExportTraceServiceRequest {
    let mut spans = Spans::new(
        otlp::trace_id(7, "toy"),
        umi_dst::constants::SIM_EPOCH_UNIX_MS_DEFAULT,
        vec![otlp::semconv::string("service.name", "umi.dst")],
    );
    spans.model_call(
        None,
        ModelCall {
            operation: "chat".into(),
            provider: "sim".into(),
            request_model: "sim-large".into(),
            end: std::time::Duration::from_millis(250),
            input_tokens: Some(12),
            output_tokens: Some(3),
            faults: vec![Fault {
                kind: "llm.rate_limit".into(),
                operation: "llm.call".into(),
                at: std::time::Duration::ZERO,
                rule: Some(0),
                ordinal: Some(1),
            }],
            ..ModelCall::default()
        },
    );
    spans.finish()
}

fn config(vars: &[(&str, String)]) -> ExporterConfig {
    let vars: BTreeMap<&str, String> = vars.iter().cloned().collect();
    ExporterConfig::from_vars(|name| vars.get(name).cloned()).unwrap()
}

/// Protobuf to `OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces`, with the headers variable's
/// headers (percent-decoded) and the protobuf content type; the collector's partial
/// success read back. JSON when the protocol variable says `http/json`.
#[test]
fn the_export_posts_protobuf_or_json_with_the_variables_headers() {
    let (address, seen) = start_collector();
    let request = small_export();
    let base = format!("http://{address}");
    let protobuf = config(&[
        (otlp_http::ENDPOINT_VAR, base.clone()),
        (
            otlp_http::HEADERS_VAR,
            "x-api-key=s%20cret,x-tenant=umi".into(),
        ),
    ]);
    let sent = otlp_http::send(&protobuf, &request).unwrap();
    assert_eq!((sent.status, sent.rejected_spans), (200, 1));
    assert_eq!(sent.message, "one span too old");
    assert_eq!(sent.body_bytes, otlp::to_protobuf(&request).len());
    let json = ExporterConfig {
        protocol: Protocol::HttpJson,
        ..protobuf.clone()
    };
    let sent = otlp_http::send(&json, &request).unwrap();
    assert_eq!(sent.rejected_spans, 1, "the JSON answer read too");
    let received = seen.lock().unwrap().clone();
    assert_eq!(received.len(), 2);
    for (got, content_type) in received
        .iter()
        .zip(["application/x-protobuf", "application/json"])
    {
        assert_eq!(got.path, "/v1/traces");
        assert_eq!(got.headers["content-type"], content_type);
        assert_eq!(got.headers["x-api-key"], "s cret");
        assert_eq!(got.headers["x-tenant"], "umi");
        assert_eq!(
            got.request.as_ref(),
            Some(&request),
            "{content_type} decodes to the export"
        );
    }
}

/// A collector's 404 is a typed error naming the status and its body, and never the
/// header values (API keys).
#[test]
fn a_collector_refusal_is_a_typed_error_without_the_keys() {
    let (address, _seen) = start_collector();
    let config = config(&[
        (
            otlp_http::TRACES_ENDPOINT_VAR,
            format!("http://{address}/wrong/path"),
        ),
        (
            otlp_http::HEADERS_VAR,
            "authorization=Bearer%20sk-secret".into(),
        ),
    ]);
    let error = otlp_http::send(&config, &small_export()).unwrap_err();
    let OtlpHttpError::Status { status, body, .. } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(*status, 404);
    assert_eq!(body, "404 page not found");
    let text = error.to_string();
    assert!(
        text.contains("404") && text.contains("/wrong/path"),
        "{text}"
    );
    assert!(!text.contains("sk-secret") && !format!("{error:?}").contains("sk-secret"));
    assert!(!format!("{config:?}").contains("sk-secret"));
}

/// Nobody listening: an error naming the endpoint (no panic, no hang past the timeout).
#[test]
fn no_collector_is_an_error_naming_the_endpoint() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let config = config(&[
        (otlp_http::ENDPOINT_VAR, format!("http://127.0.0.1:{port}")),
        (otlp_http::TIMEOUT_VAR, "2000".into()),
    ]);
    let error = otlp_http::send(&config, &small_export()).unwrap_err();
    assert!(matches!(error, OtlpHttpError::Send { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .contains(&format!("127.0.0.1:{port}/v1/traces")),
        "{error}"
    );
}

/// `dst sweep --otlp DIR`: each failing seed the report lists, as
/// `<scenario>-<seed>.otlp.json`, decoding with the official types to a trace whose
/// root failed with the seed's message; passing scenarios write nothing.
#[test]
fn the_sweep_writes_each_failing_seed_as_otlp_json() {
    let scenarios = [
        toy("fails", Misbehaviour::AlwaysFails),
        toy("ok", Misbehaviour::None),
    ];
    let report = umi_sweep::run(&scenarios, &options(3)).unwrap();
    let dir = temp_dir("otlp");
    let done = umi_sweep::otlp_export::export_failures(&scenarios, &report, &dir, "dst").unwrap();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "fails-1.otlp.json",
            "fails-2.otlp.json",
            "fails-3.otlp.json"
        ]
    );
    assert_eq!(done.written.len(), 3);
    assert!(done.skipped.is_empty(), "{:?}", done.skipped);
    for seed in 1..=3u64 {
        let bytes = std::fs::read(dir.join(format!("fails-{seed}.otlp.json"))).unwrap();
        let request: ExportTraceServiceRequest = serde_json::from_slice(&bytes).unwrap();
        let root = &request.resource_spans[0].scope_spans[0].spans[0];
        assert_eq!(root.name, "umi.run fails");
        let status = root.status.as_ref().unwrap();
        assert_eq!(status.code, StatusCode::Error as i32);
        assert_eq!(status.message, format!("seed {seed} always fails"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
