//! The project's own `dst` command: `support-dst sweep`, `support-dst replay --scenario
//! support_bot --seed N --trace`, `support-dst minimize ...`.

use std::process::ExitCode;

fn main() -> ExitCode {
    umi_sweep::cli::main(umi_dst::scenario::registered())
}
