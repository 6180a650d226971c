//! The project's own `dst` command: `agent-dst sweep`, `agent-dst replay --scenario
//! weather_agent --seed N --trace`.

use std::process::ExitCode;

// The crate whose `#[umi_dst::scenario]` declarations this binary sweeps, named so it is
// linked (a crate no path names is not, and its registrations with it).
use umi_example_async_openai_agent as _;

fn main() -> ExitCode {
    umi_sweep::cli::main(umi_dst::scenario::registered())
}
