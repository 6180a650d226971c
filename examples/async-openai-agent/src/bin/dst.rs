//! The project's own `dst` command: `agent-dst sweep`, `agent-dst replay --scenario
//! weather_agent --seed N --trace`.

use std::process::ExitCode;

fn main() -> ExitCode {
    umi_sweep::cli::main(umi_dst::scenario::registered())
}
