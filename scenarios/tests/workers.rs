//! Seeds in worker processes, through the real `dst` binary and the planted crashes
//! (`umi_scenarios::planted_crashes`): a seed that aborts, overflows its stack, exits
//! or allocates without bound costs one worker process; the sweep names it as a crash
//! with the signal or exit status, records it, and runs the rest. A seed that never
//! yields is killed as a hang by the sweep, and fails `dst replay` and
//! `Simulation::run` with its name instead of hanging them. A second Ctrl-C ends the
//! sweep and its workers with it; an outer memory limit lower than `--seed-memory-max`
//! is the one a crash names. Runs travel to a worker in batches: a crash or hang inside
//! one is still named by its own seed, and a worker killed from outside is reported.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use umi_dst::Simulation;
use umi_dst::corpus::SeedCorpus;
use umi_scenarios::planted_crashes::{Crash, crash_on_even_seeds};
use umi_sweep::SweepReport;

/// How long a `dst` run of these tests may take before the test gives up on it (a
/// guard against the hang these tests exist to prevent, not a measurement).
const DST_RUN_WAIT_MAX: Duration = Duration::from_secs(120);

/// Poll interval while waiting for a `dst` run.
const DST_RUN_POLL: Duration = Duration::from_millis(50);

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("umi-workers-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `command` to its end, killing it (and failing the test) if it outlives
/// [`DST_RUN_WAIT_MAX`].
fn run_bounded(command: &mut Command) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut waited = Duration::ZERO;
    while child.try_wait().unwrap().is_none() {
        if waited > DST_RUN_WAIT_MAX {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "still running after {DST_RUN_WAIT_MAX:?} (it hangs): {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        #[allow(
            clippy::disallowed_methods,
            reason = "the test waits in real time for a real process"
        )]
        std::thread::sleep(DST_RUN_POLL);
        waited += DST_RUN_POLL;
    }
    child.wait_with_output().unwrap()
}

/// The `dst` binary, run directly.
fn dst() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dst"))
}

/// `dst sweep` of seeds 1 to 4 of `planted` and the canary, in worker processes, with a
/// report and a seed corpus in `dir`, started by `dst` (the binary, or a command that
/// runs it); returns the exit code and the report.
fn sweep_with(
    mut dst: Command,
    planted: &str,
    dir: &Path,
    extra: &[&str],
) -> (Option<i32>, SweepReport) {
    let report_path = dir.join("report.json");
    let output = run_bounded(
        dst.args(["sweep", "--seeds", "4", "--jobs", "2", "--quiet"])
            .args(["--scenario", planted, "--scenario", "canary"])
            .args(extra)
            .arg("--seeds-dir")
            .arg(dir.join("seeds"))
            .arg("--report")
            .arg(&report_path),
    );
    let report = std::fs::read_to_string(&report_path)
        .ok()
        .and_then(|text| serde_json::from_str::<SweepReport>(&text).ok())
        .unwrap_or_else(|| {
            panic!(
                "{planted}: no report; the sweep ended with {:?}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            )
        });
    (output.status.code(), report)
}

/// The sweep went on past the crashing seeds: every run done, the even seeds of the
/// planted scenario failed with `class` and a message containing each of `says` and none
/// of `says_not`, its odd seeds passed, the canary ran all its seeds, and the crashes
/// were recorded.
fn assert_named_and_recorded(
    planted: &str,
    class: &str,
    says: &[&str],
    extra: &[&str],
    says_not: &[&str],
) {
    assert_named_and_recorded_by(dst(), planted, class, says, extra, says_not);
}

/// [`assert_named_and_recorded`], the sweep started by `dst`.
fn assert_named_and_recorded_by(
    dst: Command,
    planted: &str,
    class: &str,
    says: &[&str],
    extra: &[&str],
    says_not: &[&str],
) {
    let dir = temp_dir(planted);
    let (code, report) = sweep_with(dst, planted, &dir, extra);
    let table = report.table();
    assert!(report.completed, "{table}");
    assert_eq!(report.runs_done, 8, "{table}");
    let entry = &report.scenarios[0];
    assert_eq!((entry.seeds_run, entry.seeds_failed), (4, 2), "{table}");
    let seeds: Vec<u64> = entry.failures.iter().map(|f| f.seed).collect();
    assert_eq!(seeds, [2, 4], "{table}");
    for failure in &entry.failures {
        assert_eq!(failure.class, class, "{table}");
        for part in says {
            assert!(
                failure.message.contains(part),
                "{part:?}: {}",
                failure.message
            );
        }
        for part in says_not {
            assert!(
                !failure.message.contains(part),
                "{part:?} should not be said: {}",
                failure.message
            );
        }
        assert!(
            failure.replay.contains(&format!(
                "replay --scenario {planted} --seed {}",
                failure.seed
            )),
            "{}",
            failure.replay
        );
    }
    assert_eq!(report.scenarios[1].seeds_run, 4, "the canary ran: {table}");
    let expected_code = if class == "crash" { 11 } else { 12 };
    assert_eq!(code, Some(expected_code), "{table}");
    let corpus = SeedCorpus::load(&dir.join(format!("seeds/{planted}.seeds"))).unwrap();
    let mut recorded = corpus.seeds();
    recorded.sort_unstable();
    assert_eq!(recorded, [2, 4], "recorded as the sweep's failures");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_seed_that_aborts_costs_one_worker_and_is_named() {
    assert_named_and_recorded(
        "planted_abort",
        "crash",
        &["signal 6 (SIGABRT)", "planted: aborting"],
        &[],
        &[],
    );
}

#[test]
fn a_seed_that_overflows_its_stack_costs_one_worker_and_is_named() {
    assert_named_and_recorded(
        "planted_stack_overflow",
        "crash",
        &["stack overflow", "SIGABRT"],
        &[],
        &[],
    );
}

#[test]
fn a_seed_that_exits_the_process_costs_one_worker_and_is_named() {
    assert_named_and_recorded("planted_exit", "crash", &["exit status 3"], &[], &[]);
}

/// Pins the planted forged result (`planted_forged_result`, seeds 2 and 4): a worker
/// whose seed writes a result line that is not a result is ended by the sweep, and its
/// seed's crash says so. Before, the sweep's own kill read as "killed by signal 9
/// (SIGKILL); killed from outside the sweep, perhaps by the kernel's out-of-memory
/// killer".
#[test]
fn a_seed_that_forges_a_result_line_is_named_and_its_worker_ended_by_the_sweep() {
    assert_named_and_recorded(
        "planted_forged_result",
        "crash",
        &[
            "a worker sent a result line that is not a result",
            "the worker process running the seed ended by the sweep",
            "broke the worker protocol",
        ],
        &[],
        &["SIGKILL", "outside the sweep"],
    );
}

#[test]
fn a_seed_that_allocates_without_bound_meets_the_memory_limit() {
    assert_named_and_recorded(
        "planted_unbounded_allocation",
        "crash",
        &[
            "out of memory: memory allocation of",
            "--seed-memory-max 256MiB",
        ],
        &["--seed-memory-max", "256MiB"],
        &[],
    );
}

/// Under an outer address-space limit lower than `--seed-memory-max` (here `prlimit`'s,
/// 1.4GiB, under the default 4GiB), the crash names the limit in force, not the flag's.
#[test]
#[cfg(target_os = "linux")]
fn under_a_lower_outer_limit_the_crash_names_the_limit_in_force() {
    let mut prlimit = Command::new("prlimit");
    prlimit
        .arg("--as=1500000000")
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_dst"));
    assert_named_and_recorded_by(
        prlimit,
        "planted_unbounded_allocation",
        "crash",
        &[
            "out of memory: memory allocation of",
            "the limit per worker is 1.4GiB (an outer limit, lower than --seed-memory-max 4GiB)",
        ],
        &[],
        &[],
    );
}

#[test]
fn a_busy_looping_seed_is_killed_as_a_hang_and_the_sweep_goes_on() {
    assert_named_and_recorded(
        "planted_busy_loop",
        "liveness",
        &["no result after 1.0 s of wall time"],
        &["--seed-timeout", "1s"],
        &[],
    );
}

/// `dst sweep` of seeds 1 to `seeds` of `planted` and the canary in worker processes,
/// `extra` added: the report.
fn sweep_many(planted: &str, seeds: u64, extra: &[&str]) -> SweepReport {
    let dir = temp_dir(&format!("{planted}-many"));
    let report_path = dir.join("report.json");
    let output = run_bounded(
        dst()
            .args([
                "sweep",
                "--seeds",
                &seeds.to_string(),
                "--jobs",
                "2",
                "--quiet",
            ])
            .args(["--scenario", planted, "--scenario", "canary", "--no-record"])
            .args(extra)
            .arg("--report")
            .arg(&report_path),
    );
    let report = std::fs::read_to_string(&report_path)
        .ok()
        .and_then(|text| serde_json::from_str::<SweepReport>(&text).ok())
        .unwrap_or_else(|| panic!("{planted}: no report: {output:?}"));
    let _ = std::fs::remove_dir_all(&dir);
    report
}

/// Runs travel to a worker process in batches once its driver has seen how long they
/// take (`umi-sweep/src/batch.rs`). Regression for issue 41's fifth round: the worker
/// writes a batch's results together, so an abort in a batch loses its earlier runs'
/// results too; the driver runs them again one at a time, and every even seed is named
/// as the crash, with no odd seed blamed and none lost, over enough runs that most of
/// them travel in batches.
#[test]
fn a_crash_inside_a_batch_is_named_by_its_own_seed() {
    let report = sweep_many("planted_abort", 40, &[]);
    let table = report.table();
    assert!(report.completed, "{table}");
    assert_eq!(report.runs_done, 80, "{table}");
    let planted = &report.scenarios[0];
    let seeds: Vec<u64> = planted.failures.iter().map(|f| f.seed).collect();
    let even: Vec<u64> = (1..=40).filter(|seed| seed % 2 == 0).collect();
    assert_eq!(seeds, even, "{table}");
    assert!(
        planted
            .failures
            .iter()
            .all(|f| f.class == "crash" && f.message.contains("planted: aborting")),
        "{table}"
    );
    assert_eq!(report.scenarios[1].seeds_run, 40, "the canary ran: {table}");
}

/// A batch past the seed timeout is killed without a report, and its runs go again one
/// at a time: the hang is reported by the seed that hangs, not the batch's first run.
#[test]
fn a_hang_inside_a_batch_is_named_by_its_own_seed() {
    let report = sweep_many("planted_busy_loop", 12, &["--seed-timeout", "1s"]);
    let table = report.table();
    assert!(report.completed, "{table}");
    assert_eq!(report.runs_done, 24, "{table}");
    let planted = &report.scenarios[0];
    let seeds: Vec<u64> = planted.failures.iter().map(|f| f.seed).collect();
    assert_eq!(seeds, [2, 4, 6, 8, 10, 12], "{table}");
    assert!(
        planted.failures.iter().all(|f| f.class == "liveness"),
        "{table}"
    );
    let canary = &report.scenarios[1];
    assert_eq!(canary.seeds_run, 12, "{table}");
    // The canary's seeds share batches with the hanging ones: none is blamed for them.
    assert!(
        canary.failures.iter().all(|f| f.class == "correctness"),
        "{table}"
    );
}

/// A recorded hanging seed fails `dst replay` with its name and exit 12 instead of
/// hanging it.
#[test]
fn dst_replay_of_a_busy_looping_seed_fails_with_its_name() {
    let output = run_bounded(
        Command::new(env!("CARGO_BIN_EXE_dst"))
            .args(["replay", "--scenario", "planted_busy_loop", "--seed", "2"])
            .env("DST_SEED_TIMEOUT", "1s"),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(12), "{stderr}");
    assert!(
        stderr.contains("replay of seed 2 of planted_busy_loop is still running after 1.0 s"),
        "{stderr}"
    );
    assert!(
        stderr.contains("replay: dst replay --scenario planted_busy_loop --seed 2"),
        "{stderr}"
    );
}

/// `dst minimize` and `dst find` run seeds in their own process too: a busy-looping seed
/// ends them with its name and exit 12 instead of hanging them.
#[test]
fn dst_minimize_and_find_of_a_busy_looping_seed_fail_with_its_name() {
    let cases: [(&[&str], &str); 2] = [
        (
            &["minimize", "--scenario", "planted_busy_loop", "--seed", "2"],
            "replay of seed 2 of planted_busy_loop is still running after 1.0 s",
        ),
        (
            &[
                "find",
                "--scenario",
                "planted_busy_loop",
                "--faults",
                "llm.timeout",
                "--seed-start",
                "2",
            ],
            "seed 2 of planted_busy_loop (dst find) is still running after 1.0 s",
        ),
    ];
    for (args, says) in cases {
        let output = run_bounded(
            Command::new(env!("CARGO_BIN_EXE_dst"))
                .args(args)
                .env("DST_SEED_TIMEOUT", "1s"),
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(12), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(
            stderr.contains("replay: dst replay --scenario planted_busy_loop --seed 2"),
            "{args:?}: {stderr}"
        );
    }
}

/// Set by [`simulation_run_of_a_busy_looping_seed_fails_with_its_name`] for the test it
/// runs in a child process: without it that test passes at once.
const PLANTED_HANG_VAR: &str = "UMI_TEST_PLANTED_HANG";

/// The body `Simulation::run` hangs in (run only by the test below, in a child process).
#[test]
#[ignore = "run by simulation_run_of_a_busy_looping_seed_fails_with_its_name"]
fn planted_busy_loop_under_simulation_run() {
    if std::env::var_os(PLANTED_HANG_VAR).is_none() {
        return;
    }
    Simulation::from_env()
        .with_seeds(1..=2)
        .run(|sim| crash_on_even_seeds(sim, Crash::BusyLoop));
}

/// A `cargo test` whose seed never yields fails naming the seed and its replay command,
/// instead of hanging the test binary.
#[test]
fn simulation_run_of_a_busy_looping_seed_fails_with_its_name() {
    let output = run_bounded(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "workers::planted_busy_loop_under_simulation_run",
            ])
            .env(PLANTED_HANG_VAR, "1")
            .env("DST_SEED_TIMEOUT", "1s")
            .env_remove("DST_SEED")
            .env_remove("DST_SEEDS")
            .env_remove("DST_SEED_START"),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(12), "{output:?}");
    assert!(
        stderr.contains("seed 2 is still running after 1.0 s of wall time"),
        "{stderr}"
    );
    assert!(stderr.contains("replay: DST_SEED=2 "), "{stderr}");
}

/// Worker processes never change a seed's run: the same sweep in process and in worker
/// processes gives the same trace hash for every seed.
#[test]
fn worker_processes_and_threads_give_identical_trace_hashes() {
    let dir = temp_dir("identical");
    let sweep = |extra: &[&str], name: &str| {
        let path = dir.join(name);
        let output = run_bounded(
            Command::new(env!("CARGO_BIN_EXE_dst"))
                .args([
                    "sweep", "--seeds", "30", "--jobs", "2", "--quiet", "--hashes",
                ])
                .args([
                    "--scenario",
                    "memory_no_data_loss",
                    "--scenario",
                    "wire_faults",
                ])
                .args(["--no-record", "--report"])
                .arg(&path)
                .args(extra),
        );
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        serde_json::from_str::<SweepReport>(&std::fs::read_to_string(&path).unwrap()).unwrap()
    };
    let processes = sweep(&[], "processes.json");
    let threads = sweep(&["--in-process"], "threads.json");
    assert!(processes.worker_round_trips > 0);
    assert_eq!(threads.worker_round_trips, 0);
    for (a, b) in processes.scenarios.iter().zip(&threads.scenarios) {
        assert_eq!(a.trace_hashes.len(), 30, "{}", a.name);
        assert_eq!(a.trace_hashes, b.trace_hashes, "{}", a.name);
        assert_eq!(
            (&a.trace_digest, &a.marks_hit, &a.faults_injected),
            (&b.trace_digest, &b.marks_hit, &b.faults_injected),
            "{}",
            a.name
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Worker processes take their runs in batches once they have seen one finish
/// (`umi-sweep/src/batch.rs`): fewer round trips than runs. These two canaries' runs
/// take 80 to 200 µs, so a batch of about 16 ms holds several even on a machine many
/// times slower.
#[test]
fn worker_processes_take_runs_in_batches() {
    let report = sweep_many("canary_lost_update", 200, &[]);
    assert_eq!(report.runs_done, 400);
    assert!(
        report.worker_round_trips > 0 && report.worker_round_trips < report.runs_done,
        "{} round trips for {} runs",
        report.worker_round_trips,
        report.runs_done
    );
}

/// A worker killed from outside in the middle of a batch (`kill -KILL`, as the kernel's
/// OOM killer would) costs no run: the batch runs again one run at a time and every run
/// gets its result. Which run it hit cannot be known, so the death is reported for the
/// whole batch, and the sweep exits as a crash (11), as it did when a run took a worker
/// with it.
#[test]
#[cfg(target_os = "linux")]
fn a_worker_killed_from_outside_is_reported_and_costs_no_run() {
    let dir = temp_dir("killed");
    let report_path = dir.join("report.json");
    let mut sweep = dst()
        .args([
            "sweep",
            "--seeds",
            "100000",
            "--jobs",
            "2",
            "--scenario",
            "canary",
        ])
        .args(["--quiet", "--no-record", "--report"])
        .arg(&report_path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let workers = proc_scan::wait_for_workers(sweep.id(), 2, DST_RUN_WAIT_MAX);
    real_sleep(Duration::from_secs(1)); // past the first runs: whole batches
    let sent = Command::new("kill")
        .args(["-KILL", &workers[0].to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let mut waited = Duration::ZERO;
    let status = loop {
        if let Some(status) = sweep.try_wait().unwrap() {
            break status;
        }
        assert!(waited < DST_RUN_WAIT_MAX, "the sweep did not end");
        real_sleep(DST_RUN_POLL);
        waited += DST_RUN_POLL;
    };
    let report: SweepReport =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    let table = report.table();
    assert!(report.completed, "{table}");
    assert_eq!(report.runs_done, 100_000, "{table}");
    assert_eq!(report.worker_deaths_unexplained.len(), 1, "{table}");
    let death = &report.worker_deaths_unexplained[0];
    assert!(death.contains("signal 9 (SIGKILL)"), "{death}");
    assert!(death.contains("seeds of canary"), "{death}");
    assert!(
        report.scenarios[0]
            .failures
            .iter()
            .all(|f| f.class == "correctness"),
        "no run was blamed: {table}"
    );
    assert_eq!(status.code(), Some(11), "{table}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A second Ctrl-C ends `dst sweep` at once (exit 130), and its worker processes end
/// with it: one second later none is left, though both were busy-looping (their own
/// watchdog would have waited twice the seed timeout).
#[test]
#[cfg(target_os = "linux")]
fn a_second_ctrl_c_ends_the_sweep_and_its_workers() {
    let mut sweep = dst()
        .args(["sweep", "--seed-start", "2", "--seeds", "3", "--jobs", "2"])
        .args(["--scenario", "planted_busy_loop", "--seed-timeout", "60s"])
        .args(["--quiet", "--no-record"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let workers = proc_scan::wait_for_workers(sweep.id(), 2, DST_RUN_WAIT_MAX);
    real_sleep(Duration::from_secs(1)); // seeds 2 and 4 reach their loops
    for _ in 0..2 {
        let sent = Command::new("kill")
            .args(["-INT", &sweep.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        real_sleep(Duration::from_millis(300));
    }
    let mut waited = Duration::ZERO;
    let status = loop {
        if let Some(status) = sweep.try_wait().unwrap() {
            break status;
        }
        assert!(
            waited < DST_RUN_WAIT_MAX,
            "a second Ctrl-C did not end the sweep"
        );
        real_sleep(DST_RUN_POLL);
        waited += DST_RUN_POLL;
    };
    real_sleep(Duration::from_secs(1));
    let alive: Vec<u32> = workers
        .into_iter()
        .filter(|pid| proc_scan::is_live_worker(*pid))
        .collect();
    for pid in &alive {
        // Not left spinning by a failed test.
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert!(
        alive.is_empty(),
        "worker processes {alive:?} outlived the sweep by a second"
    );
}

/// Sleeps in real time (a test waiting for real processes).
fn real_sleep(duration: Duration) {
    #[allow(
        clippy::disallowed_methods,
        reason = "the test waits in real time for real processes"
    )]
    std::thread::sleep(duration);
}

/// Sweep worker processes, as `/proc` shows them (Linux).
#[cfg(target_os = "linux")]
mod proc_scan {
    use std::time::Duration;

    /// What marks a worker's command line.
    const WORKER_COMMAND: &str = "__sweep-worker";

    /// The state letter and parent of process `pid` (`/proc/<pid>/stat`).
    fn state_and_parent(pid: u32) -> Option<(char, u32)> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // "pid (comm) S ppid ...": the command may hold spaces and parentheses.
        let mut fields = stat.get(stat.rfind(')')? + 1..)?.split_whitespace();
        let state = fields.next()?.chars().next()?;
        let parent = fields.next()?.parse().ok()?;
        Some((state, parent))
    }

    fn is_worker_command(pid: u32) -> bool {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|line| String::from_utf8_lossy(&line).contains(WORKER_COMMAND))
    }

    /// Whether `pid` is a sweep worker still running (not a zombie awaiting its reaper).
    pub(super) fn is_live_worker(pid: u32) -> bool {
        state_and_parent(pid).is_some_and(|(state, _)| state != 'Z') && is_worker_command(pid)
    }

    /// The live worker processes whose parent is `parent`.
    fn workers_of(parent: u32) -> Vec<u32> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| state_and_parent(*pid).is_some_and(|(_, of)| of == parent))
            .filter(|pid| is_live_worker(*pid))
            .collect()
    }

    /// Waits until `parent` has `count` live workers and returns them (fails the test
    /// after `wait_max`).
    pub(super) fn wait_for_workers(parent: u32, count: usize, wait_max: Duration) -> Vec<u32> {
        let mut waited = Duration::ZERO;
        loop {
            let workers = workers_of(parent);
            if workers.len() >= count {
                return workers;
            }
            assert!(
                waited < wait_max,
                "{parent} has {} worker(s), not {count}",
                workers.len()
            );
            super::real_sleep(super::DST_RUN_POLL);
            waited += super::DST_RUN_POLL;
        }
    }
}
