//! The project's own `dst` command: `agent-dst sweep`, `agent-dst replay --scenario
//! weather_agent --seed N --trace`.

use std::process::ExitCode;
use std::sync::Arc;

fn main() -> ExitCode {
    umi_sweep::cli::main(vec![Arc::new(
        umi_example_async_openai_agent::scenario::WeatherAgentScenario,
    )])
}
