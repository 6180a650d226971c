//! What the deep canaries share: the chance of each of their events, a rule that fires
//! one event at one operation, and the ordered stages a planted layer climbs.
//!
//! A deep canary's planted bug needs several events in order, each a fault of its own
//! kind at its own operation (a rule aimed at the n-th matching operation with chance
//! [`DEEP_EVENT_CHANCE`]), each in the state the one before left. Every event reached in
//! order is a stepping stone with a coverage mark: a blind seed needs all of them at once
//! (odds `DEEP_EVENT_CHANCE` to the power of the events), while a run branched where a
//! stone was first reached needs only the next one.

use std::sync::Mutex;
use std::sync::PoisonError;

use umi_core::env::Env;
use umi_dst::{FaultConfig, FaultKind};

/// The chance of each event of a deep canary: a stepping stone is reached by one run in
/// twenty from the one before; four in order, by one blind seed in 160,000.
pub const DEEP_EVENT_CHANCE: f64 = 0.05;

/// `kind` on the `ordinal`-th operation named `operation`, with [`DEEP_EVENT_CHANCE`].
pub fn event(kind: FaultKind, operation: &str, ordinal: u64) -> FaultConfig {
    FaultConfig::chance(kind, DEEP_EVENT_CHANCE)
        .on_operation(operation)
        .and_then(|rule| rule.with_at_operation(ordinal))
        .expect("a deep canary's rule names an operation of its kind, at an ordinal from 1")
}

/// The stages a planted layer has climbed, in order: stage k is reached only from stage
/// k - 1, and reaching it hits its stepping stone's mark.
#[derive(Debug)]
pub struct Stages {
    reached: Mutex<usize>,
    marks: &'static [&'static str],
    env: Env,
}

impl Stages {
    /// No stage reached yet; `marks[k - 1]` is stage k's stepping stone.
    pub fn new(marks: &'static [&'static str], env: Env) -> Self {
        Self {
            reached: Mutex::new(0),
            marks,
            env,
        }
    }

    /// The last stage reached (0: none).
    pub fn reached(&self) -> usize {
        *self.reached.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Climbs to `stage` if the one before it is the last reached, hitting its mark;
    /// whether it did.
    pub fn climb(&self, stage: usize) -> bool {
        let mut reached = self.reached.lock().unwrap_or_else(PoisonError::into_inner);
        if stage == 0 || *reached + 1 != stage {
            return false;
        }
        *reached = stage;
        if let Some(mark) = self.marks.get(stage - 1) {
            self.env.cover(mark);
        }
        true
    }
}
