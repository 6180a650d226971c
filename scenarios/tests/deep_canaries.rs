//! The deep canaries (issue 40): each planted bug fires when all its events happen and
//! never when any one is left out, its stepping stones are hit in order on the way, and
//! the first failing run a blind search found (kept in `seeds/<name>.seeds`) still fails
//! as it did.

use std::path::PathBuf;

use umi_dst::Scenario;
use umi_dst::corpus::SeedCorpus;
use umi_dst::scenario::run_one;
use umi_dst::simulation::SeedRun;
use umi_scenarios::deep_canary_outbox::DeepCanaryOutbox;
use umi_scenarios::deep_canary_resend::DeepCanaryResend;
use umi_scenarios::deep_canary_stale_answer::DeepCanaryStaleAnswer;

/// Seeds tried with the events forced: the resend canary also needs its stalled payment
/// to have paid first (half of stalls do), so one seed is not enough.
const FORCED_SEEDS: u64 = 16;

/// What each canary's planted bug is reported as.
const OUTBOX_FINDS: &str = "lost write";
const DOUBLE_EFFECT: &str = "applied its effect 2 times for one call";

/// Seed `seed` of `scenario` with every event's chance 1, but the event at `left_out`
/// (an index into its rules) switched off.
fn forced(scenario: &dyn Scenario, seed: u64, left_out: Option<usize>) -> SeedRun {
    run_one(scenario, seed, false, |mut config| {
        config.faults = std::mem::take(&mut config.faults)
            .into_iter()
            .enumerate()
            .map(|(index, rule)| {
                if Some(index) == left_out {
                    rule.with_enabled(false)
                } else {
                    rule.with_probability(1.0).expect("1 is a probability")
                }
            })
            .collect();
        config
    })
}

/// All events forced: some seed of the first `FORCED_SEEDS` fails saying `finds`, having
/// hit every stepping stone; with any one event left out, none fails.
fn fires_only_with_every_event(scenario: &dyn Scenario, finds: &str) {
    let failing = (1..=FORCED_SEEDS)
        .map(|seed| forced(scenario, seed, None))
        .find(|run| run.failure.is_some())
        .unwrap_or_else(|| panic!("{}: no forced seed failed", scenario.name()));
    let (_, message) = failing.failure.as_ref().expect("found failing");
    assert!(message.contains(finds), "{}: {message}", scenario.name());
    for mark in scenario.marks() {
        assert!(
            failing.marks.get(*mark).is_some_and(|hits| *hits > 0),
            "{}: stepping stone {mark} not hit: {:?}",
            scenario.name(),
            failing.marks
        );
    }
    let rules = scenario.config(1, false).faults.len();
    for left_out in 0..rules {
        for seed in 1..=FORCED_SEEDS {
            let run = forced(scenario, seed, Some(left_out));
            assert!(
                run.failure.is_none(),
                "{} seed {seed} failed without event {}: {:?}",
                scenario.name(),
                left_out + 1,
                run.failure
            );
        }
    }
}

/// Every run kept in `seeds/<name>.seeds` (at least one) fails saying `finds`.
fn kept_runs_still_fail(scenario: &dyn Scenario, finds: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../seeds")
        .join(format!("{}.seeds", scenario.name()));
    let corpus = SeedCorpus::load(&path).unwrap_or_else(|error| panic!("{error}"));
    assert!(!corpus.entries().is_empty(), "{} keeps no run", path.display());
    for entry in corpus.entries() {
        let meaning = entry.meaning.clone();
        let run = run_one(scenario, entry.seed, meaning.swarm, |c| meaning.apply(c));
        let message = run.failure.map(|(_, message)| message).unwrap_or_default();
        assert!(
            message.contains(finds),
            "{}:{}: seed {} no longer finds the planted bug (got {message:?})",
            path.display(),
            entry.line,
            entry.seed
        );
    }
}

#[test]
fn deep_canary_outbox_fires_only_with_every_event() {
    fires_only_with_every_event(&DeepCanaryOutbox, OUTBOX_FINDS);
}

#[test]
fn deep_canary_resend_fires_only_with_every_event() {
    fires_only_with_every_event(&DeepCanaryResend, DOUBLE_EFFECT);
}

#[test]
fn deep_canary_stale_answer_fires_only_with_every_event() {
    fires_only_with_every_event(&DeepCanaryStaleAnswer, DOUBLE_EFFECT);
}

#[test]
fn deep_canary_outbox_kept_runs_still_fail() {
    kept_runs_still_fail(&DeepCanaryOutbox, OUTBOX_FINDS);
}

#[test]
fn deep_canary_resend_kept_runs_still_fail() {
    kept_runs_still_fail(&DeepCanaryResend, DOUBLE_EFFECT);
}

#[test]
fn deep_canary_stale_answer_kept_runs_still_fail() {
    kept_runs_still_fail(&DeepCanaryStaleAnswer, DOUBLE_EFFECT);
}

