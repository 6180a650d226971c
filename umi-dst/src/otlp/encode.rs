//! An `ExportTraceServiceRequest` as the two OTLP encodings, and back: binary protobuf
//! (prost, `application/x-protobuf`) and OTLP JSON (`application/json`: the
//! opentelemetry-proto crate's serde derives, which write what the spec's "JSON Protobuf
//! Encoding" asks, <https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding>: hex
//! trace and span ids, lowerCamelCase keys, enums as integers, 64-bit integers as
//! decimal strings; checked by umi-dst's `otlp` tests).

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;

use super::error::OtlpError;

/// The request as binary protobuf.
pub fn to_protobuf(request: &ExportTraceServiceRequest) -> Vec<u8> {
    request.encode_to_vec()
}

/// The request as OTLP JSON (compact, fields in the proto's order: the same request,
/// the same bytes).
pub fn to_json(request: &ExportTraceServiceRequest) -> Vec<u8> {
    // The generated types serialize through serde's derive and the crate's hex and
    // decimal-string helpers, none of which can fail, into a Vec, which cannot either.
    serde_json::to_vec(request).unwrap_or_default()
}

/// A request from binary protobuf.
pub fn from_protobuf(bytes: &[u8]) -> Result<ExportTraceServiceRequest, OtlpError> {
    Ok(ExportTraceServiceRequest::decode(bytes)?)
}

/// A request from OTLP JSON; the error names the JSON path that did not decode.
pub fn from_json(bytes: &[u8]) -> Result<ExportTraceServiceRequest, OtlpError> {
    let mut reader = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(&mut reader).map_err(|error| OtlpError::Json {
        path: error.path().to_string(),
        reason: error.inner().to_string(),
    })
}
