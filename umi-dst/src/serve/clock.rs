//! The agent's clock: how `dst serve` answers an agent that runs on Umi's simulated
//! clock instead of the wall clock (the pytest plugin and the TypeScript helper put it
//! there).
//!
//! Such a client sends `x-umi-clock-us`: its clock when it sent the request, in
//! microseconds since the simulated epoch (2024-01-01T00:00:00Z, where every simulation's
//! wall clock starts). Played for that clock, the response changes in three ways, and
//! only for a request that says so (one without the header is answered byte for byte as
//! before):
//! - `x-umi-timing` says when, in the run's simulated time after the request arrived, the
//!   head, the first and the last body byte were sent and how the response ended
//!   ([`Timing`]). The client waits on its own clock until each (so an agent sees a model
//!   call take the time the simulation says), and turns a stall into a wait that only its
//!   own timeout ends: at `--time-scale 0` the bytes themselves all come at once.
//! - Retry-After is sent as the simulation drew it, not scaled by `--time-scale`: a
//!   client that waits on the simulated clock waits 21 simulated seconds in no real time,
//!   so it can be told the truth.
//! - HTTP dates (`date`, an HTTP-date `retry-after`) are moved onto the agent's clock: the
//!   run started when the agent sent the request, not at the epoch.
//!
//! A simulation that produced no response at all (refused, reset or hung before the
//! headers) closes the connection for an ordinary client; a client on the clock could not
//! tell a reset from a hang that way, so it gets a 502 with `x-umi-no-response` naming
//! which, which its hook turns back into the library's own error at the right simulated
//! time and never hands to the SDK ([`no_response`]).

use std::time::Duration;

use serde::Serialize;

use super::answer::{End, Recorded};
use crate::micros::micros_saturating;

/// The request header a client on the simulated clock sends: its clock, in µs since the
/// simulated epoch.
pub(crate) const CLOCK_HEADER: &str = "x-umi-clock-us";

/// The response header that says when the response's parts were sent ([`Timing`]).
pub(crate) const TIMING_HEADER: &str = "x-umi-timing";

/// The response header of a 502 that stands for no response at all (`reset`, `stall`).
pub(crate) const NO_RESPONSE_HEADER: &str = "x-umi-no-response";

/// Reads the `x-umi-clock-us` header (`None` when absent; `Err(())` when not text).
pub(crate) fn agent_clock_us(value: Option<Result<&str, ()>>) -> Result<Option<u64>, String> {
    let Some(value) = value else {
        return Ok(None);
    };
    let text = value.map_err(|()| format!("header {CLOCK_HEADER}: not text"))?;
    text.trim().parse::<u64>().map(Some).map_err(|_| {
        format!("header {CLOCK_HEADER} {text:?}: not a whole number of microseconds (u64)")
    })
}

/// When a response's parts were sent, in µs of the run's simulated time after the request
/// arrived, and how it ended. Logged for every request (no trace hash holds it); sent as
/// `x-umi-timing` to a client on the simulated clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Timing {
    /// The status line and headers (0 when there was no response).
    pub(crate) head_us: u64,
    /// The first body byte (`head_us` for an empty body).
    pub(crate) first_us: u64,
    /// The last body byte (`first_us` for an empty body).
    pub(crate) last_us: u64,
    /// The end: complete (`last_us`), the reset, or when the server gives up holding a
    /// stalled connection (the client's own timeout ends a stall long before).
    pub(crate) end_us: u64,
    /// `complete`, `reset` or `stall`.
    pub(crate) ending: &'static str,
}

impl Timing {
    /// A response that took no time (the tests' log entries).
    #[cfg(test)]
    pub(crate) const ZERO: Self = Self {
        head_us: 0,
        first_us: 0,
        last_us: 0,
        end_us: 0,
        ending: "complete",
    };

    /// The timing of `recorded`.
    pub(crate) fn of(recorded: &Recorded) -> Self {
        let head = recorded.head_at;
        let first = recorded.pieces.first().map_or(head, |(at, _)| *at);
        let last = recorded.pieces.last().map_or(first, |(at, _)| *at);
        let end = if recorded.end == End::Complete {
            last
        } else {
            recorded.end_at
        };
        let timing = Self {
            head_us: micros_saturating(head),
            first_us: micros_saturating(first),
            last_us: micros_saturating(last),
            end_us: micros_saturating(end),
            ending: recorded.end.name(),
        };
        assert!(
            timing.head_us <= timing.first_us
                && timing.first_us <= timing.last_us
                && timing.last_us <= timing.end_us,
            "a response's parts are sent in order: {timing:?}"
        );
        timing
    }

    /// The `x-umi-timing` header value: `head_us=H, first_us=F, last_us=L, end_us=E,
    /// ending=X`, keys always in this order.
    pub(crate) fn header_value(&self) -> String {
        format!(
            "head_us={}, first_us={}, last_us={}, end_us={}, ending={}",
            self.head_us, self.first_us, self.last_us, self.end_us, self.ending
        )
    }
}

/// Moves the HTTP dates of `headers` (`date`, an HTTP-date `retry-after`) onto the
/// agent's clock: the run began at the epoch, the agent sent the request `clock_us` after
/// it, and the head was sent `head_us` into the run. HTTP dates count whole seconds:
/// - `date` was made as `floor(epoch + H)` and must read `floor(epoch + clock + H)`
///   (the schema's `epoch + clock + H`, to the second), so it moves by
///   `floor((clock + H) / 1 s) - floor(H / 1 s)` seconds: by the clock's whole seconds
///   alone, a clock of 0.6 s and a head at 0.6 s would read 0 s instead of 1 s;
/// - an HTTP-date `retry-after` was rounded up (`ceil(epoch + now + wait)`), and moves by
///   the clock rounded up, so the wait it asks for is never shorter than drawn.
pub(crate) fn onto_agent_clock(headers: &mut [(String, String)], clock_us: u64, head_us: u64) {
    const SEC_US: u64 = 1_000_000;
    let date_shift =
        Duration::from_secs(clock_us.saturating_add(head_us) / SEC_US - head_us / SEC_US);
    let retry_shift = Duration::from_secs(clock_us.div_ceil(SEC_US));
    for (name, value) in headers.iter_mut() {
        let shift = if name.eq_ignore_ascii_case("date") {
            date_shift
        } else if name.eq_ignore_ascii_case("retry-after") && value.trim().parse::<f64>().is_err() {
            retry_shift
        } else {
            continue;
        };
        if let Ok(at) = httpdate::parse_http_date(value.trim()) {
            *value = httpdate::fmt_http_date(at + shift);
        }
    }
}

/// The response that stands for none, for a client on the simulated clock: 502, empty,
/// with `x-umi-no-response` (`reset` or `stall`) and the timing of when it happened.
pub(crate) fn no_response(recorded: &Recorded) -> (u16, Vec<(String, String)>) {
    assert!(
        recorded.status.is_none(),
        "only a run with no response stands for none"
    );
    let timing = Timing::of(recorded);
    let headers = vec![
        (NO_RESPONSE_HEADER.to_owned(), timing.ending.to_owned()),
        (TIMING_HEADER.to_owned(), timing.header_value()),
    ];
    (502, headers)
}

/// The Unix seconds of an HTTP date (for the tests).
#[cfg(test)]
fn unix_secs(text: &str) -> u64 {
    httpdate::parse_http_date(text)
        .expect("an HTTP date")
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::TraceHash;

    fn recorded(
        status: Option<u16>,
        head_ms: u64,
        pieces_ms: &[u64],
        end: End,
        end_ms: u64,
    ) -> Recorded {
        Recorded {
            status,
            headers: Vec::new(),
            head_at: Duration::from_millis(head_ms),
            pieces: pieces_ms
                .iter()
                .map(|ms| (Duration::from_millis(*ms), b"x".to_vec()))
                .collect(),
            end,
            end_at: Duration::from_millis(end_ms),
            run_seed: 0,
            faults: Vec::new(),
            trace: Vec::new(),
            trace_hash: TraceHash([0; 32]),
            tool: None,
        }
    }

    #[test]
    fn the_clock_header_is_a_count_of_microseconds() {
        assert_eq!(agent_clock_us(None), Ok(None));
        assert_eq!(agent_clock_us(Some(Ok("0"))), Ok(Some(0)));
        assert_eq!(agent_clock_us(Some(Ok(" 30000000 "))), Ok(Some(30_000_000)));
        for bad in ["-1", "1.5", "", "soon", "18446744073709551616"] {
            let error = agent_clock_us(Some(Ok(bad))).expect_err(bad);
            assert!(error.contains("x-umi-clock-us"), "{error}");
        }
        let error = agent_clock_us(Some(Err(()))).expect_err("not text");
        assert!(error.contains("x-umi-clock-us: not text"), "{error}");
    }

    #[test]
    fn timing_says_when_each_part_was_sent_and_how_it_ended() {
        let cases = [
            (
                recorded(Some(200), 120, &[340, 900, 2300], End::Complete, 2300),
                "head_us=120000, first_us=340000, last_us=2300000, end_us=2300000, ending=complete",
            ),
            (
                recorded(Some(429), 80, &[80], End::Complete, 80),
                "head_us=80000, first_us=80000, last_us=80000, end_us=80000, ending=complete",
            ),
            (
                recorded(Some(200), 50, &[], End::Complete, 50),
                "head_us=50000, first_us=50000, last_us=50000, end_us=50000, ending=complete",
            ),
            (
                recorded(Some(200), 100, &[200, 300], End::Stall, 600_300),
                "head_us=100000, first_us=200000, last_us=300000, end_us=600300000, ending=stall",
            ),
            (
                recorded(Some(200), 100, &[200], End::Reset, 250),
                "head_us=100000, first_us=200000, last_us=200000, end_us=250000, ending=reset",
            ),
            (
                recorded(None, 0, &[], End::Reset, 75),
                "head_us=0, first_us=0, last_us=0, end_us=75000, ending=reset",
            ),
        ];
        for (recorded, expected) in cases {
            assert_eq!(Timing::of(&recorded).header_value(), expected);
        }
    }

    #[test]
    fn no_response_names_a_reset_apart_from_a_hang() {
        let (status, headers) = no_response(&recorded(None, 0, &[], End::Stall, 600_000));
        assert_eq!(status, 502);
        assert_eq!(headers[0], ("x-umi-no-response".into(), "stall".into()));
        assert!(headers[1].1.ends_with("end_us=600000000, ending=stall"));
        let (_, headers) = no_response(&recorded(None, 0, &[], End::Reset, 20));
        assert_eq!(headers[0].1, "reset");
    }

    #[test]
    fn http_dates_move_onto_the_agent_clock_and_seconds_stay() {
        let epoch_secs = crate::constants::SIM_EPOCH_UNIX_MS_DEFAULT / 1_000;
        let unix =
            |secs| httpdate::fmt_http_date(std::time::UNIX_EPOCH + Duration::from_secs(secs));
        let (at_epoch, later) = (unix(epoch_secs), unix(epoch_secs + 21));
        let mut headers = vec![
            ("Date".to_owned(), at_epoch),
            ("retry-after".to_owned(), later),
            ("content-type".to_owned(), "application/json".to_owned()),
        ];
        onto_agent_clock(&mut headers, 90_000_000, 0);
        assert_eq!(unix_secs(&headers[0].1), epoch_secs + 90);
        assert_eq!(unix_secs(&headers[1].1), epoch_secs + 90 + 21);
        assert_eq!(headers[2].1, "application/json");
        let mut seconds = vec![("retry-after".to_owned(), "21".to_owned())];
        onto_agent_clock(&mut seconds, 90_500_000, 0);
        assert_eq!(seconds[0].1, "21", "a wait in seconds is not a date");
    }

    #[test]
    fn date_reads_the_agents_clock_plus_the_head_to_the_second() {
        let epoch_ms = crate::constants::SIM_EPOCH_UNIX_MS_DEFAULT;
        // (clock_us, head_us): `date` is made as floor(epoch + H), as the simulation
        // does (`network::headers::http_date`), and must read floor(epoch + clock + H).
        let cases = [
            (600_000, 600_000),
            (0, 600_000),
            (600_000, 0),
            (400_000, 599_999),
            (400_000, 600_000),
            (999_999, 1),
            (1_500_000, 2_700_000),
            (90_500_000, 120_000),
            (90_500_000, 500_000),
        ];
        for (clock_us, head_us) in cases {
            let made = crate::network::headers::http_date(epoch_ms + head_us / 1_000);
            let mut headers = vec![("date".to_owned(), made)];
            onto_agent_clock(&mut headers, clock_us, head_us);
            let expected = (epoch_ms * 1_000 + clock_us + head_us) / 1_000_000;
            assert_eq!(
                unix_secs(&headers[0].1),
                expected,
                "clock_us={clock_us} head_us={head_us}"
            );
        }
    }

    #[test]
    fn an_http_date_retry_after_never_asks_for_a_shorter_wait_than_drawn() {
        let epoch_ms = crate::constants::SIM_EPOCH_UNIX_MS_DEFAULT;
        // (clock_us, now_ms, wait_ms): the agent reads the header at epoch + clock + now.
        let cases = [
            (900_000, 0, 1_000),
            (600_000, 600, 500),
            (1, 0, 1),
            (0, 0, 1_200),
        ];
        for (clock_us, now_ms, wait_ms) in cases {
            let (made, _) = crate::network::headers::retry_after(
                crate::network::shapes::RetryAfterForm::HttpDate,
                wait_ms,
                epoch_ms + now_ms,
            );
            let mut headers = made;
            onto_agent_clock(&mut headers, clock_us, now_ms * 1_000);
            let at_us = unix_secs(&headers[0].1) * 1_000_000;
            let read_at_us = epoch_ms * 1_000 + clock_us + now_ms * 1_000;
            assert!(
                at_us >= read_at_us + wait_ms * 1_000,
                "clock_us={clock_us} now_ms={now_ms} wait_ms={wait_ms}: {}",
                headers[0].1
            );
        }
    }
}
