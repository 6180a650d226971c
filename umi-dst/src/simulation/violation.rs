//! [`Violation`]: what a simulation body returns when it finds an invariant broken, and
//! [`crate::ensure!`], the usual way to return one.
//!
//! A body is `async fn(SimEnvironment) -> Result<(), Violation>`, like a `#[tokio::test]`
//! returning a `Result`: `?` works on any error (its message and the messages of its
//! sources become the violation's), so a body needs no `map_err` to call code with its
//! own error type. That blanket conversion is also why `Violation` is not itself a
//! `std::error::Error` (as with `anyhow::Error`, the two cannot coexist).
//!
//! A violation is of a safety property (something bad happened: the runner reports it as
//! a correctness failure) or, made by [`Violation::liveness`], of a liveness property
//! (something good did not happen in time: [`crate::liveness::eventually`] returns one,
//! and the runner reports it as a [`FailureClass::Liveness`](crate::FailureClass) failure).

use std::error::Error;
use std::fmt;

/// A broken invariant, returned by a simulation body (see [`crate::ensure!`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// What was broken, with the values involved.
    pub message: String,
    /// Whether a liveness property was broken (reported as a liveness failure).
    liveness: bool,
}

impl Violation {
    /// A violation of a safety property with `message` (a correctness failure).
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            liveness: false,
        }
    }

    /// A violation of a liveness property with `message`: something that had to happen
    /// within a bound did not. The runner reports it as a
    /// [`FailureClass::Liveness`](crate::FailureClass) failure (exit code 12), beside runs
    /// past their simulated-time or step bound. [`crate::liveness::eventually`] is the
    /// usual way to get one.
    pub fn liveness(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            liveness: true,
        }
    }

    /// Whether this violation is of a liveness property ([`Violation::liveness`]).
    pub fn is_liveness(&self) -> bool {
        self.liveness
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Sources followed at most when an error becomes a violation (a cycle cannot loop).
const ERROR_SOURCES_MAX: usize = 16;

/// `?` on any error in a body: the error's message, then each source's, joined by `: `
/// (a source whose message the previous one already ends with is skipped, as wrappers
/// that print their source would repeat it).
impl<E: Error> From<E> for Violation {
    fn from(error: E) -> Self {
        let mut message = error.to_string();
        let mut source = error.source();
        for _ in 0..ERROR_SOURCES_MAX {
            let Some(cause) = source else { break };
            let text = cause.to_string();
            if !message.ends_with(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            source = cause.source();
        }
        Self::new(message)
    }
}

/// Returns `Err(Violation)` from the enclosing function when `cond` is false.
///
/// ```
/// # fn check(balance: u64) -> Result<(), umi_dst::Violation> {
/// umi_dst::ensure!(balance == 100, "balance {balance} != 100");
/// # Ok(()) }
/// ```
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($message:tt)+) => {
        if !$cond {
            return ::core::result::Result::Err($crate::Violation::new(::std::format!($($message)+)));
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Outer(Inner);
    #[derive(Debug)]
    struct Inner;

    impl fmt::Display for Outer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("reading the note")
        }
    }
    impl Error for Outer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }
    impl fmt::Display for Inner {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("disk full")
        }
    }
    impl Error for Inner {}

    fn body(fail: bool) -> Result<(), Violation> {
        if fail {
            Err(Outer(Inner))?;
        }
        "x".parse::<u32>()?;
        Ok(())
    }

    #[test]
    fn only_a_liveness_violation_says_it_is_one() {
        assert!(Violation::liveness("the queue never drained").is_liveness());
        assert!(!Violation::new("balance 90 != 100").is_liveness());
        assert!(!body(true).unwrap_err().is_liveness());
    }

    #[test]
    fn question_mark_turns_any_error_into_a_violation_with_its_sources() {
        assert_eq!(
            body(true).unwrap_err().message,
            "reading the note: disk full"
        );
        assert_eq!(
            body(false).unwrap_err().message,
            "invalid digit found in string"
        );
    }

    /// A wrapper that prints its source already is not repeated.
    #[test]
    fn a_source_the_message_already_ends_with_is_not_repeated() {
        #[derive(Debug)]
        struct Wrapper(Inner);
        impl fmt::Display for Wrapper {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "write failed: {}", self.0)
            }
        }
        impl Error for Wrapper {
            fn source(&self) -> Option<&(dyn Error + 'static)> {
                Some(&self.0)
            }
        }
        assert_eq!(
            Violation::from(Wrapper(Inner)).message,
            "write failed: disk full"
        );
    }
}
