//! The support bot under a model that fails a third of the time.

use std::sync::Arc;
use std::time::Duration;

use umi_core::memory::Memory;
use umi_core::storage::InMemoryStorage;
use umi_dst::{FaultConfig, FaultKind, SimEnvironment, Violation, ensure};
use umi_example_support_bot::bot::{BotConfig, BotError, SupportBot};
use umi_example_support_bot::scenario::SupportBotScenario;
use umi_sweep::ProgressStyle;
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

/// The support bot under a budget far below what it spends.
struct TightBudget;

impl umi_dst::Scenario for TightBudget {
    fn name(&self) -> &'static str {
        "support_bot_tight_budget"
    }
    fn goal(&self) -> &'static str {
        "the support bot within 1,000 tokens (it needs about 2,300)"
    }
    fn faults(&self) -> Vec<FaultConfig> {
        umi_dst::Scenario::faults(&SupportBotScenario)
    }
    fn budget(&self) -> umi_dst::usage::Budget {
        umi_dst::usage::Budget::new().tokens_max(1_000)
    }
    fn run(
        &self,
        sim: SimEnvironment,
    ) -> futures::future::LocalBoxFuture<'static, Result<(), Violation>> {
        Box::pin(umi_example_support_bot::scenario::run(sim))
    }
}

/// A budget is an invariant: every seed over it fails as `budget` (exit 14), naming the
/// call that pushed it over; the real budget holds over the same seeds, and the report
/// prices every run with the scenario's table.
#[test]
fn a_budget_fails_runs_that_spend_past_it() {
    let options = SweepOptions::default()
        .with_seeds(20)
        .with_jobs(2)
        .with_progress(ProgressStyle::Quiet);
    let tight = run(
        &[Arc::new(TightBudget) as Arc<dyn umi_dst::Scenario>],
        &options,
    )
    .unwrap();
    let scenario = &tight.scenarios[0];
    assert_eq!(
        scenario.failures_by_class.get("budget"),
        Some(&20),
        "{}",
        tight.table()
    );
    assert_eq!(tight.exit_code(), 14);
    assert!(
        scenario.failures[0].message.contains("over budget: tokens")
            && scenario.failures[0]
                .message
                .contains("pushed over by model call #"),
        "{}",
        scenario.failures[0].message
    );
    let real = run(
        &[Arc::new(SupportBotScenario) as Arc<dyn umi_dst::Scenario>],
        &options,
    )
    .unwrap();
    assert_eq!(real.exit_code(), 0, "{}", real.table());
    let cost = real.scenarios[0].usage.get("cost_micros").expect("priced");
    assert_eq!(cost.count, 20);
    assert!(real.scenarios[0].usage.unpriced_models.is_empty());
}

/// pass^k on the task as a customer sees it: every customer is answered in some trial,
/// not every customer in every trial, and the flaky ones are listed with the trial
/// seeds that replay their failures.
#[test]
fn pass_k_finds_the_customers_answered_only_sometimes() {
    use umi_example_support_bot::scenario::SupportBotAnswersScenario;
    let options = SweepOptions::default()
        .with_seeds(10)
        .with_trials(6)
        .with_jobs(2)
        .with_scenarios(vec!["support_bot_answers".into()])
        .with_progress(ProgressStyle::Quiet);
    let report = run(
        &[Arc::new(SupportBotAnswersScenario) as Arc<dyn umi_dst::Scenario>],
        &options,
    )
    .unwrap();
    let trials = report.scenarios[0].trials.as_ref().expect("a trials sweep");
    assert_eq!(trials.all.tasks(), 10);
    let (at_k, hat_k) = (
        trials.all.pass_at(6).unwrap(),
        trials.all.pass_hat(6).unwrap(),
    );
    assert!(
        hat_k < at_k,
        "pass^6 {hat_k} < pass@6 {at_k}: {}",
        trials.summary()
    );
    assert!(!trials.flaky.is_empty() && !trials.by_class.is_empty());
}
