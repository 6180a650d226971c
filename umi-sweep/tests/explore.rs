//! The explorer on a toy model of a deep bug, no simulation needed: three ordered events,
//! each 1 in 40 at its own step, where a blind search needs tens of thousands of seeds
//! and exploration a few hundred runs; the same explorer seed explores the same paths
//! (for one job or two); stop conditions, reports as JSON, shard frontiers and merge.

use std::time::Duration;

use umi_sweep::Shard;
use umi_sweep::explore::frontier::{frontier_paths, merge, read_dir, shard_file, write_report};
use umi_sweep::explore::{
    Exploration, ExploreError, ExploreOptions, ExploreReport, PathOutcome, PathRunner, RunPath,
    StopReason, Target, Watermark, explore_with,
};

/// The steps of the three events.
const EVENT_STEPS: [u64; 3] = [100, 200, 300];

/// A deep bug: event k happens at `EVENT_STEPS[k]` with odds 1 in `odds`, given every
/// earlier one happened; all three make a failure. Marks `a` and `b` are its stepping
/// stones, watermark `depth` counts the events.
struct DeepToy {
    odds: u64,
}

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The draw at `step` of `path`: the seed's key, chained with every branch in force.
fn draw(path: &RunPath, step: u64) -> u64 {
    let key = path
        .branches
        .iter()
        .filter(|branch| branch.step <= step)
        .fold(mix(path.seed), |key, branch| mix(key ^ mix(branch.stream)));
    mix(key ^ step)
}

impl PathRunner for DeepToy {
    fn run(&self, path: &RunPath) -> PathOutcome {
        let mut outcome = PathOutcome {
            steps: 400,
            ..PathOutcome::default()
        };
        let mut depth = 0;
        for (k, step) in EVENT_STEPS.into_iter().enumerate() {
            if !draw(path, step).is_multiple_of(self.odds) {
                break;
            }
            depth += 1;
            let name = ["a", "b", "c"][k];
            // As the kernel records it: the first step from which a branch keeps it.
            let kept_from = step + 1;
            outcome.mark_steps.insert(name.to_owned(), kept_from);
            let peak = Watermark {
                value: depth,
                step: kept_from,
            };
            outcome.watermarks.insert("depth".to_owned(), peak);
        }
        if depth == 3 {
            outcome.failure = Some(("correctness".into(), "the deep bug".into()));
        }
        outcome
    }
}

fn exploration() -> Exploration {
    Exploration {
        scenario: "deep_toy".into(),
        declared: vec!["a".into(), "b".into(), "c".into(), "never".into()],
        frontier: Vec::new(),
    }
}

fn until_failure(explorer_seed: u64, jobs: usize) -> ExploreOptions {
    ExploreOptions {
        runs_max: 20_000,
        budget: Duration::from_secs(3600),
        jobs,
        explorer_seed,
        stop_at_first_failure: true,
        ..ExploreOptions::default()
    }
}

/// Seeds from 1 a blind search runs to the first failure.
fn blind_runs(toy: &dyn PathRunner) -> u64 {
    (1..=2_000_000)
        .find(|seed| toy.run(&RunPath::from_seed(*seed)).failure.is_some())
        .expect("a failing seed in two million")
}

#[test]
fn exploration_finds_the_deep_bug_in_far_fewer_runs_than_blind_seeds() {
    let toy = DeepToy { odds: 40 };
    let blind = blind_runs(&toy);
    assert!(blind > 5_000, "the toy is not deep: seed {blind} fails");
    for explorer_seed in 1..=3 {
        let report = explore_with(&toy, &exploration(), &until_failure(explorer_seed, 1)).unwrap();
        let failure = report.first_failure.as_ref().expect("the deep bug found");
        assert_eq!(report.stopped, StopReason::FirstFailure);
        assert_eq!(report.runs, failure.run + 1);
        assert!(
            report.runs * 10 <= blind,
            "explorer seed {explorer_seed}: {} runs, blind {blind}",
            report.runs
        );
        assert_eq!(failure.path.branches.len(), 2, "{}", failure.path);
        assert!(toy.run(&failure.path).failure.is_some(), "the path replays");
        assert_eq!(
            failure.replay,
            format!("dst replay --scenario deep_toy --path {}", failure.path)
        );
    }
}

/// The deep toy with a choice at its first stepping stone, as a payment that stalls may
/// or may not have paid first: event `a` is reached dead or live (half each, drawn with
/// it; a live one also hits mark `a.live`), `b` and `c` follow from either, and only a
/// live `a` makes all three a failure. The first seed to reach `a` reaches it dead.
struct DeadEndToy {
    odds: u64,
    /// Whether an `a` drawn with this parity (of `draw / odds`) is live.
    live_parity: u64,
}

impl DeadEndToy {
    fn new(odds: u64) -> DeadEndToy {
        let first = (1..)
            .map(RunPath::from_seed)
            .find(|path| draw(path, EVENT_STEPS[0]).is_multiple_of(odds))
            .expect("a seed reaches a");
        let parity = (draw(&first, EVENT_STEPS[0]) / odds) % 2;
        DeadEndToy {
            odds,
            live_parity: 1 - parity,
        }
    }
}

impl PathRunner for DeadEndToy {
    fn run(&self, path: &RunPath) -> PathOutcome {
        let mut deep = DeepToy { odds: self.odds }.run(path);
        let live = (draw(path, EVENT_STEPS[0]) / self.odds) % 2 == self.live_parity;
        if live && let Some(step) = deep.mark_steps.get("a").copied() {
            deep.mark_steps.insert("a.live".to_owned(), step);
        }
        PathOutcome {
            failure: deep.failure.filter(|_| live),
            ..deep
        }
    }
}

/// The first run to reach `a` reaches it dead, and `b` and `c` are first reached on its
/// lineage: keeping only first reaches, a live `a` reached later brings only `a.live`,
/// its branches reach `b` and `c` again, nothing new, and are never kept; keeping a few
/// lineages per target told apart by their history, `b` reached after `a.live` is a new
/// lineage of `b`, kept and branched from.
#[test]
fn a_dead_end_first_lineage_is_escaped_by_keeping_a_few_lineages_per_target() {
    // Keeping only first reaches, the live `a`'s branches must reach `b` and `c` at
    // once (1 in 1,600): 1,768 to 32,302 runs for explorer seeds 1 to 8; with lineages,
    // 520 to 1,193.
    const RUNS: u64 = 1_500;
    let toy = DeadEndToy::new(40);
    let first_a = (1..)
        .map(RunPath::from_seed)
        .find(|path| toy.run(path).mark_steps.contains_key("a"))
        .unwrap();
    let live = (draw(&first_a, EVENT_STEPS[0]) / 40) % 2 == toy.live_parity;
    assert!(!live, "the first a is live");
    let blind = blind_runs(&toy);
    assert!(blind > 20_000, "the toy is not deep: seed {blind} fails");
    for explorer_seed in 1..=3 {
        let only_first = ExploreOptions {
            runs_max: RUNS,
            lineages_per_target: 1,
            ..until_failure(explorer_seed, 1)
        };
        let stuck = explore_with(&toy, &exploration(), &only_first).unwrap();
        assert!(
            stuck.first_failure.is_none(),
            "seed {explorer_seed}: {stuck:?}"
        );
        let lineages = ExploreOptions {
            runs_max: RUNS,
            ..until_failure(explorer_seed, 1)
        };
        let report = explore_with(&toy, &exploration(), &lineages).unwrap();
        let failure = report.first_failure.as_ref().expect("the deep bug found");
        assert!(toy.run(&failure.path).failure.is_some(), "the path replays");
        assert!(
            report.runs * 10 <= blind,
            "explorer seed {explorer_seed}: {} runs, blind {blind}",
            report.runs
        );
    }
}

/// Branches are what find it: with a single event of 1 in 40 000 no stepping stone
/// exists, and the same runs find nothing.
#[test]
fn without_stepping_stones_exploration_is_no_better_than_blind() {
    struct Flat;
    impl PathRunner for Flat {
        fn run(&self, path: &RunPath) -> PathOutcome {
            let hit = draw(path, 300).is_multiple_of(64_000);
            PathOutcome {
                failure: hit.then(|| ("correctness".into(), "flat".into())),
                steps: 400,
                ..PathOutcome::default()
            }
        }
    }
    let options = ExploreOptions {
        runs_max: 2_000,
        ..until_failure(1, 1)
    };
    let report = explore_with(&Flat, &exploration(), &options).unwrap();
    assert!(report.first_failure.is_none(), "{:?}", report.first_failure);
    assert_eq!(report.stopped, StopReason::RunsMax);
    assert_eq!(report.runs, 2_000);
}

#[test]
fn the_same_explorer_seed_explores_the_same_paths_for_any_jobs() {
    let toy = DeepToy { odds: 40 };
    let key = |report: &ExploreReport| {
        (
            report.runs,
            report.first_failure.clone(),
            report.reached.clone(),
            report.frontier.clone(),
        )
    };
    let one = explore_with(&toy, &exploration(), &until_failure(7, 1)).unwrap();
    let again = explore_with(&toy, &exploration(), &until_failure(7, 1)).unwrap();
    let two_jobs = explore_with(&toy, &exploration(), &until_failure(7, 2)).unwrap();
    assert_eq!(key(&one), key(&again));
    assert_eq!(key(&one), key(&two_jobs));
    let other = explore_with(&toy, &exploration(), &until_failure(8, 1)).unwrap();
    assert_ne!(key(&one), key(&other), "the explorer seed changes nothing");
}

#[test]
fn the_report_says_what_was_reached_how_and_what_never_was() {
    let toy = DeepToy { odds: 40 };
    let report = explore_with(&toy, &exploration(), &until_failure(1, 1)).unwrap();
    assert_eq!(report.never_reached, vec!["never".to_owned()]);
    let depth = report
        .reached
        .iter()
        .find(|r| {
            r.target
                == Target::Watermark {
                    name: "depth".into(),
                }
        })
        .unwrap();
    assert_eq!(depth.value, Some(3));
    for reached in &report.reached {
        let rerun = toy.run(&reached.path);
        if let Target::Mark { name } = &reached.target {
            assert_eq!(rerun.mark_steps.get(name), Some(&reached.step), "{name}");
        }
    }
    let text = umi_sweep::explore::render(&report);
    assert!(text.contains("never reached (1):\n  \"never\""), "{text}");
    assert!(
        text.contains("replay: dst replay --scenario deep_toy --path "),
        "{text}"
    );
    let json = serde_json::to_string(&report).unwrap();
    let back: ExploreReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back, report);
}

#[test]
fn coverage_stable_for_a_stretch_stops_the_exploration() {
    let toy = DeepToy { odds: 2 };
    let options = ExploreOptions {
        stable_runs_max: 64,
        ..until_failure(1, 1)
    };
    let options = ExploreOptions {
        stop_at_first_failure: false,
        ..options
    };
    let report = explore_with(&toy, &exploration(), &options).unwrap();
    assert_eq!(report.stopped, StopReason::Stable);
    assert!(report.runs < 2_000, "{}", report.runs);
    assert!(report.first_failure.is_some());
}

#[test]
fn options_out_of_range_are_refused_by_name() {
    for (options, named) in [
        (
            ExploreOptions {
                jobs: 0,
                ..ExploreOptions::default()
            },
            "jobs",
        ),
        (
            ExploreOptions {
                runs_max: 0,
                ..ExploreOptions::default()
            },
            "runs_max",
        ),
        (
            ExploreOptions {
                lineages_per_target: 0,
                ..ExploreOptions::default()
            },
            "lineages_per_target",
        ),
        (
            ExploreOptions {
                budget: Duration::ZERO,
                ..ExploreOptions::default()
            },
            "budget",
        ),
    ] {
        let error = explore_with(&DeepToy { odds: 40 }, &exploration(), &options).unwrap_err();
        assert!(matches!(error, ExploreError::Option { option, .. } if option == named));
    }
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("umi-explore-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Shard 1 writes its frontier; shard 2 starts by rerunning it, so it reaches shard 1's
/// stepping stones in its first runs; the merge adds the runs up and keeps every target.
#[test]
fn shards_share_their_frontier_and_merge() {
    let dir = temp_dir("shards");
    let toy = DeepToy { odds: 40 };
    let shard = |index| Shard { index, count: 2 };
    let options = |index| ExploreOptions {
        runs_max: 300,
        stop_at_first_failure: false,
        shard: Some(shard(index)),
        ..until_failure(1, 1)
    };
    let first = explore_with(&toy, &exploration(), &options(0)).unwrap();
    write_report(&shard_file(&dir, "deep_toy", Some(shard(0))), &first).unwrap();
    let frontier = frontier_paths(&dir, "deep_toy").unwrap();
    assert!(!frontier.is_empty());
    let second = Exploration {
        frontier: frontier.clone(),
        ..exploration()
    };
    let second = explore_with(&toy, &second, &options(1)).unwrap();
    for reached in first.reached.iter().filter(|r| r.value.is_none()) {
        let again = second
            .reached
            .iter()
            .find(|r| r.target == reached.target)
            .unwrap();
        assert!(again.run < frontier.len() as u64, "{:?}", reached.target);
    }
    write_report(&shard_file(&dir, "deep_toy", Some(shard(1))), &second).unwrap();
    let files = read_dir(&dir).unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(files[1].1, second, "a shard file round-trips");
    let merged = merge(&files).unwrap();
    assert_eq!(merged.runs, 600);
    assert_eq!(merged.stopped, StopReason::Merged);
    for reached in first.reached.iter().chain(&second.reached) {
        assert!(merged.reached.iter().any(|r| r.target == reached.target));
    }
    let mut other = second.clone();
    other.scenario = "other".into();
    let other_file = dir.join("z.json");
    write_report(&other_file, &other).unwrap();
    let error = merge(&read_dir(&dir).unwrap()).unwrap_err();
    assert!(error.to_string().contains("z.json"), "{error}");
    std::fs::write(&other_file, "{\"scenario\": 3}").unwrap();
    let error = read_dir(&dir).unwrap_err();
    assert!(
        error.to_string().contains("z.json") && error.to_string().contains("line 1"),
        "{error}"
    );
}

/// A scenario whose marks are a cover mark, a steering mark it hits on some seeds, a
/// watermark and a steering mark it never hits.
struct Marked;

const SOMETIMES_ODD: umi_core::env::steer::Mark =
    umi_core::env::steer::Mark::sometimes("odd draw", "the draw was odd");
const NEVER: umi_core::env::steer::Mark =
    umi_core::env::steer::Mark::reachable("never", "no run gets here");
const HIGHEST: umi_core::env::steer::Mark =
    umi_core::env::steer::Mark::maximize("highest draw", "the largest draw");

impl umi_dst::Scenario for Marked {
    fn name(&self) -> &'static str {
        "marked"
    }

    fn goal(&self) -> &'static str {
        "declares marks for the explorer's report"
    }

    fn marks(&self) -> &'static [&'static str] {
        &["marked.ran"]
    }

    fn steering(&self) -> &'static [&'static umi_core::env::steer::Mark] {
        &[&SOMETIMES_ODD, &NEVER, &HIGHEST]
    }

    fn run(
        &self,
        sim: umi_dst::SimEnvironment,
    ) -> futures::future::LocalBoxFuture<'static, Result<(), umi_dst::Violation>> {
        Box::pin(async move {
            use umi_core::env::EnvironmentExt;
            let env = sim.env();
            let draw = env.random_in_range("marked", 1, 100);
            env.cover("marked.ran");
            umi_core::sometimes!(env, draw % 2 == 1, SOMETIMES_ODD);
            umi_core::maximize!(env, HIGHEST, draw);
            if draw > 1_000 {
                umi_core::reachable!(env, NEVER);
            }
            Ok(())
        })
    }
}

#[test]
fn a_scenario_declares_its_cover_and_steering_marks_and_the_never_reached_are_named() {
    let scenario = Marked;
    assert_eq!(
        umi_sweep::explore::declared(&scenario),
        ["marked.ran", "odd draw", "never", "highest draw"]
    );
    let options = ExploreOptions {
        runs_max: 64,
        ..ExploreOptions::default()
    };
    let report = umi_sweep::explore::explore(&scenario, &options).unwrap();
    assert_eq!(report.never_reached, vec!["never".to_owned()]);
    let highest = report
        .reached
        .iter()
        .find(|r| {
            r.target
                == Target::Watermark {
                    name: "highest draw".into(),
                }
        })
        .unwrap();
    assert!(highest.value.is_some_and(|value| value > 90), "{highest:?}");
    assert!(report.first_failure.is_none());
}
