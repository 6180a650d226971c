//! The sweep engine on toy scenarios: a crash or a hang in one seed never stops the
//! sweep; the time budget and an interrupt stop it, in time however many seeds fail,
//! with a report of how far it got and the command for the rest; failing seeds are
//! recorded once, canaries only when asked; reports list a bounded number of failures,
//! count and group all of them, merge and export.

mod explore;

/// The OpenTelemetry export: `--otlp-export` to a test collector, `dst sweep --otlp`.
mod otlp;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::future::LocalBoxFuture;
use umi_core::env::EnvironmentExt;
use umi_dst::Scenario;
use umi_dst::corpus::SeedCorpus;
use umi_dst::{FaultConfig, FaultKind, SimEnvironment, Violation, ensure};
use umi_sweep::ProgressStyle;
use umi_sweep::{SweepOptions, SweepReport, run};

/// What a toy scenario does on the seeds it picks.
#[derive(Clone, Copy)]
enum Misbehaviour {
    /// Nothing: it passes.
    None,
    /// A broken invariant on seeds divisible by 5.
    Violation,
    /// A panic on seeds divisible by 7.
    Panic,
    /// Blocks its worker thread for four seconds on seed 3 (a hang, as the watchdog sees it).
    Hang,
    /// Records a process-wide counter in its trace: state that outlives a seed.
    Leaky,
    /// A broken invariant on every seed.
    AlwaysFails,
}

/// The leaky toy's global state.
static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

struct Toy {
    name: &'static str,
    misbehaviour: Misbehaviour,
    canary: bool,
}

impl Scenario for Toy {
    fn name(&self) -> &'static str {
        self.name
    }

    fn goal(&self) -> &'static str {
        "a toy for the engine's own tests"
    }

    fn faults(&self) -> Vec<FaultConfig> {
        vec![FaultConfig::chance(FaultKind::StorageLatency, 0.5)]
    }

    fn marks(&self) -> &'static [&'static str] {
        &["toy.slept"]
    }

    fn is_canary(&self) -> bool {
        self.canary
    }

    fn run(&self, sim: SimEnvironment) -> LocalBoxFuture<'static, Result<(), Violation>> {
        let misbehaviour = self.misbehaviour;
        Box::pin(async move {
            let env = sim.env();
            let seed = sim.seed();
            env.sleep(Duration::from_millis(env.random_in_range("toy", 1, 1_000)))
                .await;
            env.cover("toy.slept");
            match misbehaviour {
                Misbehaviour::Violation => {
                    ensure!(!seed.is_multiple_of(5), "seed {seed} is a multiple of 5");
                }
                Misbehaviour::Panic => {
                    assert!(!seed.is_multiple_of(7), "seed {seed} is a multiple of 7");
                }
                Misbehaviour::Hang if seed == 3 => {
                    #[allow(
                        clippy::disallowed_methods,
                        reason = "the point: a run that blocks its thread"
                    )]
                    std::thread::sleep(Duration::from_secs(4));
                }
                Misbehaviour::AlwaysFails => {
                    ensure!(seed == 0, "seed {seed} always fails");
                }
                Misbehaviour::Leaky => {
                    let runs = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    env.record("toy.runs", format_args!("{runs}"));
                }
                _ => {}
            }
            Ok(())
        })
    }
}

fn toy(name: &'static str, misbehaviour: Misbehaviour) -> Arc<dyn Scenario> {
    Arc::new(Toy {
        name,
        misbehaviour,
        canary: false,
    })
}

fn options(seeds: u64) -> SweepOptions {
    SweepOptions::default()
        .with_seeds(seeds)
        .with_jobs(2)
        .with_progress(ProgressStyle::Quiet)
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("umi-sweep-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn crashes_and_violations_are_classified_and_the_sweep_goes_on() {
    let scenarios = [
        toy("ok", Misbehaviour::None),
        toy("violates", Misbehaviour::Violation),
        toy("panics", Misbehaviour::Panic),
    ];
    let report = run(&scenarios, &options(35)).unwrap();
    assert!(report.completed);
    assert_eq!(report.runs_done, 105);
    let [ok, violates, panics] = &report.scenarios[..] else {
        panic!("three scenarios")
    };
    assert_eq!((ok.seeds_run, ok.seeds_failed), (35, 0));
    assert_eq!(violates.seeds_failed, 7);
    assert_eq!(violates.failures_by_class.get("correctness"), Some(&7));
    assert_eq!(panics.failures_by_class.get("crash"), Some(&5));
    let seeds: Vec<u64> = panics.failures.iter().map(|f| f.seed).collect();
    assert_eq!(seeds, [7, 14, 21, 28, 35]);
    assert!(
        panics.failures[0]
            .replay
            .contains("dst replay --scenario panics --seed 7"),
        "{:?}",
        panics.failures[0]
    );
    assert_eq!(report.exit_code(), 11, "a crash outranks a violation");
    assert!(ok.marks_missing().is_empty() && ok.marks_hit["toy.slept"] == 35);
    assert!(
        ok.faults_injected.is_empty(),
        "the toy's storage fault has no storage to hit"
    );
}

#[test]
fn a_hang_is_a_liveness_failure_and_the_sweep_goes_on() {
    let scenarios = [toy("hangs", Misbehaviour::Hang)];
    let report = run(
        &scenarios,
        &options(10).with_seed_timeout(Duration::from_secs(1)),
    )
    .unwrap();
    let hangs = &report.scenarios[0];
    assert_eq!(hangs.seeds_run, 10, "every seed has a result");
    assert_eq!(hangs.failures_by_class.get("liveness"), Some(&1));
    assert_eq!(hangs.failures[0].seed, 3);
    assert!(
        hangs.failures[0].message.contains("hang"),
        "{}",
        hangs.failures[0].message
    );
    assert_eq!(report.exit_code(), 12);
}

#[test]
fn the_time_budget_stops_the_sweep_and_the_report_says_so() {
    let scenarios = [toy("ok", Misbehaviour::None)];
    let report = run(
        &scenarios,
        &options(50_000_000).with_time_budget(Duration::from_millis(300)),
    )
    .unwrap();
    assert!(!report.completed);
    assert!(
        report.runs_done > 0 && report.runs_done < report.runs_planned,
        "{} of {}",
        report.runs_done,
        report.runs_planned
    );
    assert!(report.table().contains("(incomplete)"));
}

#[test]
fn failing_seeds_are_recorded_once_and_canaries_only_when_asked() {
    let dir = temp_dir("record");
    let canary: Arc<dyn Scenario> = Arc::new(Toy {
        name: "planted",
        misbehaviour: Misbehaviour::Violation,
        canary: true,
    });
    let scenarios = [toy("violates", Misbehaviour::Violation), canary];
    let record = options(20).with_seeds_dir(dir.clone());
    for _ in 0..2 {
        let report = run(&scenarios, &record).unwrap();
        assert_eq!(
            report.regressions(),
            4,
            "the canary's failures do not count"
        );
        assert_eq!(report.exit_code(), 10);
    }
    let corpus = SeedCorpus::load(&dir.join("violates.seeds")).unwrap();
    // Recorded as each failure arrives, so in the order the workers finished them (seed
    // 10 before seed 5 when the machine is loaded, as a test run under `make test` saw):
    // once each is the promise, the order is the workers'.
    let mut recorded = corpus.seeds();
    recorded.sort_unstable();
    assert_eq!(recorded, [5, 10, 15, 20], "recorded once each");
    assert!(
        corpus.entries()[0]
            .comment
            .as_deref()
            .is_some_and(|c| c.starts_with("correctness: seed 5")),
        "{:?}",
        corpus.entries()[0]
    );
    assert!(
        !dir.join("planted.seeds").exists(),
        "canary seeds are not recorded by default"
    );
    run(&scenarios, &record.with_record_canary(true)).unwrap();
    assert_eq!(
        SeedCorpus::load(&dir.join("planted.seeds"))
            .unwrap()
            .seeds()
            .len(),
        4
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_canary_that_finds_nothing_fails_the_sweep() {
    let blind: Arc<dyn Scenario> = Arc::new(Toy {
        name: "blind",
        misbehaviour: Misbehaviour::None,
        canary: true,
    });
    let report = run(&[blind], &options(10)).unwrap();
    assert_eq!(report.exit_code(), 20);
    assert_eq!(report.canaries_missed(), ["blind"]);
    let junit = report.junit().unwrap();
    assert!(junit.contains("canary found"), "{junit}");
}

#[test]
fn reports_round_trip_through_json_and_merge_across_shards() {
    let scenarios = [toy("violates", Misbehaviour::Violation)];
    let dir = temp_dir("report");
    let mut parts = Vec::new();
    for index in 1..=2 {
        let path = dir.join(format!("shard-{index}.json"));
        let shard = umi_sweep::Shard::parse(&format!("{index}/2")).unwrap();
        let report = run(
            &scenarios,
            &options(30).with_shard(shard).with_report_path(path.clone()),
        )
        .unwrap();
        let read: SweepReport =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(read, report, "the file is the report");
        assert!(read.completed);
        parts.push(read);
    }
    let whole = run(&scenarios, &options(30)).unwrap();
    let merged = SweepReport::merge(&parts);
    assert_eq!(merged.runs_done, 30);
    let (a, b) = (&merged.scenarios[0], &whole.scenarios[0]);
    assert_eq!(
        (a.seeds_run, a.seeds_failed, &a.trace_digest),
        (b.seeds_run, b.seeds_failed, &b.trace_digest)
    );
    let failed: BTreeSet<u64> = a.failures.iter().map(|f| f.seed).collect();
    assert_eq!(failed, BTreeSet::from([5, 10, 15, 20, 25, 30]));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_determinism_check_catches_state_that_outlives_a_seed() {
    let scenarios = [
        toy("leaky", Misbehaviour::Leaky),
        toy("ok", Misbehaviour::None),
    ];
    let unchecked = run(&scenarios, &options(5)).unwrap();
    assert_eq!(unchecked.exit_code(), 0, "one run per seed cannot see it");
    let checked = run(&scenarios, &options(5).with_check_determinism(true)).unwrap();
    assert_eq!(
        checked.scenarios[0].failures_by_class.get("nondeterminism"),
        Some(&5)
    );
    assert_eq!(checked.scenarios[1].seeds_failed, 0);
    // The message shows where the two runs parted, as DST_CHECK_DETERMINISM does: the
    // leaky counter's event in each run, with the two values it recorded.
    let message = &checked.scenarios[0].failures[0].message;
    assert!(message.contains("two runs of seed"), "{message}");
    let lines: Vec<&str> = message.lines().collect();
    let first = lines.iter().find(|l| l.contains("first run:"));
    let second = lines.iter().find(|l| l.contains("second run:"));
    let (Some(first), Some(second)) = (first, second) else {
        panic!("no diverging events in: {message}");
    };
    assert!(
        first.contains("toy.runs") && second.contains("toy.runs"),
        "{message}"
    );
    assert_ne!(
        first.split("toy.runs").nth(1),
        second.split("toy.runs").nth(1)
    );
    assert_eq!(checked.exit_code(), 13);
    assert!(checked.table().contains("determinism checked"));
}

/// Every seed fails and is recorded: a 1 s budget once ran past 150 s (an unbounded
/// queue of results, each recorded by rewriting the seed file). Now the sweep ends within
/// one seed timeout of the budget, and the report agrees with the seed file.
#[test]
fn a_budget_ends_the_sweep_in_time_however_many_seeds_fail() {
    let dir = temp_dir("budget-failing");
    let budget = Duration::from_secs(1);
    let seed_timeout = Duration::from_secs(2);
    #[allow(
        clippy::disallowed_methods,
        reason = "the test measures a real sweep's wall time"
    )]
    let started = std::time::Instant::now();
    let report = run(
        &[toy("fails", Misbehaviour::AlwaysFails)],
        &options(50_000_000)
            .with_time_budget(budget)
            .with_seed_timeout(seed_timeout)
            .with_seeds_dir(dir.clone()),
    )
    .unwrap();
    let took = started.elapsed();
    // Generous slack for a loaded machine; before the fix this took minutes.
    let slack = Duration::from_secs(30);
    assert!(took < budget + seed_timeout + slack, "took {took:?}");
    assert!(!report.completed);
    assert_eq!(report.stopped.as_deref(), Some("time budget"));
    let fails = &report.scenarios[0];
    assert_eq!(fails.seeds_failed, report.runs_done, "every seed failed");
    let recorded = SeedCorpus::load(&dir.join("fails.seeds")).unwrap().seeds();
    assert_eq!(
        recorded.len() as u64,
        report.seeds_recorded,
        "the report agrees with the seed file"
    );
    if report.runs_done < umi_dst::constants::CORPUS_LINES_MAX as u64 {
        assert_eq!(
            report.seeds_recorded, report.runs_done,
            "every failing seed recorded"
        );
        let mut sorted = recorded.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            (1..=report.runs_done).collect::<Vec<u64>>(),
            "the runs done are the first ones"
        );
    }
    assert_eq!(
        report.resume.as_deref(),
        Some(
            format!(
                "dst sweep --seed-start 1 --seeds 50000000 --skip-runs {} --seed-timeout 2000ms --seeds-dir {}",
                report.runs_done,
                dir.display()
            )
            .as_str()
        )
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// An interrupt (what SIGINT and SIGTERM set in the `dst` command) stops the sweep as
/// the budget does, and the report says why and how to go on.
#[test]
fn an_interrupt_stops_the_sweep_like_the_budget() {
    let interrupt = Arc::new(std::sync::atomic::AtomicUsize::new(2));
    let report = run(
        &[
            toy("ok", Misbehaviour::None),
            toy("violates", Misbehaviour::Violation),
        ],
        &options(1_000_000).with_interrupt(interrupt),
    )
    .unwrap();
    assert!(!report.completed);
    assert!(report.runs_done < report.runs_planned);
    assert_eq!(report.stopped.as_deref(), Some("interrupted (SIGINT)"));
    assert_eq!(
        report.resume.as_deref(),
        Some(
            format!(
                "dst sweep --seed-start 1 --seeds 1000000 --skip-runs {} --no-record",
                report.runs_done
            )
            .as_str()
        )
    );
    assert!(
        report
            .table()
            .contains("stopped early: interrupted (SIGINT)")
    );
}

/// 400 failures: the report lists the 200 smallest seeds and says 200 more were cut and
/// where they all are; the groups and the JUnit counts cover all 400.
#[test]
fn more_failures_than_the_report_lists_are_counted_grouped_and_pointed_at() {
    let dir = temp_dir("truncated");
    let report = run(
        &[toy("violates", Misbehaviour::Violation)],
        &options(2_000).with_seeds_dir(dir.clone()),
    )
    .unwrap();
    let s = &report.scenarios[0];
    assert_eq!(s.seeds_failed, 400);
    assert_eq!(s.failures.len(), 200);
    assert_eq!(s.failures_truncated, 200);
    let listed: Vec<u64> = s.failures.iter().map(|f| f.seed).collect();
    assert_eq!(
        listed,
        (1..=200).map(|n| n * 5).collect::<Vec<u64>>(),
        "the smallest seeds"
    );
    let seeds_file = dir.join("violates.seeds").display().to_string();
    assert_eq!(s.seeds_file.as_deref(), Some(seeds_file.as_str()));
    assert_eq!(s.failure_groups.len(), 1, "{:?}", s.failure_groups);
    let group = &s.failure_groups[0];
    assert_eq!(
        (group.count, &group.key[..]),
        (400, "seed N is a multiple of N")
    );
    assert_eq!(group.seeds, [5, 10, 15, 20, 25]);
    let table = report.table();
    assert!(
        table.contains("violates: 400 x correctness seed 5 is a multiple of 5"),
        "{table}"
    );
    assert!(
        table.contains(&format!(
            "200 truncated); every failing seed is in {seeds_file}"
        )),
        "{table}"
    );
    assert_eq!(
        table.matches("replay:").count(),
        1,
        "one line per group, not per seed: {table}"
    );
    let junit = report.junit().unwrap();
    assert!(
        junit.contains("tests=\"2000\"") && junit.contains("failures=\"400\""),
        "{junit}"
    );
    assert_eq!(
        SeedCorpus::load(&dir.join("violates.seeds"))
            .unwrap()
            .seeds()
            .len(),
        400
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A scenario whose fault rule can fire nowhere (a typo in its filter).
struct Misfiltered;

impl Scenario for Misfiltered {
    fn name(&self) -> &'static str {
        "misfiltered"
    }

    fn goal(&self) -> &'static str {
        "a rule with a typo in its filter"
    }

    fn faults(&self) -> Vec<FaultConfig> {
        vec![
            FaultConfig::always(FaultKind::StorageReadFail)
                .with_filter(umi_dst::fault::OperationFilter::parse("storage.serch"))
                .unwrap(),
        ]
    }

    fn run(&self, _sim: SimEnvironment) -> LocalBoxFuture<'static, Result<(), Violation>> {
        Box::pin(async { Ok(()) })
    }
}

/// The sweep refuses a scenario whose rule can fire nowhere before any seed runs
/// (each seed once crashed on the invalid config and was recorded in `seeds/`).
#[test]
fn a_scenario_whose_rule_can_fire_nowhere_is_refused_before_any_seed() {
    let dir = temp_dir("misfiltered");
    let scenarios: Vec<Arc<dyn Scenario>> = vec![Arc::new(Misfiltered)];
    let error = run(&scenarios, &options(5).with_seeds_dir(dir.clone())).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("misfiltered") && text.contains("storage.serch"),
        "{text}"
    );
    assert!(
        !dir.join("misfiltered.seeds").exists(),
        "no seed was recorded"
    );
}

/// The options of a `resume` command a stopped sweep printed, on top of `base` (jobs,
/// progress, hashes).
fn resume_options(command: &str, base: &SweepOptions) -> SweepOptions {
    let mut options = base.clone();
    let mut words = command.split_whitespace().skip(2);
    while let Some(flag) = words.next() {
        let mut value = || {
            words
                .next()
                .unwrap_or_else(|| panic!("{flag} has no value"))
        };
        options = match flag {
            "--seed-start" => options.with_seed_start(value().parse().unwrap()),
            "--seeds" => options.with_seeds(value().parse().unwrap()),
            "--shard" => options.with_shard(umi_sweep::Shard::parse(value()).unwrap()),
            "--skip-runs" => options.with_skip_runs(value().parse().unwrap()),
            "--no-record" | "--hashes" => options,
            other => panic!("the resume command {command:?} has {other}, unknown to this test"),
        };
    }
    options
}

/// A budgeted sweep across shards merges complete once each cut shard's resume has run:
/// every (scenario, seed) run is counted once, none twice and none missing, as in the
/// same sweep run whole; without the resumes the merge names the runs that are missing.
/// A zero budget stops a shard at the sweep's first look at the clock, after only the
/// runs its workers took before it (a few, never thousands): no timing is asserted,
/// whatever any shard did is resumed.
#[test]
fn a_budgeted_sharded_sweep_merges_complete_with_its_resumes() {
    let scenarios = [
        toy("violates", Misbehaviour::Violation),
        toy("ok", Misbehaviour::None),
        toy("also_ok", Misbehaviour::None),
    ];
    let (seeds, shards) = (9_000u64, 3u64);
    let base = options(seeds).with_keep_hashes(true);
    let whole = run(&scenarios, &base).unwrap();
    let (mut cut, mut resumes) = (Vec::new(), Vec::new());
    for index in 1..=shards {
        let shard = umi_sweep::Shard::parse(&format!("{index}/{shards}")).unwrap();
        let options = base.clone().with_shard(shard);
        let report = run(&scenarios, &options.with_time_budget(Duration::ZERO)).unwrap();
        if let Some(command) = &report.resume {
            let resumed = run(&scenarios, &resume_options(command, &base)).unwrap();
            assert!(resumed.completed, "{command}");
            resumes.push(resumed);
        }
        cut.push(report);
    }
    assert!(
        cut.iter().any(|r| !r.completed),
        "a zero budget cut no shard"
    );

    let all: Vec<SweepReport> = cut.iter().chain(&resumes).cloned().collect();
    let coverage = umi_sweep::merge_check::check_shards(&all).unwrap();
    assert!(coverage.is_complete(), "{coverage:?}");
    let (merged, _) = umi_sweep::merge_check::merge(&all).unwrap();
    assert!(merged.completed);
    assert_eq!(merged.runs_done, whole.runs_done);
    assert_eq!(merged.runs_planned, whole.runs_planned);
    assert_eq!((merged.seed_start, merged.seeds), (1, seeds));
    let every_seed: BTreeSet<u64> = (1..=seeds).collect();
    for (merged, whole) in merged.scenarios.iter().zip(&whole.scenarios) {
        assert_eq!(merged.name, whole.name);
        assert_eq!(merged.seeds_run, seeds, "{}: each seed once", merged.name);
        let hashed: BTreeSet<u64> = merged.trace_hashes.keys().copied().collect();
        assert_eq!(hashed, every_seed, "{}: no seed missing", merged.name);
        assert_eq!(
            (
                merged.seeds_failed,
                &merged.trace_digest,
                &merged.trace_hashes
            ),
            (whole.seeds_failed, &whole.trace_digest, &whole.trace_hashes),
            "{}: the same runs as the whole sweep",
            merged.name
        );
    }

    // Without the resumes the shards do not merge complete, and the merge says which
    // runs of which shard are missing.
    let coverage = umi_sweep::merge_check::check_shards(&cut).unwrap();
    assert!(!coverage.is_complete());
    let first_cut = cut.iter().find(|r| !r.completed).unwrap();
    let said = coverage.describe_missing();
    assert!(said.contains(&first_cut.shards[0]), "{said}");
    assert!(
        said.contains(&format!("runs {}..", first_cut.runs_done)),
        "{said}"
    );
}
