//! What a run spent, through the real SimLLM: the ledger agrees with the answers the
//! caller got (whole and streamed), retries and fallbacks are read off the requests,
//! budgets fail the run as `budget` naming the call that pushed it over (growth
//! against the same seed without faults), and trial seeds share their task's workload.

use std::sync::Arc;

use futures::StreamExt;
use umi_core::llm::{CompletionRequest, LanguageModel, Message, StreamCollector};
use umi_dst::usage::{Budget, PriceTable, split_seed, trial_seed};
use umi_dst::{FailureClass, FaultConfig, FaultKind, SimConfig, SimEnvironment, Simulation};

fn ask(text: &str) -> CompletionRequest {
    CompletionRequest::new(vec![Message::user(text)])
}

#[test]
fn the_ledger_counts_what_the_caller_was_answered_whole_and_streamed() {
    for seed in 1..=20 {
        let run = Simulation::new(SimConfig::new(seed)).run_seed(
            seed,
            &|sim: SimEnvironment| async move {
                let llm = sim.llm();
                let whole = llm.complete(&ask("plan my week")).await.expect("no faults");
                let mut stream = llm
                    .stream(&ask("and the next one"))
                    .await
                    .expect("no faults");
                let mut collector = StreamCollector::new("sim-large");
                while let Some(item) = stream.next().await {
                    collector
                        .push(item.expect("no faults"))
                        .expect("a well-formed stream");
                }
                let streamed = collector.finish().expect("a whole stream");
                let said = [whole.usage, streamed.usage].map(|u| u.expect("SimLLM reports usage"));
                let spent = sim.usage().usage();
                let tokens = spent.tokens();
                let input: u64 = said.iter().map(|u| u64::from(u.prompt_tokens)).sum();
                let output: u64 = said.iter().map(|u| u64::from(u.completion_tokens)).sum();
                umi_dst::ensure!(
                    (tokens.input, tokens.output) == (input, output),
                    "ledger {tokens:?} against answers {said:?}"
                );
                umi_dst::ensure!(spent.model_calls == 2 && spent.retries == 0, "{spent:?}");
                Ok(())
            },
        );
        assert!(run.passed(), "seed {seed}: {:?}", run.failure);
        assert_eq!(run.usage.model_calls, 2);
    }
}

#[test]
fn a_repeat_is_a_retry_and_another_model_a_fallback() {
    let run = Simulation::new(SimConfig::new(3)).run_seed(3, &|sim: SimEnvironment| async move {
        let llm = sim.llm();
        let mut request = ask("where is my order?");
        let _ = llm.complete(&request).await;
        let _ = llm.complete(&request).await;
        request.model = "sim-small".into();
        let _ = llm.complete(&request).await;
        Ok(())
    });
    assert_eq!(
        (
            run.usage.model_calls,
            run.usage.retries,
            run.usage.fallbacks
        ),
        (3, 1, 1),
        "{:?}",
        run.usage
    );
    assert_eq!(run.usage.models.len(), 2, "{:?}", run.usage.models);
}

/// Three calls of about the same size: a token budget below two calls' worth breaks at
/// the second.
async fn three_calls(sim: SimEnvironment) -> Result<(), umi_dst::Violation> {
    let llm = sim.llm();
    for question in ["one?", "two?", "three?"] {
        let _ = llm.complete(&ask(question)).await;
    }
    Ok(())
}

#[test]
fn a_run_over_budget_fails_as_budget_naming_the_call() {
    let free = Simulation::new(SimConfig::new(5)).run_seed(5, &three_calls);
    let first = free.usage.calls[0].tokens.total();
    let budget = Budget::new().tokens_max(first + 1);
    let run = Simulation::new(SimConfig::new(5).with_budget(budget)).run_seed(5, &three_calls);
    let (class, message) = run.failure.expect("over budget");
    assert_eq!(class, FailureClass::Budget);
    assert!(
        message.contains("over budget: tokens") && message.contains("model call #2"),
        "{message}"
    );
    // The same run, the same trace: the check is after the run, not in it.
    assert_eq!(run.trace_hash, free.trace_hash);
    let calls = Budget::new().model_calls_max(2);
    let run = Simulation::new(SimConfig::new(5).with_budget(calls)).run_seed(5, &three_calls);
    assert!(
        run.failure
            .expect("3 calls > 2")
            .1
            .contains("model call #3")
    );
}

#[test]
fn a_cost_budget_without_a_price_for_the_model_says_so() {
    let table = PriceTable::parse(
        "[models.other]\ninput = 1\ncached_input = 1\noutput = 1\nreasoning = 1\n",
        "prices.toml",
    )
    .unwrap();
    let config = SimConfig::new(5)
        .with_budget(Budget::new().cost_micros_max(1_000_000))
        .with_prices(Arc::new(table));
    let run = Simulation::new(config).run_seed(5, &three_calls);
    let message = run.failure.expect("unpriced").1;
    assert!(
        message.contains("not in the price table: sim-large"),
        "{message}"
    );
}

#[test]
fn growth_under_faults_is_measured_against_the_same_seed_without_them() {
    // Every call is refused once by a 429 and the body retries: twice the calls, the
    // same tokens (a refusal spends none), so the growth in tokens is nil but a budget
    // on calls sees them. A body that re-asks after each answer under faults doubles
    // its tokens: the growth budget at 150% must catch it.
    async fn reask_under_faults(sim: SimEnvironment) -> Result<(), umi_dst::Violation> {
        let llm = sim.llm();
        let faulted = !sim.faults().configs().is_empty();
        for question in ["one?", "two?"] {
            let _ = llm.complete(&ask(question)).await;
            if faulted {
                let _ = llm.complete(&ask(&format!("{question} again"))).await;
            }
        }
        Ok(())
    }
    let config = SimConfig::new(9)
        .with_fault(FaultConfig::chance(FaultKind::LlmInvalidResponse, 1.0))
        .with_budget(Budget::new().fault_growth_percent_max(150));
    let run = Simulation::new(config.clone()).run_seed(9, &reask_under_faults);
    let message = run.failure.expect("twice the tokens under faults").1;
    assert!(
        message.contains("fault_growth_percent") && message.contains("without them"),
        "{message}"
    );
    let lenient = config.with_budget(Budget::new().fault_growth_percent_max(400));
    assert!(
        Simulation::new(lenient)
            .run_seed(9, &reask_under_faults)
            .passed()
    );
}

#[test]
fn trials_of_a_task_share_its_workload_and_nothing_else() {
    let draw = |seed: u64| {
        let run = Simulation::new(SimConfig::new(seed)).run_seed(
            seed,
            &|sim: SimEnvironment| async move {
                let task = sim.task_rng("workload").next_u64();
                let trial = sim.rng("workload").next_u64();
                sim.trace().record("draw", format_args!("{task} {trial}"));
                Ok(())
            },
        );
        let tail = run.tail.last().expect("the draw").detail.clone();
        let (task, trial) = tail.split_once(' ').expect("two numbers");
        (task.to_owned(), trial.to_owned())
    };
    let (a_task, a_trial) = draw(trial_seed(7, 0).unwrap());
    let (b_task, b_trial) = draw(trial_seed(7, 1).unwrap());
    let (other_task, _) = draw(trial_seed(8, 0).unwrap());
    assert_eq!(a_task, b_task, "one task, one workload");
    assert_ne!(a_trial, b_trial, "each trial its own draws");
    assert_ne!(a_task, other_task);
    // A plain seed is its own task: task_rng is rng, and task 7's trials ask what seed 7 asks.
    // (There task_rng and rng share one stream, so the second draw is its next call.)
    let (plain_task, _) = draw(7);
    assert_eq!(plain_task, a_task);
    assert_eq!(split_seed(7).trial, None);
}
