//! `dst`: sweep Umi's scenarios over many seeds, replay one, minimize a failing fault
//! schedule, merge shard reports. `dst --help` lists the commands. The planted crashes
//! (`planted_abort`, ...) are here too, for the harness's own tests, and run only when
//! named.

use std::process::ExitCode;

fn main() -> ExitCode {
    umi_sweep::cli::main(umi_scenarios::with_planted())
}
