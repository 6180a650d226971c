//! Scenario `router_rate_limit_storm`: bursts of calls against rate-limited providers.
//!
//! Workload: three waves of five concurrent calls through the router (real OpenAI and
//! Ollama clients over SimNetwork), against three SimLLMs that each admit a few requests
//! per simulated minute and refuse the rest with 429 and the real remaining wait, plus
//! injected 429s. Some calls stream, some ask for whole answers.
//!
//! Invariants:
//! 1. The router's rules (checkers): a retry waits at least the backoff floor and at
//!    least the Retry-After asked (within the cap); at most `1 + max_retries` attempts
//!    per model; none on a cooling provider; nothing after a call was answered.
//! 2. Every call ends within its deadline plus one request timeout.
//! 3. A call that fails, fails as rate-limited or exhausted, never with another error.
//! 4. The storm as profiled is survivable: some call in the run is answered. A swarm
//!    seed may scale the injected 429 up: above the profile's chance no answer is owed (a
//!    correct router may find every attempt refused), and at certainty none may be given
//!    (`survival`).

use std::cell::RefCell;
use std::time::Duration;

use futures::future::join_all;
use umi_core::env::EnvironmentExt;
use umi_core::llm::router::CooldownPolicy;
use umi_dst::llm::config::RateLimitModel;
use umi_dst::{FaultConfig, FaultKind, SimEnvironment, Violation, ensure};

use crate::common::{RouterStack, ask, chat, scenario_retry};

/// Waves of concurrent calls per seed.
const WAVES: usize = 3;

/// Calls per wave.
const CALLS_PER_WAVE: usize = 5;

/// The profile's chance of an injected 429 per request.
const RATE_LIMIT_CHANCE: f64 = 0.15;

/// The scenario.
#[umi_dst::scenario(
    goal = "under 429 storms the router honours Retry-After and bounds its attempts",
    faults = [
        FaultConfig::chance(FaultKind::LlmRateLimit, RATE_LIMIT_CHANCE),
        FaultConfig::chance(FaultKind::NetworkSlowFirstByte, 0.03),
    ],
    marks = [
        "router.retry",
        "router.retry_after",
        "wire.retry_after_header",
        "router.fallback",
    ],
    run = run,
    rank = 50,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct RouterRateLimitStorm;

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let retry = scenario_retry();
    let cooldown = CooldownPolicy::new(4, 20_000);
    let stack = RouterStack::build(&sim, retry, cooldown, |_, config| {
        config.with_rate_limit(RateLimitModel {
            requests_per_minute: 3,
            tokens_per_minute: 20_000,
        })
    });
    let env = sim.env();
    let mut workload = sim.task_rng("workload.calls");
    let outcomes = RefCell::new(Vec::new());
    for wave in 0..WAVES {
        let calls = (0..CALLS_PER_WAVE).map(|index| {
            let stream = workload.bool_with(0.4);
            let delay_ms = workload.range_inclusive(0, 2_000);
            let (env, router, outcomes) = (env.clone(), stack.router.clone(), &outcomes);
            async move {
                env.sleep(Duration::from_millis(delay_ms)).await;
                let started = env.elapsed();
                let request = chat(
                    &format!("wave {wave} call {index}: summarize the news"),
                    "storm",
                );
                let result = ask(router.as_ref(), &request, stream).await;
                outcomes.borrow_mut().push((
                    wave,
                    index,
                    env.elapsed() - started,
                    result.map(|_| ()),
                ));
            }
        });
        join_all(calls).await;
        env.sleep(Duration::from_millis(env.random_in_range(
            "workload.pause",
            1_000,
            40_000,
        )))
        .await;
    }
    stack.check()?;
    let bound = Duration::from_millis(retry.deadline_ms + retry.request_timeout_ms);
    let outcomes = outcomes.into_inner();
    for (wave, index, took, result) in &outcomes {
        ensure!(
            took <= &bound,
            "wave {wave} call {index} took {took:?}, over {bound:?}"
        );
        if let Err(error) = result {
            ensure!(
                matches!(
                    error.kind(),
                    umi_core::llm::LlmErrorKind::RateLimit | umi_core::llm::LlmErrorKind::Exhausted
                ),
                "wave {wave} call {index} failed with {}: {error}",
                error.kind()
            );
        }
    }
    let answered = outcomes.iter().filter(|o| o.3.is_ok()).count();
    survival(answered, outcomes.len(), storm(&sim)).map_err(Violation::new)
}

/// How heavy this seed's injected 429s are against the profile's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Storm {
    /// As profiled, or lighter (off, or scaled down by a swarm seed).
    AsProfiled,
    /// Scaled up by a swarm seed, short of certainty.
    Heavier,
    /// Every request refused: a swarm seed scaled the chance to 1.
    Certain,
}

/// This seed's storm, from its swarm draw (none outside swarm mode: as profiled). A run
/// that replays only some injections (`dst minimize`, `dst replay --only`, a kept
/// schedule) suppresses the others, so a certain rule no longer refuses every request:
/// such a run is at most heavier, never certain.
fn storm(sim: &SimEnvironment) -> Storm {
    let draw = sim
        .swarm_draws()
        .iter()
        .find(|draw| draw.kind == FaultKind::LlmRateLimit && draw.enabled);
    let suppressed = sim.faults().stats().suppressed > 0;
    match draw.map(|draw| draw.probability) {
        Some(probability) if probability >= 1.0 && !suppressed => Storm::Certain,
        Some(probability) if probability > RATE_LIMIT_CHANCE => Storm::Heavier,
        _ => Storm::AsProfiled,
    }
}

/// Invariant 4, of `answered` calls out of `calls` under `storm`: as profiled some call
/// is answered; heavier, none is owed; certain, none can be (an answer got past a 429
/// injected into every request).
fn survival(answered: usize, calls: usize, storm: Storm) -> Result<(), String> {
    match (answered, storm) {
        (0, Storm::AsProfiled) => Err(format!("no call of {calls} was answered")),
        (1.., Storm::Certain) => Err(format!(
            "{answered} of {calls} calls were answered though every request was refused with 429"
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Invariant 4 both ways: a run that answers nothing fails it under the storm as
    /// profiled, not under a heavier one; an answer that got past a certain 429 fails it.
    #[test]
    fn survival_needs_an_answer_only_from_the_storm_as_profiled() {
        let cases = [
            (
                0,
                Storm::AsProfiled,
                Err("no call of 15 was answered".to_owned()),
            ),
            (1, Storm::AsProfiled, Ok(())),
            (15, Storm::AsProfiled, Ok(())),
            (0, Storm::Heavier, Ok(())),
            (7, Storm::Heavier, Ok(())),
            (0, Storm::Certain, Ok(())),
            (
                2,
                Storm::Certain,
                Err(
                    "2 of 15 calls were answered though every request was refused with 429"
                        .to_owned(),
                ),
            ),
        ];
        for (answered, storm, expected) in cases {
            assert_eq!(
                survival(answered, 15, storm),
                expected,
                "{answered} {storm:?}"
            );
        }
    }
}
