//! pass^k: whether a task succeeds *every* time it is tried. A sweep run with
//! `--trials K` runs each task of its seed range K times, each trial with its own
//! trial seed ([`umi_dst::usage::trial_seed`]): the same workload, the model's
//! variation and the faults drawn afresh. Per scenario and per task class the report
//! keeps how many tasks passed each number of their trials (`tasks_by_passes[c]`: the
//! tasks that passed exactly `c` of `k`), which is all pass@1, pass@k and pass^j need
//! and merges across shards by addition (a task's trials always run on one shard), and
//! the flaky tasks (some trials passed, not all), smallest first.
//!
//! The estimators are the unbiased ones over k trials per task: pass@1 is the fraction
//! of trials passed; pass@j = 1 − C(k−c, j)/C(k, j) and pass^j = C(c, j)/C(k, j)
//! averaged over tasks (τ-bench's pass^k; pass@k as in Chen et al. 2021). At j = k
//! both are 0/1 per task, so their 95% intervals are Wilson score intervals over the
//! tasks; pass@1's interval is Wilson over the trials (it ignores that trials of one
//! task are correlated, so it is narrower than the truth when tasks differ).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Flaky tasks a report lists per scenario (the count covers every one).
pub const FLAKY_TASKS_KEPT_MAX: usize = 100;

/// z for a two-sided 95% interval.
const Z_95: f64 = 1.959_963_984_540_054;

/// One task that passed some of its trials but not all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlakyTask {
    /// The task (the seed its workload is drawn from).
    pub task: u64,
    /// Trials passed, of `k`.
    pub passed: u64,
    /// Its class, if the scenario names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// The trial seeds that failed (replay any with `DST_SEED` or `dst replay --seed`).
    pub failed_seeds: Vec<u64>,
}

/// Tasks by how many of their `k` trials passed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PassCounts {
    /// `[c]`: tasks that passed exactly `c` of `k` trials (length `k + 1`).
    pub tasks_by_passes: Vec<u64>,
}

impl PassCounts {
    /// Counts for `k` trials per task, none yet.
    pub fn new(k: u64) -> Self {
        Self {
            tasks_by_passes: vec![0; usize::try_from(k).unwrap_or(0) + 1],
        }
    }

    /// Trials per task.
    pub fn k(&self) -> u64 {
        self.tasks_by_passes.len().saturating_sub(1) as u64
    }

    /// Tasks counted.
    pub fn tasks(&self) -> u64 {
        self.tasks_by_passes
            .iter()
            .fold(0, |sum, n| sum.saturating_add(*n))
    }

    /// Adds a task that passed `passed` of its trials.
    pub fn add(&mut self, passed: u64) {
        let slot = usize::try_from(passed).unwrap_or(usize::MAX);
        assert!(
            slot < self.tasks_by_passes.len(),
            "a task passed more trials than it ran"
        );
        self.tasks_by_passes[slot] += 1;
    }

    /// Adds another shard's counts (same `k`: `dst merge` refuses shards whose trials
    /// differ).
    pub fn merge(&mut self, other: &PassCounts) {
        if self.tasks_by_passes.len() < other.tasks_by_passes.len() {
            self.tasks_by_passes.resize(other.tasks_by_passes.len(), 0);
        }
        for (total, n) in self.tasks_by_passes.iter_mut().zip(&other.tasks_by_passes) {
            *total = total.saturating_add(*n);
        }
    }

    /// Trials run and trials passed, over every task.
    fn trials_run_and_passed(&self) -> (u64, u64) {
        let passed = self
            .tasks_by_passes
            .iter()
            .enumerate()
            .fold(0u64, |sum, (c, n)| {
                sum.saturating_add((c as u64).saturating_mul(*n))
            });
        (self.tasks().saturating_mul(self.k()), passed)
    }

    /// pass@1: trials passed over trials run.
    pub fn pass_at_1(&self) -> Option<f64> {
        let (trials, passed) = self.trials_run_and_passed();
        (trials > 0).then(|| passed as f64 / trials as f64)
    }

    /// pass@j (at least one of j trials passes), averaged over tasks.
    pub fn pass_at(&self, j: u64) -> Option<f64> {
        self.average(|c, k| 1.0 - choose_ratio(k - c, j, k))
    }

    /// pass^j (all of j trials pass), averaged over tasks.
    pub fn pass_hat(&self, j: u64) -> Option<f64> {
        self.average(|c, k| choose_ratio(c, j, k))
    }

    fn average(&self, per_task: impl Fn(u64, u64) -> f64) -> Option<f64> {
        let (tasks, k) = (self.tasks(), self.k());
        if tasks == 0 || k == 0 {
            return None;
        }
        let total: f64 = self
            .tasks_by_passes
            .iter()
            .enumerate()
            .map(|(c, n)| *n as f64 * per_task(c as u64, k))
            .sum();
        Some(total / tasks as f64)
    }

    /// The 95% Wilson interval of pass^k (tasks whose every trial passed).
    pub fn pass_hat_k_interval(&self) -> Option<(f64, f64)> {
        let k = usize::try_from(self.k()).ok()?;
        wilson(*self.tasks_by_passes.get(k)?, self.tasks())
    }

    /// The 95% Wilson interval of pass@k (tasks with a passing trial).
    pub fn pass_at_k_interval(&self) -> Option<(f64, f64)> {
        let none = *self.tasks_by_passes.first()?;
        wilson(self.tasks() - none, self.tasks())
    }

    /// The 95% Wilson interval of pass@1, over trials.
    pub fn pass_at_1_interval(&self) -> Option<(f64, f64)> {
        let (trials, passed) = self.trials_run_and_passed();
        wilson(passed, trials)
    }
}

/// C(a, j) / C(k, j): of the ways to pick j of k trials, the share picking only from a.
fn choose_ratio(a: u64, j: u64, k: u64) -> f64 {
    if j > a {
        return 0.0;
    }
    (0..j).map(|i| (a - i) as f64 / (k - i) as f64).product()
}

/// The Wilson score interval for `successes` of `n` at 95%.
pub fn wilson(successes: u64, n: u64) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    let n = n as f64;
    let p = successes as f64 / n;
    let z2 = Z_95 * Z_95;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z_95 * ((p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt()) / (1.0 + z2 / n);
    Some(((centre - half).max(0.0), (centre + half).min(1.0)))
}

/// A scenario's pass^k over a `--trials` sweep.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrialsReport {
    /// Trials per task.
    pub k: u64,
    /// Over every task.
    pub all: PassCounts,
    /// By the class the runs named (`SimEnvironment::set_task_class`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_class: BTreeMap<String, PassCounts>,
    /// Tasks that passed some trials but not all, smallest task first.
    pub flaky: Vec<FlakyTask>,
    /// Flaky tasks not listed.
    #[serde(default)]
    pub flaky_truncated: u64,
}

impl TrialsReport {
    /// A report for `k` trials per task.
    pub fn new(k: u64) -> Self {
        Self {
            k,
            all: PassCounts::new(k),
            ..Self::default()
        }
    }

    /// Adds a task whose trials all ran: `passed` of `k`, failing seeds, class.
    pub fn add_task(
        &mut self,
        task: u64,
        passed: u64,
        failed_seeds: Vec<u64>,
        class: Option<String>,
    ) {
        self.all.add(passed);
        if let Some(class) = &class {
            self.by_class
                .entry(class.clone())
                .or_insert_with(|| PassCounts::new(self.k))
                .add(passed);
        }
        if passed == 0 || passed == self.k {
            return;
        }
        let flaky = FlakyTask {
            task,
            passed,
            class,
            failed_seeds,
        };
        let at = self.flaky.partition_point(|f| f.task < task);
        self.flaky.insert(at, flaky);
        if self.flaky.len() > FLAKY_TASKS_KEPT_MAX {
            self.flaky.truncate(FLAKY_TASKS_KEPT_MAX);
            self.flaky_truncated += 1;
        }
    }

    /// Adds another shard's report (the same `k`).
    pub fn merge(&mut self, other: &TrialsReport) {
        self.k = self.k.max(other.k);
        self.all.merge(&other.all);
        for (class, counts) in &other.by_class {
            self.by_class
                .entry(class.clone())
                .or_default()
                .merge(counts);
        }
        self.flaky.extend(other.flaky.iter().cloned());
        self.flaky.sort_by_key(|f| f.task);
        let listed = self.flaky.len().min(FLAKY_TASKS_KEPT_MAX);
        self.flaky_truncated += other.flaky_truncated + (self.flaky.len() - listed) as u64;
        self.flaky.truncate(listed);
    }

    /// `pass@1 0.93 [0.90, 0.95] · pass@k … · pass^k …` for the table.
    pub fn summary(&self) -> String {
        let show = |value: Option<f64>, interval: Option<(f64, f64)>| match (value, interval) {
            (Some(v), Some((lo, hi))) => format!("{v:.3} [{lo:.3}, {hi:.3}]"),
            _ => "-".to_owned(),
        };
        format!(
            "{} tasks × {} trials · pass@1 {} · pass@{k} {} · pass^{k} {} · {} flaky",
            self.all.tasks(),
            self.k,
            show(self.all.pass_at_1(), self.all.pass_at_1_interval()),
            show(self.all.pass_at(self.k), self.all.pass_at_k_interval()),
            show(self.all.pass_hat(self.k), self.all.pass_hat_k_interval()),
            self.flaky.len() as u64 + self.flaky_truncated,
            k = self.k,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimators_match_their_definitions() {
        // k = 4: one task passed all, one passed 2, one none.
        let mut counts = PassCounts::new(4);
        for passed in [4, 2, 0] {
            counts.add(passed);
        }
        assert!((counts.pass_at_1().unwrap() - 6.0 / 12.0).abs() < 1e-12);
        // pass^4: only the first task; pass@4: the first two.
        assert!((counts.pass_hat(4).unwrap() - 1.0 / 3.0).abs() < 1e-12);
        assert!((counts.pass_at(4).unwrap() - 2.0 / 3.0).abs() < 1e-12);
        // pass^2 of the task with 2 of 4: C(2,2)/C(4,2) = 1/6.
        assert!((counts.pass_hat(2).unwrap() - (1.0 + 1.0 / 6.0) / 3.0).abs() < 1e-12);
        // pass^1 = pass@1.
        assert!((counts.pass_hat(1).unwrap() - counts.pass_at_1().unwrap()).abs() < 1e-12);
        let (lo, hi) = counts.pass_hat_k_interval().unwrap();
        assert!(lo < 1.0 / 3.0 && 1.0 / 3.0 < hi);
    }

    #[test]
    fn wilson_stays_inside_zero_and_one() {
        let (lo, hi) = wilson(10, 10).unwrap();
        assert!(lo > 0.6 && (hi - 1.0).abs() < 1e-12);
        let (lo, hi) = wilson(0, 10).unwrap();
        assert!(lo.abs() < 1e-12 && hi < 0.4);
        assert_eq!(wilson(0, 0), None);
    }

    #[test]
    fn flaky_tasks_are_kept_smallest_first_and_merge() {
        let mut a = TrialsReport::new(3);
        a.add_task(9, 1, vec![1, 2], Some("refund".into()));
        a.add_task(2, 3, vec![], Some("refund".into()));
        let mut b = TrialsReport::new(3);
        b.add_task(4, 2, vec![7], None);
        a.merge(&b);
        assert_eq!(a.flaky.iter().map(|f| f.task).collect::<Vec<_>>(), [4, 9]);
        assert_eq!(a.all.tasks(), 3);
        assert_eq!(a.by_class["refund"].tasks(), 2);
    }
}
