//! The agent's own OpenTelemetry spans in `dst serve` (`POST /v1/traces`, OTLP/HTTP):
//! protobuf, JSON and gzip bodies decoded with the official opentelemetry-proto types,
//! filed under the scope of the path, the header or the resource's `umi.scope`, read back
//! by `GET /umi/spans`, counted in `/umi/trace`'s summary, forgotten by `/umi/reset`,
//! bounded per scope in spans and bytes (`partial_success.rejected_spans`), a resource
//! counted once for all its spans, a full success answered with an empty response, and
//! bad bodies refused with a `google.rpc.Status` naming what failed.

use std::io::Write as _;

use futures::StreamExt;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, span, status};
use prost::Message;
use serde_json::{Value, json};
use umi_core::llm::transport::{HttpRequest, ReqwestTransport, Transport};
use umi_dst::serve::{
    AGENT_SPAN_BYTES_PER_SCOPE_MAX, AGENT_SPANS_PER_SCOPE_MAX, RunningServer, ServeConfig, Server,
};

use crate::support::runtime;

/// `google.rpc.Status` (googleapis `google/rpc/status.proto`), to read a 400's body.
#[derive(Clone, PartialEq, prost::Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

async fn send(
    method: &'static str,
    url: String,
    headers: Vec<(&str, &str)>,
    body: Vec<u8>,
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let transport = ReqwestTransport::new().unwrap();
    let response = transport
        .send(HttpRequest {
            method,
            url,
            headers: (headers.into_iter())
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            body,
        })
        .await
        .unwrap();
    let (status, headers) = (response.status, response.headers.clone());
    let bytes: Vec<u8> = response
        .body
        .filter_map(|r| async move { r.ok() })
        .concat()
        .await;
    (status, headers, bytes)
}

fn string(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(Any::StringValue(value.to_owned())),
        }),
        ..Default::default()
    }
}

/// A span named `name`, the `n`th of its trace (ids from `n`, never zero).
fn a_span(name: &str, n: u8, parent: Option<u8>) -> Span {
    Span {
        trace_id: vec![7; 16],
        span_id: vec![n + 1; 8],
        parent_span_id: parent.map_or(Vec::new(), |p| vec![p + 1; 8]),
        name: name.to_owned(),
        kind: span::SpanKind::Client as i32,
        start_time_unix_nano: 1_704_067_200_000_000_000 + u64::from(n) * 1_000,
        end_time_unix_nano: 1_704_067_200_000_000_000 + u64::from(n) * 1_000 + 500,
        attributes: vec![string("gen_ai.request.model", "umi-sim")],
        events: vec![span::Event {
            time_unix_nano: 1_704_067_200_000_000_100,
            name: "retry".into(),
            attributes: vec![KeyValue {
                key: "attempt".into(),
                value: Some(AnyValue {
                    value: Some(Any::IntValue(2)),
                }),
                ..Default::default()
            }],
            ..Default::default()
        }],
        status: Some(opentelemetry_proto::tonic::trace::v1::Status {
            message: "boom".into(),
            code: status::StatusCode::Error as i32,
        }),
        ..Default::default()
    }
}

/// An export of `spans` under a resource with `resource_scope` as `umi.scope` (if any).
fn export(spans: Vec<Span>, resource_scope: Option<&str>) -> ExportTraceServiceRequest {
    let mut attributes = vec![string("service.name", "agent-under-test")];
    if let Some(scope) = resource_scope {
        attributes.push(string("umi.scope", scope));
    }
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes,
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "pydantic-ai".into(),
                    ..Default::default()
                }),
                spans,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

async fn spans(server: &RunningServer, scope: &str) -> Value {
    let url = format!("{}/umi/spans?scope={scope}", server.base_url());
    let (status, _, body) = send("GET", url, Vec::new(), Vec::new()).await;
    assert_eq!(status, 200);
    serde_json::from_slice(&body).unwrap()
}

async fn summary(server: &RunningServer, scope: &str) -> Value {
    let url = format!("{}/umi/trace?scope={scope}", server.base_url());
    let (_, _, body) = send("GET", url, Vec::new(), Vec::new()).await;
    let text = String::from_utf8(body).unwrap();
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    (headers.iter())
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

#[test]
fn protobuf_json_and_gzip_bodies_are_filed_under_their_scope() {
    runtime().block_on(async {
        let server = Server::start(ServeConfig::default()).await.unwrap();
        let base = server.base_url();
        let body = export(vec![a_span("chat umi-sim", 0, None)], None).encode_to_vec();
        // Protobuf under the path's scope.
        let (status, headers, answer) = send(
            "POST",
            format!("{base}/seed/3/scope/by-path/v1/traces"),
            vec![("content-type", "application/x-protobuf")],
            body.clone(),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(
            header(&headers, "content-type"),
            Some("application/x-protobuf")
        );
        let answer = ExportTraceServiceResponse::decode(&answer[..]).unwrap();
        assert_eq!(answer.partial_success, None);
        // Gzipped protobuf under the header's scope (which wins over the resource's).
        let gzipped = export(vec![a_span("a", 1, Some(0))], Some("ignored")).encode_to_vec();
        let (status, _, _) = send(
            "POST",
            format!("{base}/v1/traces"),
            vec![
                ("content-type", "application/x-protobuf"),
                ("content-encoding", "gzip"),
                ("x-umi-scope", "by-header"),
            ],
            gzip(&gzipped),
        )
        .await;
        assert_eq!(status, 200);
        // JSON (the official types' serde: hex ids, lowerCamelCase) under the resource's.
        let json = serde_json::to_vec(&export(vec![a_span("b", 2, None)], Some("by-res"))).unwrap();
        let (status, headers, answer) = send(
            "POST",
            format!("{base}/v1/traces"),
            vec![("content-type", "application/json; charset=utf-8")],
            gzip(&json),
        )
        .await;
        assert_eq!(status, 400, "gzip without content-encoding is not JSON");
        assert_eq!(header(&headers, "content-type"), Some("application/json"));
        let said: Value = serde_json::from_slice(&answer).unwrap();
        assert!(
            said["message"].as_str().unwrap().contains("not OTLP JSON"),
            "{said}"
        );
        let (status, _, answer) = send(
            "POST",
            format!("{base}/v1/traces"),
            vec![("content-type", "application/json; charset=utf-8")],
            json,
        )
        .await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
        let answer: ExportTraceServiceResponse = serde_json::from_slice(&answer).unwrap();
        assert_eq!(answer.partial_success, None);

        let by_path = spans(&server, "by-path").await;
        let listed = &by_path["spans"][0];
        assert_eq!(by_path["spans"].as_array().unwrap().len(), 1);
        assert_eq!(listed["trace_id"], "07".repeat(16));
        assert_eq!(listed["span_id"], "01".repeat(8));
        assert_eq!(listed["parent_span_id"], Value::Null);
        assert_eq!(listed["name"], "chat umi-sim");
        assert_eq!(listed["kind"], "client");
        assert_eq!(listed["start_unix_nano"], 1_704_067_200_000_000_000u64);
        assert_eq!(listed["attributes"]["gen_ai.request.model"], "umi-sim");
        assert_eq!(listed["events"][0]["name"], "retry");
        assert_eq!(listed["events"][0]["attributes"]["attempt"], 2);
        assert_eq!(
            listed["status"],
            json!({"code": "error", "message": "boom"})
        );
        assert_eq!(listed["resource"]["service.name"], "agent-under-test");
        assert_eq!(listed["instrumentation_scope"], "pydantic-ai");
        let by_header = spans(&server, "by-header").await;
        assert_eq!(by_header["spans"][0]["name"], "a");
        assert_eq!(by_header["spans"][0]["parent_span_id"], "01".repeat(8));
        assert_eq!(spans(&server, "by-res").await["spans"][0]["name"], "b");
        assert_eq!(spans(&server, "ignored").await["spans"], json!([]));
        assert_eq!(summary(&server, "by-path").await["agent_spans"], 1);
        assert_eq!(summary(&server, "nothing").await["agent_spans"], 0);
        server.shutdown().await;
    });
}

#[test]
fn a_reset_forgets_the_spans_of_its_scope_only() {
    runtime().block_on(async {
        let server = Server::start(ServeConfig::default()).await.unwrap();
        let base = server.base_url();
        for scope in ["one", "two"] {
            let body = export(vec![a_span("x", 0, None)], Some(scope)).encode_to_vec();
            let headers = vec![("content-type", "application/x-protobuf")];
            let (status, _, _) = send("POST", format!("{base}/v1/traces"), headers, body).await;
            assert_eq!(status, 200);
        }
        let reset = format!("{base}/umi/reset?scope=one");
        assert_eq!(send("POST", reset, Vec::new(), Vec::new()).await.0, 200);
        assert_eq!(spans(&server, "one").await["spans"], json!([]));
        assert_eq!(spans(&server, "two").await["spans"][0]["name"], "x");
        assert_eq!(summary(&server, "two").await["agent_spans"], 1);
        server.shutdown().await;
    });
}

#[test]
fn bad_bodies_and_content_types_are_refused_naming_what_failed() {
    runtime().block_on(async {
        let server = Server::start(ServeConfig::default()).await.unwrap();
        let url = format!("{}/scope/bad/v1/traces", server.base_url());
        let proto = vec![("content-type", "application/x-protobuf")];
        let json_type = vec![("content-type", "application/json")];
        // Not protobuf: a 400 whose google.rpc.Status (protobuf) says so.
        let (status, _, body) = send("POST", url.clone(), proto.clone(), vec![0xff; 9]).await;
        assert_eq!(status, 400);
        let said = RpcStatus::decode(&body[..]).unwrap();
        assert_eq!(said.code, 3);
        assert!(
            said.message
                .contains("not OTLP protobuf (an ExportTraceServiceRequest)"),
            "{}",
            said.message
        );
        // JSON with a bad trace id: the path in the document is named.
        let bad = json!({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]});
        let (status, _, body) = send(
            "POST",
            url.clone(),
            json_type.clone(),
            bad.to_string().into_bytes(),
        )
        .await;
        assert_eq!(status, 400);
        let said: Value = serde_json::from_slice(&body).unwrap();
        let message = said["message"].as_str().unwrap();
        assert!(
            message.contains("resourceSpans[0].scopeSpans[0].spans[0].traceId"),
            "{message}"
        );
        // Gzip that is not gzip.
        let mut gz = proto.clone();
        gz.push(("content-encoding", "gzip"));
        let (status, _, body) = send("POST", url.clone(), gz, b"plain".to_vec()).await;
        assert_eq!(status, 400);
        assert!(
            RpcStatus::decode(&body[..])
                .unwrap()
                .message
                .contains("not gzip")
        );
        // A content type OTLP/HTTP does not define, an encoding it does not either.
        let text = vec![("content-type", "text/plain")];
        let (status, _, body) = send("POST", url.clone(), text, b"{}".to_vec()).await;
        assert_eq!(status, 415);
        let said: Value = serde_json::from_slice(&body).unwrap();
        assert!(
            said["message"]
                .as_str()
                .unwrap()
                .contains("header content-type \"text/plain\"")
        );
        let mut br = proto.clone();
        br.push(("content-encoding", "br"));
        assert_eq!(send("POST", url.clone(), br, Vec::new()).await.0, 415);
        // A resource scope that is not a scope name.
        let named = export(vec![a_span("x", 0, None)], Some("a b"));
        let root = format!("{}/v1/traces", server.base_url());
        let (status, _, body) = send("POST", root, proto.clone(), named.encode_to_vec()).await;
        assert_eq!(status, 400);
        let message = RpcStatus::decode(&body[..]).unwrap().message;
        assert!(
            message.contains("resourceSpans[0].resource.attributes[\"umi.scope\"] \"a b\""),
            "{message}"
        );
        // A span with a zero trace id is rejected, the others kept.
        let mut zero = a_span("zero", 1, None);
        zero.trace_id = vec![0; 16];
        let mixed = export(vec![a_span("ok", 0, None), zero], None).encode_to_vec();
        let (status, _, body) = send("POST", url.clone(), proto.clone(), mixed).await;
        assert_eq!(status, 200);
        let partial = ExportTraceServiceResponse::decode(&body[..])
            .unwrap()
            .partial_success
            .unwrap();
        assert_eq!(partial.rejected_spans, 1);
        assert!(
            partial.error_message.contains("spans[1].traceId: all zero"),
            "{}",
            partial.error_message
        );
        assert_eq!(
            spans(&server, "bad").await["spans"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        // GET is not how spans arrive.
        assert_eq!(send("GET", url, Vec::new(), Vec::new()).await.0, 405);
        server.shutdown().await;
    });
}

#[test]
fn a_scope_keeps_at_most_its_bound_and_says_how_many_it_rejected() {
    runtime().block_on(async {
        let server = Server::start(ServeConfig::default()).await.unwrap();
        let url = format!("{}/scope/full/v1/traces", server.base_url());
        let proto = vec![("content-type", "application/x-protobuf")];
        let many = |count: usize| {
            let spans = (0..count)
                .map(|n| {
                    let mut span = a_span("s", 0, None);
                    span.span_id = (n as u64 + 1).to_be_bytes().to_vec();
                    span
                })
                .collect();
            export(spans, None).encode_to_vec()
        };
        let (status, _, body) = send(
            "POST",
            url.clone(),
            proto.clone(),
            many(AGENT_SPANS_PER_SCOPE_MAX - 1),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(
            ExportTraceServiceResponse::decode(&body[..])
                .unwrap()
                .partial_success,
            None
        );
        let (status, _, body) = send("POST", url.clone(), proto.clone(), many(3)).await;
        assert_eq!(status, 200);
        let partial = ExportTraceServiceResponse::decode(&body[..])
            .unwrap()
            .partial_success
            .unwrap();
        assert_eq!(partial.rejected_spans, 2);
        assert!(
            partial.error_message.contains("AGENT_SPANS_PER_SCOPE_MAX"),
            "{}",
            partial.error_message
        );
        assert_eq!(
            summary(&server, "full").await["agent_spans"],
            AGENT_SPANS_PER_SCOPE_MAX
        );
        // Another scope is not affected.
        let other = format!("{}/scope/other/v1/traces", server.base_url());
        let (_, _, body) = send("POST", other, proto, many(1)).await;
        assert_eq!(
            ExportTraceServiceResponse::decode(&body[..])
                .unwrap()
                .partial_success,
            None
        );
        server.shutdown().await;
    });
}

/// A scope's run as OTLP JSON (`GET /umi/trace?scope=S&format=otlp`), read back with the
/// official types' serde.
async fn otlp(server: &RunningServer, scope: &str) -> (Vec<u8>, ExportTraceServiceRequest) {
    let url = format!("{}/umi/trace?scope={scope}&format=otlp", server.base_url());
    let (status, headers, body) = send("GET", url, Vec::new(), Vec::new()).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(header(&headers, "content-type"), Some("application/json"));
    let decoded = serde_json::from_slice(&body).unwrap();
    (body, decoded)
}

/// Two chats in `scope` (the first refused by the rule) and one agent span.
async fn a_run(server: &RunningServer, scope: &str) {
    let base = server.base_url();
    for _ in 0..2 {
        let body = json!({"model": "umi-sim", "messages": [{"role": "user", "content": "hi"}]});
        send(
            "POST",
            format!("{base}/seed/11/scope/{scope}/v1/chat/completions"),
            vec![("content-type", "application/json")],
            body.to_string().into_bytes(),
        )
        .await;
    }
    let spans = export(vec![a_span("invoke_agent weather", 0, None)], None).encode_to_vec();
    let url = format!("{base}/scope/{scope}/v1/traces");
    let proto = vec![("content-type", "application/x-protobuf")];
    assert_eq!(send("POST", url, proto, spans).await.0, 200);
}

fn attribute<'a>(pairs: &'a [KeyValue], key: &str) -> Option<&'a Any> {
    (pairs.iter())
        .find(|pair| pair.key == key)
        .and_then(|pair| pair.value.as_ref()?.value.as_ref())
}

#[test]
fn a_scope_exports_as_otlp_with_the_agents_spans_beside_the_served_ones() {
    runtime().block_on(async {
        let mut config = ServeConfig::default();
        config.faults = umi_dst::fault::aim::parse_rules("llm.rate_limit@llm.call#1=1").unwrap();
        let server = Server::start(config).await.unwrap();
        a_run(&server, "run-a").await;
        let (bytes, document) = otlp(&server, "run-a").await;
        assert_eq!(document.resource_spans.len(), 2, "the server's and the agent's");
        let served = &document.resource_spans[0];
        let resource = &served.resource.as_ref().unwrap().attributes;
        assert_eq!(
            attribute(resource, "service.name"),
            Some(&Any::StringValue("umi.dst-serve".into()))
        );
        assert_eq!(attribute(resource, "umi.seed"), Some(&Any::StringValue("11".into())));
        assert_eq!(attribute(resource, "umi.scope"), Some(&Any::StringValue("run-a".into())));
        let spans = &served.scope_spans[0].spans;
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
        let server_spans: Vec<&Span> = spans.iter().filter(|s| s.kind == span::SpanKind::Server as i32).collect();
        assert_eq!(server_spans.len(), 2);
        assert!(server_spans.iter().all(|s| s.name == "POST /v1/chat/completions"));
        let chats: Vec<&Span> = spans.iter().filter(|s| s.name == "chat umi-sim").collect();
        assert_eq!(chats.len(), 2, "{names:?}");
        for chat in &chats {
            assert_eq!(chat.kind, span::SpanKind::Client as i32);
            assert_eq!(attribute(&chat.attributes, "gen_ai.operation.name"), Some(&Any::StringValue("chat".into())));
            assert_eq!(attribute(&chat.attributes, "gen_ai.request.model"), Some(&Any::StringValue("umi-sim".into())));
        }
        // Each chat under its request's span; the requests one after the other.
        assert_eq!(chats[0].parent_span_id, server_spans[0].span_id);
        assert_eq!(chats[1].parent_span_id, server_spans[1].span_id);
        assert!(server_spans[1].start_time_unix_nano >= server_spans[0].end_time_unix_nano);
        assert!(server_spans[0].start_time_unix_nano >= 1_704_067_200_000_000_000);
        // The refused one: its status and the fault as an event.
        assert_eq!(attribute(&server_spans[0].attributes, "http.response.status_code"), Some(&Any::IntValue(429)));
        let faults: Vec<&span::Event> = chats[0].events.iter().filter(|e| e.name == "umi.fault").collect();
        assert_eq!(faults.len(), 1, "{:?}", chats[0]);
        assert_eq!(attribute(&faults[0].attributes, "umi.fault.kind"), Some(&Any::StringValue("llm.rate_limit".into())));
        assert!(attribute(&chats[0].attributes, "error.type").is_some());
        assert!(matches!(attribute(&chats[1].attributes, "gen_ai.usage.output_tokens"), Some(Any::IntValue(n)) if *n > 0));
        // The agent's span, as received, under its own resource.
        let agent = &document.resource_spans[1];
        assert_eq!(
            attribute(&agent.resource.as_ref().unwrap().attributes, "service.name"),
            Some(&Any::StringValue("agent-under-test".into()))
        );
        assert_eq!(agent.scope_spans[0].spans[0].name, "invoke_agent weather");
        assert_eq!(agent.scope_spans[0].spans[0].trace_id, vec![7; 16]);
        // The same document twice; and the same run in a fresh scope, apart from its ids.
        assert_eq!(otlp(&server, "run-a").await.0, bytes);
        a_run(&server, "run-b").await;
        let (_, again) = otlp(&server, "run-b").await;
        let strip = |document: &ExportTraceServiceRequest| -> Vec<(String, u64, u64, usize, usize)> {
            (document.resource_spans[0].scope_spans[0].spans.iter())
                .map(|s| (s.name.clone(), s.start_time_unix_nano, s.end_time_unix_nano, s.attributes.len(), s.events.len()))
                .collect()
        };
        assert_eq!(strip(&document), strip(&again));
        assert_ne!(document.resource_spans[0].scope_spans[0].spans[0].trace_id, again.resource_spans[0].scope_spans[0].spans[0].trace_id);
        // An unknown format is refused by name.
        let url = format!("{}/umi/trace?format=zipkin", server.base_url());
        let (status, _, body) = send("GET", url, Vec::new(), Vec::new()).await;
        assert_eq!(status, 400);
        assert!(String::from_utf8_lossy(&body).contains("format=\\\"zipkin\\\""), "{}", String::from_utf8_lossy(&body));
        server.shutdown().await;
    });
}

#[test]
fn an_mcp_tools_call_exports_as_an_execute_tool_span() {
    use std::sync::Arc;
    use umi_core::env::SystemEnvironment;
    use umi_core::mcp::McpClient;
    runtime().block_on(async {
        let server = Server::start(ServeConfig::default()).await.unwrap();
        let url = format!("{}/seed/5/scope/tools/mcp", server.base_url());
        let transport: Arc<dyn Transport> = Arc::new(ReqwestTransport::new().unwrap());
        let client = McpClient::new(transport, Arc::new(SystemEnvironment::new()), &url);
        client.connect().await.expect("initialize");
        client
            .call_tool("get_weather", json!({"city": "Oslo"}), Some("call_7"))
            .await
            .expect("tools/call");
        let (_, document) = otlp(&server, "tools").await;
        let spans = &document.resource_spans[0].scope_spans[0].spans;
        let tools: Vec<&Span> = (spans.iter())
            .filter(|s| s.name == "execute_tool get_weather")
            .collect();
        assert_eq!(
            tools.len(),
            1,
            "{:?}",
            spans.iter().map(|s| &s.name).collect::<Vec<_>>()
        );
        let tool = tools[0];
        assert_eq!(tool.kind, span::SpanKind::Internal as i32);
        assert_eq!(
            attribute(&tool.attributes, "gen_ai.operation.name"),
            Some(&Any::StringValue("execute_tool".into()))
        );
        assert_eq!(
            attribute(&tool.attributes, "gen_ai.tool.name"),
            Some(&Any::StringValue("get_weather".into()))
        );
        // Under the request's SERVER span, `POST /mcp`.
        let parent = (spans.iter())
            .find(|s| s.span_id == tool.parent_span_id)
            .unwrap();
        assert_eq!(parent.kind, span::SpanKind::Server as i32);
        assert!(parent.name.starts_with("POST "), "{}", parent.name);
        server.shutdown().await;
    });
}

#[test]
fn a_request_on_the_agents_clock_starts_there_and_one_without_after_the_previous() {
    runtime().block_on(async {
        let server = Server::start(ServeConfig::default()).await.unwrap();
        let url = format!(
            "{}/seed/3/scope/clocked/v1/chat/completions",
            server.base_url()
        );
        for (content, clock) in [
            ("one", Some("5000000")),
            ("two", None),
            ("three", Some("9000000")),
        ] {
            let body =
                json!({"model": "umi-sim", "messages": [{"role": "user", "content": content}]});
            let mut headers = vec![("content-type", "application/json")];
            if let Some(clock) = clock {
                headers.push(("x-umi-clock-us", clock));
            }
            assert_eq!(
                send("POST", url.clone(), headers, body.to_string().into_bytes())
                    .await
                    .0,
                200
            );
        }
        let (_, document) = otlp(&server, "clocked").await;
        let requests: Vec<(u64, u64)> = (document.resource_spans[0].scope_spans[0].spans.iter())
            .filter(|s| s.kind == span::SpanKind::Server as i32)
            .map(|s| (s.start_time_unix_nano, s.end_time_unix_nano))
            .collect();
        const EPOCH_NS: u64 = 1_704_067_200_000_000_000;
        assert_eq!(requests.len(), 3);
        assert_eq!(requests[0].0, EPOCH_NS + 5_000_000_000);
        assert!(
            requests[0].1 > requests[0].0,
            "a model call takes simulated time"
        );
        assert_eq!(
            requests[1].0, requests[0].1,
            "no clock: where the previous one ended"
        );
        assert_eq!(requests[2].0, EPOCH_NS + 9_000_000_000);
        server.shutdown().await;
    });
}

/// A string attribute of `bytes` bytes.
fn big(key: &str, bytes: usize) -> KeyValue {
    string(key, &"x".repeat(bytes))
}

/// `count` spans of one trace, ids from 1.
fn numbered(count: usize, each: impl Fn(Span) -> Span) -> Vec<Span> {
    (0..count)
        .map(|n| {
            let mut span = a_span("s", 0, None);
            span.span_id = (n as u64 + 1).to_be_bytes().to_vec();
            each(span)
        })
        .collect()
}

async fn post_protobuf(url: &str, body: Vec<u8>) -> ExportTraceServiceResponse {
    let proto = vec![("content-type", "application/x-protobuf")];
    let (status, _, answer) = send("POST", url.to_owned(), proto, body).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    ExportTraceServiceResponse::decode(&answer[..]).unwrap()
}

#[test]
fn a_full_success_answers_an_empty_response_and_every_gzip_member_is_read() {
    runtime().block_on(async {
        let server = Server::start(ServeConfig::default()).await.unwrap();
        let url = format!("{}/scope/empty/v1/traces", server.base_url());
        // JSON: `{}`, as the Collector answers, not `{"partialSuccess":null}`.
        let json = serde_json::to_vec(&export(vec![a_span("j", 0, None)], None)).unwrap();
        let json_type = vec![("content-type", "application/json")];
        let (status, _, answer) = send("POST", url.clone(), json_type, json).await;
        assert_eq!(status, 200);
        assert_eq!(String::from_utf8_lossy(&answer), "{}");
        // Protobuf: the empty message, no bytes.
        let body = export(vec![a_span("p", 1, None)], None).encode_to_vec();
        let proto = vec![("content-type", "application/x-protobuf")];
        let (status, _, answer) = send("POST", url.clone(), proto.clone(), body).await;
        assert_eq!(status, 200);
        assert!(answer.is_empty(), "{answer:?}");
        // Two gzip members (as `cat a.gz b.gz` makes): protobuf messages concatenated
        // are one message with both spans, so both are kept.
        let mut two = gzip(&export(vec![a_span("m1", 2, None)], None).encode_to_vec());
        two.extend(gzip(
            &export(vec![a_span("m2", 3, None)], None).encode_to_vec(),
        ));
        let mut gz = proto;
        gz.push(("content-encoding", "gzip"));
        let (status, _, _) = send("POST", url, gz, two).await;
        assert_eq!(status, 200);
        let names: Vec<Value> = (spans(&server, "empty").await["spans"].as_array().unwrap())
            .iter()
            .map(|span| span["name"].clone())
            .collect();
        assert_eq!(names, [json!("j"), json!("p"), json!("m1"), json!("m2")]);
        server.shutdown().await;
    });
}

#[test]
fn a_scope_keeps_at_most_its_bytes_and_says_how_many_it_rejected() {
    runtime().block_on(async {
        let server = Server::start(ServeConfig::default()).await.unwrap();
        let url = format!("{}/scope/heavy/v1/traces", server.base_url());
        // Seven spans of about 1 MiB each per request, under the 8 MiB body limit.
        const SPAN_BYTES: usize = 1024 * 1024;
        let heavy = |span: Span| Span {
            attributes: vec![big("payload", SPAN_BYTES)],
            ..span
        };
        let span_len = heavy(a_span("s", 0, None)).encoded_len();
        let posts_max = AGENT_SPAN_BYTES_PER_SCOPE_MAX / (7 * SPAN_BYTES) + 2;
        let (mut sent, mut refusal) = (0, None);
        for _ in 0..posts_max {
            let answer =
                post_protobuf(&url, export(numbered(7, heavy), None).encode_to_vec()).await;
            sent += 7;
            if let Some(partial) = answer.partial_success {
                refusal = Some(partial);
                break;
            }
        }
        let partial = refusal.expect("the scope's bytes are bounded");
        assert!(partial.rejected_spans > 0);
        assert!(
            partial
                .error_message
                .contains("AGENT_SPAN_BYTES_PER_SCOPE_MAX"),
            "{}",
            partial.error_message
        );
        let kept = summary(&server, "heavy").await["agent_spans"]
            .as_u64()
            .unwrap() as usize;
        assert_eq!(kept, sent - partial.rejected_spans as usize);
        assert!(
            kept * span_len <= AGENT_SPAN_BYTES_PER_SCOPE_MAX,
            "{kept} kept"
        );
        assert!(
            (kept + 7) * span_len > AGENT_SPAN_BYTES_PER_SCOPE_MAX,
            "{kept} kept"
        );
        // Another scope is not affected; a reset makes room again.
        let other = format!("{}/scope/light/v1/traces", server.base_url());
        let answer = post_protobuf(&other, export(numbered(7, heavy), None).encode_to_vec()).await;
        assert_eq!(answer.partial_success, None);
        let reset = format!("{}/umi/reset?scope=heavy", server.base_url());
        assert_eq!(send("POST", reset, Vec::new(), Vec::new()).await.0, 200);
        let answer = post_protobuf(&url, export(numbered(7, heavy), None).encode_to_vec()).await;
        assert_eq!(answer.partial_success, None);
        server.shutdown().await;
    });
}

#[test]
fn one_large_resource_with_many_spans_is_kept_and_counted_once() {
    runtime().block_on(async {
        let server = Server::start(ServeConfig::default()).await.unwrap();
        let url = format!("{}/scope/shared/v1/traces", server.base_url());
        // A 1 MiB resource and 500 spans: counted per span it would be 500 MiB, past
        // AGENT_SPAN_BYTES_PER_SCOPE_MAX; shared, it is 1 MiB and the spans.
        const RESOURCE_BYTES: usize = 1024 * 1024;
        const SPANS: usize = 500;
        const { assert!(SPANS * RESOURCE_BYTES > AGENT_SPAN_BYTES_PER_SCOPE_MAX) };
        let mut request = export(numbered(SPANS, |span| span), None);
        let resource = request.resource_spans[0].resource.as_mut().unwrap();
        resource
            .attributes
            .push(big("process.command_args", RESOURCE_BYTES));
        for _ in 0..2 {
            let answer = post_protobuf(&url, request.encode_to_vec()).await;
            assert_eq!(answer.partial_success, None);
        }
        assert_eq!(summary(&server, "shared").await["agent_spans"], 2 * SPANS);
        // Exported under one resource per request, as sent.
        let (_, document) = otlp(&server, "shared").await;
        let agent: Vec<&ResourceSpans> = (document.resource_spans.iter())
            .filter(|r| {
                let attributes = &r.resource.as_ref().unwrap().attributes;
                attribute(attributes, "service.name")
                    == Some(&Any::StringValue("agent-under-test".into()))
            })
            .collect();
        assert_eq!(agent.len(), 1, "identical resources in a row export as one");
        assert_eq!(agent[0].scope_spans[0].spans.len(), 2 * SPANS);
        server.shutdown().await;
    });
}
