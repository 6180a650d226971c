//! Trace and span ids, derived rather than drawn: the same run exports the same ids, so
//! the same seed exports the same bytes, and a run exported twice lands on one trace in
//! a backend.
//!
//! A trace id is the first 16 bytes of a SHA-256 over a label, the seed and the run's
//! name (the scenario, with its path when the run has branch points, for `dst replay`;
//! the scope for `dst serve`); a span id is the first 8 bytes of a SHA-256 over a label,
//! the trace id and the span's index in the export. OTLP forbids an all-zero trace or
//! span id (the proto's comments on `Span.trace_id` and `Span.span_id`), so an id that
//! comes out all zero has its last byte set to 1.

use sha2::{Digest, Sha256};

/// A trace id: 16 bytes, never all zero.
pub type TraceId = [u8; 16];

/// A span id: 8 bytes, never all zero.
pub type SpanId = [u8; 8];

/// The trace id of run `name` of `seed` (a scenario, or a `dst serve` scope).
pub fn trace_id(seed: u64, name: &str) -> TraceId {
    let digest = Sha256::new()
        .chain_update(b"umi.otlp.trace\0")
        .chain_update(seed.to_le_bytes())
        .chain_update(name.as_bytes())
        .finalize();
    let mut id = TraceId::default();
    id.copy_from_slice(&digest[..16]);
    never_zero(id)
}

/// The id of span number `index` (0 for the first) of trace `trace`.
pub fn span_id(trace: &TraceId, index: u64) -> SpanId {
    let digest = Sha256::new()
        .chain_update(b"umi.otlp.span\0")
        .chain_update(trace)
        .chain_update(index.to_le_bytes())
        .finalize();
    let mut id = SpanId::default();
    id.copy_from_slice(&digest[..8]);
    never_zero(id)
}

/// `id`, or `id` with its last byte 1 when every byte is 0 (an invalid id in OTLP).
fn never_zero<const N: usize>(mut id: [u8; N]) -> [u8; N] {
    if id.iter().all(|&byte| byte == 0)
        && let Some(last) = id.last_mut()
    {
        *last = 1;
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_depend_on_seed_name_and_index_only() {
        assert_eq!(trace_id(7, "a"), trace_id(7, "a"));
        assert_ne!(trace_id(7, "a"), trace_id(8, "a"));
        assert_ne!(trace_id(7, "a"), trace_id(7, "b"));
        let trace = trace_id(7, "a");
        assert_eq!(span_id(&trace, 3), span_id(&trace, 3));
        assert_ne!(span_id(&trace, 3), span_id(&trace, 4));
        assert_ne!(span_id(&trace, 3), span_id(&trace_id(8, "a"), 3));
    }

    #[test]
    fn an_all_zero_id_is_made_valid_and_others_are_kept() {
        assert_eq!(never_zero([0u8; 8]), [0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(never_zero([0u8; 16])[15], 1);
        assert_eq!(never_zero([0, 2, 0]), [0, 2, 0]);
    }
}
