//! `#[umi_dst::test]`: its seed range, faults and corpus reach the simulation, `?` works
//! on any error in the body, and other attributes stay on the test.

use umi_dst::fault::point;
use umi_dst::{FaultConfig, FaultKind, SimEnvironment, Violation, ensure};

/// The plain form: the environment's seed range, no faults, simulated time.
#[umi_dst::test]
async fn a_body_runs_in_simulated_time(sim: SimEnvironment) -> Result<(), Violation> {
    let env = sim.env();
    env.sleep(std::time::Duration::from_secs(3600)).await;
    ensure!(
        env.elapsed() >= std::time::Duration::from_secs(3600),
        "slept an hour of simulated time, the clock says {:?}",
        env.elapsed()
    );
    Ok(())
}

/// `seeds` is the range run (unless `DST_SEED` and friends pick others).
#[umi_dst::test(seeds = 500..=503)]
async fn the_seed_range_is_the_one_given(sim: SimEnvironment) -> Result<(), Violation> {
    let from_env = std::env::var_os("DST_SEED").is_some()
        || std::env::var_os("DST_SEEDS").is_some()
        || std::env::var_os("DST_SEED_START").is_some();
    ensure!(
        from_env || (500..=503).contains(&sim.seed()),
        "seed {} is outside 500..=503",
        sim.seed()
    );
    Ok(())
}

/// `faults` are injected: a certain write fault fires at every write.
#[umi_dst::test(seeds = 1..=4, faults = [FaultConfig::always(FaultKind::StorageWriteFail)])]
async fn the_faults_given_are_injected(sim: SimEnvironment) -> Result<(), Violation> {
    for write in 0..3 {
        ensure!(
            sim.fault(&point::STORAGE_WRITE).is_some(),
            "write {write} of seed {} went through",
            sim.seed()
        );
    }
    Ok(())
}

/// `?` on another error type ends the seed with that error's message.
#[umi_dst::test(seeds = 1..=1)]
#[should_panic(expected = "invalid digit found in string")]
async fn question_mark_fails_the_seed_with_the_error(
    _sim: SimEnvironment,
) -> Result<(), Violation> {
    let _: u32 = "not a number".parse()?;
    Ok(())
}

/// The corpus is replayed: seed 77 is kept in `seeds/umi_dst_test_macro.seeds` and lies
/// outside the range given, so only the corpus can run it.
#[umi_dst::test(seeds = 1..=2, corpus = "umi_dst_test_macro")]
#[should_panic(expected = "seed 77 came from the corpus")]
async fn the_corpus_is_replayed(sim: SimEnvironment) -> Result<(), Violation> {
    ensure!(sim.seed() != 77, "seed 77 came from the corpus");
    Ok(())
}

/// `budget` is an invariant: three model calls against a budget of two fail the seed as
/// `budget`, naming the third call.
#[umi_dst::test(seeds = 1..=1, budget = umi_dst::usage::Budget::new().model_calls_max(2))]
#[should_panic(expected = "over budget: model_calls 3 > 2 max; pushed over by model call #3")]
async fn a_run_over_its_budget_fails(sim: SimEnvironment) -> Result<(), Violation> {
    use umi_core::llm::{CompletionRequest, LanguageModel, Message};
    let llm = sim.llm();
    for question in ["one?", "two?", "three?"] {
        let _ = llm
            .complete(&CompletionRequest::new(vec![Message::user(question)]))
            .await;
    }
    Ok(())
}
