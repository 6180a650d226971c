//! Where the reads of a body end: drawn per response, independently of where events end,
//! as TCP, TLS and proxies deliver them.
//!
//! A server writes whole events; a client reads whatever the network has delivered. A
//! read may end inside an event, inside a UTF-8 character, between a CR and its LF, or
//! hold many events at once. The [`ReadPlan`] drawn for a response decides: as written,
//! coalesced (everything already available in one read), single bytes, or pieces of a
//! seeded size. Splitting never changes when bytes become available (it happens at the
//! same simulated instant), and coalescing only joins bytes that are already there.
//!
//! [`cut`] is the body faults: the body stops after a seeded number of bytes, at any
//! byte, then breaks, ends, or stalls.

use futures::{FutureExt, StreamExt};
use umi_core::env::Env;
use umi_core::llm::transport::{BodyStream, TransportError};

use crate::fault::FaultKind;
use crate::fault::NetworkKind;
use crate::fault::point::{NETWORK_BODY, unreachable_kind};
use crate::rng::DeterministicRng;

/// Cuts a `Cut` plan makes in one write, at most.
pub(crate) const CUTS_PER_WRITE_MAX: u64 = 3;

/// Bytes a `Bytes` plan delivers one at a time, at most.
pub(crate) const BYTE_READS_MAX: u64 = 48;

/// Where a `Bytes` plan's stretch of single-byte reads may start, at most (bytes into
/// the body).
pub(crate) const BYTE_READS_FROM_MAX: u64 = 2_048;

/// Chunks joined into one read at most when coalescing (a bound, like a socket buffer).
pub(crate) const COALESCE_CHUNKS_MAX: usize = 64;

/// How one response's reads end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadPlan {
    /// A read per write, as the server wrote it.
    AsWritten,
    /// Everything already available in one read.
    Coalesced,
    /// Each write cut at 1 to `cuts` seeded offsets: inside an event, inside a
    /// character, between CR and LF.
    Cut {
        /// The most cuts per write.
        cuts: u64,
    },
    /// One byte per read for `len` bytes from byte `from` of the body, as written
    /// elsewhere (a slow link for a stretch).
    Bytes {
        /// Where the stretch starts.
        from: u64,
        /// Its length.
        len: u64,
    },
}

impl ReadPlan {
    /// Draws a plan.
    pub fn draw(rng: &mut DeterministicRng) -> Self {
        match rng.below(5) {
            0 => Self::AsWritten,
            1 => Self::Coalesced,
            2 => Self::Bytes {
                from: rng.range_inclusive(0, BYTE_READS_FROM_MAX),
                len: rng.range_inclusive(1, BYTE_READS_MAX),
            },
            _ => Self::Cut {
                cuts: rng.range_inclusive(1, CUTS_PER_WRITE_MAX),
            },
        }
    }

    /// The plan's coverage mark.
    pub fn mark(self) -> &'static str {
        match self {
            Self::AsWritten => "wire.reads.as_written",
            Self::Coalesced => "wire.reads.coalesced",
            Self::Cut { .. } => "wire.reads.cut",
            Self::Bytes { .. } => "wire.reads.bytes",
        }
    }

    /// Every plan's mark.
    pub const MARKS: [&'static str; 4] = [
        "wire.reads.as_written",
        "wire.reads.coalesced",
        "wire.reads.cut",
        "wire.reads.bytes",
    ];
}

/// `bytes`, which start at byte `offset` of the body, cut into reads by `plan` (a write
/// that stays one read is handed on as it is, not copied).
pub(crate) fn split_bytes(
    bytes: Vec<u8>,
    offset: u64,
    plan: ReadPlan,
    rng: &mut DeterministicRng,
) -> Vec<Vec<u8>> {
    match plan {
        ReadPlan::AsWritten | ReadPlan::Coalesced => vec![bytes],
        ReadPlan::Cut { cuts } => {
            let mut at: Vec<usize> = (0..rng.range_inclusive(1, cuts))
                .map(|_| rng.index(bytes.len().max(1)))
                .filter(|&i| i > 0)
                .collect();
            at.sort_unstable();
            at.dedup();
            if at.is_empty() && !bytes.is_empty() {
                // No cut inside: the write is the one read (an empty write is none).
                return vec![bytes];
            }
            let mut out = Vec::with_capacity(at.len() + 1);
            let mut start = 0;
            for end in at.into_iter().chain([bytes.len()]) {
                if end > start {
                    out.push(bytes[start..end].to_vec());
                }
                start = end;
            }
            out
        }
        ReadPlan::Bytes { from, len } => {
            let end = offset + bytes.len() as u64;
            let (lo, hi) = (from.max(offset), (from + len).min(end));
            if lo >= hi {
                return vec![bytes];
            }
            let (lo, hi) = ((lo - offset) as usize, (hi - offset) as usize);
            let mut out = Vec::with_capacity(hi - lo + 2);
            if lo > 0 {
                out.push(bytes[..lo].to_vec());
            }
            out.extend(bytes[lo..hi].iter().map(|b| vec![*b]));
            if hi < bytes.len() {
                out.push(bytes[hi..].to_vec());
            }
            out
        }
    }
}

/// `bytes` in seeded pieces of 1 to `max` bytes (the split-invariance checker's own
/// pattern), lent from `bytes` (a copy per piece cost an allocation per few bytes).
pub(crate) fn pieces<'a>(bytes: &'a [u8], max: u64, rng: &mut DeterministicRng) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let take = (rng.range_inclusive(1, max) as usize).min(rest.len());
        out.push(&rest[..take]);
        rest = &rest[take..];
    }
    out
}

/// `body` delivered in the reads of a plan drawn from `rng` (its mark covered in `env`).
pub(crate) fn split(body: BodyStream, mut rng: DeterministicRng, env: &Env) -> BodyStream {
    let plan = ReadPlan::draw(&mut rng);
    env.cover(plan.mark());
    if plan == ReadPlan::AsWritten {
        return body;
    }
    let pending: std::collections::VecDeque<Result<Vec<u8>, TransportError>> =
        std::collections::VecDeque::new();
    futures::stream::unfold(
        (body, pending, rng, false, 0u64),
        move |(mut body, mut pending, mut rng, ended, offset)| async move {
            let mut offset = offset;
            loop {
                if let Some(item) = pending.pop_front() {
                    return Some((item, (body, pending, rng, ended, offset)));
                }
                if ended {
                    return None;
                }
                let first = body.next().await?;
                let mut bytes = match first {
                    Ok(bytes) => bytes,
                    Err(error) => return Some((Err(error), (body, pending, rng, true, offset))),
                };
                let mut failed = None;
                let mut ended_now = false;
                if plan == ReadPlan::Coalesced {
                    // Join what is already there, without waiting for more.
                    for _ in 1..COALESCE_CHUNKS_MAX {
                        match body.next().now_or_never() {
                            Some(Some(Ok(more))) => bytes.extend_from_slice(&more),
                            Some(Some(Err(error))) => {
                                failed = Some(error);
                                break;
                            }
                            Some(None) => {
                                ended_now = true;
                                break;
                            }
                            None => break,
                        }
                    }
                }
                let written = bytes.len();
                let reads = split_bytes(bytes, offset, plan, &mut rng);
                // The pair of the server's write: the reads deliver exactly the bytes
                // written, no more, no fewer (a split that lost or doubled one would make
                // every client look broken, or hide a client bug).
                assert_eq!(
                    reads.iter().map(Vec::len).sum::<usize>(),
                    written,
                    "reads of a {plan:?} plan deliver the bytes written"
                );
                offset += written as u64;
                pending.extend(reads.into_iter().map(Ok));
                if let Some(error) = failed {
                    pending.push_back(Err(error));
                    ended_now = true;
                }
                if ended_now {
                    return pending
                        .pop_front()
                        .map(|item| (item, (body, pending, rng, true, offset)));
                }
            }
        },
    )
    .boxed()
}

/// `body` cut after `left` bytes by `kind`: a reset (an error), a partial write (the
/// end), or a timeout (nothing more, ever).
///
/// A body shorter than `left` is cut all the same, so an injected fault always does
/// something: a reset or a stall comes after its last byte (the connection breaks, or
/// hangs, before the server's clean end), and a partial write holds each chunk back until
/// the next one is there, so that it can end early inside the last chunk (it keeps
/// `left % len` of its bytes). Once counted as injected, a body fault on a short body
/// once did nothing.
pub(crate) fn cut(body: BodyStream, left: usize, kind: FaultKind) -> BodyStream {
    let hold_back = kind == FaultKind::NetworkPartialWrite;
    // State: the body, the bytes still allowed through, a chunk held back (partial
    // writes), and whether it has ended.
    futures::stream::unfold(
        (body, left, None::<Vec<u8>>, false),
        move |(mut body, left, held, ended)| async move {
            if ended {
                return None;
            }
            match body.next().await {
                // An empty write moves nothing (and must not end a partial write early).
                Some(Ok(chunk)) if chunk.is_empty() => Some((Ok(chunk), (body, left, held, false))),
                Some(Ok(mut chunk)) if held.is_none() && chunk.len() >= left => {
                    chunk.truncate(left);
                    match after_cut(kind) {
                        Some(rest) => Some((Ok(chunk), (rest, 0, None, false))),
                        None => Some((Ok(chunk), (body, 0, None, true))),
                    }
                }
                Some(Ok(chunk)) if hold_back => Some(held_back(body, left, held, chunk)),
                Some(Ok(chunk)) => {
                    let left = left - chunk.len();
                    Some((Ok(chunk), (body, left, None, false)))
                }
                None => ended_early(left, held, kind),
                // The body broke first: what was held back is delivered, then the error.
                Some(Err(error)) => match held {
                    Some(previous) => Some((
                        Ok(previous),
                        (futures::stream::iter([Err(error)]).boxed(), 0, None, false),
                    )),
                    None => Some((Err(error), (body, 0, None, true))),
                },
            }
        },
    )
    .filter(|item| std::future::ready(!matches!(item, Ok(bytes) if bytes.is_empty())))
    .boxed()
}

/// The state of [`cut`]'s stream: the body, the bytes still allowed through, a chunk
/// held back (partial writes), and whether it has ended.
type CutState = (BodyStream, usize, Option<Vec<u8>>, bool);

/// One item of [`cut`]'s stream and the state after it.
type CutStep = (Result<Vec<u8>, TransportError>, CutState);

/// What follows the cut for fault `kind`: a reset, a stall, or (a partial write) nothing.
fn after_cut(kind: FaultKind) -> Option<BodyStream> {
    match kind.network() {
        Some(NetworkKind::Reset) => Some(
            futures::stream::iter([Err(TransportError::Reset {
                reason: "connection reset by peer (simulated)".into(),
            })])
            .boxed(),
        ),
        Some(NetworkKind::Timeout) => Some(futures::stream::pending().boxed()),
        Some(NetworkKind::PartialWrite) => None,
        // The kinds of `network.connect`, and other domains': not drawn at a body.
        Some(
            NetworkKind::ConnectionRefused | NetworkKind::SlowFirstByte | NetworkKind::ProxyError,
        )
        | None => unreachable_kind(&NETWORK_BODY, kind),
    }
}

/// A partial write: `chunk` is held and the one held before delivered (or cut inside
/// it, when the new one takes the body past `left`).
fn held_back(body: BodyStream, left: usize, held: Option<Vec<u8>>, chunk: Vec<u8>) -> CutStep {
    let left_after = left.saturating_sub(chunk.len());
    match held {
        None => (Ok(Vec::new()), (body, left_after, Some(chunk), false)),
        Some(previous) if chunk.len() >= left => {
            let mut chunk = chunk;
            chunk.truncate(left);
            let mut out = previous;
            out.extend_from_slice(&chunk);
            (Ok(out), (body, 0, None, true))
        }
        Some(previous) => (Ok(previous), (body, left_after, Some(chunk), false)),
    }
}

/// The body ended before `left` bytes: the fault still happens (a held chunk is cut
/// short, a reset or stall follows).
fn ended_early(left: usize, held: Option<Vec<u8>>, kind: FaultKind) -> Option<CutStep> {
    match (held, after_cut(kind)) {
        (Some(mut last), _) => {
            let keep = left % last.len().max(1);
            last.truncate(keep.min(last.len().saturating_sub(1)));
            Some((Ok(last), (futures::stream::empty().boxed(), 0, None, true)))
        }
        (None, Some(rest)) => Some((Ok(Vec::new()), (rest, 0, None, false))),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(chunks: &[&[u8]]) -> BodyStream {
        let chunks: Vec<Result<Vec<u8>, TransportError>> =
            chunks.iter().map(|c| Ok(c.to_vec())).collect();
        futures::stream::iter(chunks).boxed()
    }

    /// What `stream` delivers before it ends, errs or stalls: the bytes, and how it
    /// stopped ("end", "error" or "stall").
    fn drain(mut stream: BodyStream) -> (Vec<u8>, &'static str) {
        let mut bytes = Vec::new();
        loop {
            match stream.next().now_or_never() {
                Some(Some(Ok(piece))) => bytes.extend_from_slice(&piece),
                Some(Some(Err(_))) => return (bytes, "error"),
                Some(None) => return (bytes, "end"),
                None => return (bytes, "stall"),
            }
        }
    }

    /// A body fault always acts: on a body shorter than the cut point a reset still breaks
    /// it, a timeout still stalls it, and a partial write still ends it early. (Counted as
    /// injected, a body fault on a short body once did nothing.)
    #[test]
    fn body_faults_act_on_bodies_shorter_than_the_cut() {
        let chunks: &[&[u8]] = &[b"aaaaaaaaaa", b"", b"bbbbbbbbbb", b"cccccccccc"];
        let whole: Vec<u8> = chunks.concat();
        let (bytes, how) = drain(cut(body(chunks), 100, FaultKind::NetworkReset));
        assert_eq!((bytes.as_slice(), how), (whole.as_slice(), "error"));
        let (bytes, how) = drain(cut(body(chunks), 100, FaultKind::NetworkTimeout));
        assert_eq!((bytes.as_slice(), how), (whole.as_slice(), "stall"));
        for left in [100, 101, 129] {
            let (bytes, how) = drain(cut(body(chunks), left, FaultKind::NetworkPartialWrite));
            assert_eq!(how, "end");
            assert!(
                bytes.len() < whole.len(),
                "left {left}: {} bytes",
                bytes.len()
            );
            assert!(
                bytes.len() >= 20,
                "only the last chunk is cut: {}",
                bytes.len()
            );
            assert_eq!(bytes, whole[..bytes.len()], "a prefix, in order");
        }
    }

    #[test]
    fn body_faults_cut_at_the_byte_asked_for() {
        let chunks: &[&[u8]] = &[b"aaaaaaaaaa", b"bbbbbbbbbb", b"cccccccccc"];
        let whole: Vec<u8> = chunks.concat();
        for left in [0, 5, 10, 15, 29] {
            for kind in [
                FaultKind::NetworkPartialWrite,
                FaultKind::NetworkReset,
                FaultKind::NetworkTimeout,
            ] {
                let (bytes, how) = drain(cut(body(chunks), left, kind));
                assert_eq!(bytes, whole[..left], "{kind} at {left}");
                let expected = match kind {
                    FaultKind::NetworkPartialWrite => "end",
                    FaultKind::NetworkReset => "error",
                    _ => "stall",
                };
                assert_eq!(how, expected, "{kind} at {left}");
            }
        }
    }

    /// A body that breaks while a partial write holds a chunk back delivers the chunk,
    /// then the error: no byte the server sent is lost.
    #[test]
    fn a_held_chunk_is_delivered_before_an_error() {
        let failing: Vec<Result<Vec<u8>, TransportError>> = vec![
            Ok(b"aaaa".to_vec()),
            Err(TransportError::Reset {
                reason: "peer".into(),
            }),
        ];
        let stream = futures::stream::iter(failing).boxed();
        let (bytes, how) = drain(cut(stream, 100, FaultKind::NetworkPartialWrite));
        assert_eq!((bytes.as_slice(), how), (b"aaaa".as_slice(), "error"));
    }

    #[test]
    fn every_plan_keeps_every_byte_in_order() {
        let bytes = "data: {\"content\":\"héllo 東京\"}\r\n\r\n".as_bytes();
        let mut rng = DeterministicRng::new(11);
        for plan in [
            ReadPlan::AsWritten,
            ReadPlan::Coalesced,
            ReadPlan::Cut { cuts: 3 },
            ReadPlan::Bytes { from: 20, len: 40 },
            ReadPlan::Bytes {
                from: 5_000,
                len: 4,
            },
        ] {
            for offset in [0, 10, 100] {
                let reads = split_bytes(bytes.to_vec(), offset, plan, &mut rng);
                assert_eq!(reads.concat(), bytes, "{plan:?} at {offset}");
                assert!(reads.iter().all(|r| !r.is_empty()));
            }
        }
        // Single bytes end reads inside the multi-byte characters and between CR and LF.
        let plan = ReadPlan::Bytes { from: 0, len: 48 };
        let reads = split_bytes(bytes.to_vec(), 0, plan, &mut rng);
        assert!(reads.iter().any(|r| std::str::from_utf8(r).is_err()));
        assert!(reads.iter().any(|r| r == b"\r"));
        assert_eq!(pieces(bytes, 8, &mut rng).concat(), bytes);
        // A write left whole is one read; an empty one is no read when cut.
        let whole = split_bytes(bytes.to_vec(), 0, ReadPlan::Coalesced, &mut rng);
        assert_eq!(whole, [bytes]);
        let cut = split_bytes(Vec::new(), 0, ReadPlan::Cut { cuts: 3 }, &mut rng);
        assert!(cut.is_empty(), "{cut:?}");
    }
}
