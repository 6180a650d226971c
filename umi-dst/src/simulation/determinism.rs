//! The determinism check, one function for every caller: `Simulation` under
//! `DST_CHECK_DETERMINISM` and the sweep under `--check-determinism` both run a seed twice
//! and hand the two runs here, so both say the same thing about where the runs parted
//! (the first differing trace event of each, and what the events suggest went wrong,
//! [`crate::adapters::foreign::explain`]).
//!
//! A pure function of the two runs: table tests reach it with hand-made runs.

use super::execute::SeedRun;
use super::report::Divergence;
use crate::trace::first_divergence;

/// Two runs of one seed that did not behave the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nondeterminism {
    /// One line: the seed, the two trace hashes and event counts, and the second run's
    /// failure if only it failed.
    pub message: String,
    /// Where the traces parted, when both runs kept their full traces (a config with
    /// `trace_full`).
    pub divergence: Option<Divergence>,
}

impl Nondeterminism {
    /// The message followed by the divergence, as a failure's text (the sweep's reports
    /// carry this).
    pub fn describe(&self) -> String {
        match &self.divergence {
            Some(divergence) => format!("{}\n{divergence}", self.message),
            None => format!(
                "{}\n(no full traces were kept, so where they diverged is unknown: run with \
                 `trace_full`, as DST_CHECK_DETERMINISM=1 and `dst sweep --check-determinism` do)",
                self.message
            ),
        }
    }
}

/// Compares two runs of the same seed: `None` when their traces and verdicts agree,
/// otherwise what differs and, given full traces, the first events that differ.
pub fn compare_runs(first: &SeedRun, second: &SeedRun) -> Option<Nondeterminism> {
    if first.trace_hash == second.trace_hash && first.failure == second.failure {
        return None;
    }
    let divergence = match (first.full_trace.as_deref(), second.full_trace.as_deref()) {
        (Some(left), Some(right)) => first_divergence(left, right).map(|index| {
            let mut clients = first.foreign.clone();
            for client in &second.foreign {
                if !clients.iter().any(|c| c.name == client.name) {
                    clients.push(client);
                }
            }
            Divergence {
                first: left.get(index).cloned(),
                second: right.get(index).cloned(),
                cause: crate::adapters::foreign::explain(
                    left.get(index),
                    right.get(index),
                    &clients,
                ),
            }
        }),
        _ => None,
    };
    let message = format!(
        "two runs of seed {} differ: trace {} then {} ({} and {} events){}; something reads \
         the wall clock, OS randomness, a hash map's iteration order, or state left by \
         another seed",
        first.seed,
        first.trace_hash.short(),
        second.trace_hash.short(),
        first.events,
        second.events,
        match &second.failure {
            Some((class, message)) if first.failure != second.failure => {
                format!("; the second run failed ({class}): {message}")
            }
            _ => String::new(),
        }
    );
    Some(Nondeterminism {
        message,
        divergence,
    })
}
