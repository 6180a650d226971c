//! A scenario is one declaration (issue 42): `src/scenario.rs` declares `weather_agent`
//! with `#[umi_dst::scenario]`, and nothing else names it. The `agent-dst` binary hands
//! the command `umi_dst::scenario::registered()`, no list of its own, yet `agent-dst
//! list` lists the scenario and `agent-dst sweep` sweeps it.

use std::process::Command;

/// The binary under test: this crate's `dst`.
const AGENT_DST: &str = env!("CARGO_BIN_EXE_agent-dst");

/// Seeds the sweep runs (few: the point is that it runs the scenario at all).
const SWEEP_SEEDS: u64 = 3;

#[test]
fn a_scenario_declared_in_one_file_is_listed_and_swept() {
    let binary: String = include_str!("../src/bin/dst.rs")
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        !binary.contains("weather") && !binary.contains("Scenario"),
        "the binary names no scenario: it takes the registry's\n{binary}"
    );
    let listed = Command::new(AGENT_DST).arg("list").output().unwrap();
    assert!(listed.status.success(), "{listed:?}");
    let listed = String::from_utf8(listed.stdout).unwrap();
    assert!(
        listed
            .starts_with("weather_agent\n  the async-openai agent never answers from a cut stream")
            && listed.contains("  marks: wire.reset_mid_stream\n"),
        "`agent-dst list` shows the declared scenario, its goal and its marks:\n{listed}"
    );
    let report = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("declared-sweep-{}.json", std::process::id()));
    let swept = Command::new(AGENT_DST)
        .args(["sweep", "--seeds", &SWEEP_SEEDS.to_string(), "--jobs", "1"])
        .args(["--quiet", "--no-record", "--report"])
        .arg(&report)
        .output()
        .unwrap();
    assert!(swept.status.success(), "{swept:?}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let scenarios = report["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 1, "{report}");
    assert_eq!(scenarios[0]["name"], "weather_agent", "{report}");
    assert_eq!(scenarios[0]["seeds_run"], SWEEP_SEEDS, "{report}");
}

/// The sweep records where the replay test reads: `agent-dst sweep` run in this crate
/// would record a failing seed into the seeds directory `weather_agent`'s generated
/// replay test replays (this crate's own `seeds/`), found by one rule
/// (`umi_dst::corpus::find_seeds_dir`) from the working directory on one side and from
/// the crate on the other. Before, the sweep recorded into the workspace's `seeds/`
/// while the replay read this crate's: a recorded seed was never replayed.
#[test]
fn the_sweep_records_where_the_replay_test_reads() {
    let manifest_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let replayed = umi_dst::corpus::find_seeds_dir(manifest_dir).unwrap();
    assert_eq!(
        replayed,
        manifest_dir.join("seeds"),
        "the crate keeps its own seeds/, and its replay test reads them"
    );
    let report = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("declared-record-{}.json", std::process::id()));
    // Recording on (no --no-record), over seeds that pass: nothing is written, and the
    // report says where a failing seed would have gone.
    let swept = Command::new(AGENT_DST)
        .current_dir(manifest_dir.join("src"))
        .args(["sweep", "--seeds", &SWEEP_SEEDS.to_string(), "--jobs", "1"])
        .args(["--quiet", "--report"])
        .arg(&report)
        .output()
        .unwrap();
    assert!(swept.status.success(), "{swept:?}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(report["seeds_recorded"], 0, "{report}");
    assert_eq!(
        report["seeds_dir"].as_str().map(std::path::PathBuf::from),
        Some(replayed),
        "{report}"
    );
}
