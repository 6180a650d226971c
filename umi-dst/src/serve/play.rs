//! Playback for `dst serve`: a recorded answer logged in the session and played back in
//! real time, scaled by `--time-scale` (headers, then each piece after its scaled delay,
//! then its end), with waits in retry headers scaled too and the `x-umi-*` headers that
//! name the seed, the request and its faults.
//!
//! Like the router, this runs outside any simulation: its sleeps are the wall clock's.
//! What it plays back was computed in simulated time only.

use std::io;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, StreamBody};
use hyper::Response;
use hyper::body::Frame;

use super::answer::{End, Recorded};
use super::clock;
use super::config::ServeConfig;
use super::digest::{Carried, History};
use super::reply::{Body, State, full, respond};
use super::session::{Entry, Key};

/// Logs a recorded answer under `key` (scope, seed, endpoint, hash, occurrence) and plays
/// it back: the last steps of every simulated request, model or MCP. `recorded` comes with
/// the agent's clock when the client runs on Umi's (`super::clock`).
pub(crate) async fn log_and_play(
    state: &State,
    key: Key,
    path: &str,
    recorded: (Recorded, Option<u64>),
    permit: tokio::sync::OwnedSemaphorePermit,
) -> Result<Response<Body>, io::Error> {
    log_and_play_model(state, key, path, recorded, permit, (None, None)).await
}

/// [`log_and_play`] for a model request: its entry also says what the response carried
/// and what the request's conversation held (`digest`: `carried`, `history`).
pub(crate) async fn log_and_play_model(
    state: &State,
    key: Key,
    path: &str,
    recorded: (Recorded, Option<u64>),
    permit: tokio::sync::OwnedSemaphorePermit,
    digest: (Option<Carried>, Option<History>),
) -> Result<Response<Body>, io::Error> {
    let (mut recorded, clock_us) = recorded;
    let mut entry = Entry::new(&key, path, &mut recorded);
    (entry.carried, entry.history) = digest;
    entry.clock_us = clock_us;
    let played = Played {
        seed: key.1,
        scope: key.0.clone(),
        hash: key.3,
        occurrence: key.4,
        clock_us,
    };
    state.session.record(key, entry);
    play(&state.config, &played, recorded, permit).await
}

/// Pieces that would be sent at the same real instant, joined into one write (TCP keeps
/// no read boundaries anyway; a client sees its own). A piece joins the write of the
/// first piece of its group when its delay from that one scales to nothing; each joined
/// write is allocated once at its whole size (a streamed answer at `--time-scale 0` is
/// one write of every event: grown piece by piece, its reallocations were most of what
/// this cost, issue 41).
fn coalesce(pieces: Vec<(Duration, Vec<u8>)>, scale: f64) -> Vec<(Duration, Vec<u8>)> {
    // Each group's end (exclusive) and its bytes in all.
    let mut groups: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    while start < pieces.len() {
        let first_at = pieces[start].0;
        let mut end = start + 1;
        let mut bytes = pieces[start].1.len();
        while let Some((at, piece)) = pieces.get(end) {
            if !scaled(at.saturating_sub(first_at), scale).is_zero() {
                break;
            }
            bytes += piece.len();
            end += 1;
        }
        groups.push((end, bytes));
        start = end;
    }
    let mut pieces = pieces.into_iter();
    let mut taken = 0;
    let mut out: Vec<(Duration, Vec<u8>)> = Vec::with_capacity(groups.len());
    for (end, bytes) in groups {
        let Some((at, first)) = pieces.next() else {
            break;
        };
        let joined = if end - taken == 1 {
            first
        } else {
            let mut joined = Vec::with_capacity(bytes);
            joined.extend_from_slice(&first);
            for (_, piece) in pieces.by_ref().take(end - taken - 1) {
                joined.extend_from_slice(&piece);
            }
            joined
        };
        out.push((at, joined));
        taken = end;
    }
    out
}

/// Scales a delay of the simulation into real time.
fn scaled(delay: Duration, scale: f64) -> Duration {
    if scale == 0.0 {
        Duration::ZERO
    } else {
        delay.mul_f64(scale)
    }
}

#[allow(clippy::disallowed_methods)] // real-time playback, outside any simulation
async fn wait(delay: Duration) {
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
}

/// Retry-After headers in scaled time, so a client that honours them waits what the
/// simulation meant, scaled (an HTTP date becomes the seconds it stood for).
fn scale_retry_headers(headers: &mut [(String, String)], scale: f64) {
    let date_ms = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("date"))
        .and_then(|(_, v)| httpdate::parse_http_date(v).ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as u64);
    for (name, value) in headers.iter_mut() {
        if name.eq_ignore_ascii_case("retry-after-ms") {
            if let Ok(ms) = value.trim().parse::<f64>() {
                *value = format!("{}", (ms * scale).ceil() as u64);
            }
        } else if name.eq_ignore_ascii_case("retry-after") {
            let wait_ms = match value.trim().parse::<f64>() {
                Ok(seconds) => Some(seconds * 1000.0),
                Err(_) => httpdate::parse_http_date(value.trim())
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .zip(date_ms)
                    .map(|(at, now)| (at.as_millis() as u64).saturating_sub(now) as f64),
            };
            if let Some(wait_ms) = wait_ms {
                *value = format!("{}", (wait_ms * scale / 1000.0).ceil() as u64);
            }
        }
    }
}

/// What a played response says about where its answer came from.
struct Played {
    seed: u64,
    scope: String,
    hash: [u8; 32],
    occurrence: u64,
    /// The agent's clock when it sent the request, when it runs on Umi's.
    clock_us: Option<u64>,
}

/// Plays `recorded` back: headers, then each piece after its scaled delay, then its end.
/// The permit is held until the body ends, so `--concurrency-max` bounds the streams in
/// flight too.
async fn play(
    config: &ServeConfig,
    played: &Played,
    mut recorded: Recorded,
    permit: tokio::sync::OwnedSemaphorePermit,
) -> Result<Response<Body>, io::Error> {
    let scale = config.time_scale;
    if recorded.status.is_none() && played.clock_us.is_some() {
        // A client on the simulated clock is told which: a reset and a hang look alike as
        // a closed connection, and it plays the difference on its own clock.
        let (status, headers) = clock::no_response(&recorded);
        drop(permit);
        return Ok(respond(status, headers, full(Bytes::new())));
    }
    let Some(status) = recorded.status else {
        // Refused or broken before the headers: the connection closes (after the stall,
        // scaled, when the server hung instead).
        wait(scaled(recorded.end_at, scale)).await;
        return Err(io::Error::new(
            io::ErrorKind::ConnectionReset,
            "closed by the simulated server",
        ));
    };
    let headers = played_headers(&mut recorded, played, scale);
    // The head goes out when the simulation sent it, not with the first piece: a body
    // that stalls before its first byte (an SSE stream that never answers,
    // `tool.mcp_no_response`) still has its status line and headers sent at once, as
    // the trace records them; the stall comes after. (It once waited for the stall's end
    // first, so the client saw no status while the trace said 200.)
    let head_at = recorded.head_at;
    wait(scaled(head_at, scale)).await;
    let first_at = recorded.pieces.first().map_or(head_at, |(at, _)| *at);
    wait(scaled(first_at.saturating_sub(head_at), scale)).await;
    let pieces = coalesce(recorded.pieces, scale);
    let body = played_body(
        pieces,
        first_at,
        (recorded.end, recorded.end_at),
        (scale, played.clock_us.is_some()),
        permit,
    );
    Ok(respond(status, headers, body))
}

/// The body of a played response: each piece at its time after the first (`first_at`),
/// scaled; then the end as recorded (`ending`: how and when): complete, a reset, or a
/// stall that times out. The permit is held until the body ends. `pace` is the time
/// scale and whether the client runs on the agent's clock: such a client is sent what
/// came before a stall (at `--time-scale 0` the stall's end follows at once, and hyper
/// would drop the head and bytes it still holds), since it plays the stall itself.
fn played_body(
    pieces: Vec<(Duration, Vec<u8>)>,
    first_at: Duration,
    ending: (End, Duration),
    pace: (f64, bool),
    permit: tokio::sync::OwnedSemaphorePermit,
) -> Body {
    let (end, end_at) = ending;
    let (scale, on_agent_clock) = pace;
    let stream = futures::stream::unfold(
        (pieces.into_iter(), first_at, false, Some(permit)),
        move |(mut pieces, last, finished, mut permit)| async move {
            if finished {
                drop(permit.take());
                return None;
            }
            match pieces.next() {
                Some((at, bytes)) => {
                    wait(scaled(at.saturating_sub(last), scale)).await;
                    Some((
                        Ok(Frame::data(Bytes::from(bytes))),
                        (pieces, at, false, permit),
                    ))
                }
                None => match end {
                    End::Complete => None,
                    End::Reset => {
                        // Let hyper write what it holds (the head, when no byte of the body
                        // came) before the reset: the client saw the 200 in the simulation,
                        // and a reset with nothing written reads as no response at all.
                        tokio::task::yield_now().await;
                        Some((
                            Err(io::Error::new(
                                io::ErrorKind::ConnectionReset,
                                "reset by the simulated server",
                            )),
                            (pieces, last, true, permit),
                        ))
                    }
                    End::Stall => {
                        wait(scaled(end_at.saturating_sub(last), scale)).await;
                        if on_agent_clock {
                            tokio::task::yield_now().await;
                        }
                        Some((
                            Err(io::Error::new(
                                io::ErrorKind::TimedOut,
                                "the simulated server stalled",
                            )),
                            (pieces, last, true, permit),
                        ))
                    }
                },
            }
        },
    );
    BodyExt::boxed_unsync(StreamBody::new(stream.boxed()))
}

/// The recorded response's headers as played: framing headers left to hyper, waits in
/// retry headers scaled to real time, and the `x-umi-*` headers that name the seed, the
/// request, its occurrence, the run's seed and its faults.
fn played_headers(recorded: &mut Recorded, played: &Played, scale: f64) -> Vec<(String, String)> {
    let timing = clock::Timing::of(recorded);
    let mut headers: Vec<(String, String)> = std::mem::take(&mut recorded.headers)
        .into_iter()
        .filter(|(n, _)| {
            !n.eq_ignore_ascii_case("content-length")
                && !n.eq_ignore_ascii_case("transfer-encoding")
        })
        .collect();
    match played.clock_us {
        // On the agent's clock a wait is told as the simulation drew it, and dates read
        // the agent's time; the client waits out each part on that clock.
        Some(clock_us) => {
            clock::onto_agent_clock(&mut headers, clock_us, timing.head_us);
            headers.push((clock::TIMING_HEADER.into(), timing.header_value()));
        }
        None => scale_retry_headers(&mut headers, scale),
    }
    headers.push(("x-umi-seed".into(), played.seed.to_string()));
    if !played.scope.is_empty() {
        headers.push(("x-umi-scope".into(), played.scope.clone()));
    }
    headers.push((
        "x-umi-request-hash".into(),
        umi_core::hex::lower(&played.hash),
    ));
    headers.push(("x-umi-occurrence".into(), played.occurrence.to_string()));
    headers.push(("x-umi-run-seed".into(), recorded.run_seed.to_string()));
    let faults = if recorded.faults.is_empty() {
        "none".to_owned()
    } else {
        recorded.faults.join(",")
    };
    headers.push(("x-umi-faults".into(), faults));
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `coalesce` did before it sized each write: a piece joins the last write when
    /// its delay from that write's first piece scales to nothing.
    fn coalesce_by_growing(
        pieces: Vec<(Duration, Vec<u8>)>,
        scale: f64,
    ) -> Vec<(Duration, Vec<u8>)> {
        let mut out: Vec<(Duration, Vec<u8>)> = Vec::new();
        for (at, bytes) in pieces {
            match out.last_mut() {
                Some((last_at, last)) if scaled(at.saturating_sub(*last_at), scale).is_zero() => {
                    last.extend_from_slice(&bytes);
                }
                _ => out.push((at, bytes)),
            }
        }
        out
    }

    #[test]
    fn pieces_are_joined_into_the_same_writes_at_every_scale() {
        let ms = Duration::from_millis;
        let pieces: Vec<(Duration, Vec<u8>)> = [0, 0, 1, 1, 2, 5, 5, 6, 40, 41, 41, 100]
            .iter()
            .enumerate()
            .map(|(i, &at)| (ms(at), format!("piece {i};").into_bytes()))
            .collect();
        for scale in [0.0, 0.0001, 0.001, 0.01, 0.5, 1.0] {
            let joined = coalesce(pieces.clone(), scale);
            assert_eq!(
                joined,
                coalesce_by_growing(pieces.clone(), scale),
                "{scale}"
            );
            let bytes: Vec<u8> = joined.iter().flat_map(|(_, b)| b.clone()).collect();
            let sent: Vec<u8> = pieces.iter().flat_map(|(_, b)| b.clone()).collect();
            assert_eq!(bytes, sent, "every byte once, in order");
        }
        assert_eq!(
            coalesce(pieces.clone(), 0.0).len(),
            1,
            "at scale 0, one write"
        );
        assert_eq!(
            coalesce(pieces.clone(), 1.0).len(),
            8,
            "in real time, one per instant"
        );
        assert!(coalesce(Vec::new(), 0.0).is_empty());
    }

    #[test]
    fn retry_after_is_scaled_in_every_form() {
        let mut headers = vec![
            (
                "date".to_owned(),
                "Mon, 01 Jan 2024 00:00:00 GMT".to_owned(),
            ),
            (
                "retry-after".to_owned(),
                "Mon, 01 Jan 2024 00:00:20 GMT".to_owned(),
            ),
            ("retry-after-ms".to_owned(), "1500".to_owned()),
        ];
        scale_retry_headers(&mut headers, 0.5);
        assert_eq!(headers[1].1, "10");
        assert_eq!(headers[2].1, "750");
        let mut seconds = vec![("retry-after".to_owned(), "7".to_owned())];
        scale_retry_headers(&mut seconds, 0.0);
        assert_eq!(seconds[0].1, "0");
    }
}
