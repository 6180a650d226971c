//! The harness catching planted bugs of every failure class, and replaying them.

use std::future::pending;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use umi_dst::fault::point;
use umi_dst::simulation::panic_message;
use umi_dst::simulation::report::profile_flag;
use umi_dst::{FailureClass, FaultConfig, FaultKind, RunError, SimConfig, Simulation, Violation};

use crate::support::lossy_store_workload;

fn write_faults() -> FaultConfig {
    FaultConfig::chance(FaultKind::StorageWriteFail, 0.05)
}

fn expect_failure(result: Result<umi_dst::RunSummary, RunError>) -> Box<umi_dst::FailureReport> {
    match result {
        Err(RunError::Failed(report)) => report,
        Err(other) => panic!("expected a seed failure, got {other}"),
        Ok(summary) => panic!("the planted bug survived {} seeds", summary.seeds.len()),
    }
}

/// The canary: the lossy store's planted bug must be found within 100 seeds, and the
/// failure must replay exactly from the seed in its report.
#[test]
fn canary_is_found_and_replays_exactly() {
    let sweep = Simulation::new(SimConfig::new(0))
        .with_fault(write_faults())
        .with_seeds(0..100);
    let report = expect_failure(sweep.try_run(lossy_store_workload));
    assert_eq!(report.class, FailureClass::Correctness);
    assert!(report.message.contains("was lost"), "{}", report.message);
    assert!(report.injections_total >= 1);

    // Replay: the seed alone, from the report, gives the same failure and trace.
    let replay = Simulation::new(sweep.config_for(report.seed));
    let again = expect_failure(replay.try_run(lossy_store_workload));
    assert_eq!((again.seed, again.class), (report.seed, report.class));
    assert_eq!(again.message, report.message);
    assert_eq!(again.trace_hash, report.trace_hash);
    assert_eq!(again.tail, report.tail);
}

/// The report names the seed, the class, the faults in force, the last events and the
/// exact command that replays this test.
#[test]
fn report_ends_with_the_replay_command() {
    let sweep = Simulation::new(SimConfig::new(0))
        .with_fault(write_faults())
        .with_seeds(0..100);
    let report = expect_failure(sweep.try_run(lossy_store_workload));
    let text = report.to_string();
    // `make sweep-tests` runs this test built in the `sim-tests` profile: the replay line then
    // names it (it once expected the `dev` line whatever the profile, and failed there).
    let profile = profile_flag(&std::env::current_exe().unwrap())
        .map(|flag| format!(" {flag}"))
        .unwrap_or_default();
    let command = format!(
        "DST_SEED={} cargo test{profile} -p umi-dst --test main -- \
         self_test::report_ends_with_the_replay_command --exact --nocapture",
        report.seed
    );
    assert!(text.contains(&command), "{text}");
    assert!(text.contains("storage.write_fail p=0.05"), "{text}");
    assert!(text.contains("class:     correctness"), "{text}");
    assert!(
        text.contains("store.write_failed"),
        "the tail shows the fault's event:\n{text}"
    );
}

/// `run` (the panicking form) fails the test with the replay command in the payload.
#[test]
fn run_fails_the_test_with_the_seed() {
    let sweep = Simulation::new(SimConfig::new(0))
        .with_fault(write_faults())
        .with_seeds(0..100);
    let payload = catch_unwind(AssertUnwindSafe(|| sweep.run(lossy_store_workload))).unwrap_err();
    let message = panic_message(&*payload);
    assert!(
        message.starts_with("simulation failed (correctness) on seed "),
        "{message}"
    );
    assert!(message.contains("replay: DST_SEED="), "{message}");
}

/// Without the fault the same workload passes every seed: the canary is the fault
/// meeting the bug, not a broken workload.
#[test]
fn canary_passes_without_faults() {
    let clean = Simulation::new(SimConfig::new(0)).with_seeds(0..20);
    let summary = clean.try_run(lossy_store_workload).unwrap();
    assert_eq!(summary.seeds.len(), 20);
}

/// A panic in the code under test is a crash, with the panic message.
#[test]
fn panics_are_crashes() {
    let sim = Simulation::new(SimConfig::new(3))
        .with_fault(FaultConfig::always(FaultKind::LlmServiceUnavailable));
    let report = expect_failure(sim.try_run(async |sim| {
        if sim.fault(&point::LLM_CALL).is_some() {
            panic!("unhandled 503 from the model");
        }
        Ok(())
    }));
    assert_eq!(report.class, FailureClass::Crash);
    assert!(
        report.message.contains("unhandled 503"),
        "{}",
        report.message
    );
}

/// A run that waits forever is a liveness failure at the simulated-time bound, reached
/// at once because paused time jumps there.
#[test]
fn a_deadlock_is_a_liveness_failure() {
    let sim = Simulation::new(SimConfig::new(1).with_sim_time_max(Duration::from_secs(3600)));
    let report = expect_failure(sim.try_run(|_sim| async move {
        pending::<()>().await;
        Ok(())
    }));
    assert_eq!(report.class, FailureClass::Liveness);
    assert_eq!(report.sim_elapsed, Duration::from_secs(3600));
}

/// A loop that never yields is stopped by the step bound.
#[test]
fn a_livelock_is_a_liveness_failure() {
    let sim = Simulation::new(SimConfig::new(1).with_steps_max(10_000));
    let report = expect_failure(sim.try_run(async |sim| {
        let env = sim.env();
        while env.random_u64("spin") != 0 {}
        Ok(())
    }));
    assert_eq!(report.class, FailureClass::Liveness);
    assert!(report.message.contains("10000 steps"), "{}", report.message);
}

/// A step-bound panic caught inside a spawned task (tokio catches task panics) still
/// ends the run as a liveness failure.
#[test]
fn a_livelock_inside_a_task_is_still_caught() {
    let sim = Simulation::new(SimConfig::new(1).with_steps_max(1_000));
    let report = expect_failure(sim.try_run(async |sim| {
        let spinner = tokio::spawn(async move {
            let env = sim.env();
            loop {
                env.sleep(Duration::from_millis(1)).await;
            }
        });
        let _ = spinner.await;
        pending::<()>().await;
        Ok(())
    }));
    assert_eq!(report.class, FailureClass::Liveness);
    assert!(
        report.sim_elapsed < Duration::from_secs(60),
        "{:?}",
        report.sim_elapsed
    );
}

static LEAKED_STATE: AtomicU64 = AtomicU64::new(0);

/// Global state that outlives a seed makes the second run differ; the determinism check
/// catches it and shows where the traces diverged.
#[test]
fn global_state_is_caught_as_nondeterminism() {
    let sim = Simulation::new(SimConfig::new(9)).with_determinism_check(true);
    let report = expect_failure(sim.try_run(async |sim| {
        let env = sim.env();
        env.sleep(Duration::from_millis(5)).await;
        let runs = LEAKED_STATE.fetch_add(1, Ordering::Relaxed);
        env.record("leak", format_args!("runs so far {runs}"));
        Ok(())
    }));
    assert_eq!(report.class, FailureClass::Nondeterminism);
    let divergence = report
        .divergence
        .as_ref()
        .expect("full traces locate the divergence");
    assert_eq!(divergence.first.as_ref().unwrap().kind, "leak");
    assert_ne!(divergence.first, divergence.second);
    assert!(report.to_string().contains("diverged:"));
}

static LEAKY_REQUESTS: AtomicU64 = AtomicU64::new(0);
static LEAKY_WAITS: AtomicU64 = AtomicU64::new(0);

/// A third-party client the way an adapter describes one: what its source showed.
static LEAKY: umi_dst::adapters::foreign::ForeignClient =
    umi_dst::adapters::foreign::ForeignClient {
        name: "leaky-client 0.1",
        hazards: &[
            umi_dst::adapters::foreign::Hazard {
                source: "a request counter shared by every client in the process",
                effect: umi_dst::adapters::foreign::Effect::RequestBytes,
            },
            umi_dst::adapters::foreign::Hazard {
                source: "retry waits drawn from a process-wide counter",
                effect: umi_dst::adapters::foreign::Effect::Timing,
            },
        ],
    };

/// Sends one chat request the way a foreign client would: its own body, its own waits.
async fn leaky_call(
    sim: umi_dst::SimEnvironment,
    wait_ms: u64,
    body_tag: u64,
) -> Result<(), Violation> {
    use umi_core::llm::transport::{HttpRequest, Transport};
    umi_dst::adapters::foreign::note(&LEAKY);
    let network = umi_dst::SimNetwork::new(&sim)
        .with_endpoint(umi_dst::Endpoint::openai("https://leaky.sim/v1", sim.llm()));
    #[allow(
        clippy::disallowed_methods,
        reason = "a foreign client's own sleep, as it would call it"
    )]
    tokio::time::sleep(Duration::from_millis(wait_ms)).await;
    let body = format!(
        r#"{{"model":"umi-sim","messages":[{{"role":"user","content":"hello #{body_tag}"}}]}}"#
    );
    let response = network
        .send(HttpRequest {
            method: "POST",
            url: "https://leaky.sim/v1/chat/completions".into(),
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.into_bytes(),
        })
        .await;
    let _ = response?;
    Ok(())
}

/// A client that puts something unseeded into its request body: the determinism check
/// names the request that changed and the client's known hazard of that kind.
#[test]
fn a_foreign_clients_unseeded_request_body_is_named_as_the_cause() {
    let sim = Simulation::new(SimConfig::new(3)).with_determinism_check(true);
    let report = expect_failure(sim.try_run(async |sim| {
        let tag = LEAKY_REQUESTS.fetch_add(1, Ordering::Relaxed);
        leaky_call(sim, 10, tag).await
    }));
    assert_eq!(report.class, FailureClass::Nondeterminism);
    let cause = report
        .divergence
        .as_ref()
        .and_then(|d| d.cause.clone())
        .expect("a divergence with a cause");
    assert!(cause.contains("sent a different request body"), "{cause}");
    assert!(cause.contains("a request counter shared"), "{cause}");
    assert!(
        !cause.contains("retry waits"),
        "only hazards of the matching kind: {cause}"
    );
    assert!(report.to_string().contains("cause:"), "{report}");
}

/// A client that waits for a time the simulation did not draw: the same request comes
/// at another simulated time, and the check says so and names the timing hazard.
#[test]
fn a_foreign_clients_unseeded_wait_is_named_as_the_cause() {
    let sim = Simulation::new(SimConfig::new(4)).with_determinism_check(true);
    let report = expect_failure(sim.try_run(async |sim| {
        let wait_ms = 10 + LEAKY_WAITS.fetch_add(1, Ordering::Relaxed);
        leaky_call(sim, wait_ms, 0).await
    }));
    let cause = report
        .divergence
        .as_ref()
        .and_then(|d| d.cause.clone())
        .expect("a divergence with a cause");
    assert!(cause.contains("came at another simulated time"), "{cause}");
    assert!(cause.contains("retry waits drawn"), "{cause}");
    assert!(cause.contains("leaky-client 0.1"), "{cause}");
}

/// A simulated hour of sleeps is simulated: the clock reads exactly one hour at the end.
#[test]
fn an_hour_of_sleeps_is_simulated() {
    let summary = Simulation::new(SimConfig::new(1))
        .try_run(async |sim| {
            let env = sim.env();
            for _ in 0..3_600 {
                env.sleep(Duration::from_secs(1)).await;
            }
            umi_dst::ensure!(
                env.elapsed() == Duration::from_secs(3_600),
                "{:?}",
                env.elapsed()
            );
            Ok(())
        })
        .unwrap();
    assert_eq!(summary.seeds[0].sim_elapsed_us, 3_600_000_000);
}

/// An invalid config is refused before any seed runs.
#[test]
fn invalid_config_is_refused() {
    let sim = Simulation::new(SimConfig::new(1).with_steps_max(0));
    let error = sim.try_run(|_| async { Ok(()) }).unwrap_err();
    assert!(matches!(error, RunError::Config(_)), "{error}");
}

/// `Simulation::block_on` returns its body's output from a simulated run of the seed it
/// was given: simulated time passes at once, and the same seed draws the same numbers.
#[test]
fn block_on_returns_the_output_of_one_simulated_seed() {
    let draw = || {
        Simulation::new(SimConfig::new(11)).block_on(async |sim| {
            sim.clock().sleep(Duration::from_secs(3600)).await;
            (sim.seed(), sim.clock().now(), sim.rng("draw").next_u64())
        })
    };
    let (seed, now, first) = draw();
    assert_eq!((seed, now), (11, Duration::from_secs(3600)));
    assert_eq!(draw().2, first, "the same seed drew another number");
}

/// `Simulation::block_on` runs under the runner's guards: a body that spins past the
/// step bound fails the test as a liveness failure of its seed, with the replay, instead
/// of spinning forever.
#[test]
fn block_on_stops_a_livelock_at_the_step_bound() {
    let caught = catch_unwind(AssertUnwindSafe(|| {
        Simulation::new(SimConfig::new(5).with_steps_max(1_000)).block_on(async |sim| {
            let env = sim.env();
            for _ in 0..u64::MAX {
                env.random_u64("spin");
            }
        });
    }));
    let message = panic_message(&*caught.unwrap_err());
    assert!(
        message.contains("simulation failed (liveness) on seed 5"),
        "{message}"
    );
    assert!(message.contains("replay:"), "{message}");
}
