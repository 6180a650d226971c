//! The distributed path end to end, as the nightly runs it: one sweep split over 16
//! `dst sweep --shard i/16` processes, their JSON reports merged by
//! `dst merge --require-complete`, must equal the same sweep run once, seed for seed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use umi_sweep::groups::FAILURE_GROUPS_MAX;
use umi_sweep::{ScenarioReport, SweepReport};

/// How many shards, each its own `dst sweep` process.
const SHARD_COUNT: u32 = 16;
/// Shard processes running at once (kind to a two-core machine; each runs one worker).
const SHARD_PROCESSES_AT_ONCE_MAX: usize = 4;
/// Seeds per scenario over the whole range: three per shard. The canary's failures then
/// form fewer than `FAILURE_GROUPS_MAX` groups (each of its messages names a different
/// note id, so each failure is a group): past that limit which groups a report keeps
/// depends on the order failures arrive in, and merged groups differ from the unsharded
/// sweep's (a limitation `sweep::groups` documents).
const SWEEP_SEEDS: u64 = 48;
/// The range's first seed: not 1, so each shard's offset from the start is exercised.
const SWEEP_SEED_START: u64 = 1_000;
/// A scenario that fails on most seeds (so failing seeds are compared) and a real one.
const SWEEP_SCENARIOS: [&str; 2] = ["canary", "streaming_tool_calls"];
/// `dst sweep`'s exit codes a clean shard may end with: 0, or 20 when its slice of the
/// range holds no seed that finds the canary.
const SHARD_EXIT_CODES_CLEAN: [i32; 2] = [0, 20];

/// A `dst sweep` of the range writing its report (with per-seed hashes) to `report`.
fn sweep(report: &Path, shard: Option<u32>) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dst"));
    command
        .args(["sweep", "--seeds", &SWEEP_SEEDS.to_string()])
        .args(["--seed-start", &SWEEP_SEED_START.to_string()])
        .args(["--jobs", "1", "--quiet", "--no-record", "--hashes"])
        .arg("--check-determinism")
        .arg("--report")
        .arg(report)
        .stdin(Stdio::null());
    for scenario in SWEEP_SCENARIOS {
        command.args(["--scenario", scenario]);
    }
    if let Some(index) = shard {
        command.args(["--shard", &format!("{index}/{SHARD_COUNT}")]);
    }
    command
}

fn dst_merge(reports: &[PathBuf], output: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dst"))
        .arg("merge")
        .args(reports)
        .arg("--require-complete")
        .arg("--output")
        .arg(output)
        .output()
        .unwrap()
}

fn read_report(path: &Path) -> SweepReport {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// Runs the 16 shard processes, at most `SHARD_PROCESSES_AT_ONCE_MAX` at a time, and
/// returns their report paths in shard order.
fn run_shards(dir: &Path) -> Vec<PathBuf> {
    let indexes: Vec<u32> = (1..=SHARD_COUNT).collect();
    let mut reports = Vec::new();
    for batch in indexes.chunks(SHARD_PROCESSES_AT_ONCE_MAX) {
        let children: Vec<(u32, Child)> = batch
            .iter()
            .map(|&index| {
                let report = dir.join(format!("shard-{index}.json"));
                let child = sweep(&report, Some(index))
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                reports.push(report);
                (index, child)
            })
            .collect();
        for (index, child) in children {
            let output = child.wait_with_output().unwrap();
            assert!(
                output
                    .status
                    .code()
                    .is_some_and(|code| SHARD_EXIT_CODES_CLEAN.contains(&code)),
                "shard {index}/{SHARD_COUNT} exited {:?}:\n{}\n{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
    reports
}

/// What must be equal between a merged scenario and the unsharded one, besides the
/// failure groups: everything but wall time.
type Comparable<'a> = (
    &'a str,
    u64,
    u64,
    &'a BTreeMap<String, u64>,
    Vec<(u64, &'a str, &'a str, &'a str)>,
    &'a BTreeMap<u64, String>,
    &'a str,
    &'a BTreeMap<String, u64>,
    &'a BTreeMap<String, u64>,
    u64,
    &'a [u64],
);

fn comparable(scenario: &ScenarioReport) -> Comparable<'_> {
    (
        &scenario.name,
        scenario.seeds_run,
        scenario.seeds_failed,
        &scenario.failures_by_class,
        scenario
            .failures
            .iter()
            .map(|f| {
                (
                    f.seed,
                    f.class.as_str(),
                    f.message.as_str(),
                    f.replay.as_str(),
                )
            })
            .collect(),
        &scenario.trace_hashes,
        &scenario.trace_digest,
        &scenario.faults_injected,
        &scenario.marks_hit,
        scenario.sim_time_ms,
        &scenario.rule_reach,
    )
}

/// The shards' seeds, per scenario, add up to the unsharded sweep's (with the merged
/// hashes equal to the unsharded ones, no seed ran twice or never).
fn assert_each_seed_ran_in_one_shard(whole: &SweepReport, shards: &[SweepReport]) {
    for scenario in &whole.scenarios {
        let mut seeds_seen = 0;
        for shard in shards {
            let part = shard.scenarios.iter().find(|s| s.name == scenario.name);
            let part = part.unwrap_or_else(|| panic!("{} in {:?}", scenario.name, shard.shards));
            seeds_seen += part.trace_hashes.len();
        }
        assert_eq!(
            seeds_seen,
            scenario.trace_hashes.len(),
            "{}: every seed runs in exactly one shard",
            scenario.name
        );
    }
}

/// The merged report is the unsharded one but for wall time and the shard list.
fn assert_merged_equals_whole(merged: &SweepReport, whole: &SweepReport) {
    let all_shards: Vec<String> = (1..=SHARD_COUNT)
        .map(|i| format!("{i}/{SHARD_COUNT}"))
        .collect();
    assert_eq!(merged.shards, all_shards);
    assert!(merged.completed, "all 16 shards: complete");
    assert_eq!(
        (merged.seed_start, merged.seeds, merged.swarm),
        (whole.seed_start, whole.seeds, whole.swarm)
    );
    assert_eq!(
        (merged.runs_planned, merged.runs_done),
        (whole.runs_planned, whole.runs_done)
    );
    assert_eq!(merged.scenarios.len(), whole.scenarios.len());
    for (a, b) in merged.scenarios.iter().zip(&whole.scenarios) {
        assert_eq!(comparable(a), comparable(b), "{}", b.name);
        assert_eq!(
            a.failure_groups, b.failure_groups,
            "{}: failure groups",
            b.name
        );
    }
}

/// 16 shard processes merged give the unsharded sweep: the same counts, the same failing
/// seeds with the same messages and replay lines, the same per-seed trace hashes and
/// digests; each seed ran in exactly one shard; and without its last shard the merge
/// refuses to call itself complete.
#[test]
fn sixteen_shard_processes_merge_into_the_unsharded_sweep() {
    let dir = std::env::temp_dir().join(format!("umi-16-shards-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();

    let whole_path = dir.join("whole.json");
    let whole_output = sweep(&whole_path, None).output().unwrap();
    assert_eq!(
        whole_output.status.code(),
        Some(0),
        "the unsharded sweep: {}",
        String::from_utf8_lossy(&whole_output.stderr)
    );
    let whole = read_report(&whole_path);
    assert!(whole.completed);
    let failing: u64 = whole.scenarios.iter().map(|s| s.seeds_failed).sum();
    assert!(failing > 0, "the canary gives failing seeds to compare");
    for scenario in &whole.scenarios {
        assert!(
            scenario.failure_groups.len() < FAILURE_GROUPS_MAX && scenario.failures_ungrouped == 0,
            "{}: {} groups; keep the range under the group limit",
            scenario.name,
            scenario.failure_groups.len()
        );
    }

    let shard_paths = run_shards(&dir);
    let shards: Vec<SweepReport> = shard_paths.iter().map(|p| read_report(p)).collect();
    assert_each_seed_ran_in_one_shard(&whole, &shards);

    let merged_path = dir.join("merged.json");
    let merged_output = dst_merge(&shard_paths, &merged_path);
    assert_eq!(
        merged_output.status.code(),
        whole_output.status.code(),
        "dst merge exits as the unsharded sweep: {}{}",
        String::from_utf8_lossy(&merged_output.stdout),
        String::from_utf8_lossy(&merged_output.stderr)
    );
    assert_merged_equals_whole(&read_report(&merged_path), &whole);

    let incomplete = dst_merge(&shard_paths[..shard_paths.len() - 1], &merged_path);
    let stderr = String::from_utf8_lossy(&incomplete.stderr);
    assert_eq!(incomplete.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("16/16"),
        "the missing shard is named: {stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `dst` command's exit code and what it printed (stdout then stderr).
fn dst(args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_dst"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), said)
}

/// A shard stopped by its time budget and the `resume:` command it printed, run as the
/// command line says, merge with the other shard into the whole range, each run once;
/// without the resume `dst merge --require-complete` exits 2 naming the shard and the
/// runs not made. A zero budget stops the shard at the sweep's first look at the clock,
/// before its worker process has made more than a few of its 1,500 runs (no timing is
/// asserted: the resume runs whatever was left).
#[test]
fn a_budget_stopped_shard_and_its_resume_merge_complete() {
    let dir = std::env::temp_dir().join(format!("umi-budget-resume-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).display().to_string();
    let sweep = [
        "sweep",
        "--seeds",
        "3000",
        "--scenario",
        "canary",
        "--quiet",
        "--jobs",
        "1",
    ];
    let common = ["--no-record", "--hashes"];
    let (cut_path, other_path) = (path("cut.json"), path("other.json"));
    let shard_one = [
        "--shard",
        "1/2",
        "--time-budget",
        "0",
        "--report",
        &cut_path,
    ];
    let (_, said) = dst(&[&sweep[..], &common[..], &shard_one[..]].concat());
    let cut = read_report(&dir.join("cut.json"));
    assert!(!cut.completed, "a zero budget let the shard finish: {said}");
    let resume = cut.resume.clone().expect("a resume command");
    let shard_two = ["--shard", "2/2", "--report", &other_path];
    let (_, said) = dst(&[&sweep[..], &common[..], &shard_two[..]].concat());
    assert!(read_report(&dir.join("other.json")).completed, "{said}");

    let merge = |reports: &[&str]| {
        let mut args = vec!["merge", "--require-complete", "--output"];
        let merged = path("merged.json");
        args.push(&merged);
        let paths: Vec<String> = reports.iter().map(|r| path(r)).collect();
        args.extend(paths.iter().map(String::as_str));
        dst(&args)
    };
    let (code, said) = merge(&["cut.json", "other.json"]);
    assert_eq!(code, Some(2), "{said}");
    let gap = format!("shard 1/2: runs {}..1500 of 1500 not made", cut.runs_done);
    assert!(said.contains(&gap), "{gap}\n{said}");

    let mut args: Vec<&str> = resume.split_whitespace().skip(1).collect();
    let resumed_path = path("resumed.json");
    args.extend(["--quiet", "--jobs", "1", "--report", &resumed_path]);
    let (_, said) = dst(&args);
    assert!(
        read_report(&dir.join("resumed.json")).completed,
        "{resume}: {said}"
    );
    let (code, said) = merge(&["cut.json", "other.json", "resumed.json"]);
    assert!(matches!(code, Some(0 | 20)), "{said}");
    let merged = read_report(&dir.join("merged.json"));
    assert!(merged.completed, "{said}");
    let canary = &merged.scenarios[0];
    assert_eq!(canary.seeds_run, 3_000, "each seed once");
    assert_eq!(canary.trace_hashes.len(), 3_000, "no seed missing");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `dst size` answers with the committed rates, and `--shards` checks a count.
#[test]
fn dst_size_sizes_the_nightly_and_checks_its_shards() {
    let nightly = [
        "size",
        "--seeds",
        "400000",
        "--swarm-seeds",
        "100000",
        "--check-determinism",
        "--cores",
        "2",
        "--time-budget",
        "80m",
    ];
    let (code, said) = dst(&nightly);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("sqlite_no_data_loss"), "{said}");
    let shards: u64 = said
        .lines()
        .find_map(|line| line.strip_prefix("shards: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no shards line: {said}"));
    let check = |given: u64| {
        let given = given.to_string();
        dst(&[&nightly[..], &["--shards", given.as_str()][..]].concat()).0
    };
    assert_eq!(check(shards), Some(0));
    assert_eq!(check(shards - 1), Some(1));

    let rates = std::env::temp_dir().join(format!("umi-rates-{}.toml", std::process::id()));
    std::fs::write(&rates, "[canary]\nseeds_per_core_second = 100\n").unwrap();
    let rates_arg = rates.display().to_string();
    let (code, said) = dst(&[&nightly[..], &["--rates", rates_arg.as_str()][..]].concat());
    assert_ne!(code, Some(0));
    assert!(
        said.contains("no seeds_per_core_second for scenario"),
        "{said}"
    );
    let _ = std::fs::remove_file(&rates);
}
