//! The project's own `dst` command: `support-dst sweep`, `support-dst replay --scenario
//! support_bot --seed N --trace`, `support-dst minimize ...`.

use std::process::ExitCode;
use std::sync::Arc;

fn main() -> ExitCode {
    use umi_example_support_bot::scenario::{SupportBotAnswersScenario, SupportBotScenario};
    umi_sweep::cli::main(vec![
        Arc::new(SupportBotScenario),
        Arc::new(SupportBotAnswersScenario),
    ])
}
