//! How the sweep ends a worker process, and what it then says of its death.
//!
//! A worker the sweep is done with (it died, hung, or is no longer needed) is killed if
//! still running and reported by its status. One that wrote a result line that is not a
//! result broke the worker protocol while alive: the kill that ends it is the sweep's
//! own, so its death reads [`Death::EndedBySweep`], never "killed by signal 9 ... from
//! outside the sweep" (which would send its user looking for an out-of-memory killer).

use crate::crash::Death;

/// Why the sweep is ending a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// It died (its pipe ended), hung (the watchdog killed it), or is no longer needed.
    Gone,
    /// It said something that is not a result: it broke the protocol, alive.
    Dismissed,
}

impl Ending {
    /// The ending of a worker whose round trip failed having said `said`: only a worker
    /// that still talks can say something.
    pub(crate) fn after(said: Option<&str>) -> Self {
        if said.is_some() {
            Self::Dismissed
        } else {
            Self::Gone
        }
    }
}

/// The signal `Child::kill` sends on unix.
const SIGKILL_NUMBER: i32 = 9;

/// Ends `child`, which broke the protocol, and says how it ended: as it died if it
/// already had, or did before the kill landed; else [`Death::EndedBySweep`].
pub(crate) fn dismiss(child: &mut std::process::Child) -> Death {
    if let Ok(Some(status)) = child.try_wait() {
        return Death::of(status);
    }
    let _ = child.kill();
    match child.wait().map_or(Death::Unknown, Death::of) {
        Death::Signal(SIGKILL_NUMBER) => Death::EndedBySweep,
        other => other,
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

    #[test]
    fn only_a_worker_that_said_something_is_dismissed() {
        assert_eq!(Ending::after(Some("not a result")), Ending::Dismissed);
        assert_eq!(Ending::after(None), Ending::Gone);
    }
}
