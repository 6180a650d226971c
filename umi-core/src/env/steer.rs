//! Steering marks: typed, declared assertions that tell a guided explorer where a run's
//! interesting paths go, free in production.
//!
//! A coverage mark (`env.cover("router.retry")`) says a rare path ran. A steering mark
//! says more, and is declared before any run, so a tool knows every one (the `dst list`
//! catalogue, a report of marks never reached) and a typo does not compile:
//!
//! - [`sometimes!`](crate::sometimes)`(env, condition, MARK)`: the condition should hold
//!   in some run (a hit is recorded when it does);
//! - [`reachable!`](crate::reachable)`(env, MARK)`: this point should be reached in some
//!   run;
//! - [`maximize!`](crate::maximize)`(env, MARK, value)`: a number an explorer pushes
//!   upward (retries in one turn, the deepest context fill, the longest tool chain); the
//!   run's high-water mark is recorded.
//!
//! ```
//! use umi_core::env::steer::Mark;
//! use umi_core::env::{Env, SystemEnvironment};
//!
//! /// Declared once, as a constant.
//! pub const RETRIES_IN_ONE_TURN: Mark =
//!     Mark::maximize("retries in one turn", "model calls retried within one agent turn");
//!
//! let env: Env = std::sync::Arc::new(SystemEnvironment::new());
//! umi_core::maximize!(env, RETRIES_IN_ONE_TURN, 3);
//! ```
//!
//! In production [`Environment::steer`](super::Environment::steer) does nothing. In a
//! simulation it records the hit or the watermark with the step it came at, and takes no
//! step, draws nothing and adds no trace event: adding a steering mark anywhere changes
//! no draw, no step number and no trace hash, so no seed changes meaning. The macros
//! evaluate their condition and value in either world.

/// What a steering mark asks of the runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MarkKind {
    /// A condition that should hold in some run ([`sometimes!`](crate::sometimes)).
    Sometimes,
    /// A point some run should reach ([`reachable!`](crate::reachable)).
    Reachable,
    /// A number to push upward ([`maximize!`](crate::maximize)).
    Maximize,
}

impl MarkKind {
    /// The kind's name, as `dst list` prints it (`sometimes`, `reachable`, `maximize`).
    pub const fn name(self) -> &'static str {
        match self {
            MarkKind::Sometimes => "sometimes",
            MarkKind::Reachable => "reachable",
            MarkKind::Maximize => "maximize",
        }
    }
}

/// A declared steering mark. Declare each as a `const` and use it through the macros.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mark {
    /// Its name in reports (`retries in one turn`), unique within a scenario.
    pub name: &'static str,
    /// What it asks.
    pub kind: MarkKind,
    /// One line saying what it measures and why it matters.
    pub doc: &'static str,
}

impl Mark {
    /// A [`MarkKind::Sometimes`] mark.
    pub const fn sometimes(name: &'static str, doc: &'static str) -> Mark {
        Mark {
            name,
            kind: MarkKind::Sometimes,
            doc,
        }
    }

    /// A [`MarkKind::Reachable`] mark.
    pub const fn reachable(name: &'static str, doc: &'static str) -> Mark {
        Mark {
            name,
            kind: MarkKind::Reachable,
            doc,
        }
    }

    /// A [`MarkKind::Maximize`] mark.
    pub const fn maximize(name: &'static str, doc: &'static str) -> Mark {
        Mark {
            name,
            kind: MarkKind::Maximize,
            doc,
        }
    }
}

/// Records a hit of the [`MarkKind::Sometimes`] mark `MARK` when `condition` is true:
/// `sometimes!(env, attempts > 1, RETRIED)`. `env` is anything with the
/// [`Environment`](crate::env::Environment) methods (an `Env`, `sim.env()`).
#[macro_export]
macro_rules! sometimes {
    ($env:expr, $condition:expr, $mark:expr $(,)?) => {{
        let mark: &'static $crate::env::steer::Mark = &$mark;
        if $condition {
            use $crate::env::Environment as _;
            $env.steer(mark, 1);
        }
    }};
}

/// Records a hit of the [`MarkKind::Reachable`] mark `MARK`: `reachable!(env, MARK)`.
#[macro_export]
macro_rules! reachable {
    ($env:expr, $mark:expr $(,)?) => {{
        use $crate::env::Environment as _;
        let mark: &'static $crate::env::steer::Mark = &$mark;
        $env.steer(mark, 1);
    }};
}

/// Records `value` (a `u64`) for the [`MarkKind::Maximize`] mark `MARK`; the run keeps its
/// highest: `maximize!(env, RETRIES_IN_ONE_TURN, retries)`.
#[macro_export]
macro_rules! maximize {
    ($env:expr, $mark:expr, $value:expr $(,)?) => {{
        use $crate::env::Environment as _;
        let mark: &'static $crate::env::steer::Mark = &$mark;
        let value: u64 = $value;
        $env.steer(mark, value);
    }};
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use futures::future::BoxFuture;

    use super::*;
    use crate::env::{Env, Environment, SystemEnvironment};

    const SEEN: Mark = Mark::sometimes("seen", "a condition held");
    const HERE: Mark = Mark::reachable("here", "a point was reached");
    const DEPTH: Mark = Mark::maximize("depth", "how deep it went");

    /// Records what the macros hand it.
    #[derive(Debug, Default)]
    struct Recorder(Mutex<Vec<(&'static str, MarkKind, u64)>>);

    impl Environment for Recorder {
        fn elapsed(&self) -> Duration {
            Duration::ZERO
        }
        fn unix_time_ms(&self) -> u64 {
            0
        }
        fn sleep(&self, _: Duration) -> BoxFuture<'static, ()> {
            Box::pin(async {})
        }
        fn random_u64(&self, _: &str) -> u64 {
            0
        }
        fn record(&self, _: &'static str, _: std::fmt::Arguments<'_>) {}
        fn steer(&self, mark: &'static Mark, value: u64) {
            self.0.lock().unwrap().push((mark.name, mark.kind, value));
        }
    }

    #[test]
    fn macros_hand_the_mark_and_value_to_the_environment() {
        let recorder = Arc::new(Recorder::default());
        let env: Env = recorder.clone();
        crate::sometimes!(env, 1 + 1 == 3, SEEN);
        crate::sometimes!(env, true, SEEN);
        crate::reachable!(env, HERE);
        crate::maximize!(&env, DEPTH, 7);
        assert_eq!(
            *recorder.0.lock().unwrap(),
            [
                ("seen", MarkKind::Sometimes, 1),
                ("here", MarkKind::Reachable, 1),
                ("depth", MarkKind::Maximize, 7)
            ]
        );
        assert_eq!(DEPTH.kind.name(), "maximize");
    }

    #[test]
    fn production_ignores_marks() {
        let env: Env = Arc::new(SystemEnvironment::new());
        crate::maximize!(env, DEPTH, 3);
        crate::reachable!(env, HERE);
    }
}
