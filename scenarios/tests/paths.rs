//! A path with no branch points is exactly its seed, pinned on scenarios' trace hashes
//! recorded before paths existed; a branch point changes the run after it.

use umi_dst::scenario::{run_one, run_path};
use umi_dst::{RunPath, Scenario};
use umi_scenarios::agent_loop_under_faults::AgentLoopUnderFaults;
use umi_scenarios::memory_no_data_loss::MemoryNoDataLoss;
use umi_scenarios::router_rate_limit_storm::RouterRateLimitStorm;

/// (scenario, seed, swarm, steps, trace hash), as `dst replay` printed them at commit
/// 8fde3b9, before runs were paths.
fn pinned() -> [(&'static dyn Scenario, u64, bool, u64, &'static str); 5] {
    [
        (
            &AgentLoopUnderFaults,
            7,
            false,
            223,
            "673028c46caa8035a3c569138dc15ee20eff3043b59789b6b1fbebf0f460d6a3",
        ),
        (
            &AgentLoopUnderFaults,
            7,
            true,
            223,
            "d78e8718647288010389c40ffdb0fd012566e79e0d7e9480225208d511999379",
        ),
        (
            &MemoryNoDataLoss,
            3,
            false,
            116,
            "2794c06a4bf73de1b01947886ace625d4bac6d639d0fb73c705a705046a5b752",
        ),
        (
            &MemoryNoDataLoss,
            3,
            true,
            97,
            "71d912dbd40b599aac917a9419cb665f75bbf8bd4100be2080259a4b88e14a70",
        ),
        (
            &RouterRateLimitStorm,
            11,
            false,
            653,
            "b8cc7cb2935337724782912b61c3d0cd3b292dbb03cb1b22dc4ca2a777c9384c",
        ),
    ]
}

#[test]
fn a_seed_alone_keeps_its_pinned_trace_hash() {
    for (scenario, seed, swarm, steps, hash) in pinned() {
        let name = scenario.name();
        let plain = run_one(scenario, seed, swarm, |config| config);
        let path = run_path(scenario, &RunPath::from_seed(seed), swarm, |config| config);
        // As a sweep runs it: no tail and no full trace, so every event is only hashed
        // (the trace's own path for that, issue 41): the same pinned hash.
        let hashed_only = run_one(scenario, seed, swarm, |mut config| {
            config.trace_tail_events = 0;
            config.trace_full = false;
            config
        });
        for run in [&plain, &path, &hashed_only] {
            assert!(run.passed(), "{name} {seed}: {:?}", run.failure);
            assert_eq!(
                run.trace_hash.to_string(),
                hash,
                "{name} seed {seed} swarm {swarm}"
            );
            assert_eq!(run.steps, steps, "{name} seed {seed} swarm {swarm}");
            assert_eq!(run.path, RunPath::from_seed(seed));
        }
    }
}

/// Branching halfway replays twice alike and differs from the seed.
#[test]
fn a_branch_halfway_changes_the_run_and_replays() {
    for (scenario, seed, swarm, steps, hash) in pinned() {
        let path: RunPath = format!("{seed}/{}:1", steps / 2).parse().unwrap();
        let first = run_path(scenario, &path, swarm, |config| config);
        let second = run_path(scenario, &path, swarm, |config| config);
        assert_eq!(
            first.trace_hash,
            second.trace_hash,
            "{} {path}",
            scenario.name()
        );
        assert_ne!(
            first.trace_hash.to_string(),
            hash,
            "{} {path}",
            scenario.name()
        );
        assert_eq!(first.path, path);
    }
}

fn dst(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_dst"))
        .args(args)
        .output()
        .unwrap()
}

/// `dst replay --path` runs the path (the hash `run_path` gives) and says so; a bad path
/// or a seed and a path together are refused by flag.
#[test]
fn dst_replay_takes_a_path() {
    let path: RunPath = "7/111:1".parse().unwrap();
    let expected = run_path(&AgentLoopUnderFaults, &path, false, |config| config);
    let output = dst(&[
        "replay",
        "--scenario",
        "agent_loop_under_faults",
        "--path",
        "7/111:1",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.starts_with("replay: agent_loop_under_faults path 7/111:1 (seed 0x7)"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("trace {}", expected.trace_hash)),
        "{stdout}"
    );
    assert!(stdout.contains("steering: "), "{stdout}");
    let bad = dst(&[
        "replay",
        "--scenario",
        "agent_loop_under_faults",
        "--path",
        "7/0:1",
    ]);
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success());
    assert!(
        stderr.contains("--path") && stderr.contains("path branch 1: step 0"),
        "{stderr}"
    );
    let both = dst(&[
        "replay",
        "--scenario",
        "tool_effects",
        "--seed",
        "7",
        "--path",
        "7/3:1",
    ]);
    assert!(!both.status.success());
    assert!(String::from_utf8_lossy(&both.stderr).contains("cannot be used with"));
}

/// `dst list` shows the steering marks a scenario declares, with their kinds.
#[test]
fn dst_list_shows_steering_marks() {
    let output = dst(&["list"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout
            .contains("  steering: retries in one turn (maximize), longest tool chain (maximize)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("deepest context fill (maximize)"),
        "{stdout}"
    );
}
