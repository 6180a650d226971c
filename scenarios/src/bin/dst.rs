//! `dst`: sweep Umi's scenarios over many seeds, replay one, minimize a failing fault
//! schedule, merge shard reports. `dst --help` lists the commands. The planted crashes
//! (`planted_abort`, ...) are here too, for the harness's own tests, and run only when
//! named.

use std::process::ExitCode;

/// Where every worker's seeds allocate: a seed makes thousands of short-lived small
/// allocations, and mimalloc serves them faster than the system allocator (issue 26's
/// profile; `cargo bench -p umi-scenarios --bench sweep` has the figures). Nothing a
/// seed means depends on the allocator: no seeded path reads an address.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    umi_sweep::cli::main(umi_scenarios::with_planted())
}
