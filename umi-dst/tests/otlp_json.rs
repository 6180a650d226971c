//! OTLP JSON as the official generated types write and read it (`opentelemetry-proto`'s
//! serde derives): the encoding `umi_dst::otlp::to_json` relies on.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, span};
use serde_json::Value;

/// A request with one span whose fields exercise every special case of OTLP JSON.
fn one_span_request() -> ExportTraceServiceRequest {
    let span = Span {
        trace_id: vec![
            0x5b, 0x8e, 0xff, 0xf7, 0x98, 0x03, 0x81, 0x03, 0xd2, 0x69, 0xb6, 0x33, 0x81, 0x3f,
            0xc6, 0x0c,
        ],
        span_id: vec![0xee, 0xe1, 0x9b, 0x7e, 0xc3, 0xc1, 0xb1, 0x74],
        name: "chat sim-model".into(),
        kind: span::SpanKind::Client as i32,
        // Past 2^53: a JSON number would lose it, so OTLP JSON writes it as a string.
        start_time_unix_nano: 1_704_067_200_000_000_123,
        end_time_unix_nano: 1_704_067_200_250_000_123,
        attributes: vec![KeyValue {
            key: "gen_ai.usage.input_tokens".into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::IntValue(9_007_199_254_740_993)),
            }),
            ..KeyValue::default()
        }],
        ..Span::default()
    };
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            scope_spans: vec![ScopeSpans {
                spans: vec![span],
                ..ScopeSpans::default()
            }],
            ..ResourceSpans::default()
        }],
    }
}

/// The crate's serde JSON is OTLP JSON as the spec says
/// (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding): hex trace and span
/// ids (not protobuf-JSON's base64), lowerCamelCase keys, enums as integers, 64-bit
/// integers as decimal strings; and it reads back to the same message.
#[test]
fn opentelemetry_proto_serde_is_otlp_json() {
    let request = one_span_request();
    let json: Value = serde_json::to_value(&request).unwrap();
    let span = &json["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
    assert_eq!(
        span["traceId"], "5b8efff798038103d269b633813fc60c",
        "{json}"
    );
    assert_eq!(span["spanId"], "eee19b7ec3c1b174", "{json}");
    assert_eq!(span["kind"], 3, "SPAN_KIND_CLIENT as an integer: {json}");
    assert_eq!(span["startTimeUnixNano"], "1704067200000000123", "{json}");
    assert_eq!(span["endTimeUnixNano"], "1704067200250000123", "{json}");
    let attribute = &span["attributes"][0];
    assert_eq!(attribute["key"], "gen_ai.usage.input_tokens");
    assert_eq!(attribute["value"]["intValue"], "9007199254740993", "{json}");
    for snake in [
        "resource_spans",
        "scope_spans",
        "trace_id",
        "start_time_unix_nano",
    ] {
        assert!(!json.to_string().contains(snake), "{snake} in {json}");
    }
    let back: ExportTraceServiceRequest = serde_json::from_value(json).unwrap();
    assert_eq!(back, request);
}

/// The other way: a collector's own OTLP JSON (the spec's example form, numbers for
/// 64-bit fields accepted too) decodes with the same types.
#[test]
fn otlp_json_from_elsewhere_decodes() {
    let text = r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"x"}}]},
        "scopeSpans":[{"spans":[{"traceId":"5B8EFFF798038103D269B633813FC60C","spanId":"EEE19B7EC3C1B174",
        "name":"n","kind":2,"startTimeUnixNano":1544712660000000000,"endTimeUnixNano":"1544712661000000000",
        "attributes":[{"key":"n","value":{"intValue":"7"}}]}]}]}]}"#;
    let request: ExportTraceServiceRequest = serde_json::from_str(text).unwrap();
    let span = &request.resource_spans[0].scope_spans[0].spans[0];
    assert_eq!(span.trace_id[0], 0x5b);
    assert_eq!(span.start_time_unix_nano, 1_544_712_660_000_000_000);
    assert_eq!(span.end_time_unix_nano, 1_544_712_661_000_000_000);
    assert_eq!(
        span.attributes[0].value.as_ref().unwrap().value,
        Some(any_value::Value::IntValue(7))
    );
    assert!(
        serde_json::from_str::<ExportTraceServiceRequest>(
            r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"not hex"}]}]}]}"#
        )
        .is_err()
    );
}
