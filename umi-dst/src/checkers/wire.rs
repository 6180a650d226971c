//! Split invariance: the outcome of a stream must not depend on where its reads end.
//!
//! A client reads whatever the network delivered: half an event, half a UTF-8
//! character, a CR without its LF, or many events at once. The checker takes the bytes
//! of an exchange as SimNetwork sent them ([`crate::network::Exchange`]) and decodes them
//! with the client's own decoder under several split patterns (as the client read them,
//! whole, single bytes, and seeded pieces), and requires the same outcome every time: the
//! same events, then the same success or the same typed error. A decoder that keeps state
//! across reads wrongly, or that loses events decoded before an error in the same read,
//! fails it.

use umi_core::llm::wire::reader::Decoded;

use crate::network::reads::pieces;
use crate::network::{BodyEnd, Exchange, WireFormat};
use crate::rng::DeterministicRng;
use crate::simulation::Violation;

/// Decodes `reads` with the client decoder of `format`.
pub fn decode_as_client<'a>(
    format: WireFormat,
    reads: impl IntoIterator<Item = &'a [u8]>,
) -> Decoded {
    let reads: Vec<&[u8]> = reads.into_iter().collect();
    format.decode_as_client(&reads)
}

/// Whether `exchange` is a streamed 200 whose every byte the client saw.
pub fn is_whole_stream(exchange: &Exchange) -> bool {
    let streamed = exchange.header("content-type").is_some_and(|t| {
        t.starts_with("text/event-stream") || t.starts_with("application/x-ndjson")
    });
    exchange.status == 200 && streamed && exchange.end == BodyEnd::Ended
}

/// Checks `exchange` (a whole streamed body; others pass) under several splits, drawn
/// from `rng`.
pub fn check_split_invariance(
    exchange: &Exchange,
    rng: &mut DeterministicRng,
) -> Result<Decoded, Violation> {
    let format = exchange.profile.format();
    let as_read = decode_as_client(format, exchange.reads.iter().map(Vec::as_slice));
    if !is_whole_stream(exchange) {
        return Ok(as_read);
    }
    let body = exchange.body();
    let pieces = pieces(&body, 16, rng);
    let patterns: [(&str, Vec<&[u8]>); 3] = [
        ("whole", vec![body.as_slice()]),
        ("single bytes", body.chunks(1).collect()),
        ("seeded pieces", pieces),
    ];
    for (name, reads) in patterns {
        // Decoding is a function of the reads alone: a pattern the client's reads already
        // were (one read of the whole body, say) decodes as they did, so it is not
        // decoded twice. `pieces` was drawn above either way (the same draws).
        if same_reads(&reads, &exchange.reads) {
            continue;
        }
        let other = decode_as_client(format, reads);
        if other != as_read {
            return Err(Violation::new(format!(
                "{} ({}): the stream decodes differently read as {name}: {} event(s) then {:?}, against {} event(s) then {:?} as the client read it",
                exchange.url,
                exchange.profile,
                other.events.len(),
                other.error,
                as_read.events.len(),
                as_read.error,
            )));
        }
    }
    Ok(as_read)
}

/// Whether `reads` are `read`, read for read.
fn same_reads(reads: &[&[u8]], read: &[Vec<u8>]) -> bool {
    reads.len() == read.len() && reads.iter().zip(read).all(|(a, b)| *a == b.as_slice())
}

#[cfg(test)]
mod tests {
    use super::same_reads;

    /// A pattern is skipped only when it is the client's reads boundary for boundary: the
    /// same bytes split elsewhere are another pattern, decoded and compared (a skip on
    /// equal bytes alone would hide exactly the bugs the checker exists for).
    #[test]
    fn only_the_clients_own_reads_are_skipped() {
        let read = vec![b"data: a\n".to_vec(), b"\n".to_vec()];
        assert!(same_reads(&[b"data: a\n", b"\n"], &read));
        assert!(!same_reads(&[b"data: a\n\n"], &read));
        assert!(!same_reads(&[b"data: a", b"\n\n"], &read));
        assert!(!same_reads(&[b"data: a\n", b"\n", b""], &read));
        assert!(!same_reads(&[b"data: b\n", b"\n"], &read));
        assert!(same_reads(&[], &[]));
    }
}
