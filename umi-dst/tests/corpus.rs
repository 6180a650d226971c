//! The seed corpus replayed through the runner, and bad input at the edges.

use std::process::Command;

use umi_dst::simulation::settings::Settings;
use umi_dst::{SimConfig, Simulation, Violation};

fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("umi-dst-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn corpus_seeds_run_after_the_default_range() {
    let path = temp_file(
        "replay.seeds",
        "1000  # correctness: pinned\n3 # already in range\n0x7d1\n",
    );
    let sim =
        Simulation::with_settings(Settings::from_lookup(|_| None).unwrap()).with_corpus(&path);
    assert_eq!(sim.seeds(), [1, 2, 3, 4, 5, 6, 7, 8, 1000, 2001]);
    let seen = std::sync::Mutex::new(Vec::new());
    sim.try_run(|env| {
        seen.lock().unwrap().push(env.seed());
        async { Ok::<(), Violation>(()) }
    })
    .unwrap();
    assert_eq!(*seen.lock().unwrap(), sim.seeds());
}

#[test]
fn dst_seed_replays_only_that_seed() {
    let path = temp_file("ignored.seeds", "1000\n");
    let settings =
        Settings::from_lookup(|name| (name == "DST_SEED").then(|| "77".to_owned())).unwrap();
    let sim = Simulation::with_settings(settings)
        .with_corpus(&path)
        .with_seeds(0..5);
    assert_eq!(sim.seeds(), [77]);
}

#[test]
fn a_corrupt_corpus_names_file_and_line() {
    let path = temp_file("corrupt.seeds", "5\n6\n12x  # typo\n");
    let error = Simulation::new(SimConfig::new(1))
        .try_with_corpus(&path)
        .unwrap_err();
    let message = error.to_string();
    assert!(message.contains("corrupt.seeds:3"), "{message}");
    assert!(message.contains("12x"), "{message}");
}

/// Runs `self_test::canary_passes_without_faults`'s sibling probe below in a child
/// process with `DST_SEED=abc`.
#[test]
fn bad_dst_seed_is_a_one_line_error_without_backtrace() {
    let exe = std::env::current_exe().unwrap();
    let output = Command::new(exe)
        .args([
            "corpus::from_env_probe",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("DST_SEED", "abc")
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = "error: DST_SEED=\"abc\": is not a seed (expected a decimal or 0x-hex integer";
    assert!(stderr.contains(line), "stderr:\n{stderr}");
    assert!(
        !stderr.contains("panicked at"),
        "no panic location:\n{stderr}"
    );
    assert!(
        !stderr.contains("stack backtrace"),
        "no backtrace:\n{stderr}"
    );
    assert!(
        stdout.contains("from_env_probe ... FAILED"),
        "stdout:\n{stdout}"
    );
}

/// Reads `DST_*` like any simulation test; the test above runs it with a bad value.
#[test]
fn from_env_probe() {
    let sim = Simulation::from_env();
    assert!(!sim.seeds().is_empty());
}
