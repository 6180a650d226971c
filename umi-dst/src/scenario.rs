//! Scenario: a simulation with a goal, invariants, a fault profile and coverage marks.
//!
//! A scenario is one declaration, [`#[umi_dst::scenario]`](macro@crate::scenario) on a unit
//! struct: its name, goal, faults, marks, budget and run. The declaration registers it
//! ([`registered`], what a `dst` binary lists and sweeps) and, unless it is a canary or
//! runs only when named, writes its corpus replay test (a `#[test]` named after it).
//! The [`Scenario`] trait stays public for a test's own one-off scenario handed to the
//! sweep engine directly.

use std::sync::Arc;

use futures::future::LocalBoxFuture;

use crate::config::SimConfig;
use crate::environment::SimEnvironment;
use crate::fault::FaultConfig;
use crate::simulation::{SeedRun, Simulation, Violation};

/// A simulation the sweep engine runs over many seeds.
///
/// `run` drives real code in the simulated environment and returns the first invariant
/// it finds broken. A panic is a crash; running out of simulated time or steps is a
/// liveness failure. A canary (`is_canary`) carries a planted bug: a sweep must find it,
/// and its failures never count as regressions.
pub trait Scenario: Send + Sync {
    /// The name (`memory_no_data_loss`), also the name of its seed file.
    fn name(&self) -> &'static str;

    /// What it checks, in one line.
    fn goal(&self) -> &'static str;

    /// The faults it runs under by default.
    fn faults(&self) -> Vec<FaultConfig> {
        Vec::new()
    }

    /// The coverage marks its default seeds must hit.
    fn marks(&self) -> &'static [&'static str] {
        &[]
    }

    /// The steering marks its code declares (`sometimes!`, `reachable!`, `maximize!`; see
    /// `umi_core::env::steer`): `dst list` shows them, and an exploration reports the ones
    /// no run reached.
    fn steering(&self) -> &'static [&'static umi_core::env::steer::Mark] {
        &[]
    }

    /// Whether this is the canary.
    fn is_canary(&self) -> bool {
        false
    }

    /// Whether it runs only when named (`--scenario NAME`): a planted failure that
    /// tests the harness itself (a seed that aborts, hangs, exits), never part of a
    /// sweep of every scenario.
    fn only_when_named(&self) -> bool {
        false
    }

    /// What one run may spend (tokens, cost, calls, time, growth under faults): a run
    /// over it fails as [`FailureClass::Budget`](crate::FailureClass::Budget). Unlimited
    /// by default.
    fn budget(&self) -> crate::usage::Budget {
        crate::usage::Budget::new()
    }

    /// The prices its runs' cost is computed with (for a cost budget and the reports),
    /// unless the sweep is given its own.
    fn prices(&self) -> Option<std::sync::Arc<crate::usage::PriceTable>> {
        None
    }

    /// The config of one seed: the fault profile, the budget and prices, and in swarm
    /// mode the profile's own rules switched on and off and scaled by the seed (filters
    /// kept).
    fn config(&self, seed: u64, swarm: bool) -> SimConfig {
        let mut config = self
            .faults()
            .into_iter()
            .fold(SimConfig::new(seed), SimConfig::with_fault)
            .with_budget(self.budget());
        config.prices = self.prices();
        if swarm { config.with_swarm() } else { config }
    }

    /// Runs one seed.
    fn run(&self, sim: SimEnvironment) -> LocalBoxFuture<'static, Result<(), Violation>>;
}

/// Runs `scenario` as a `cargo test` should: its fault profile over the default seeds
/// (1 to [`SEED_COUNT_DEFAULT`](crate::constants::SEED_COUNT_DEFAULT), as every
/// simulation test; or the `DST_*` range), then every seed kept in
/// `seeds/<name>.seeds` in the mode its line records (a seed found by a swarm sweep is
/// replayed in swarm mode). A failure prints its report and the command that replays
/// it; a kept seed that no longer reaches what it was kept for fails the test as stale;
/// a fault rule that reached nothing fails it too.
///
/// `seeds/` is found from the calling crate (`CARGO_MANIFEST_DIR`) as
/// [`corpus::find_seeds_dir`](crate::corpus::find_seeds_dir) finds it: the crate's own
/// when it keeps a corpus there, else the workspace's, else the crate's.
///
/// ```no_run
/// # struct MyScenario;
/// # impl umi_dst::Scenario for MyScenario {
/// #     fn name(&self) -> &'static str { "my" }
/// #     fn goal(&self) -> &'static str { "" }
/// #     fn run(&self, _: umi_dst::SimEnvironment) -> futures::future::LocalBoxFuture<'static, Result<(), umi_dst::Violation>> { Box::pin(async { Ok(()) }) }
/// # }
/// #[test]
/// fn my_scenario() {
///     umi_dst::test_scenario(&MyScenario);
/// }
/// ```
pub fn test_scenario(scenario: &dyn Scenario) {
    let seeds_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .and_then(|dir| crate::corpus::find_seeds_dir(std::path::Path::new(&dir)))
        .unwrap_or_else(|| std::path::PathBuf::from("seeds"));
    test_scenario_in(scenario, &seeds_dir, crate::constants::SEED_COUNT_DEFAULT);
}

/// [`test_scenario`] with the corpus directory and the seed count given (seeds 1 to
/// `seeds`, unless `DST_*` chose others).
pub fn test_scenario_in(scenario: &dyn Scenario, seeds_dir: &std::path::Path, seeds: u64) {
    let template = scenario.config(0, false);
    crate::Simulation::from_env()
        .with_seeds(1..=seeds)
        .with_corpus(seeds_dir.join(format!("{}.seeds", scenario.name())))
        .with_config(|_| template)
        .run(|sim| scenario.run(sim));
}

/// Runs one seed of `scenario` (the unit of work; also what `replay` runs).
pub fn run_one(
    scenario: &dyn Scenario,
    seed: u64,
    swarm: bool,
    edit: impl FnOnce(SimConfig) -> SimConfig,
) -> SeedRun {
    let config = edit(scenario.config(seed, swarm));
    Simulation::new(config).run_seed(seed, &|sim| scenario.run(sim))
}

/// Runs one path of `scenario`: its seed, with the path's branch points (a path with
/// none is exactly [`run_one`] of its seed). `edit` sees the config with the path set.
pub fn run_path(
    scenario: &dyn Scenario,
    path: &crate::path::RunPath,
    swarm: bool,
    edit: impl FnOnce(SimConfig) -> SimConfig,
) -> SeedRun {
    let config = edit(scenario.config(path.seed, swarm).for_path(path));
    Simulation::new(config).run_seed(path.seed, &|sim| scenario.run(sim))
}

/// Seeds a declared scenario's replay test runs (1 to this, or the `DST_*` range) besides
/// its kept seeds, unless its declaration names `replay_seeds`: more than a plain
/// simulation test's [`SEED_COUNT_DEFAULT`](crate::constants::SEED_COUNT_DEFAULT),
/// as a scenario is what the sweeps run.
pub const REPLAY_SEEDS_DEFAULT: u64 = 64;

/// Where a declaration puts its scenario in [`registered`] when it names no `rank`:
/// after every ranked one (ties in name order).
pub const RANK_DEFAULT: u32 = u32::MAX;

/// One declared scenario, as `#[umi_dst::scenario]` registers it (not written by hand).
#[doc(hidden)]
pub struct Registration {
    /// Its place in [`registered`] (lower first; ties by name).
    pub rank: u32,
    /// The scenario.
    pub scenario: &'static (dyn Scenario + 'static),
    /// Where it is declared (what a duplicate name's error shows).
    pub at: DeclaredAt,
}

/// Where a scenario is declared: the declaration's `module_path!()`, `file!()` and
/// `line!()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeclaredAt {
    /// The module (`my_crate::scenarios::retries`).
    pub module: &'static str,
    /// The source file, as `file!()` names it.
    pub file: &'static str,
    /// The line of the `#[umi_dst::scenario]` attribute.
    pub line: u32,
}

impl std::fmt::Display for DeclaredAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}:{})", self.module, self.file, self.line)
    }
}

/// Two scenarios declared with one name. A seed file names its scenario (`seeds/<name>.seeds`)
/// and `--scenario NAME` picks one, so a name is a key: the registry refuses a second.
///
/// Found when the registry is first read (each declared scenario's replay test, `dst
/// list`, a sweep), not at compile time: the declarations may be in different crates,
/// which only the linker brings together, and `inventory` collects them at run time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "two scenarios are declared with the name `{name}`: at {first} and at {second} \
     (a scenario's name keys its seed file; rename one with `name = \"...\"`)"
)]
pub struct DuplicateScenario {
    /// The name both declare.
    pub name: &'static str,
    /// The first declaration, in [`DeclaredAt`] order (module, file, line).
    pub first: DeclaredAt,
    /// The second.
    pub second: DeclaredAt,
}

/// The first name two different declarations of `declared` share, with both places;
/// `Ok` when every name is unique. One declaration seen twice (the same name, module,
/// file and line: a crate linked twice into one binary, as a dev-dependency that
/// depends back on the crate links it) is one scenario, not a duplicate. The
/// registry's check, apart so a table test can plant a duplicate.
pub fn check_unique_names(
    declared: &[(&'static str, DeclaredAt)],
) -> Result<(), DuplicateScenario> {
    let mut sorted: Vec<(&'static str, DeclaredAt)> = declared.to_vec();
    sorted.sort_by_key(|(name, at)| (*name, at.module, at.file, at.line));
    sorted.dedup();
    match sorted.windows(2).find(|pair| pair[0].0 == pair[1].0) {
        Some([(name, first), (_, second)]) => Err(DuplicateScenario {
            name,
            first: *first,
            second: *second,
        }),
        _ => Ok(()),
    }
}

/// The name and place of every scenario declared in the crates linked into this binary,
/// in the registry's collection order (unchecked: [`registered`] checks them).
pub fn declarations() -> Vec<(&'static str, DeclaredAt)> {
    inventory::iter::<Registration>
        .into_iter()
        .map(|registration| (registration.scenario.name(), registration.at))
        .collect()
}

/// Every declaration, checked: a duplicate name is an error naming both declarations;
/// a declaration linked twice is kept once (its first copy).
fn checked_registry() -> Result<Vec<&'static Registration>, DuplicateScenario> {
    check_unique_names(&declarations())?;
    let mut seen: Vec<(&'static str, DeclaredAt)> = Vec::new();
    let mut kept = Vec::new();
    for registration in inventory::iter::<Registration> {
        let key = (registration.scenario.name(), registration.at);
        if !seen.contains(&key) {
            seen.push(key);
            kept.push(registration);
        }
    }
    Ok(kept)
}

inventory::collect!(Registration);

/// Every scenario declared with `#[umi_dst::scenario]` in the crates linked into this
/// binary, in a fixed order: by each declaration's `rank`, then by name. The order is
/// the declarations', never the linker's: the registry's collection order is not used.
/// A `dst` binary hands this to [`umi_sweep::cli::main`](https://docs.rs/umi-sweep), so
/// a scenario added in one file is listed and swept with no other edit.
///
/// A crate's declarations are in this list only if the binary links that crate, and a
/// binary links only the crates its code names: a `dst` binary whose scenarios live in
/// its package's library names it (`use my_crate as _;`, as
/// `examples/support-bot/src/bin/dst.rs` does), or the registry comes back empty.
///
/// # Panics
///
/// If two declarations share a name (a seed file names its scenario, so the name is the
/// key of its corpus), with both declarations' places ([`DuplicateScenario`]).
pub fn registered() -> Vec<Arc<dyn Scenario>> {
    let mut declared = checked_registry().unwrap_or_else(|duplicate| panic!("{duplicate}"));
    declared.sort_by_key(|registration| (registration.rank, registration.scenario.name()));
    declared
        .into_iter()
        .map(|registration| Arc::new(Declared(registration.scenario)) as Arc<dyn Scenario>)
        .collect()
}

/// A registered scenario behind an `Arc`, as the sweep engine takes them.
struct Declared(&'static dyn Scenario);

impl Scenario for Declared {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn goal(&self) -> &'static str {
        self.0.goal()
    }
    fn faults(&self) -> Vec<FaultConfig> {
        self.0.faults()
    }
    fn marks(&self) -> &'static [&'static str] {
        self.0.marks()
    }
    fn steering(&self) -> &'static [&'static umi_core::env::steer::Mark] {
        self.0.steering()
    }
    fn is_canary(&self) -> bool {
        self.0.is_canary()
    }
    fn only_when_named(&self) -> bool {
        self.0.only_when_named()
    }
    fn budget(&self) -> crate::usage::Budget {
        self.0.budget()
    }
    fn prices(&self) -> Option<Arc<crate::usage::PriceTable>> {
        self.0.prices()
    }
    fn config(&self, seed: u64, swarm: bool) -> SimConfig {
        self.0.config(seed, swarm)
    }
    fn run(&self, sim: SimEnvironment) -> LocalBoxFuture<'static, Result<(), Violation>> {
        self.0.run(sim)
    }
}

/// A declared scenario's replay test (what `#[umi_dst::scenario]` writes): its kept
/// seeds and seeds 1 to `seeds`, from the seeds directory
/// [`find_seeds_dir`](crate::corpus::find_seeds_dir) finds from the declaring crate
/// (`manifest_dir`): its own `seeds/` when it has one, else the workspace's; the
/// directory `dst sweep` records into when run in that crate.
///
/// A name declared twice in the binary fails every such test, naming both declarations,
/// before any seed runs.
#[doc(hidden)]
pub fn replay_declared(scenario: &dyn Scenario, manifest_dir: &str, seeds: u64) {
    if let Err(duplicate) = checked_registry() {
        panic!("{duplicate}");
    }
    let manifest_dir = std::path::Path::new(manifest_dir);
    let seeds_dir =
        crate::corpus::find_seeds_dir(manifest_dir).unwrap_or_else(|| manifest_dir.join("seeds"));
    test_scenario_in(scenario, &seeds_dir, seeds);
}

#[cfg(test)]
mod tests {
    use super::{DeclaredAt, check_unique_names};

    const fn at(module: &'static str, file: &'static str, line: u32) -> DeclaredAt {
        DeclaredAt { module, file, line }
    }

    /// A planted duplicate is refused naming both declarations (module, file and line),
    /// whatever the order the registry collected them in; unique names pass.
    #[test]
    fn a_name_declared_twice_names_both_places() {
        let retries = at("app::retries", "src/retries.rs", 12);
        let copy = at("app::copy::retries", "src/copy.rs", 40);
        let other = at("app::other", "src/other.rs", 3);
        let duplicated = [
            vec![("retries", retries), ("other", other), ("retries", copy)],
            vec![("retries", copy), ("retries", retries)],
            vec![
                ("a", other),
                ("retries", copy),
                ("b", other),
                ("retries", retries),
            ],
        ];
        for declared in duplicated {
            let error = check_unique_names(&declared).unwrap_err();
            assert_eq!(error.name, "retries", "{declared:?}");
            let message = error.to_string();
            for place in [
                "app::retries (src/retries.rs:12)",
                "app::copy::retries (src/copy.rs:40)",
            ] {
                assert!(message.contains(place), "{place} in: {message}");
            }
            assert!(message.contains("`retries`"), "{message}");
        }
        for unique in [
            vec![],
            vec![("retries", retries)],
            // One declaration linked twice (two copies of its crate in one binary).
            vec![("retries", retries), ("other", other), ("retries", retries)],
            vec![
                ("retries", retries),
                ("retries_too", copy),
                ("other", other),
            ],
        ] {
            assert_eq!(check_unique_names(&unique), Ok(()), "{unique:?}");
        }
    }
}
