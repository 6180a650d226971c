//! Why a run failed, as a class ordered by severity, and the process exit codes that go
//! with it: the one place a `dst` command's exit codes are written. It sits below the
//! simulation runner, the corpus (which records the class a kept seed failed with) and the
//! sweep, which all use it.

use std::fmt;
use std::process::ExitCode;

use serde::Serialize;

/// Why a run failed.
///
/// Ordered by severity, least severe first (the derived `Ord` follows the declaration
/// order): a wrong answer ([`Correctness`](Self::Correctness)) is less severe than a run
/// that never ends ([`Liveness`](Self::Liveness)), which is less than one that takes the
/// process down ([`Crash`](Self::Crash)); a seed that does not replay
/// ([`Nondeterminism`](Self::Nondeterminism)) is the most severe, since it makes every
/// other verdict about that seed untrustworthy. A sweep with failures of several classes
/// exits with the most severe one's [`exit_code`](Self::exit_code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailureClass {
    /// The run spent more than its budget allows (tokens, cost, calls, time, growth
    /// under faults; see [`crate::usage::Budget`]): the least severe, since the answer
    /// may well be right.
    Budget,
    /// An invariant was violated: the body returned an error.
    Correctness,
    /// The run did not finish within its simulated-time or step bound.
    Liveness,
    /// The code under test panicked.
    Crash,
    /// The same seed produced two different traces.
    Nondeterminism,
}

/// The exit code of a command refused for its arguments (a bad flag, a value out of
/// range, a file that cannot be read as asked).
pub const EXIT_CODE_BAD_ARGUMENTS: i32 = 2;

/// The exit code of a sweep whose every regression passed but a canary (a scenario with
/// a planted bug) found nothing: the harness may have lost its power to find bugs.
pub const EXIT_CODE_CANARY_NOT_FOUND: i32 = 20;

/// The exit code of a command that could not do what it was asked for, for a reason other
/// than its arguments or a failing seed (`dst find` over a range where no seed injects the
/// faults asked for, `dst serve` unable to start its server), and of `dst compare` when
/// the second sweep regressed beyond its thresholds (the comparison itself worked; the
/// change is what failed).
pub const EXIT_CODE_ERROR: i32 = 1;

impl FailureClass {
    /// Every class, least severe first.
    pub const ALL: [Self; 5] = [
        Self::Budget,
        Self::Correctness,
        Self::Liveness,
        Self::Crash,
        Self::Nondeterminism,
    ];

    /// The class's name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Budget => "budget",
            Self::Crash => "crash",
            Self::Correctness => "correctness",
            Self::Liveness => "liveness",
            Self::Nondeterminism => "nondeterminism",
        }
    }

    /// The class named `name` ([`FailureClass::name`]).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|class| class.name() == name)
    }

    /// The process exit code a command-line run uses for this class: the one place the
    /// codes 10 to 14 are written (with [`EXIT_CODE_BAD_ARGUMENTS`] and
    /// [`EXIT_CODE_CANARY_NOT_FOUND`] beside it).
    pub const fn exit_code(self) -> i32 {
        match self {
            Self::Budget => 14,
            Self::Correctness => 10,
            Self::Crash => 11,
            Self::Liveness => 12,
            Self::Nondeterminism => 13,
        }
    }
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `code` as a process exit code (1 when it does not fit a byte, which none of ours does).
pub fn process_exit_code(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_ordered_by_severity_and_own_their_exit_codes() {
        // Least severe first, each with its code; `ALL` is in the same order.
        let table = [
            (FailureClass::Budget, "budget", 14),
            (FailureClass::Correctness, "correctness", 10),
            (FailureClass::Liveness, "liveness", 12),
            (FailureClass::Crash, "crash", 11),
            (FailureClass::Nondeterminism, "nondeterminism", 13),
        ];
        for (index, (class, name, code)) in table.into_iter().enumerate() {
            assert_eq!(FailureClass::ALL[index], class);
            assert_eq!(class.name(), name);
            assert_eq!(FailureClass::from_name(name), Some(class));
            assert_eq!(class.exit_code(), code, "{class}");
        }
        assert!(FailureClass::ALL.windows(2).all(|pair| pair[0] < pair[1]));
        assert_eq!(
            FailureClass::ALL.iter().max(),
            Some(&FailureClass::Nondeterminism)
        );
        assert!(FailureClass::Crash > FailureClass::Liveness);
        assert!(FailureClass::Liveness > FailureClass::Correctness);
        // The other codes are distinct from the classes' and from success.
        let codes: Vec<i32> = FailureClass::ALL.map(FailureClass::exit_code).to_vec();
        for other in [
            EXIT_CODE_ERROR,
            EXIT_CODE_BAD_ARGUMENTS,
            EXIT_CODE_CANARY_NOT_FOUND,
        ] {
            assert!(other != 0 && !codes.contains(&other), "{other}");
        }
        assert_eq!(EXIT_CODE_BAD_ARGUMENTS, 2);
        assert_eq!(EXIT_CODE_CANARY_NOT_FOUND, 20);
        assert_eq!(FailureClass::from_name("hang"), None);
    }
}
