//! The liveness phase: `sim.heal()` then `eventually`, both ways. A toy retry queue whose
//! writes fail until the heal drains afterwards and passes; its planted twin, whose worker
//! gives up after a few failures and never starts again, fails as a liveness failure
//! naming the condition and the bound. A check that hangs, a bound past the run's
//! `sim_time_max`, and conditions that error are covered too.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use umi_dst::Eventually;
use umi_dst::fault::point::STORAGE_WRITE;
use umi_dst::simulation::SeedRun;
use umi_dst::{
    FailureClass, FaultConfig, FaultKind, SimConfig, SimEnvironment, Simulation, Violation, ensure,
    eventually,
};

/// Items the toy queue holds at the start.
const QUEUE_ITEMS: u64 = 5;

/// How long the faults last before the heal.
const FAULT_PHASE: Duration = Duration::from_secs(20);

/// The bound the queue has to drain in after the heal.
const DRAIN_BOUND: Duration = Duration::from_secs(30);

/// The worker retries a failed write this long after it.
const RETRY_PAUSE: Duration = Duration::from_secs(1);

/// Rounds the toy worker runs at most.
const WORKER_ROUNDS_MAX: u32 = 1_000;

/// A queue of `QUEUE_ITEMS` writes, each failing while the faults are on (every write
/// fails until the heal), drained by a worker that retries every second, giving up for
/// good after `give_up_after` failures in a row when set (the planted bug). After
/// `FAULT_PHASE` the faults heal and the queue must drain within `DRAIN_BOUND`.
async fn retry_queue(sim: SimEnvironment, give_up_after: Option<u32>) -> Result<(), Violation> {
    let queue = Rc::new(Cell::new(QUEUE_ITEMS));
    let stop = Rc::new(Cell::new(false));
    let worker = {
        let (sim, queue, stop) = (sim.clone(), queue.clone(), stop.clone());
        async move {
            let mut failures = 0;
            for _ in 0..WORKER_ROUNDS_MAX {
                if stop.get() || queue.get() == 0 {
                    return;
                }
                if give_up_after.is_some_and(|limit| failures >= limit) {
                    // BUG (planted): parked for good; nothing wakes the worker again.
                    sim.clock().sleep(RETRY_PAUSE).await;
                    continue;
                }
                match sim.fault(&STORAGE_WRITE) {
                    Some(_) => failures += 1,
                    None => {
                        failures = 0;
                        queue.set(queue.get() - 1);
                    }
                }
                sim.clock().sleep(RETRY_PAUSE).await;
            }
        }
    };
    let checks = async {
        sim.clock().sleep(FAULT_PHASE).await;
        sim.heal();
        let drained = eventually(&sim, DRAIN_BOUND, "the queue drains", || {
            let queue = queue.clone();
            async move {
                ensure!(queue.get() == 0, "{} items still queued", queue.get());
                Ok(())
            }
        })
        .await;
        stop.set(true);
        drained
    };
    futures::join!(worker, checks).1
}

fn run(give_up_after: Option<u32>) -> SeedRun {
    Simulation::new(SimConfig::new(1))
        .with_fault(FaultConfig::always(FaultKind::StorageWriteFail))
        .run_seed(1, &move |sim| retry_queue(sim, give_up_after))
}

/// The correct worker drains the queue once the faults heal: the run passes, and the
/// verdict is in the trace.
#[test]
fn a_queue_that_drains_after_the_heal_passes() {
    let run = run(None);
    assert_eq!(run.failure, None);
    assert!(
        run.injections.len() >= 10,
        "{} faults",
        run.injections.len()
    );
}

/// The worker that gives up never drains the queue: a liveness failure (not a
/// correctness one) naming the condition, the bound, the heal and the last check's reason.
#[test]
fn a_queue_that_never_heals_fails_as_liveness_naming_the_condition() {
    let run = run(Some(3));
    let Some((class, message)) = run.failure else {
        panic!("the stuck worker passed");
    };
    assert_eq!(class, FailureClass::Liveness, "{message}");
    for expected in [
        "`the queue drains` did not hold within 30.000s",
        "after the faults healed at 20.000s",
        "5 items still queued",
    ] {
        assert!(message.contains(expected), "{expected:?} not in {message}");
    }
    // The bound, not the run's own sim_time_max, ended it: the heal plus the bound (and
    // the worker's last pause before it saw the stop).
    let ended = FAULT_PHASE + DRAIN_BOUND;
    assert!(
        run.sim_elapsed >= ended && run.sim_elapsed <= ended + RETRY_PAUSE,
        "{:?}",
        run.sim_elapsed
    );
}

/// Runs `body` for seed 1 with no faults.
fn run_body<F>(body: F) -> SeedRun
where
    F: AsyncFn(SimEnvironment) -> Result<(), Violation>,
{
    Simulation::new(SimConfig::new(1)).run_seed(1, &|sim| body(sim))
}

/// A check that never returns is cut at the bound and fails the same way; a condition
/// that holds from the start returns at once, with no heal needed.
#[test]
fn a_hanging_check_fails_at_the_bound_and_a_true_one_returns_at_once() {
    let hung = run_body(async |sim| {
        eventually(&sim, Duration::from_secs(5), "the agent completes", || {
            std::future::pending::<bool>()
        })
        .await
    });
    let (class, message) = hung.failure.expect("a hanging check passed");
    assert_eq!(class, FailureClass::Liveness);
    assert!(
        message.contains("`the agent completes` did not hold within 5.000s")
            && message.contains("with the faults still on")
            && message.contains("a check was still running at the bound"),
        "{message}"
    );
    assert_eq!(hung.sim_elapsed, Duration::from_secs(5));

    let at_once = run_body(async |sim| {
        eventually(&sim, Duration::from_secs(5), "already true", || async {
            true
        })
        .await
    });
    assert_eq!(at_once.failure, None);
    assert_eq!(at_once.sim_elapsed, Duration::ZERO);
}

/// A condition's error is "not yet" (quoted when the bound runs out); `poll_every` sets
/// how often it is checked.
#[test]
fn an_erroring_condition_is_not_yet_and_the_poll_interval_is_kept() {
    let run = run_body(async |sim| {
        let checks = RefCell::new(0u32);
        let outcome = Eventually::new("the write lands", Duration::from_secs(10))
            .poll_every(Duration::from_secs(2))
            .check(&sim, || {
                *checks.borrow_mut() += 1;
                async { Err::<bool, _>("storage.read failed (simulated)") }
            })
            .await;
        ensure!(*checks.borrow() == 6, "{} checks", checks.borrow());
        outcome
    });
    let (class, message) = run.failure.expect("an erroring condition passed");
    assert_eq!(class, FailureClass::Liveness);
    assert!(
        message.contains("checked 6 times every 2.000s")
            && message.contains("the last check: storage.read failed (simulated)"),
        "{message}"
    );
}

/// A bound that ends past the run's `sim_time_max` is refused by name (a plain
/// violation), not left for the run's own bound to cut with a message naming nothing.
#[test]
fn a_bound_past_the_runs_sim_time_max_is_refused() {
    let run = Simulation::new(SimConfig::new(1).with_sim_time_max(Duration::from_secs(60)))
        .run_seed(1, &|sim: SimEnvironment| async move {
            eventually(
                &sim,
                Duration::from_secs(90),
                "the queue drains",
                || async { true },
            )
            .await
        });
    let (class, message) = run.failure.expect("a bound past sim_time_max was taken");
    assert_eq!(class, FailureClass::Correctness);
    assert!(
        message.contains("eventually `the queue drains`")
            && message.contains("sim_time_max of 60.000s"),
        "{message}"
    );
}
