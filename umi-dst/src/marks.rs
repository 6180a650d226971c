//! MarkLog: what a run's marks recorded: coverage marks' counts, the step of every
//! mark's first hit, and the high-water marks of `maximize!` marks.
//!
//! Guided exploration branches a run at the moment it first reached something new, so
//! each record keeps a *step*: the first step from which a branch keeps the record,
//! i.e. the steps the run had taken when it happened, plus one (a branch there replays
//! everything up to and including it; see [`crate::path`]). Recording never takes a step,
//! draws or traces: the kernel's `cover` steps and traces as it always did, and a
//! steering mark is free.

use std::collections::BTreeMap;

/// The high-water mark of a `maximize!` mark in one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watermark {
    /// The largest value recorded.
    pub value: u64,
    /// The step at which `value` was first reached (the marks' step, see the module
    /// docs).
    pub step: u64,
}

/// Distinct marks one run keeps first steps and watermarks for; hits past it are
/// counted (cover) but their steps are not kept.
pub const MARKS_PER_RUN_MAX: usize = 4_096;

/// The marks of one run.
#[derive(Debug, Default, Clone)]
pub(crate) struct MarkLog {
    counts: BTreeMap<&'static str, u64>,
    first_steps: BTreeMap<&'static str, u64>,
    watermarks: BTreeMap<&'static str, Watermark>,
}

impl MarkLog {
    /// A coverage mark (`env.cover`) hit at `step`: counted, and its first step kept.
    pub(crate) fn cover(&mut self, mark: &'static str, step: u64) {
        *self.counts.entry(mark).or_insert(0) += 1;
        self.hit(mark, step);
    }

    /// A mark reached at `step` (a cover, `sometimes!` or `reachable!` mark): its first
    /// step kept.
    pub(crate) fn hit(&mut self, mark: &'static str, step: u64) {
        if self.first_steps.len() < MARKS_PER_RUN_MAX || self.first_steps.contains_key(mark) {
            self.first_steps.entry(mark).or_insert(step);
        }
    }

    /// A `maximize!` mark's `value` at `step`: kept when it is the run's highest so far
    /// (the first step it was reached at). A watermark is reached too: its first step is
    /// kept as a hit's.
    pub(crate) fn maximize(&mut self, mark: &'static str, value: u64, step: u64) {
        self.hit(mark, step);
        if let Some(mark) = self.watermarks.get_mut(mark) {
            if value > mark.value {
                *mark = Watermark { value, step };
            }
        } else if self.watermarks.len() < MARKS_PER_RUN_MAX {
            self.watermarks.insert(mark, Watermark { value, step });
        }
    }

    /// Coverage marks hit, with their counts.
    pub(crate) fn counts(&self) -> &BTreeMap<&'static str, u64> {
        &self.counts
    }

    /// Every mark reached, with the step of its first hit.
    pub(crate) fn first_steps(&self) -> &BTreeMap<&'static str, u64> {
        &self.first_steps
    }

    /// The `maximize!` marks' high-water marks.
    pub(crate) fn watermarks(&self) -> &BTreeMap<&'static str, Watermark> {
        &self.watermarks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_steps_and_watermarks_keep_the_first_time() {
        let mut log = MarkLog::default();
        log.cover("a", 3);
        log.cover("a", 9);
        log.hit("b", 5);
        log.hit("b", 2);
        log.maximize("depth", 4, 6);
        log.maximize("depth", 2, 7);
        log.maximize("depth", 4, 8);
        log.maximize("depth", 5, 10);
        assert_eq!(log.counts().get("a"), Some(&2));
        assert_eq!(log.counts().get("b"), None, "a hit is not a cover count");
        assert_eq!(log.first_steps().get("a"), Some(&3));
        assert_eq!(log.first_steps().get("b"), Some(&5));
        assert_eq!(log.first_steps().get("depth"), Some(&6));
        assert_eq!(
            log.watermarks().get("depth"),
            Some(&Watermark { value: 5, step: 10 })
        );
    }
}
