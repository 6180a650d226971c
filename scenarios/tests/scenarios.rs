//! Each scenario over the seeds in `seeds/<scenario>.seeds` and seeds 1 to
//! `SCENARIO_TEST_SEEDS` (or the `DST_*` range). A failure prints the seed, the faults
//! that fired, the trace tail, and the command replaying it.

use std::path::PathBuf;

use umi_dst::Scenario;
use umi_dst::{RunError, Simulation};
use umi_scenarios::canary::Canary;
use umi_scenarios::canary_lost_link::CanaryLostLink;

/// Seeds per scenario in this suite: the harness's own scenarios name a range larger
/// than the default (`umi_dst::constants::SEED_COUNT_DEFAULT`, what `test_scenario`
/// runs), as any test that wants more seeds does; the nightly sweep runs hundreds of
/// thousands.
const SCENARIO_TEST_SEEDS: u64 = 64;

/// Seeds within which the canary's planted bug must be found.
const CANARY_SEEDS_MAX: u64 = 100;

fn seeds_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../seeds")
}

fn replay(scenario: &impl Scenario) {
    umi_dst::test_scenario_in(scenario, &seeds_dir(), SCENARIO_TEST_SEEDS);
}

#[test]
fn memory_no_data_loss() {
    replay(&umi_scenarios::memory_no_data_loss::MemoryNoDataLoss);
}

#[test]
fn sqlite_no_data_loss() {
    replay(&umi_scenarios::sqlite_no_data_loss::SqliteNoDataLoss);
}

#[test]
fn recall_degrades_gracefully() {
    replay(&umi_scenarios::recall_degrades_gracefully::RecallDegradesGracefully);
}

#[test]
fn recall_by_embeddings() {
    replay(&umi_scenarios::recall_by_embeddings::RecallByEmbeddings);
}

#[test]
fn router_rate_limit_storm() {
    replay(&umi_scenarios::router_rate_limit_storm::RouterRateLimitStorm);
}

#[test]
fn router_fallback_chain() {
    replay(&umi_scenarios::router_fallback_chain::RouterFallbackChain);
}

#[test]
fn context_overflow_recovery() {
    replay(&umi_scenarios::context_overflow_recovery::ContextOverflowRecovery);
}

#[test]
fn streaming_tool_calls() {
    replay(&umi_scenarios::streaming_tool_calls::StreamingToolCalls);
}

#[test]
fn wire_faults() {
    replay(&umi_scenarios::wire_faults::WireFaults);
}

#[test]
fn wire_shapes() {
    replay(&umi_scenarios::wire_shapes::WireShapes);
}

#[test]
fn mixed_formats() {
    replay(&umi_scenarios::mixed_formats::MixedFormats);
}

#[test]
fn agent_loop_under_faults() {
    replay(&umi_scenarios::agent_loop_under_faults::AgentLoopUnderFaults);
}

#[test]
fn tool_effects() {
    replay(&umi_scenarios::tool_effects::ToolEffects);
}

/// Scenario `mcp_agent`: its recorded seeds and default range.
#[test]
fn mcp_agent() {
    replay(&umi_scenarios::mcp_agent::McpAgent);
}

/// Scenario `outbox_drains` (a liveness phase): its recorded seeds and default range.
#[test]
fn outbox_drains() {
    replay(&umi_scenarios::outbox_drains::OutboxDrains);
}

/// Scenario `cassette_agent`: its recorded seeds and default range.
#[test]
fn cassette_agent() {
    replay(&umi_scenarios::cassette_agent::CassetteAgent);
}

/// The checked-in cassette of `cassette_agent` is what recording its workload gives
/// today (fault-free, on `RECORDING_SEED`): a change to the agent, the client or SimLLM
/// that changes the conversation shows here, not as misses in a sweep.
/// `UMI_UPDATE_CASSETTES=1` writes the fresh recording over it.
#[test]
fn cassette_agent_cassette_is_a_fresh_recording() {
    use umi_scenarios::cassette_agent::{CASSETTE, CASSETTE_PATH, RECORDING_SEED, record};
    let fresh = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("agent_tools.jsonl");
    Simulation::new(umi_dst::SimConfig::new(RECORDING_SEED)).run(|sim| record(sim, &fresh));
    let text = std::fs::read_to_string(&fresh).unwrap();
    let cassette = umi_core::cassette::Cassette::parse(&text, &fresh).unwrap();
    assert!(
        cassette.exchanges.len() >= 4,
        "a multi-turn conversation: {}",
        cassette.exchanges.len()
    );
    assert!(text.contains("tool_calls"), "the recording has tool calls");
    if std::env::var_os("UMI_UPDATE_CASSETTES").is_some() {
        let checked_in = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(CASSETTE_PATH);
        std::fs::write(checked_in, &text).unwrap();
    } else {
        assert_eq!(
            CASSETTE, text,
            "{CASSETTE_PATH} is stale: run with UMI_UPDATE_CASSETTES=1"
        );
    }
}

/// The cassette drift canary (a retry that stamps its attempt into the body) is found
/// within `CANARY_SEEDS_MAX` seeds as a miss of the recorded conversation at
/// `$.metadata`, under a fault.
#[test]
fn canary_cassette_drift() {
    find_canary(
        &umi_scenarios::canary_cassette_drift::CanaryCassetteDrift,
        "differs at $.metadata",
    );
}

/// The MCP resend canary (a call resent after its stream broke, when the server had
/// already paid) is found within `CANARY_SEEDS_MAX` seeds, by the effect ledger's checker.
#[test]
fn canary_mcp_resend() {
    find_canary(
        &umi_scenarios::canary_mcp_resend::CanaryMcpResend,
        "applied its effect 2 times for one call",
    );
}

/// The double-charge canary is found within `CANARY_SEEDS_MAX` seeds, by the effect
/// ledger's checker.
#[test]
fn canary_double_charge() {
    find_canary(
        &umi_scenarios::canary_double_charge::CanaryDoubleCharge,
        "applied its effect 2 times for one call",
    );
}

/// The canary's planted bug is found within `CANARY_SEEDS_MAX` seeds, by the memory
/// checker, as a lost write. With `DST_SEED` set, that seed is replayed instead (and,
/// if the bug fires there, fails with its report, as a replay should).
#[test]
fn canary() {
    find_canary(&Canary, "lost write");
}

/// The lost-link canary is found within `CANARY_SEEDS_MAX` seeds, as a lost link.
#[test]
fn canary_lost_link() {
    find_canary(&CanaryLostLink, "lost write: link");
}

/// The lost-update canary's race is found within `CANARY_SEEDS_MAX` seeds with seeded
/// interleavings (its config turns them on)...
#[test]
fn canary_lost_update() {
    find_canary_with(
        &umi_scenarios::canary_lost_update::CanaryLostUpdate,
        "lost update",
        false,
    );
}

/// ...and never without them, over `UNINTERLEAVED_SEEDS` seeds: the runtime's one order
/// never opens the window (issue 23: a race found only by the interleavings).
#[test]
fn canary_lost_update_needs_seeded_interleavings() {
    const UNINTERLEAVED_SEEDS: u64 = 500;
    let summary = Simulation::new(umi_dst::SimConfig::new(1))
        .with_fixed_seeds(1..=UNINTERLEAVED_SEEDS)
        .try_run(umi_scenarios::canary_lost_update::run)
        .unwrap_or_else(|error| panic!("the race showed without interleavings: {error}"));
    assert_eq!(summary.seeds.len() as u64, UNINTERLEAVED_SEEDS);
}

/// Every scenario of the registry has its test here, named after it, and every one but
/// the canaries (whose test is that their planted bug is found) replays its seed corpus
/// through `replay`: a scenario added without one fails this test, so no scenario's
/// recorded seeds go unreplayed by `cargo test`.
#[test]
fn every_scenario_has_its_replay_test() {
    let source = include_str!("scenarios.rs");
    let mut missing = Vec::new();
    for scenario in umi_scenarios::all() {
        let name = scenario.name();
        let body = source
            .split_once(&format!("#[test]\nfn {name}() {{\n"))
            .map(|(_, rest)| rest.split_once("\n}\n").map_or(rest, |(body, _)| body));
        let replays = |body: &str| body.contains("replay(&") || name.starts_with("canary");
        if !body.is_some_and(replays) {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "scenarios without a test that replays their seeds/<name>.seeds: {missing:?} (add \
         `#[test] fn <name>() {{ replay(&..) }}` to scenarios/tests/scenarios.rs)"
    );
}

/// `scenario`'s planted bug is found within `CANARY_SEEDS_MAX` seeds as a violation
/// saying `expected`, with a fault injected; or the `DST_SEED` seed is replayed.
fn find_canary(scenario: &dyn Scenario, expected: &str) {
    find_canary_with(scenario, expected, true);
}

/// As [`find_canary`]; `needs_fault`: whether the planted bug fires only under a fault
/// (a race needs none, only an order).
fn find_canary_with(scenario: &dyn Scenario, expected: &str, needs_fault: bool) {
    if std::env::var_os("DST_SEED").is_some() {
        Simulation::from_env()
            .with_config(|_| scenario.config(0, false))
            .run(|sim| scenario.run(sim));
        return;
    }
    let simulation = Simulation::from_env()
        .with_fixed_seeds(1..=CANARY_SEEDS_MAX)
        .with_config(|_| scenario.config(0, false));
    match simulation.try_run(|sim| scenario.run(sim)) {
        Err(RunError::Failed(report)) => {
            assert!(
                report.message.contains(expected),
                "the canary failed for another reason: {}",
                report.message
            );
            assert!(
                !needs_fault || report.injections_total > 0,
                "the planted bug needs a fault to fire"
            );
        }
        Err(other) => panic!("the canary did not run as it should: {other}"),
        Ok(summary) => panic!(
            "the canary's planted bug was not found in {} seeds",
            summary.seeds.len()
        ),
    }
}
