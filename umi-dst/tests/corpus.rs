//! The seed corpus replayed through the runner, and bad input at the edges.

use std::process::Command;

use umi_dst::fault::point;
use umi_dst::simulation::settings::Settings;
use umi_dst::{FaultConfig, FaultKind, RunError, SimConfig, Simulation};

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
    sim.try_run(|env: umi_dst::SimEnvironment| {
        seen.lock().unwrap().push(env.seed());
        async { Ok(()) }
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

/// A seed a swarm sweep kept is replayed in swarm mode (and, being in the range too,
/// also plainly): replayed only plainly, most such seeds once passed, testing nothing.
#[test]
fn kept_seeds_replay_in_the_mode_they_were_found_in() {
    let path = temp_file(
        "modes.seeds",
        "5 swarm expect=correctness  # from a swarm sweep\n",
    );
    let rule = FaultConfig::chance(FaultKind::StorageWriteFail, 0.1);
    let sim = Simulation::with_settings(Settings::from_lookup(|_| None).unwrap())
        .with_fault(rule)
        .with_corpus(&path);
    assert_eq!(sim.seeds(), [1, 2, 3, 4, 5, 6, 7, 8, 5]);
    let swarmed = std::sync::Mutex::new(Vec::new());
    sim.try_run(|env: umi_dst::SimEnvironment| {
        swarmed
            .lock()
            .unwrap()
            .push((env.seed(), !env.swarm_draws().is_empty()));
        let env = env.clone();
        async move {
            env.fault(&point::STORAGE_WRITE);
            Ok(())
        }
    })
    .unwrap();
    let runs = swarmed.into_inner().unwrap();
    assert_eq!(runs.iter().filter(|(seed, _)| *seed == 5).count(), 2);
    assert_eq!(
        runs.last(),
        Some(&(5, true)),
        "the kept run is in swarm mode"
    );
    assert!(
        runs[..8].iter().all(|(_, swarm)| !swarm),
        "the range runs plainly"
    );
}

/// A kept seed whose replay no longer injects the faults it was kept for fails the run as
/// stale, naming the file, the line and the command that finds a replacement.
#[test]
fn a_kept_seed_that_no_longer_reaches_its_faults_is_stale() {
    let path = temp_file(
        "stale.seeds",
        "# kept\n3 expect=correctness faults=storage.write_fail  # lost write\n",
    );
    let sim = Simulation::with_settings(Settings::from_lookup(|_| None).unwrap())
        .with_seeds([1])
        .with_corpus(&path);
    let error = sim.try_run(|_env| async { Ok(()) }).unwrap_err();
    let RunError::Stale(stale) = &error else {
        panic!("expected stale seeds, got {error}");
    };
    assert_eq!(stale.seeds.len(), 1);
    assert_eq!(stale.seeds[0].line, 2);
    let text = error.to_string();
    assert!(
        text.contains("stale.seeds:2: seed 3 injected storage.write_fail"),
        "{text}"
    );
    assert!(
        text.contains("dst find --scenario stale --faults storage.write_fail"),
        "{text}"
    );

    // The same seed still reaching its fault passes.
    let reaching = Simulation::with_settings(Settings::from_lookup(|_| None).unwrap())
        .with_seeds([1])
        .with_fault(FaultConfig::always(FaultKind::StorageWriteFail))
        .with_corpus(&path);
    reaching
        .try_run(|env: umi_dst::SimEnvironment| async move {
            env.fault(&point::STORAGE_WRITE);
            Ok(())
        })
        .unwrap();
}

/// `DST_SEEDS` and `DST_SEED_START` win over a test's own `.with_seeds(..)` (as
/// `PROPTEST_CASES` does); without them the test's seeds run.
#[test]
fn the_range_from_the_environment_wins_over_with_seeds() {
    let from_env =
        Settings::from_lookup(|name| (name == "DST_SEEDS").then(|| "3".to_owned())).unwrap();
    let sim = Simulation::with_settings(from_env).with_seeds(100..110);
    assert_eq!(sim.seeds(), [1, 2, 3]);
    let plain =
        Simulation::with_settings(Settings::from_lookup(|_| None).unwrap()).with_seeds(100..103);
    assert_eq!(plain.seeds(), [100, 101, 102]);
    let from_env =
        Settings::from_lookup(|name| (name == "DST_SEEDS").then(|| "3".to_owned())).unwrap();
    let fixed = Simulation::with_settings(from_env).with_fixed_seeds(100..103);
    assert_eq!(
        fixed.seeds(),
        [100, 101, 102],
        "a test whose range is its point keeps it"
    );
}

/// The largest seed is a seed: `DST_SEED_START=18446744073709551615` runs it (the range
/// once overflowed computing its end).
#[test]
fn the_range_ends_at_the_largest_seed() {
    let start = Settings::from_lookup(|name| {
        (name == "DST_SEED_START").then(|| "18446744073709551615".to_owned())
    })
    .unwrap();
    assert_eq!(Simulation::with_settings(start).seeds(), [u64::MAX]);
}

/// A seed kept for nondeterminism is replayed twice and compared, or it would pass
/// (run once, a nondeterministic seed looks like any other).
#[test]
fn a_kept_nondeterminism_seed_is_run_twice() {
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let path = temp_file(
        "nondeterminism.seeds",
        "42 expect=nondeterminism  # global state\n",
    );
    let sim = Simulation::with_settings(Settings::from_lookup(|_| None).unwrap())
        .with_seeds(std::iter::empty())
        .with_corpus(&path);
    let error = sim
        .try_run(|env: umi_dst::SimEnvironment| {
            let runs = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            async move {
                env.trace().record("test.runs", format_args!("{runs}"));
                Ok(())
            }
        })
        .unwrap_err();
    let RunError::Failed(report) = error else {
        panic!("expected a failure, got {error}");
    };
    assert_eq!(
        report.class,
        umi_dst::failure_class::FailureClass::Nondeterminism
    );
    assert!(report.replay_command().contains("DST_CHECK_DETERMINISM=1"));
}

/// `Simulation::run` inside a tokio runtime (a `#[tokio::test]`) is a usage error that
/// says how to write the test, not a crash of seed 1.
#[test]
fn a_simulation_inside_a_runtime_is_a_usage_error() {
    // A runtime built by hand: what this test is about is a simulation started inside one.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let error = runtime.block_on(async {
        Simulation::new(SimConfig::new(1))
            .try_run(|_env| async { Ok(()) })
            .unwrap_err()
    });
    assert!(matches!(error, RunError::Config(_)), "{error}");
    assert!(error.to_string().contains("plain #[test]"), "{error}");
}

fn recorder_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("umi-recorder-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A recorder appends each seed once, keeps what was there (a last line without `\n`
/// included), and its lines read back with their words.
#[test]
fn a_recorder_appends_once_and_keeps_the_existing_lines() {
    use umi_dst::corpus::{AppendOutcome, CorpusRecorder, SeedCorpus, SeedMeaning};
    let dir = recorder_dir("append");
    let path = dir.join("demo.seeds");
    std::fs::write(&path, "# kept\n7  # old").unwrap();
    let mut recorder = CorpusRecorder::open(&path).unwrap();
    assert!(recorder.contains(7, &SeedMeaning::default()));
    let meaning = SeedMeaning::parse("swarm expect=crash").unwrap();
    assert_eq!(
        recorder.record(9, &meaning, "crash: boom").unwrap(),
        AppendOutcome::Added
    );
    assert_eq!(
        recorder.record(9, &meaning, "again").unwrap(),
        AppendOutcome::AlreadyPresent
    );
    assert_eq!(
        recorder
            .record(7, &SeedMeaning::default(), "again")
            .unwrap(),
        AppendOutcome::AlreadyPresent
    );
    assert_eq!(
        recorder.record(7, &meaning, "in swarm mode").unwrap(),
        AppendOutcome::Added,
        "a seed is kept once per mode"
    );
    recorder.record(10, &SeedMeaning::default(), "").unwrap();
    recorder.sync().unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "# kept\n7  # old\n9 swarm expect=crash  # crash: boom\n7 swarm expect=crash  # in swarm mode\n10\n"
    );
    assert_eq!(SeedCorpus::load(&path).unwrap().seeds(), [7, 9, 7, 10]);
    let _ = std::fs::remove_dir_all(dir);
}

/// A power loss between syncs can leave a last line without its `\n`: loading names the
/// line and says so; a recorder turns it into a comment (no text lost) and goes on.
#[test]
fn a_torn_last_line_is_named_on_load_and_repaired_by_a_recorder() {
    use umi_dst::corpus::{CorpusRecorder, SeedCorpus, SeedMeaning};
    let dir = recorder_dir("torn");
    let path = dir.join("torn.seeds");
    std::fs::write(&path, "5  # correctness: x\n12 swa").unwrap();
    let error = SeedCorpus::load(&path).unwrap_err().to_string();
    assert!(
        error.contains("torn.seeds:2") && error.contains("no newline"),
        "{error}"
    );
    let mut recorder = CorpusRecorder::open(&path).unwrap();
    recorder.record(6, &SeedMeaning::default(), "c").unwrap();
    drop(recorder);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        "5  # correctness: x\n# torn line (a write cut short), kept as a comment: 12 swa\n6  # c\n"
    );
    assert_eq!(SeedCorpus::load(&path).unwrap().seeds(), [5, 6]);
    // A whole bad line is a person's typo: an error, and the file is not touched.
    std::fs::write(&path, "5\nseven\n").unwrap();
    assert!(CorpusRecorder::open(&path).is_err());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "5\nseven\n");
    let _ = std::fs::remove_dir_all(dir);
}

/// Two recorders on one file (two shards of a sweep recording into one `seeds/`), each
/// with overlapping seeds, plus a single append in between: every seed once, every line
/// whole.
#[test]
fn concurrent_recorders_write_each_seed_once_and_no_torn_line() {
    use umi_dst::corpus::{CorpusRecorder, SeedCorpus, SeedMeaning};
    let dir = recorder_dir("concurrent");
    let path = dir.join("shared.seeds");
    let seeds_each = 400u64;
    std::thread::scope(|scope| {
        for worker in 0..2u64 {
            let path = path.clone();
            #[allow(clippy::disallowed_methods, reason = "two writers, as two processes")]
            scope.spawn(move || {
                let mut recorder = CorpusRecorder::open(&path).unwrap();
                for i in 0..seeds_each {
                    // Both writers try 0..seeds_each, in opposite orders.
                    let seed = if worker == 0 { i } else { seeds_each - 1 - i };
                    recorder
                        .record(seed, &SeedMeaning::default(), &format!("writer {worker}"))
                        .unwrap();
                }
            });
        }
    });
    SeedCorpus::append(&path, 100_000, "single").unwrap();
    let mut late = CorpusRecorder::open(&path).unwrap();
    SeedCorpus::append(&path, 100_001, "appended after the recorder opened").unwrap();
    let outcome = late
        .record(100_001, &SeedMeaning::default(), "again")
        .unwrap();
    assert_eq!(outcome, umi_dst::corpus::AppendOutcome::AlreadyPresent);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.ends_with('\n'));
    let corpus = SeedCorpus::load(&path).unwrap();
    assert_eq!(corpus.seeds().len(), seeds_each as usize + 2);
    assert_eq!(
        text.lines().count(),
        seeds_each as usize + 2,
        "no seed written twice"
    );
    for line in text.lines() {
        assert!(
            line.ends_with("writer 0")
                || line.ends_with("writer 1")
                || line.contains("single")
                || line.contains("appended"),
            "{line:?}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A recorder stops at the loader's line limit with a typed error (a file it made
/// longer could no longer be loaded).
#[test]
fn a_recorder_stops_at_the_line_limit() {
    use umi_dst::constants::CORPUS_LINES_MAX;
    use umi_dst::corpus::{CorpusError, CorpusRecorder, SeedCorpus, SeedMeaning};
    let dir = recorder_dir("limit");
    let path = dir.join("full.seeds");
    let text: String = (0..CORPUS_LINES_MAX as u64 - 1)
        .map(|seed| format!("{seed}\n"))
        .collect();
    std::fs::write(&path, text).unwrap();
    let mut recorder = CorpusRecorder::open(&path).unwrap();
    let last = CORPUS_LINES_MAX as u64;
    recorder.record(last, &SeedMeaning::default(), "").unwrap();
    assert!(matches!(
        recorder.record(last + 1, &SeedMeaning::default(), ""),
        Err(CorpusError::TooLong { .. })
    ));
    assert_eq!(
        SeedCorpus::load(&path).unwrap().seeds().len(),
        CORPUS_LINES_MAX
    );
    let _ = std::fs::remove_dir_all(dir);
}
