//! The project's own `dst` command: `support-dst sweep`, `support-dst replay --scenario
//! support_bot --seed N --trace`, `support-dst minimize ...`.

use std::process::ExitCode;

// The crate whose `#[umi_dst::scenario]` declarations this binary sweeps, named so it is
// linked (a crate no path names is not, and its registrations with it).
use umi_example_support_bot as _;

fn main() -> ExitCode {
    umi_sweep::cli::main(umi_dst::scenario::registered())
}
