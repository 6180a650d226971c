//! Same seed, same trace hash: within a process, and across processes.
//!
//! The cross-process test runs this very test binary twice as child processes, each
//! replaying one seed of `determinism::probe` with `DST_PRINT_HASH=1`, and compares the
//! hashes they print with each other and with the hash computed here. HashMap seeds,
//! addresses and thread ids differ between processes, so a leak of any of them into a
//! run shows up here.

use std::process::Command;

use umi_dst::simulation::settings::Settings;
use umi_dst::{FaultConfig, FaultKind, SimConfig, Simulation};

use crate::support::busy_workload;

const PROBE_SEED: u64 = 4242;

fn busy_faults() -> [FaultConfig; 3] {
    [
        FaultConfig::new(FaultKind::LlmRateLimit, 0.1).unwrap(),
        FaultConfig::new(FaultKind::ClockJump, 0.02).unwrap(),
        FaultConfig::new(FaultKind::LlmStreamCut, 0.2).unwrap(),
    ]
}

/// The workload the child processes replay; in a normal `cargo test` it runs on the
/// default seeds with the determinism check on.
#[test]
fn probe() {
    Simulation::from_env()
        .with_faults(busy_faults())
        .with_determinism_check(true)
        .run(busy_workload);
}

fn hash_in_child() -> String {
    let exe = std::env::current_exe().expect("test binary path");
    let output = Command::new(exe)
        .args([
            "determinism::probe",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("DST_SEED", PROBE_SEED.to_string())
        .env("DST_PRINT_HASH", "1")
        .env_remove("DST_CHECK_DETERMINISM")
        .env_remove("DST_TRACE")
        .output()
        .expect("spawn the test binary");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "child failed:\n{stderr}");
    let prefix = format!("umi-trace-hash seed={PROBE_SEED} hash=");
    stderr
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no hash line in child output:\n{stderr}"))
        .trim()
        .to_owned()
}

#[test]
fn same_seed_same_hash_across_processes() {
    let here = Simulation::new(SimConfig::new(PROBE_SEED))
        .with_faults(busy_faults())
        .try_run(busy_workload)
        .unwrap();
    let here = here.seeds[0].trace_hash.to_string();
    let first = hash_in_child();
    let second = hash_in_child();
    assert_eq!(first, second, "two processes, one seed, two traces");
    assert_eq!(first, here, "a child process and this one disagree");
}

#[test]
fn different_seeds_give_different_traces() {
    let summary = Simulation::new(SimConfig::new(0))
        .with_faults(busy_faults())
        .with_seeds([1, 2, 3])
        .try_run(busy_workload)
        .unwrap();
    let mut hashes: Vec<_> = summary.seeds.iter().map(|s| s.trace_hash).collect();
    hashes.dedup();
    assert_eq!(hashes.len(), 3);
    assert!(
        summary.seeds.iter().all(|s| s.events > 100),
        "the workload is busy"
    );
}

#[test]
fn default_seed_set_is_fixed() {
    let settings = Settings::from_lookup(|_| None).unwrap();
    let sim = Simulation::with_settings(settings);
    assert_eq!(sim.seeds(), [1, 2, 3, 4, 5, 6, 7, 8]);
}

/// Tripwire: serde_json's maps are sorted in this build. If a dependency turns on
/// `preserve_order`, test builds and the `dst` binary could order JSON keys differently
/// and a seed would not replay the same in both; SimLLM and the canonical request hash
/// sort keys themselves, and this test says when the rest of the workspace needs to.
#[test]
fn serde_json_maps_are_sorted() {
    let mut map = serde_json::Map::new();
    map.insert("b".into(), serde_json::json!(1));
    map.insert("a".into(), serde_json::json!(2));
    assert_eq!(
        serde_json::Value::Object(map).to_string(),
        r#"{"a":2,"b":1}"#,
        "serde_json's `preserve_order` is on in this build: a dependency turned it on \
         (rig-core does: umi-dst's `rig` feature, which must stay out of workspace builds; \
         `cargo tree -e features -i serde_json` names the one here)"
    );
}
