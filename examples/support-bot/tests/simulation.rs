//! The support bot under a model that fails a third of the time.

use std::sync::Arc;
use std::time::Duration;

use umi_core::memory::Memory;
use umi_core::storage::InMemoryStorage;
use umi_dst::{FaultConfig, FaultKind, SimEnvironment, Violation, ensure};
use umi_example_support_bot::bot::{BotConfig, BotError, SupportBot};
use umi_example_support_bot::scenario::SupportBotScenario;
use umi_sweep::engine::ProgressStyle;
use umi_sweep::{SweepOptions, run};

#[umi_dst::test(seeds = 1..=32, faults = [FaultConfig::chance(FaultKind::LlmRateLimit, 0.35)])]
async fn retries_are_bounded_and_honour_retry_after(sim: SimEnvironment) -> Result<(), Violation> {
    let memory = Memory::new(Arc::new(InMemoryStorage::new()), sim.env());
    let config = BotConfig::default();
    let bot = SupportBot::new(sim.llm(), memory, sim.env(), config);
    let env = sim.env();
    let outcome = bot.answer("Where is my order?").await;
    // Two waits at most, each at most `wait_max`, plus three answers' latency.
    ensure!(
        env.elapsed() <= config.wait_max * 2 + config.attempt_timeout * 3,
        "took {:?}",
        env.elapsed()
    );
    match outcome {
        Ok(reply) => ensure!(reply.attempts <= config.attempts_max, "{reply:?}"),
        Err(BotError::Model { attempts, last }) => {
            ensure!(
                last.kind() == umi_core::llm::LlmErrorKind::RateLimit,
                "only 429s were injected: {last}"
            );
            ensure!(
                attempts == config.attempts_max
                    || last
                        .retry_after_ms()
                        .is_some_and(|ms| Duration::from_millis(ms) > config.wait_max),
                "gave up after {attempts} attempt(s) though asked to wait only {:?}: {last}",
                last.retry_after_ms()
            );
        }
        Err(error) => return Err(Violation::new(format!("unexpected: {error}"))),
    }
    Ok(())
}

/// The project's scenario over the first 100 seeds, as its `support-dst sweep` runs it.
#[test]
fn the_scenario_sweeps_clean() {
    let options = SweepOptions::default()
        .with_seeds(100)
        .with_jobs(2)
        .with_progress(ProgressStyle::Quiet);
    let report = run(
        &[Arc::new(SupportBotScenario) as Arc<dyn umi_dst::Scenario>],
        &options,
    )
    .unwrap();
    assert_eq!(report.exit_code(), 0, "{}", report.table());
}
