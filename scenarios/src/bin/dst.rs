//! `dst`: sweep Umi's scenarios over many seeds, replay one, minimize a failing fault
//! schedule, merge shard reports. `dst --help` lists the commands.

use std::process::ExitCode;

fn main() -> ExitCode {
    umi_dst::sweep::cli::main(umi_scenarios::all())
}
