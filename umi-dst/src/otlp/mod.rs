//! A run as OpenTelemetry spans: OTLP protobuf and OTLP JSON from the official generated
//! types (`opentelemetry-proto`, the opentelemetry-rust project's prost messages and their
//! serde derives). Filled in by issue 43's export core.
