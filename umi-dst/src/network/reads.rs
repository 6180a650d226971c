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
use crate::rng::DeterministicRng;

/// Largest read a `Pieces` plan makes, in bytes.
pub const READ_BYTES_MAX: u64 = 64;

/// Chunks joined into one read at most when coalescing (a bound, like a socket buffer).
pub const COALESCE_CHUNKS_MAX: usize = 64;

/// How one response's reads end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadPlan {
    /// A read per write, as the server wrote it.
    AsWritten,
    /// Everything already available in one read.
    Coalesced,
    /// One byte per read.
    Bytes,
    /// Reads of 1 to `max` bytes, sizes seeded.
    Pieces {
        /// The largest read.
        max: u64,
    },
}

impl ReadPlan {
    /// Draws a plan.
    pub fn draw(rng: &mut DeterministicRng) -> Self {
        match rng.below(5) {
            0 => Self::AsWritten,
            1 => Self::Coalesced,
            2 => Self::Bytes,
            3 => Self::Pieces { max: 8 },
            _ => Self::Pieces {
                max: READ_BYTES_MAX,
            },
        }
    }

    /// The plan's coverage mark.
    pub fn mark(self) -> &'static str {
        match self {
            Self::AsWritten => "wire.reads.as_written",
            Self::Coalesced => "wire.reads.coalesced",
            Self::Bytes => "wire.reads.bytes",
            Self::Pieces { max: 8 } => "wire.reads.small_pieces",
            Self::Pieces { .. } => "wire.reads.pieces",
        }
    }

    /// Every plan's mark.
    pub const MARKS: [&'static str; 5] = [
        "wire.reads.as_written",
        "wire.reads.coalesced",
        "wire.reads.bytes",
        "wire.reads.small_pieces",
        "wire.reads.pieces",
    ];
}

/// `bytes` cut into reads by `plan`.
pub fn split_bytes(bytes: &[u8], plan: ReadPlan, rng: &mut DeterministicRng) -> Vec<Vec<u8>> {
    match plan {
        ReadPlan::AsWritten | ReadPlan::Coalesced => vec![bytes.to_vec()],
        ReadPlan::Bytes => bytes.iter().map(|b| vec![*b]).collect(),
        ReadPlan::Pieces { max } => {
            let mut out = Vec::new();
            let mut rest = bytes;
            while !rest.is_empty() {
                let take = (rng.range_inclusive(1, max) as usize).min(rest.len());
                out.push(rest[..take].to_vec());
                rest = &rest[take..];
            }
            out
        }
    }
}

/// `body` delivered in the reads of a plan drawn from `rng` (its mark covered in `env`).
pub fn split(body: BodyStream, mut rng: DeterministicRng, env: &Env) -> BodyStream {
    let plan = ReadPlan::draw(&mut rng);
    env.cover(plan.mark());
    if plan == ReadPlan::AsWritten {
        return body;
    }
    let pending: std::collections::VecDeque<Result<Vec<u8>, TransportError>> =
        std::collections::VecDeque::new();
    futures::stream::unfold(
        (body, pending, rng, false),
        move |(mut body, mut pending, mut rng, ended)| async move {
            loop {
                if let Some(item) = pending.pop_front() {
                    return Some((item, (body, pending, rng, ended)));
                }
                if ended {
                    return None;
                }
                let first = body.next().await?;
                let mut bytes = match first {
                    Ok(bytes) => bytes,
                    Err(error) => return Some((Err(error), (body, pending, rng, true))),
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
                pending.extend(split_bytes(&bytes, plan, &mut rng).into_iter().map(Ok));
                if let Some(error) = failed {
                    pending.push_back(Err(error));
                    ended_now = true;
                }
                if ended_now {
                    return pending
                        .pop_front()
                        .map(|item| (item, (body, pending, rng, true)));
                }
            }
        },
    )
    .boxed()
}

/// `body` cut after `left` bytes by `kind`: a reset (an error), a partial write (the
/// end), or a timeout (nothing more, ever).
pub fn cut(body: BodyStream, left: usize, kind: FaultKind) -> BodyStream {
    let after_cut = move || -> Option<BodyStream> {
        match kind {
            FaultKind::NetworkReset => Some(
                futures::stream::iter([Err(TransportError::Reset {
                    reason: "connection reset by peer (simulated)".into(),
                })])
                .boxed(),
            ),
            FaultKind::NetworkTimeout => Some(futures::stream::pending().boxed()),
            _ => None,
        }
    };
    // State: the body, the bytes still allowed through, and whether it has ended.
    futures::stream::unfold(
        (body, left, false),
        move |(mut body, left, ended)| async move {
            if ended {
                return None;
            }
            match body.next().await {
                Some(Ok(mut chunk)) if chunk.len() >= left => {
                    chunk.truncate(left);
                    match after_cut() {
                        Some(rest) => Some((Ok(chunk), (rest, 0, false))),
                        None => Some((Ok(chunk), (body, 0, true))),
                    }
                }
                Some(Ok(chunk)) => {
                    let left = left - chunk.len();
                    Some((Ok(chunk), (body, left, false)))
                }
                other => other.map(|item| (item, (body, 0, true))),
            }
        },
    )
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_plan_keeps_every_byte_in_order() {
        let bytes = "data: {\"content\":\"héllo 東京\"}\r\n\r\n".as_bytes();
        let mut rng = DeterministicRng::new(11);
        for plan in [
            ReadPlan::AsWritten,
            ReadPlan::Coalesced,
            ReadPlan::Bytes,
            ReadPlan::Pieces { max: 8 },
            ReadPlan::Pieces { max: 64 },
        ] {
            let reads = split_bytes(bytes, plan, &mut rng);
            assert_eq!(reads.concat(), bytes, "{plan:?}");
            assert!(reads.iter().all(|r| !r.is_empty()));
        }
        // Single bytes end reads inside the multi-byte characters and between CR and LF.
        let reads = split_bytes(bytes, ReadPlan::Bytes, &mut rng);
        assert!(reads.iter().any(|r| std::str::from_utf8(r).is_err()));
    }
}
