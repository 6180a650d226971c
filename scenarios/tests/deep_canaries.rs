//! The deep canaries (issue 40): each planted bug fires when all its events happen and
//! never when any one is left out, its stepping stones are hit in order on the way, the
//! first failing seeds blind searches found (kept in `seeds/<name>.seeds`) still fail as
//! they did, and so does the first failing path `dst explore` found.

use std::path::PathBuf;

use umi_dst::RunPath;
use umi_dst::Scenario;
use umi_dst::corpus::SeedCorpus;
use umi_dst::scenario::{run_one, run_path};
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

/// The first failing path of `dst explore --until-failure --jobs 2` (explorer seed 1 for
/// the outbox and the resend, 2 for the stale answer), per canary: a seed-only corpus
/// cannot keep a path yet, so they are kept here.
const EXPLORED_OUTBOX: &str = "24/15:1363378720/32:3155322974/48:3722799446";
const EXPLORED_RESEND: &str = "114/15:1966755792/39:1049146006";
const EXPLORED_STALE_ANSWER: &str = "6/15:1490622351/29:147574851/51:2337568084";

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
    assert!(
        !corpus.entries().is_empty(),
        "{} keeps no run",
        path.display()
    );
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

/// `path` of `scenario` fails saying `finds`, and its seed alone does not (the branches
/// are what reach the bug).
fn explored_path_still_fails(scenario: &dyn Scenario, path: &str, finds: &str) {
    let path: RunPath = path.parse().expect("a path");
    let run = run_path(scenario, &path, false, |c| c);
    let message = run.failure.map(|(_, message)| message).unwrap_or_default();
    assert!(
        message.contains(finds),
        "{}: path {path}: {message:?}",
        scenario.name()
    );
    let seed_only = run_one(scenario, path.seed, false, |c| c);
    assert!(
        seed_only.failure.is_none(),
        "{}: seed {} fails without its branches",
        scenario.name(),
        path.seed
    );
}

#[test]
fn deep_canary_outbox_explored_path_still_fails() {
    explored_path_still_fails(&DeepCanaryOutbox, EXPLORED_OUTBOX, OUTBOX_FINDS);
}

#[test]
fn deep_canary_resend_explored_path_still_fails() {
    explored_path_still_fails(&DeepCanaryResend, EXPLORED_RESEND, DOUBLE_EFFECT);
}

#[test]
fn deep_canary_stale_answer_explored_path_still_fails() {
    explored_path_still_fails(&DeepCanaryStaleAnswer, EXPLORED_STALE_ANSWER, DOUBLE_EFFECT);
}
