//! The agent, unchanged, under simulated providers: its answers over clean seeds, its
//! scenario over a default range (and the seeds that once failed it).

use std::sync::Arc;

use umi_dst::{Simulation, ensure};
use umi_example_async_openai_agent::scenario::{WeatherAgentScenario, agent};
use umi_sweep::ProgressStyle;
use umi_sweep::{SweepOptions, run};

/// Without faults, every question is answered, one request per turn; the model (which
/// sometimes answers in text) calls the tool on most seeds.
#[test]
fn questions_are_answered_with_the_tool() {
    let with_tool = std::sync::atomic::AtomicUsize::new(0);
    Simulation::from_env().with_seeds(1..=16).run(|sim| {
        let with_tool = &with_tool;
        async move {
            let (agent, network) = agent(&sim);
            let answer = agent.ask("What is the weather in Oslo?").await?;
            ensure!(!answer.text.is_empty() && answer.turns >= 1, "{answer:?}");
            ensure!(
                network.exchanges().len() == answer.turns,
                "one request per turn"
            );
            if answer.tool_calls > 0 {
                with_tool.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            Ok(())
        }
    });
    let with_tool = with_tool.into_inner();
    assert!(
        with_tool >= 8,
        "the tool was called on {with_tool} of 16 seeds"
    );
}

/// The seeds that found the agent's two bugs (`seeds/weather_agent.seeds`), replayed
/// with the scenario's faults: `DST_SEED=2 cargo test -p umi-example-async-openai-agent
/// -- found_seeds` replays one.
#[test]
fn the_found_seeds_stay_fixed() {
    let scenario = WeatherAgentScenario;
    let template = umi_dst::Scenario::config(&scenario, 0, false);
    let corpus =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("seeds/weather_agent.seeds");
    Simulation::from_env()
        .with_seeds(std::iter::empty())
        .with_corpus(corpus)
        .with_config(|_| template)
        .run(|sim| umi_dst::Scenario::run(&scenario, sim));
}

/// The project's scenario over 200 seeds, as `agent-dst sweep` runs it.
#[test]
fn the_scenario_sweeps_clean() {
    let options = SweepOptions::default()
        .with_seeds(200)
        .with_jobs(2)
        .with_progress(ProgressStyle::Quiet);
    let scenario = Arc::new(WeatherAgentScenario) as Arc<dyn umi_dst::Scenario>;
    let report = run(&[scenario], &options).unwrap();
    assert_eq!(report.exit_code(), 0, "{}", report.table());
}

/// The adapter tells the run it is there, so a determinism failure in this agent's
/// simulations names async-openai (and says its source showed no clock or randomness
/// of its own).
#[test]
fn the_adapter_notes_async_openai_in_the_run() {
    let run = Simulation::new(umi_dst::SimConfig::new(1)).run_seed(1, &async |sim| {
        let (agent, _network) = agent(&sim);
        agent.ask("What is the weather in Oslo?").await?;
        Ok(())
    });
    assert!(run.passed(), "{:?}", run.failure);
    let noted: Vec<&str> = run.foreign.iter().map(|c| c.name).collect();
    assert_eq!(noted, ["async-openai 0.43"]);
    assert!(
        run.tail
            .iter()
            .any(|e| e.kind == "foreign" && e.detail == "async-openai 0.43"),
        "the trace says so too"
    );
}
