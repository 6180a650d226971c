//! What an export can fail on, typed.

/// An export that could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    /// The run's full trace was not kept (the run was made without
    /// `SimConfig::trace_full`, or it passed `TRACE_EVENTS_FULL_MAX` events).
    #[error(
        "the run's full trace was not kept ({events} events; a full trace keeps at most {max}): \
         an OTLP export needs every event"
    )]
    NoFullTrace {
        /// The run's events.
        events: u64,
        /// The most a full trace keeps.
        max: usize,
    },
    /// OTLP JSON that does not decode as an `ExportTraceServiceRequest`.
    #[error("not OTLP JSON (an ExportTraceServiceRequest) at {path}: {reason}")]
    Json {
        /// Where, as a JSON path.
        path: String,
        /// Why.
        reason: String,
    },
    /// Protobuf that does not decode as an `ExportTraceServiceRequest`.
    #[error("not OTLP protobuf (an ExportTraceServiceRequest): {0}")]
    Protobuf(#[from] prost::DecodeError),
}
