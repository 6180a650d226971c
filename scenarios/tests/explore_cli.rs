//! `dst explore` as users run it: bad flags and unknown scenarios refused by name (exit
//! 2), a run writing its JSON report, a canary's planted bug found with its replay line,
//! two shards sharing a frontier directory and merged with `--merge`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use umi_sweep::explore::{ExploreReport, StopReason};

fn dst(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dst"))
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("umi-explore-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn read(path: &Path) -> ExploreReport {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn bad_flags_and_unknown_scenarios_are_refused_by_name() {
    let dir = temp_dir("bad");
    let frontier = dir.to_str().unwrap();
    for (args, named) in [
        (vec!["--scenario", "no_such_scenario"], "no_such_scenario"),
        (
            vec![
                "--scenario",
                "canary",
                "--shard",
                "3/2",
                "--frontier",
                frontier,
            ],
            "3/2",
        ),
        (
            vec![
                "--scenario",
                "canary",
                "--shard",
                "x",
                "--frontier",
                frontier,
            ],
            "--shard",
        ),
        (vec!["--scenario", "canary", "--shard", "1/2"], "--frontier"),
        (vec!["--scenario", "canary", "--runs", "0"], "--runs"),
        (vec!["--scenario", "canary", "--budget", "0s"], "--budget"),
        (vec!["--merge", frontier], "no report"),
        (vec!["--runs", "5"], "--scenario"),
    ] {
        let output = dst(&[&["explore"], &args[..]].concat());
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
        let stderr = text(&output.stderr);
        assert!(stderr.contains(named), "{args:?}: {stderr}");
    }
    std::fs::write(dir.join("broken.json"), "{\"runs\": ").unwrap();
    let output = dst(&["explore", "--merge", frontier]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(text(&output.stderr).contains("broken.json"), "{output:?}");
}

#[test]
fn a_canary_is_found_with_its_replay_line_and_the_report_written() {
    let dir = temp_dir("canary");
    let report = dir.join("report.json");
    let output = dst(&[
        "explore",
        "--scenario",
        "canary",
        "--until-failure",
        "--runs",
        "2000",
        "--jobs",
        "1",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{output:?}");
    let stdout = text(&output.stdout);
    let written = read(&report);
    let failure = written.first_failure.as_ref().expect("the planted bug");
    assert_eq!(written.stopped, StopReason::FirstFailure);
    assert_eq!(written.runs, failure.run + 1);
    let replay = format!("replay: {}", failure.replay);
    assert!(stdout.contains(&replay), "{stdout}");
    assert!(
        failure
            .replay
            .contains(&format!("--scenario canary --path {}", failure.path))
    );
}

#[test]
fn shards_share_a_frontier_directory_and_merge() {
    let dir = temp_dir("shards");
    let frontier = dir.join("frontier");
    for shard in ["1/2", "2/2"] {
        let output = dst(&[
            "explore",
            "--scenario",
            "wire_faults",
            "--runs",
            "24",
            "--jobs",
            "1",
            "--shard",
            shard,
            "--frontier",
            frontier.to_str().unwrap(),
        ]);
        assert!(output.status.success(), "{shard}: {output:?}");
    }
    let first = read(&frontier.join("explore-wire_faults-1-of-2.json"));
    let second = read(&frontier.join("explore-wire_faults-2-of-2.json"));
    assert_eq!(second.shard.as_deref(), Some("2/2"));
    let merged_file = dir.join("merged.json");
    let output = dst(&[
        "explore",
        "--merge",
        frontier.to_str().unwrap(),
        "--report",
        merged_file.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{output:?}");
    let merged = read(&merged_file);
    assert_eq!(merged.runs, first.runs + second.runs);
    assert_eq!(merged.stopped, StopReason::Merged);
    for reached in first.reached.iter().chain(&second.reached) {
        assert!(
            merged.reached.iter().any(|r| r.target == reached.target),
            "{:?}",
            reached.target
        );
    }
    assert!(
        text(&output.stdout).contains("explore wire_faults: 48 runs"),
        "{output:?}"
    );
}
