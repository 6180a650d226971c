//! The sweep engine over the real scenarios and through the `dst` binary.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use umi_dst::corpus::SeedCorpus;
use umi_dst::scenario::run_one;
use umi_scenarios::canary::Canary;
use umi_sweep::minimize::minimize;
use umi_sweep::{ProgressStyle, Shard};
use umi_sweep::{SweepOptions, SweepReport, run};

/// Seeds per scenario in the engine checks below.
const SEEDS: u64 = 60;

fn options(jobs: usize) -> SweepOptions {
    SweepOptions::default()
        .with_seeds(SEEDS)
        .with_jobs(jobs)
        .with_keep_hashes(true)
        .with_progress(ProgressStyle::Quiet)
}

fn hashes(report: &SweepReport) -> BTreeMap<String, BTreeMap<u64, String>> {
    report
        .scenarios
        .iter()
        .map(|s| (s.name.clone(), s.trace_hashes.clone()))
        .collect()
}

/// The number of workers never changes a seed's run.
#[test]
fn jobs_1_and_jobs_2_give_identical_trace_hashes() {
    let one = run(&umi_scenarios::all(), &options(1)).unwrap();
    let two = run(&umi_scenarios::all(), &options(2)).unwrap();
    let (one_hashes, two_hashes) = (hashes(&one), hashes(&two));
    assert_eq!(
        one_hashes.values().map(BTreeMap::len).sum::<usize>(),
        umi_scenarios::all().len() * SEEDS as usize
    );
    assert_eq!(one_hashes, two_hashes);
    for (a, b) in one.scenarios.iter().zip(&two.scenarios) {
        assert_eq!(
            (a.trace_digest.as_str(), a.seeds_failed, &a.marks_hit),
            (b.trace_digest.as_str(), b.seeds_failed, &b.marks_hit),
            "{}",
            a.name
        );
    }
}

/// Shards 1/3, 2/3 and 3/3 run disjoint seed sets whose union is the unsharded set, with
/// identical results; merging their reports gives the unsharded digests and counts.
#[test]
fn shards_partition_the_seeds_with_identical_results() {
    let whole = run(&umi_scenarios::all(), &options(2)).unwrap();
    let mut shards = Vec::new();
    for index in 1..=3 {
        let shard = Shard::parse(&format!("{index}/3")).unwrap();
        shards.push(run(&umi_scenarios::all(), &options(2).with_shard(shard)).unwrap());
    }
    for scenario in &whole.scenarios {
        let mut union = BTreeMap::new();
        for shard in &shards {
            let part = &shard
                .scenarios
                .iter()
                .find(|s| s.name == scenario.name)
                .unwrap()
                .trace_hashes;
            for (seed, hash) in part {
                assert!(
                    union.insert(*seed, hash.clone()).is_none(),
                    "{}: seed {seed} in two shards",
                    scenario.name
                );
            }
        }
        assert_eq!(
            union, scenario.trace_hashes,
            "{}: the shards' seeds and hashes",
            scenario.name
        );
    }
    let merged = SweepReport::merge(&shards);
    assert_eq!(merged.shards, ["1/3", "2/3", "3/3"]);
    for (a, b) in merged.scenarios.iter().zip(&whole.scenarios) {
        assert_eq!(
            (a.seeds_run, a.seeds_failed, a.trace_digest.as_str()),
            (b.seeds_run, b.seeds_failed, b.trace_digest.as_str()),
            "{}",
            a.name
        );
        // The spend merges exactly: every percentile of the merged report is the whole
        // sweep's, not an average of the shards'.
        assert_eq!(a.usage, b.usage, "{}: usage distributions", a.name);
    }
    let tokens = whole.scenarios[0]
        .usage
        .get("tokens")
        .expect("tokens counted");
    assert_eq!(tokens.count, SEEDS);
}

/// A `--trials` sweep runs each task k times on its shard; the shards' pass^k counts,
/// per class and flaky tasks merge into the unsharded sweep's; the flaky tasks' failing
/// trial seeds replay as failures.
#[test]
fn trials_give_pass_k_that_merges_across_shards() {
    let scenarios = umi_scenarios::all();
    let trials = |shard: Option<Shard>| {
        let mut options = options(2)
            .with_seeds(12)
            .with_trials(4)
            .with_scenarios(vec![
                "router_rate_limit_storm".into(),
                "canary_lost_update".into(),
            ]);
        if let Some(shard) = shard {
            options = options.with_shard(shard);
        }
        run(&scenarios, &options).unwrap()
    };
    let whole = trials(None);
    assert_eq!(whole.runs_done, 12 * 4 * 2);
    let merged = SweepReport::merge(&[
        trials(Some(Shard::parse("1/2").unwrap())),
        trials(Some(Shard::parse("2/2").unwrap())),
    ]);
    for (a, b) in merged.scenarios.iter().zip(&whole.scenarios) {
        assert_eq!(a.trials, b.trials, "{}", a.name);
        let report = b.trials.as_ref().expect("a trials report");
        assert_eq!((report.k, report.all.tasks()), (4, 12), "{}", b.name);
    }
    // The canary fails in some trials of some tasks: those are flaky and replay as failures.
    let canary = whole
        .scenarios
        .iter()
        .find(|s| s.name == "canary_lost_update")
        .unwrap();
    let report = canary.trials.as_ref().unwrap();
    assert!(
        report.all.pass_hat(4) < report.all.pass_at(4),
        "{}",
        report.summary()
    );
    let flaky = report.flaky.first().expect("a flaky task");
    let seed = flaky.failed_seeds[0];
    assert_eq!(umi_dst::usage::split_seed(seed).task, flaky.task);
    let scenario = scenarios
        .iter()
        .find(|s| s.name() == "canary_lost_update")
        .unwrap();
    assert!(
        run_one(scenario.as_ref(), seed, false, |c| c)
            .failure
            .is_some()
    );
}

/// `dst minimize` over a cassette as over SimLLM: the cassette drift canary's failing
/// seed shrinks to a smaller schedule that still fails, and without its faults the
/// recorded conversation is kept (the planted bug needs a retry).
#[test]
fn minimizing_a_failure_over_a_cassette_keeps_a_failing_smaller_schedule() {
    use umi_scenarios::canary_cassette_drift::CanaryCassetteDrift;
    let seed = (1..=100)
        .find(|&seed| {
            run_one(&CanaryCassetteDrift, seed, false, |c| c)
                .failure
                .is_some()
        })
        .expect("the cassette drift canary is found within 100 seeds");
    let found = minimize(&CanaryCassetteDrift, seed, false).unwrap();
    assert!(
        found.message.contains("differs at $.metadata"),
        "{}",
        found.message
    );
    assert!(
        !found.minimal.is_empty() && found.minimal.len() <= found.original.len(),
        "{found:?}"
    );
    let only = found.minimal.clone();
    let replayed = run_one(&CanaryCassetteDrift, seed, false, move |mut config| {
        config.only_injections = Some(only);
        config
    });
    assert_eq!(replayed.failure.map(|(class, _)| class), Some(found.class));
    let without = run_one(&CanaryCassetteDrift, seed, false, |mut config| {
        config.only_injections = Some(Vec::new());
        config
    });
    assert!(
        without.failure.is_none(),
        "fault-free, the recording is followed"
    );
}

fn first_failing_canary_seed() -> u64 {
    (1..=100)
        .find(|&seed| run_one(&Canary, seed, false, |c| c).failure.is_some())
        .expect("the canary is found within 100 seeds")
}

/// Minimization keeps the failure with fewer faults, and the bug needs at least one.
#[test]
fn minimizing_the_canary_keeps_a_failing_smaller_schedule() {
    let seed = first_failing_canary_seed();
    let found = minimize(&Canary, seed, false).unwrap();
    assert!(
        !found.minimal.is_empty() && found.minimal.len() <= found.original.len(),
        "{found:?}"
    );
    let only = found.minimal.clone();
    let replayed = run_one(&Canary, seed, false, move |mut config| {
        config.only_injections = Some(only);
        config
    });
    assert_eq!(
        replayed.failure.map(|(class, _)| class),
        Some(found.class),
        "the minimal schedule still fails"
    );
    let without = run_one(&Canary, seed, false, |mut config| {
        config.only_injections = Some(Vec::new());
        config
    });
    assert!(
        without.failure.is_none(),
        "without faults the planted bug stays hidden"
    );
}

/// `dst replay --trace` prints the failure and the whole trace with simulated
/// timestamps, and exits with the failure class's code.
#[test]
fn dst_replay_prints_the_trace_and_exits_by_class() {
    let seed = first_failing_canary_seed();
    let output = Command::new(env!("CARGO_BIN_EXE_dst"))
        .args([
            "replay",
            "--scenario",
            "canary",
            "--seed",
            &seed.to_string(),
            "--trace",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(10), "{stdout}");
    assert!(
        stdout.contains("FAILED (correctness): lost write"),
        "{stdout}"
    );
    assert!(stdout.contains("trace (all "), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with("[") && l.contains("s] #")),
        "timestamped events: {stdout}"
    );
    assert!(
        stdout.contains(&format!("dst minimize --scenario canary --seed {seed}")),
        "{stdout}"
    );
    let listed = Command::new(env!("CARGO_BIN_EXE_dst"))
        .arg("list")
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    for scenario in umi_scenarios::all() {
        assert!(listed.contains(scenario.name()), "{listed}");
    }
}

/// A sweep killed mid-run (SIGKILL) leaves every seed file parseable and a report that
/// says how far it got.
#[test]
fn a_killed_sweep_leaves_parseable_seeds_and_a_partial_report() {
    let dir = std::env::temp_dir().join(format!("umi-killed-sweep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("seeds")).unwrap();
    let report_path = dir.join("report.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_dst"))
        .args([
            "sweep",
            "--seeds",
            "1000000",
            "--jobs",
            "2",
            "--quiet",
            "--record-canary",
            "--scenario",
            "canary",
            "--scenario",
            "memory_no_data_loss",
        ])
        .arg("--seeds-dir")
        .arg(dir.join("seeds"))
        .arg("--report")
        .arg(&report_path)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let recorded = |dir: &Path| {
        SeedCorpus::load(&dir.join("seeds/canary.seeds"))
            .map(|c| c.seeds().len())
            .unwrap_or(0)
    };
    // Kill it once it has recorded some seeds and rewritten its report at least once.
    let mut waited = Duration::ZERO;
    while waited < Duration::from_secs(120)
        && (recorded(&dir) < 20 || read_report(&report_path).is_none_or(|r| r.runs_done == 0))
    {
        #[allow(
            clippy::disallowed_methods,
            reason = "the test waits in real time for a real process"
        )]
        std::thread::sleep(Duration::from_millis(100));
        waited += Duration::from_millis(100);
    }
    child.kill().unwrap();
    let _ = child.wait();
    for entry in std::fs::read_dir(dir.join("seeds")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "seeds") {
            SeedCorpus::load(&path).unwrap_or_else(|error| panic!("{error}"));
        }
    }
    assert!(recorded(&dir) >= 20, "the canary's seeds were recorded");
    let report = read_report(&report_path).expect("the report survives the kill");
    assert!(
        !report.completed,
        "the report says the sweep did not complete"
    );
    assert!(
        report.runs_done > 0 && report.runs_done < report.runs_planned,
        "{} of {}",
        report.runs_done,
        report.runs_planned
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Ctrl-C (SIGINT) stops a sweep as its time budget does: the runs in flight finish,
/// the table, the JSON report (incomplete, with why) and the JUnit are written, the
/// command that resumes the range is printed, and the exit code is 130 (128 + SIGINT).
#[test]
fn an_interrupted_sweep_writes_its_reports_and_says_how_to_resume() {
    let dir = std::env::temp_dir().join(format!("umi-interrupted-sweep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (report_path, junit_path) = (dir.join("report.json"), dir.join("junit.xml"));
    let child = Command::new(env!("CARGO_BIN_EXE_dst"))
        .args(["sweep", "--seeds", "1000000", "--jobs", "2", "--quiet"])
        .args(["--scenario", "canary", "--scenario", "memory_no_data_loss"])
        .arg("--seeds-dir")
        .arg(dir.join("seeds"))
        .arg("--report")
        .arg(&report_path)
        .arg("--junit")
        .arg(&junit_path)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The report is written once the handlers are installed and the sweep has begun.
    let mut waited = Duration::ZERO;
    while waited < Duration::from_secs(120) && read_report(&report_path).is_none() {
        #[allow(
            clippy::disallowed_methods,
            reason = "the test waits in real time for a real process"
        )]
        std::thread::sleep(Duration::from_millis(100));
        waited += Duration::from_millis(100);
    }
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(130), "{stdout}");
    let report = read_report(&report_path).expect("a parseable report");
    assert!(!report.completed);
    assert!(report.runs_done < report.runs_planned);
    assert_eq!(report.stopped.as_deref(), Some("interrupted (SIGINT)"));
    let resume = format!(
        "resume: dst sweep --seed-start 1 --seeds 1000000 --skip-runs {} --scenario canary --scenario memory_no_data_loss --seeds-dir {}",
        report.runs_done,
        dir.join("seeds").display()
    );
    assert!(stdout.contains(&resume), "{resume}\n{stdout}");
    assert!(
        stdout.contains("(incomplete)") && stdout.contains("stopped early: interrupted (SIGINT)"),
        "{stdout}"
    );
    let junit = std::fs::read_to_string(&junit_path).expect("the JUnit is written");
    assert!(
        junit.contains(&format!(
            "<testsuite name=\"canary\" tests=\"{}\"",
            report.scenarios[0].seeds_run
        )),
        "{junit}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn read_report(path: &Path) -> Option<SweepReport> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Arguments that once ran a sweep that tested nothing, or misread, are refused with exit
/// code 2 and a line naming the flag; the largest seed is accepted as `DST_SEED_START`
/// accepts it.
#[test]
fn dst_refuses_arguments_that_cannot_work() {
    let dst = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_dst"))
            .args(args)
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let refused: &[(&[&str], &str)] = &[
        (&["sweep", "--seeds", "0", "--no-record"], "--seeds"),
        (
            &["sweep", "--seed-timeout", "0", "--no-record"],
            "--seed-timeout",
        ),
        (
            &[
                "sweep",
                "--time-budget",
                "99999999999999999h",
                "--no-record",
            ],
            "--time-budget",
        ),
        (
            &["sweep", "--time-budget", "1000000h", "--no-record"],
            "30 days",
        ),
        (
            &[
                "replay",
                "--scenario",
                "canary",
                "--seed",
                "1",
                "--only",
                "7:99",
            ],
            "7:99 is not an injection",
        ),
    ];
    let bad_prices =
        std::env::temp_dir().join(format!("umi-bad-prices-{}.toml", std::process::id()));
    std::fs::write(
        &bad_prices,
        "[models.m]\ninput = 1\ncached_input = 1\noutput = -2\nreasoning = 1\n",
    )
    .unwrap();
    let bad_prices_arg = bad_prices.display().to_string();
    let refused_prices: &[(&[&str], &str)] = &[
        (
            &["sweep", "--prices", &bad_prices_arg, "--no-record"],
            ":4: models.\"m\".output: -2 is negative",
        ),
        (
            &[
                "sweep",
                "--prices",
                "/nonexistent/prices.toml",
                "--no-record",
            ],
            "--prices: price table /nonexistent/prices.toml: cannot read it",
        ),
        (&["sweep", "--trials", "0", "--no-record"], "--trials"),
        (
            &[
                "sweep",
                "--trials",
                "2",
                "--seed-start",
                "0x7fffffffffff",
                "--seeds",
                "2",
                "--no-record",
            ],
            "past the last task",
        ),
    ];
    for (args, named) in refused.iter().chain(refused_prices) {
        let (code, stderr) = dst(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(named), "{args:?} names {named}: {stderr}");
    }
    let (code, stderr) = dst(&[
        "sweep",
        "--scenario",
        "canary",
        "--seeds",
        "1",
        "--seed-start",
        "18446744073709551615",
        "--no-record",
        "--quiet",
    ]);
    assert!(
        matches!(code, Some(0 | 10..=20)),
        "the largest seed is a seed (exit {code:?}): {stderr}"
    );

    let unwritable = std::env::temp_dir().join("umi-no-such-dir/deeper/report.json");
    let (code, stderr) = dst(&[
        "sweep",
        "--scenario",
        "canary",
        "--seeds",
        "2",
        "--no-record",
        "--quiet",
        "--report",
        unwritable.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "an unwritten report is an error: {stderr}");
    assert!(stderr.contains("--report"), "{stderr}");
}

/// A `dst` built without debug assertions refuses to run seeds unless told, and says
/// how to build it and which flag overrides; one built with them (the `sim` profile,
/// and the test profile this binary shares with `dst`) runs, the flag changing nothing.
#[test]
fn dst_runs_seeds_only_with_debug_assertions_unless_told() {
    let dst = |extra: &[&str]| {
        let mut args = vec!["replay", "--scenario", "tool_effects", "--seed", "1"];
        args.extend_from_slice(extra);
        let output = Command::new(env!("CARGO_BIN_EXE_dst"))
            .args(&args)
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, stderr) = dst(&[]);
    if cfg!(debug_assertions) {
        assert_eq!(code, Some(0), "{stderr}");
        assert!(!stderr.contains("debug assertions"), "{stderr}");
    } else {
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains("--allow-no-debug-assertions"), "{stderr}");
        assert!(stderr.contains("--profile sim"), "{stderr}");
    }
    let (code, stderr) = dst(&["--allow-no-debug-assertions"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stderr.contains("without debug assertions"),
        !cfg!(debug_assertions),
        "{stderr}"
    );
}
