//! The simulation core's fixed costs: one seed, one trace event, one fault decision.
//!
//! Run with `make bench` or `cargo bench -p umi-dst --bench simulation_core`.
//! Baselines, measured in the same run:
//! - a seed against a bare paused current-thread runtime running an empty future (the
//!   floor any per-seed runtime pays);
//! - a trace event against SHA-256 over the same bytes (the floor of a hashed log);
//! - a fault decision against one ChaCha draw (the floor of a random decision).

#![allow(
    missing_docs,
    clippy::print_stdout,
    reason = "a bench binary prints its figures"
)]

mod support;

use std::hint::black_box;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use umi_dst::trace::Trace;
use umi_dst::{
    DeterministicRng, FaultConfig, FaultInjector, FaultKind, SimClock, SimConfig, Simulation,
};

fn main() {
    println!(
        "umi-dst simulation core (median of {} batches)",
        support::BATCHES
    );

    // One seed: runtime, environment, empty body, verdict.
    let sim = Simulation::new(SimConfig::new(1));
    let body = |_sim: umi_dst::SimEnvironment| async { Ok(()) };
    let seed = support::measure(2_000, |i| {
        black_box(sim.run_seed(i, &body));
    });
    let bare = support::measure(2_000, |_| {
        let runtime = support::sim_runtime();
        runtime.block_on(async {});
        black_box(runtime);
    });
    support::report(
        "seed fixed cost (empty body)",
        seed,
        "bare paused runtime + block_on",
        bare,
    );

    let runtime = support::sim_runtime();
    let _guard = runtime.enter();

    // One trace event.
    let trace = Trace::new(SimClock::new(0), 40, false);
    let event = support::measure(200_000, |i| {
        trace.record("llm.call", format_args!("attempt {i} ok"));
    });
    let mut hasher = Sha256::new();
    let hash_only = support::measure(200_000, |i| {
        hasher.update(i.to_le_bytes());
        hasher.update(i.to_le_bytes());
        hasher.update(8u64.to_le_bytes());
        hasher.update(b"llm.call");
        let detail = format!("attempt {i} ok");
        hasher.update((detail.len() as u64).to_le_bytes());
        hasher.update(detail.as_bytes());
    });
    black_box(hasher.finalize());
    support::report(
        "trace event",
        event,
        "SHA-256 of the same bytes + format",
        hash_only,
    );

    // One fault decision, with one rule in force.
    let clock = SimClock::new(0);
    let injector = FaultInjector::new(
        vec![FaultConfig::chance(FaultKind::LlmTimeout, 0.01)],
        &DeterministicRng::new(1),
        Arc::new(Trace::new(clock.clone(), 40, false)),
        clock,
    )
    .unwrap();
    let decision = support::measure(500_000, |_| {
        black_box(injector.decide(&umi_dst::fault::point::LLM_CALL));
    });
    let mut rng = DeterministicRng::new(1);
    let draw = support::measure(500_000, |_| {
        black_box(rng.bool_with(0.01));
    });
    support::report(
        "fault decision (1 rule)",
        decision,
        "one ChaCha draw + compare",
        draw,
    );
}
