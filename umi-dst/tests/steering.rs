//! Steering marks: recorded with the step of their first hit (and a `maximize!` mark's
//! high-water mark), and free: a run with them takes the same steps, draws and trace
//! hash as the run without.

use std::time::Duration;

use umi_core::env::EnvironmentExt;
use umi_core::env::steer::Mark;
use umi_dst::fault::point;
use umi_dst::simulation::SeedRun;
use umi_dst::{
    FaultConfig, FaultKind, SimConfig, SimEnvironment, Simulation, Violation, Watermark,
};

const FAULTED: Mark = Mark::sometimes("faulted", "an operation saw a fault");
const LOOPED: Mark = Mark::reachable("looped", "the loop body ran");
const STREAK: Mark = Mark::maximize("fault streak", "faults in a row");

/// Rounds of draws, sleeps and fault decisions; with `steer`, steering marks at every
/// turn (the streak of faults in a row as a watermark).
async fn workload(sim: SimEnvironment, steer: bool) -> Result<(), Violation> {
    let env = sim.env();
    let mut streak = 0u64;
    for round in 0..30u64 {
        let fault = sim.fault(&point::LLM_CALL);
        streak = if fault.is_some() { streak + 1 } else { 0 };
        if steer {
            umi_core::reachable!(env, LOOPED);
            umi_core::sometimes!(env, fault.is_some(), FAULTED);
            umi_core::maximize!(env, STREAK, streak);
        }
        let wait = env.random_in_range("wait", 1, 50);
        env.sleep(Duration::from_millis(wait)).await;
        env.record("round", format_args!("{round} {fault:?} {streak}"));
    }
    Ok(())
}

fn run(seed: u64, steer: bool) -> SeedRun {
    let config = SimConfig::new(seed).with_fault(FaultConfig::chance(FaultKind::LlmTimeout, 0.5));
    Simulation::new(config).run_seed(seed, &|sim| workload(sim, steer))
}

#[test]
fn steering_marks_change_no_step_draw_or_trace() {
    for seed in 1..=5 {
        let (with, without) = (run(seed, true), run(seed, false));
        assert_eq!(with.trace_hash, without.trace_hash, "seed {seed}");
        assert_eq!(with.steps, without.steps, "seed {seed}");
        assert_eq!(with.events, without.events, "seed {seed}");
        assert_eq!(with.injections, without.injections, "seed {seed}");
        assert!(without.mark_steps.is_empty() && without.watermarks.is_empty());
        assert!(
            with.marks.is_empty(),
            "steering marks are not coverage counts"
        );
    }
}

/// The watermark is the longest streak of the run, at the step it was first reached;
/// a hit's step is one past the steps taken when it was recorded.
#[test]
fn hits_and_watermarks_are_recorded_with_their_steps() {
    let run = run(3, true);
    // Each round takes 4 steps (fault, random, sleep, record); the marks of round r
    // come after its fault decision, the 4r+1-th step.
    let mut longest = (0, 0);
    let mut streak = 0;
    let mut first_fault = None;
    let faulted: Vec<u64> = run.injection_steps.clone();
    for round in 0..30u64 {
        let step = 4 * round + 2;
        if faulted.contains(&step) {
            streak += 1;
            first_fault.get_or_insert(step);
            if streak > longest.0 {
                longest = (streak, step);
            }
        } else {
            streak = 0;
        }
    }
    assert!(longest.0 >= 2, "seed 3 has a streak: {longest:?}");
    assert_eq!(run.mark_steps["looped"], 2);
    assert_eq!(run.mark_steps.get("faulted").copied(), first_fault);
    assert_eq!(
        run.watermarks["fault streak"],
        Watermark {
            value: longest.0,
            step: longest.1
        }
    );
}
