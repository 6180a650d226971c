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
/// from `rng`; what the client's own reads decode to.
pub fn check_split_invariance(
    exchange: &Exchange,
    rng: &mut DeterministicRng,
) -> Result<Decoded, Violation> {
    match check_stream_splits(exchange, rng)? {
        Some(as_read) => Ok(as_read),
        None => Ok(decode_as_client(
            exchange.profile.format(),
            exchange.reads.iter().map(Vec::as_slice),
        )),
    }
}

/// [`check_split_invariance`] for a caller that needs the decoding of whole streams only:
/// `None` for any other exchange, which passes without being decoded at all (a whole
/// JSON body, an error status, a cut stream; for wire_shapes, decoding those was 9.7% of
/// its instructions). The same draws from `rng` as [`check_split_invariance`].
pub fn check_stream_splits(
    exchange: &Exchange,
    rng: &mut DeterministicRng,
) -> Result<Option<Decoded>, Violation> {
    if !is_whole_stream(exchange) {
        return Ok(None);
    }
    let format = exchange.profile.format();
    let as_read = decode_as_client(format, exchange.reads.iter().map(Vec::as_slice));
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
    Ok(Some(as_read))
}

/// Whether `reads` are `read`, read for read.
fn same_reads(reads: &[&[u8]], read: &[Vec<u8>]) -> bool {
    reads.len() == read.len() && reads.iter().zip(read).all(|(a, b)| *a == b.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::Profile;

    /// A minimal chat stream: two `chat.completion.chunk`s and the end marker (the fields
    /// OpenAI's API reference requires of a streamed chunk; OpenAI itself sends the finish
    /// in a chunk of its own, which the decoder reads the same way), in three uneven reads,
    /// the second ending inside the first event.
    fn chat_stream(status: u16, content_type: &str, end: BodyEnd) -> Exchange {
        let body = concat!(
            "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",",
            "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hel\"},\"finish_reason\":null}]}\n\n",
            "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",",
            "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n",
        )
        .as_bytes();
        Exchange {
            url: "https://api.openai.sim/v1/chat/completions".into(),
            profile: Profile::OpenAi,
            status,
            headers: vec![("content-type".into(), content_type.into())],
            reads: vec![
                body[..7].to_vec(),
                body[7..150].to_vec(),
                body[150..].to_vec(),
            ],
            end,
            retry_after_meant_ms: None,
        }
    }

    fn as_read(exchange: &Exchange) -> Decoded {
        decode_as_client(
            exchange.profile.format(),
            exchange.reads.iter().map(Vec::as_slice),
        )
    }

    /// A whole stream is decoded under every pattern and checked: what comes back is the
    /// client's own reads decoded, after the same draws `check_split_invariance` makes.
    #[test]
    fn a_whole_stream_is_checked_and_its_decoding_returned() {
        let exchange = chat_stream(200, "text/event-stream", BodyEnd::Ended);
        let (mut rng, mut rng_old) = (DeterministicRng::new(7), DeterministicRng::new(7));
        let decoded = check_stream_splits(&exchange, &mut rng).expect("a correct stream passes");
        assert_ne!(
            rng.clone().next_u64(),
            DeterministicRng::new(7).next_u64(),
            "a whole stream's seeded pieces are drawn"
        );
        let decoded = decoded.expect("a whole stream is decoded");
        assert!(decoded.error.is_none(), "{:?}", decoded.error);
        assert!(decoded.events.len() >= 2, "{:?}", decoded.events);
        assert_eq!(decoded, as_read(&exchange));
        assert_eq!(
            check_split_invariance(&exchange, &mut rng_old).ok(),
            Some(decoded)
        );
        assert_eq!(rng.next_u64(), rng_old.next_u64(), "the same draws");
    }

    /// Anything but a whole stream passes without being decoded or drawing: a cut
    /// stream, an error status, a body that is no stream. `check_split_invariance` still
    /// hands back the client's reads decoded.
    #[test]
    fn what_is_no_whole_stream_passes_undecoded() {
        for exchange in [
            chat_stream(200, "text/event-stream", BodyEnd::Reset),
            chat_stream(200, "text/event-stream", BodyEnd::Open),
            chat_stream(500, "text/event-stream", BodyEnd::Ended),
            chat_stream(200, "application/json", BodyEnd::Ended),
        ] {
            let (mut rng, mut untouched) = (DeterministicRng::new(7), DeterministicRng::new(7));
            assert!(matches!(check_stream_splits(&exchange, &mut rng), Ok(None)));
            assert_eq!(rng.next_u64(), untouched.next_u64(), "no draw");
            let mut rng = DeterministicRng::new(7);
            assert_eq!(
                check_split_invariance(&exchange, &mut rng).ok(),
                Some(as_read(&exchange))
            );
        }
    }

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
