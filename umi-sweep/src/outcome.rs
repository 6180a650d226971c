//! What one run of a sweep ended as, whichever way it ran (a worker thread or a worker
//! process): the collector folds each into its scenario's report.

use std::time::Duration;

use umi_dst::failure_class::FailureClass;
use umi_dst::simulation::SeedRun;

/// How a run ended.
#[derive(Debug)]
pub(crate) enum RunEnd {
    /// The seed ran to its verdict (which may itself be a failure).
    Finished(Box<SeedRun>),
    /// The harness panicked outside the seed's own guards (a crash).
    Panicked(String),
    /// No result within the seed timeout (a liveness failure); the message says so.
    Hung(String),
    /// The worker process running it died (an abort, a stack overflow, running out of
    /// memory, `exit`): a crash, with the signal or exit status.
    Died(String),
}

impl RunEnd {
    /// The failure a run that did not finish counts as.
    pub(crate) fn unfinished_failure(&self) -> Option<(FailureClass, String)> {
        match self {
            Self::Finished(_) => None,
            Self::Panicked(message) => {
                Some((FailureClass::Crash, format!("harness panicked: {message}")))
            }
            Self::Hung(message) => Some((FailureClass::Liveness, message.clone())),
            Self::Died(message) => Some((FailureClass::Crash, message.clone())),
        }
    }
}

/// A run's end, as a worker sends it to the collector.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// The run's number in the plan.
    pub(crate) index: usize,
    pub(crate) run: RunEnd,
    pub(crate) wall: Duration,
}
