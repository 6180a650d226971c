//! Scenario `router_fallback_chain`: the primary goes down, or its answers are cut off;
//! the router falls back in order, and comes back when the primary does.
//!
//! Workload: twelve calls, a few simulated seconds apart, through the router (Ollama
//! primary, then DeepSeek, then GLM, all real clients over SimNetwork). The primary is
//! down for a seeded interval (sometimes the secondary too); 503s, refused connections
//! and cut streams are injected; one call in ten is larger than the primary's window.
//!
//! Invariants:
//! 1. The router's rules (checkers), including: after an overflow only larger windows
//!    are tried; no attempt on a provider whose circuit is open.
//! 2. Fallbacks follow the chain: each goes to the next model after the one given up on,
//!    and a call's attempts never go back up the chain.
//! 3. A call that starts while no circuit of the primary is open tries the primary
//!    first: the breaker closes again once the primary is back.
//! 4. Every call ends within its deadline plus one request timeout.

use std::time::Duration;

use umi_core::env::EnvironmentExt;
use umi_core::llm::ModelId;
use umi_core::llm::router::{CooldownPolicy, RouterEvent};
use umi_dst::{FaultConfig, FaultKind, SimEnvironment, Violation, ensure};

use crate::common::{PROVIDERS, RouterStack, ask, chat_owned, scenario_retry};

/// Calls per seed.
const CALLS_PER_SEED: usize = 12;

/// The long transcript a tenth of the calls carry (about 145 KB), built once per
/// process: a constant text, read-only, so no seed can see what another did with it.
static LARGE_TRANSCRIPT: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| "the full transcript follows. ".repeat(5_000));

/// The scenario.
#[umi_dst::scenario(
    goal = "with the primary down or cut off, fallbacks are taken in order and the primary returns",
    faults = [
        FaultConfig::chance(FaultKind::LlmServiceUnavailable, 0.08),
        FaultConfig::chance(FaultKind::NetworkConnectionRefused, 0.04),
        FaultConfig::chance(FaultKind::LlmStreamCut, 0.05),
        FaultConfig::chance(FaultKind::NetworkReset, 0.03),
    ],
    marks = [
        "router.fallback",
        "router.context_fallback",
        "router.circuit_open",
        "router.skip_cooling",
        "router.circuit_probe",
    ],
    run = run,
    rank = 60,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct RouterFallbackChain;

fn chain_index(model: &str) -> usize {
    PROVIDERS
        .iter()
        .position(|(id, _, _)| *id == model)
        .unwrap_or(usize::MAX)
}

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let retry = scenario_retry();
    let cooldown = CooldownPolicy::new(2, 15_000);
    let stack = RouterStack::build(&sim, retry, cooldown, |_, config| config);
    let env = sim.env();
    let mut workload = sim.task_rng("workload.outage");
    let down_from = Duration::from_millis(workload.range_inclusive(0, 20_000));
    let down_until = down_from + Duration::from_millis(workload.range_inclusive(20_000, 90_000));
    stack
        .network
        .take_down(PROVIDERS[0].1, down_from, down_until);
    if workload.bool_with(0.3) {
        stack.network.take_down(
            PROVIDERS[1].1,
            down_from,
            down_from + Duration::from_millis(workload.range_inclusive(5_000, 40_000)),
        );
    }
    let bound = Duration::from_millis(retry.deadline_ms + retry.request_timeout_ms);
    let large = LARGE_TRANSCRIPT.as_str();
    let mut calls = sim.task_rng("workload.calls");
    for index in 0..CALLS_PER_SEED {
        let text = if calls.bool_with(0.1) {
            format!("{large} summarize call {index}")
        } else {
            format!("call {index}: what is new?")
        };
        let stream = calls.bool_with(0.5);
        let started = env.elapsed();
        let _ = ask(stack.router.as_ref(), &chat_owned(text, "chain"), stream).await;
        let took = env.elapsed() - started;
        ensure!(took <= bound, "call {index} took {took:?}, over {bound:?}");
        env.sleep(Duration::from_millis(env.random_in_range(
            "workload.pause",
            500,
            15_000,
        )))
        .await;
    }
    stack.check()?;
    check_chain_order(&stack.log.events())
}

/// Invariants 2 and 3 on the router's events.
fn check_chain_order(events: &[(Duration, RouterEvent)]) -> Result<(), Violation> {
    let primary = PROVIDERS[0].0;
    let primary_provider = ModelId::provider_of(primary);
    let mut last_index: std::collections::BTreeMap<u64, usize> = std::collections::BTreeMap::new();
    let mut primary_open_until = Duration::ZERO;
    for (at, event) in events {
        match event {
            RouterEvent::CircuitOpened { provider, until_ms } if provider == primary_provider => {
                primary_open_until = Duration::from_millis(*until_ms);
            }
            RouterEvent::Succeeded { model, .. } if model == primary => {
                primary_open_until = Duration::ZERO;
            }
            RouterEvent::Attempt { call, model, .. } | RouterEvent::Skipped { call, model, .. } => {
                let index = chain_index(model);
                match last_index.get(call) {
                    None => ensure!(
                        index == 0 || *at < primary_open_until,
                        "call {call} started at {at:?} on {model}, not the primary, though no circuit of {primary_provider} was open"
                    ),
                    Some(last) => ensure!(
                        index >= *last,
                        "call {call} went back up the chain to {model}"
                    ),
                }
                last_index.insert(*call, index);
            }
            RouterEvent::Fallback {
                call,
                from,
                to: Some(to),
                reason,
            } => {
                ensure!(
                    chain_index(to) == chain_index(from) + 1,
                    "call {call} fell back from {from} to {to} ({reason}), skipping the chain's order"
                );
            }
            RouterEvent::Failed { .. }
            | RouterEvent::Succeeded { .. }
            | RouterEvent::Backoff { .. }
            | RouterEvent::Fallback { .. }
            | RouterEvent::CircuitOpened { .. } => {}
        }
    }
    Ok(())
}
