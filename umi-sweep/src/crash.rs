//! What a worker process's death says about the seed it was running: the signal or exit
//! status, and what the last lines of its stderr show (Rust's own reports of a stack
//! overflow or a failed allocation), as one line for the failure's message.
//!
//! Pure functions over the status and the stderr tail, so a table test covers every
//! kind of death without killing anything.

/// How a worker process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Death {
    /// Ended by a signal (unix).
    Signal(i32),
    /// Exited with this status.
    Exit(i32),
    /// Neither is known (another platform's status).
    Unknown,
    /// Still running when the sweep ended it, after it broke the worker protocol (a
    /// result line that is not a result): the kill that ended it was the sweep's own.
    EndedBySweep,
}

impl Death {
    /// The death `status` records.
    pub(crate) fn of(status: std::process::ExitStatus) -> Self {
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            if let Some(signal) = status.signal() {
                return Self::Signal(signal);
            }
        }
        status.code().map_or(Self::Unknown, Self::Exit)
    }
}

/// Bytes of one stderr line quoted in a crash's message.
pub(crate) const CRASH_STDERR_QUOTE_BYTES_MAX: usize = 300;

/// The conventional name of a signal number (Linux numbering).
pub(crate) fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        _ => return None,
    })
}

fn death_text(death: Death) -> String {
    match death {
        Death::Signal(signal) => match signal_name(signal) {
            Some(name) => format!("killed by signal {signal} ({name})"),
            None => format!("killed by signal {signal}"),
        },
        Death::Exit(code) => format!("exited with exit status {code}"),
        Death::Unknown => "ended".to_owned(),
        Death::EndedBySweep => "ended by the sweep".to_owned(),
    }
}

/// The crash message of a seed whose worker process died as `death`, its stderr
/// ending with `stderr_tail` (oldest first); `memory_limit` names the worker's memory
/// limit in force (`--seed-memory-max 4GiB`, `limit_in_force.rs`), if it had one.
pub(crate) fn describe_death(
    death: Death,
    stderr_tail: &[String],
    memory_limit: Option<&str>,
) -> String {
    let died = death_text(death);
    let overflow = stderr_tail
        .iter()
        .any(|line| line.contains("has overflowed its stack"));
    let allocation = stderr_tail
        .iter()
        .rev()
        .find(|line| line.contains("memory allocation of") && line.contains("failed"));
    if overflow {
        return format!("stack overflow: the worker process running the seed {died}");
    }
    if let Some(line) = allocation {
        let limit = memory_limit.map_or_else(String::new, |limit| {
            format!(" (the limit per worker is {limit})")
        });
        return format!(
            "out of memory: {}{limit}; the worker process running the seed {died}",
            quote(line)
        );
    }
    let hint = match death {
        Death::Signal(9) => {
            "; killed from outside the sweep, perhaps by the kernel's out-of-memory killer"
        }
        Death::Exit(_) => "; something in the seed ended the process (process::exit?)",
        Death::EndedBySweep => {
            "; it broke the worker protocol (a line of its stdout starts as a result and is not one)"
        }
        Death::Signal(_) | Death::Unknown => "",
    };
    let last = stderr_tail
        .iter()
        .rev()
        .find(|line| !line.trim().is_empty())
        .map_or_else(String::new, |line| {
            format!("; its stderr ended: {}", quote(line))
        });
    format!("the worker process running the seed {died}{hint}{last}")
}

/// `line` trimmed and cut to [`CRASH_STDERR_QUOTE_BYTES_MAX`] bytes (on a character
/// boundary).
fn quote(line: &str) -> String {
    let line = line.trim();
    if line.len() <= CRASH_STDERR_QUOTE_BYTES_MAX {
        return line.to_owned();
    }
    let mut end = CRASH_STDERR_QUOTE_BYTES_MAX;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &line[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn every_kind_of_death_reads_as_what_it_was() {
        let cases: &[(Death, &str, &[&str])] = &[
            (
                Death::Signal(6),
                "\nthread 'main' has overflowed its stack\nfatal runtime error: stack overflow",
                &["stack overflow", "signal 6 (SIGABRT)"],
            ),
            (
                Death::Signal(6),
                "memory allocation of 1048576 bytes failed",
                &[
                    "out of memory: memory allocation of 1048576 bytes failed",
                    "--seed-memory-max 256MiB",
                    "signal 6 (SIGABRT)",
                ],
            ),
            (
                Death::Signal(6),
                "planted: aborting",
                &[
                    "killed by signal 6 (SIGABRT)",
                    "its stderr ended: planted: aborting",
                ],
            ),
            (
                Death::Exit(3),
                "",
                &["exited with exit status 3", "process::exit"],
            ),
            (
                Death::Signal(9),
                "",
                &["signal 9 (SIGKILL)", "out-of-memory killer"],
            ),
            (Death::Signal(77), "", &["killed by signal 77"]),
            (
                Death::EndedBySweep,
                "",
                &[
                    "the worker process running the seed ended by the sweep",
                    "broke the worker protocol",
                ],
            ),
        ];
        for (death, stderr, expected) in cases {
            let message = describe_death(*death, &lines(stderr), Some("--seed-memory-max 256MiB"));
            for part in *expected {
                assert!(
                    message.contains(part),
                    "{death:?}: {message:?} lacks {part:?}"
                );
            }
            assert!(!message.contains('\n'), "one line: {message:?}");
        }
        let ended = describe_death(Death::EndedBySweep, &[], None);
        assert!(
            !ended.contains("SIGKILL") && !ended.contains("outside"),
            "the sweep's own kill is not blamed on anyone else: {ended}"
        );
    }

    #[test]
    fn a_long_stderr_line_is_quoted_in_part() {
        let long = "é".repeat(1000);
        let message = describe_death(Death::Signal(6), &[long], None);
        assert!(
            message.len() < CRASH_STDERR_QUOTE_BYTES_MAX + 200,
            "{}",
            message.len()
        );
    }
}
