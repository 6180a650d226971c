//! How the sweep ends a worker process, and what it then says of its death.
//!
//! A worker the sweep is done with (it died, hung, or is no longer needed) is killed if
//! still running and reported by its status. One that wrote a whole line that starts as
//! a result does and is not one broke the worker protocol while alive: the kill that
//! ends it is the sweep's own, so its death reads [`Death::EndedBySweep`], never "killed
//! by signal 9 ... from outside the sweep" (which would send its user looking for an
//! out-of-memory killer). A line the stream ends inside is the worker's death, never a
//! protocol break: a kill from outside lands in the middle of a write as often as not.

use crate::crash::Death;
use crate::wire::{LineEnd, RESULT_PREFIX, RunReply, WIRE_LINE_BYTES_MAX, parse_reply_line};

/// Why the sweep is ending a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// It died (its pipe ended), hung (the watchdog killed it), or is no longer needed.
    Gone,
    /// It wrote a line that is not a result: it broke the protocol, alive.
    Dismissed,
}

impl Ending {
    /// The ending of a worker whose round trip failed having said `said`: only a worker
    /// that still talks can say something ([`hear`] gives `said` only for a whole line).
    pub(crate) fn after(said: Option<&str>) -> Self {
        if said.is_some() {
            Self::Dismissed
        } else {
            Self::Gone
        }
    }
}

/// What one line of a worker's stdout means to the round trip waiting for run `index`.
#[derive(Debug, PartialEq)]
pub(crate) enum Heard {
    /// This run's result.
    Reply(RunReply),
    /// Scenario output, or a result of another run printed by seed code: ignored.
    Other,
    /// The stream ended (at or inside a line): the worker died.
    Died,
    /// A whole line that starts as a result and is not one: the worker broke the
    /// protocol, and this is what to say.
    Broke(String),
}

/// What `text`, a line that ended as `end`, means to the round trip waiting for run
/// `index`.
pub(crate) fn hear(end: LineEnd, text: &str, index: usize) -> Heard {
    match end {
        LineEnd::Eof | LineEnd::Cut => Heard::Died,
        LineEnd::TooLong if text.contains(RESULT_PREFIX) => Heard::Broke(format!(
            "the worker's result was longer than {WIRE_LINE_BYTES_MAX} bytes"
        )),
        LineEnd::TooLong => Heard::Other,
        LineEnd::Complete => match parse_reply_line(text) {
            None => Heard::Other,
            Some(Err(error)) => Heard::Broke(error),
            Some(Ok(reply)) if reply.index == index => Heard::Reply(reply),
            Some(Ok(_)) => Heard::Other,
        },
    }
}

/// The signal `Child::kill` sends on unix.
const SIGKILL_NUMBER: i32 = 9;

/// Kills `child` if it still runs and reaps it: how it died (a child already dead in a
/// crash keeps its own status; a kill changes nothing).
pub(crate) fn kill_and_reap(child: &mut std::process::Child) -> Death {
    let _ = child.kill();
    child.wait().map_or(Death::Unknown, Death::of)
}

/// Ends `child`, which broke the protocol, and says how it ended: as it died if it had
/// already died or begun to (an exit under way keeps its status whatever kill follows),
/// else [`Death::EndedBySweep`].
pub(crate) fn dismiss(child: &mut std::process::Child) -> Death {
    let death = kill_and_reap(child);
    if death == Death::Signal(SIGKILL_NUMBER) {
        Death::EndedBySweep
    } else {
        death
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `program` started under `sh -c` with its stdout piped.
    #[cfg(unix)]
    fn shell(program: &str) -> std::process::Child {
        std::process::Command::new("sh")
            .args(["-c", program])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sh starts")
    }

    /// The case of a worker that wrote a result line that is not a result and kept
    /// running: before this, its death read "killed by signal 9 (SIGKILL); killed from
    /// outside the sweep, perhaps by the kernel's out-of-memory killer", the sweep's
    /// own kill blamed on someone else.
    #[cfg(unix)]
    #[test]
    fn a_worker_dismissed_alive_is_ended_by_the_sweep_not_by_a_stranger() {
        let mut child = shell("exec sleep 600");
        assert_eq!(dismiss(&mut child), Death::EndedBySweep);
        assert!(
            child.try_wait().expect("reaped").is_some(),
            "the worker is gone, not left running"
        );
    }

    /// A worker that died on its own before it was dismissed is reported as it died.
    /// Its stdout is read to its end first: a process closes its pipes as it exits, and
    /// an exit already under way keeps its status whatever kill comes after.
    #[cfg(unix)]
    #[test]
    fn a_worker_that_died_before_its_dismissal_is_reported_as_it_died() {
        use std::io::Read;
        for (program, death) in [
            ("exit 5", Death::Exit(5)),
            ("kill -ABRT $$", Death::Signal(6)),
        ] {
            let mut child = shell(program);
            let mut said = Vec::new();
            let mut stdout = child.stdout.take().expect("piped");
            stdout.read_to_end(&mut said).expect("read to its end");
            assert_eq!(dismiss(&mut child), death, "{program}");
        }
    }

    /// The case the review found: a worker killed from outside while it wrote a result
    /// leaves a line cut short, which must read as its death (then reported with its
    /// real signal), not as a protocol break the sweep ends it for.
    #[test]
    fn each_kind_of_line_means_what_it_is() {
        let result = |json: &str| format!("{RESULT_PREFIX}{json}");
        let cut = result("{\"index\": 1, \"wa");
        assert_eq!(hear(LineEnd::Cut, &cut, 1), Heard::Died);
        assert_eq!(hear(LineEnd::Eof, "", 1), Heard::Died);
        assert!(matches!(
            hear(LineEnd::Complete, &format!("{cut}\n"), 1),
            Heard::Broke(said) if said.contains("not a result")
        ));
        assert!(matches!(
            hear(LineEnd::TooLong, &cut, 1),
            Heard::Broke(said) if said.contains("longer than")
        ));
        assert_eq!(
            hear(LineEnd::TooLong, "a seed's long line", 1),
            Heard::Other
        );
        assert_eq!(hear(LineEnd::Complete, "a seed's line\n", 1), Heard::Other);
    }

    #[test]
    fn only_a_worker_that_said_something_is_dismissed() {
        assert_eq!(Ending::after(Some("not a result")), Ending::Dismissed);
        assert_eq!(Ending::after(None), Ending::Gone);
    }
}
