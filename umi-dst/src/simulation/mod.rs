//! The Simulation runner: runs a body over seeds, and on failure prints one report that
//! ends with the command replaying that exact run.
//!
//! ```no_run
//! use umi_dst::{Simulation, ensure};
//!
//! #[test]
//! fn retries_end() {
//!     Simulation::from_env().run(async |sim| {
//!         let env = sim.env();
//!         // ... drive real code with `env` ...
//!         ensure!(env.elapsed().as_secs() < 60, "took {:?}", env.elapsed());
//!         Ok(())
//!     });
//! }
//! ```
//!
//! `Simulation::from_env()` reads `DST_SEED` (exactly that seed), `DST_PATH` (exactly
//! that path, `7/412:9913`: see [`RunPath`](crate::RunPath)), `DST_SEEDS` and
//! `DST_SEED_START` (the default range; without them seeds 1 to 8), and
//! `DST_CHECK_DETERMINISM=1` (each seed twice, traces compared), and `DST_SEED_TIMEOUT`
//! (the wall time one seed may take, 60 s by default: a seed that never yields is
//! reported by name and ends the process: [`Watchdog`]). A body returns
//! `Err(violation)` for a broken invariant (class *correctness*); a panic is a *crash*;
//! passing the simulated-time or step bound is *liveness*; two traces of one seed that
//! differ are *nondeterminism*.

mod block_on;
pub mod determinism;
mod execute;
pub mod kept;
pub mod report;
pub mod settings;
mod violation;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::failure_class::FailureClass;
use crate::micros::micros_saturating;
pub use execute::{SeedRun, panic_message};
use report::{Divergence, FailureReport, ReplayTarget};
use settings::{LogFilter, Settings, SettingsError};

use crate::config::{SimConfig, SimConfigError};
use crate::corpus::{CorpusEntry, CorpusError, SeedCorpus};
use crate::fault::{FaultConfig, FaultKind};
use crate::trace::TraceHash;
pub use crate::watchdog::{WatchGuard, Watchdog};
use kept::{StaleSeed, StaleSeeds};
pub use violation::Violation;

/// Why [`Simulation::try_run`] did not run to the end.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The configuration is invalid; no seed ran.
    #[error(transparent)]
    Config(#[from] SimConfigError),
    /// A seed failed.
    #[error("{0}")]
    Failed(Box<FailureReport>),
    /// Every seed passed, but a fault rule reached no operation in any of them: it could
    /// not have fired, so the run did not test what its config says.
    #[error("{0}")]
    Unreached(UnreachedRules),
    /// Every seed passed, but kept seeds of the corpus no longer reach what they were
    /// kept for (see [`kept`]).
    #[error("{0}")]
    Stale(StaleSeeds),
}

/// Fault rules that reached no operation over a whole run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreachedRules {
    /// Each rule, as its config prints.
    pub rules: Vec<String>,
    /// Seeds run.
    pub seeds: usize,
}

impl fmt::Display for UnreachedRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} fault rule(s) reached no operation in {} seed(s), so they could not fire:",
            self.rules.len(),
            self.seeds
        )?;
        for rule in &self.rules {
            writeln!(f, "  {rule}")?;
        }
        write!(
            f,
            "the code under test never performs the operation the filter names (or never with \
             the task it names); fix the filter, or remove the rule"
        )
    }
}

/// The rules of `configs` whose reach, summed over the seeds, is zero.
pub fn unreached_rules(configs: &[FaultConfig], reach: &[u64]) -> Vec<String> {
    let names: Vec<String> = configs.iter().map(ToString::to_string).collect();
    unreached_rules_named(&names, reach)
}

/// Like [`unreached_rules`], for rules already printed (a sweep report holds them so).
pub fn unreached_rules_named(rules: &[String], reach: &[u64]) -> Vec<String> {
    rules
        .iter()
        .zip(reach)
        .enumerate()
        .filter(|(_, (_, reached))| **reached == 0)
        .map(|(index, (rule, _))| format!("rule {index} ({rule})"))
        .collect()
}

/// One passing seed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SeedSummary {
    /// The seed.
    pub seed: u64,
    /// Its trace hash.
    pub trace_hash: TraceHash,
    /// Trace events recorded.
    pub events: u64,
    /// Steps taken.
    pub steps: u64,
    /// Simulated time covered, in microseconds.
    pub sim_elapsed_us: u64,
}

/// Every seed of a passing run, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct RunSummary {
    /// One entry per seed run.
    pub seeds: Vec<SeedSummary>,
}

/// Runs a simulation body over a set of seeds. See the module docs.
#[derive(Debug, Clone)]
pub struct Simulation {
    template: SimConfig,
    seeds: Vec<u64>,
    settings: Settings,
    replay: Option<ReplayTarget>,
    /// Seeds of the corpus, each replayed in its recorded mode, with the file it is in.
    kept: Vec<(PathBuf, CorpusEntry)>,
}

impl Simulation {
    /// Runs exactly `config` (its seed, its faults), ignoring `DST_*` variables.
    pub fn new(config: SimConfig) -> Self {
        let seeds = vec![config.seed];
        Self {
            template: config,
            seeds,
            settings: Settings::default(),
            replay: None,
            kept: Vec::new(),
        }
    }

    /// Seeds and switches from `DST_*` (see the module docs). A bad value prints a
    /// one-line error naming the variable and fails the calling test without a backtrace.
    pub fn from_env() -> Self {
        Self::try_from_env().unwrap_or_else(|error| fail_setup(&error))
    }

    /// Like [`Simulation::from_env`], returning the error instead.
    pub fn try_from_env() -> Result<Self, SettingsError> {
        let settings = Settings::from_process_env()?;
        Ok(Self::with_settings(settings))
    }

    /// A simulation over the seeds and switches in `settings`.
    pub fn with_settings(settings: Settings) -> Self {
        let seeds = settings.seeds();
        let template = SimConfig::new(seeds[0]);
        Self {
            template,
            seeds,
            settings,
            replay: None,
            kept: Vec::new(),
        }
    }

    /// Adds a fault to every seed's config.
    pub fn with_fault(mut self, fault: FaultConfig) -> Self {
        self.template.faults.push(fault);
        self
    }

    /// Adds faults to every seed's config.
    pub fn with_faults(mut self, faults: impl IntoIterator<Item = FaultConfig>) -> Self {
        self.template.faults.extend(faults);
        self
    }

    /// Sets what one run may spend (see [`crate::usage::Budget`]): a run over it fails as
    /// [`FailureClass::Budget`].
    pub fn with_budget(mut self, budget: crate::usage::Budget) -> Self {
        self.template.budget = budget;
        self
    }

    /// Sets the price table a cost budget uses (see [`crate::usage::PriceTable`]).
    pub fn with_prices(mut self, prices: std::sync::Arc<crate::usage::PriceTable>) -> Self {
        self.template.prices = Some(prices);
        self
    }

    /// Turns swarm mode on over the fault rules (see [`SimConfig::with_swarm`]).
    pub fn with_swarm(mut self) -> Self {
        self.template.swarm = true;
        self
    }

    /// Adds an unscoped rule per kind and turns swarm mode on (see
    /// [`SimConfig::with_swarm_over`]).
    pub fn with_swarm_over(mut self, kinds: &[FaultKind]) -> Self {
        self.template = self.template.with_swarm_over(kinds);
        self
    }

    /// Registers a fault point of a simulator of your own (see
    /// [`SimConfig::with_fault_point`]).
    pub fn with_fault_point(mut self, point: crate::fault::FaultPoint) -> Self {
        self.template.fault_points.push(point);
        self
    }

    /// Edits the config template every seed starts from (the seed is set per run).
    pub fn with_config(mut self, edit: impl FnOnce(SimConfig) -> SimConfig) -> Self {
        self.template = edit(self.template);
        self
    }

    /// Runs these seeds instead of the default range, unless the environment chose
    /// seeds: `DST_SEED` picks one, and `DST_SEEDS` / `DST_SEED_START` pick a range that
    /// wins over the test's own (so `DST_SEEDS=10000 cargo test` sweeps every test, as
    /// `PROPTEST_CASES` does for proptest).
    pub fn with_seeds(mut self, seeds: impl IntoIterator<Item = u64>) -> Self {
        if self.settings.seed.is_none() && !self.settings.seed_range_from_env {
            self.seeds = seeds.into_iter().collect();
        }
        self
    }

    /// Runs exactly these seeds (unless `DST_SEED` picked one), whatever range the
    /// environment asks for: for a test whose range is its point ("the planted bug is
    /// found within 100 seeds").
    pub fn with_fixed_seeds(mut self, seeds: impl IntoIterator<Item = u64>) -> Self {
        if self.settings.seed.is_none() {
            self.seeds = seeds.into_iter().collect();
        }
        self
    }

    /// Also runs the seeds of the corpus file at `path`, each in the mode its line records
    /// (swarm, an `only=` schedule); with `DST_SEED` set, runs that seed in its recorded
    /// mode if the corpus keeps it. A kept seed whose line records the faults it injected,
    /// and whose replay injects none of them, is reported stale ([`RunError::Stale`]). A
    /// corrupt file fails the test with its path and line.
    pub fn with_corpus(self, path: impl AsRef<Path>) -> Self {
        self.try_with_corpus(path)
            .unwrap_or_else(|error| fail_setup(&error))
    }

    /// Like [`Simulation::with_corpus`], returning the error instead.
    pub fn try_with_corpus(mut self, path: impl AsRef<Path>) -> Result<Self, CorpusError> {
        let corpus = SeedCorpus::load(path.as_ref())?;
        let path = path.as_ref().to_owned();
        // With DST_SEED (DST_PATH), that seed (path) in every mode the corpus keeps it in
        // (besides its plain run): the failing run is among them.
        let chosen = self.settings.chosen_path();
        self.kept.extend(
            corpus
                .entries()
                .iter()
                .filter(|entry| chosen.as_ref().is_none_or(|path| entry.path() == *path))
                .map(|entry| (path.clone(), entry.clone())),
        );
        Ok(self)
    }

    /// Runs every seed twice and compares the traces.
    pub fn with_determinism_check(mut self, on: bool) -> Self {
        self.settings.check_determinism = on;
        self
    }

    /// Overrides the detected test in replay commands.
    pub fn with_replay_target(mut self, target: ReplayTarget) -> Self {
        self.replay = Some(target);
        self
    }

    /// The seeds this simulation runs, in order: the range, then the kept seeds not
    /// already run in the same mode (a kept seed in another mode runs again).
    pub fn seeds(&self) -> Vec<u64> {
        self.runs().into_iter().map(|(seed, _)| seed).collect()
    }

    /// The config one seed runs with (with `DST_PATH`'s branch points when it is that
    /// path's seed, else the template's).
    pub fn config_for(&self, seed: u64) -> SimConfig {
        let config = self.template.clone().with_seed(seed);
        match &self.settings.path {
            Some(path) if path.seed == seed => config.with_branches(path.branches.clone()),
            _ => config,
        }
    }

    /// The path the plain run of `seed` runs: `DST_PATH` for its seed, else the seed
    /// with the template's branch points.
    fn plain_path(&self, seed: u64) -> crate::path::RunPath {
        self.config_for(seed).path()
    }

    /// Runs every seed; on the first failure prints its report and fails the calling
    /// test.
    ///
    /// `body` is an async closure, `async |sim| { ..; Ok(()) }`: the shape
    /// [`block_on`](Self::block_on) takes too, called once per seed here (an `AsyncFn`,
    /// where `block_on`'s runs once, an `AsyncFnOnce`). An `async fn(SimEnvironment) ->
    /// Result<(), Violation>` passes by name, and a closure returning a future
    /// (`|sim| scenario.run(sim)`) is one as well.
    ///
    /// ```
    /// use umi_dst::prelude::*;
    ///
    /// Simulation::new(SimConfig::new(1))
    ///     .with_seeds(1..=4)
    ///     .run(async |sim| {
    ///         let env = sim.env();
    ///         env.sleep(std::time::Duration::from_millis(env.random_in_range("wait", 1, 50)))
    ///             .await;
    ///         ensure!(env.elapsed().as_millis() <= 50, "slept {:?}", env.elapsed());
    ///         Ok(())
    ///     });
    /// ```
    pub fn run<F>(&self, body: F) -> RunSummary
    where
        F: AsyncFn(crate::SimEnvironment) -> Result<(), Violation>,
    {
        match self.try_run(body) {
            Ok(summary) => summary,
            Err(RunError::Config(error)) => fail_setup(&error),
            Err(RunError::Unreached(unreached)) => fail_setup(&unreached),
            Err(RunError::Stale(stale)) => fail_setup(&stale),
            Err(RunError::Failed(report)) => fail_run(&report),
        }
    }

    /// Runs every seed; returns the first failure's report instead of failing. `body` as
    /// for [`run`](Self::run).
    pub fn try_run<F>(&self, body: F) -> Result<RunSummary, RunError>
    where
        F: AsyncFn(crate::SimEnvironment) -> Result<(), Violation>,
    {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(RunError::Config(SimConfigError::NestedRuntime));
        }
        self.template.validate()?;
        let mut summary = RunSummary::default();
        let mut reach = vec![0u64; self.template.faults.len()];
        let mut stale = Vec::new();
        // A seed that never yields stops simulated time; the wall clock still ends it.
        let replay = self.replay.clone().unwrap_or_else(ReplayTarget::detect);
        let mut watchdog = Watchdog::start();
        for (seed, kept) in self.runs() {
            let limit = self.settings.seed_timeout;
            let _watched = watchdog.as_mut().map(|watchdog| {
                let path = kept.map_or_else(|| self.plain_path(seed), |(_, entry)| entry.path());
                let command = replay.command_for_path(&path, FailureClass::Liveness);
                watchdog.watch(&format!("seed {seed}"), limit, &command)
            });
            let first = self.run_checked(seed, kept.map(|(_, entry)| entry), &body)?;
            self.print_run(&first);
            if let Some((path, entry)) = kept
                && !entry.meaning.still_reached_by(&first.fault_stats)
            {
                stale.push(StaleSeed {
                    path: path.clone(),
                    seed,
                    line: entry.line,
                    meaning: entry.meaning.clone(),
                    comment: entry.comment.clone(),
                });
            }
            assert_eq!(first.rule_reach.len(), reach.len(), "one count per rule");
            for (total, reached) in reach.iter_mut().zip(&first.rule_reach) {
                *total += reached;
            }
            summary.seeds.push(SeedSummary {
                seed,
                trace_hash: first.trace_hash,
                events: first.events,
                steps: first.steps,
                sim_elapsed_us: micros_saturating(first.sim_elapsed),
            });
        }
        if !stale.is_empty() {
            return Err(RunError::Stale(StaleSeeds { seeds: stale }));
        }
        self.check_reach(summary, &reach)
    }

    /// Seed `seed` (kept in a corpus as `kept`, whose meaning adjusts its config), run
    /// and, when the settings or the kept seed ask for it, run again and compared: the
    /// first run, or the failure report.
    fn run_checked<F>(
        &self,
        seed: u64,
        kept: Option<&CorpusEntry>,
        body: &F,
    ) -> Result<SeedRun, RunError>
    where
        F: AsyncFn(crate::SimEnvironment) -> Result<(), Violation>,
    {
        let mut config = self.config_for(seed);
        if let Some(entry) = kept {
            config = entry
                .meaning
                .apply(config)
                .with_branches(entry.branches.clone());
        }
        // A seed kept for nondeterminism only shows it when run twice.
        let check_determinism = self.settings.check_determinism
            || kept.is_some_and(|e| e.meaning.expect == Some(FailureClass::Nondeterminism));
        config.trace_full |= check_determinism || self.settings.print_trace;
        let first = execute::run_seed(&config, body, &self.settings.log);
        if let Some((class, message)) = &first.failure {
            let report = self.report(&first, *class, message.clone(), None);
            return Err(RunError::Failed(report));
        }
        if check_determinism {
            let second = execute::run_seed(&config, body, &self.settings.log);
            if let Some(report) = self.compare(&first, &second) {
                return Err(RunError::Failed(report));
            }
        }
        Ok(first)
    }

    /// The summary, unless a fault rule was reached by no seed of a range (`reach`: the
    /// injections per rule over all seeds); for one seed that is a warning only.
    fn check_reach(&self, summary: RunSummary, reach: &[u64]) -> Result<RunSummary, RunError> {
        let rules = unreached_rules(&self.template.faults, reach);
        if rules.is_empty() {
            return Ok(summary);
        }
        let unreached = UnreachedRules {
            rules,
            seeds: summary.seeds.len(),
        };
        if summary.seeds.is_empty() {
            return Ok(summary);
        }
        if self.settings.seed.is_some() || summary.seeds.len() < 2 {
            // One seed (a DST_SEED replay, or a one-seed simulation): a rule may miss one
            // seed and still be right, so this is a warning; over a range it is an error.
            #[allow(clippy::print_stderr, reason = "a warning the replay should show")]
            {
                eprintln!("umi: warning: {unreached}");
            }
            return Ok(summary);
        }
        Err(RunError::Unreached(unreached))
    }

    /// The runs, in order: the seed range, then each kept seed not already run in the
    /// same mode (a kept seed in the default mode that the range covers rides on that
    /// run, so its staleness is still checked).
    fn runs(&self) -> Vec<(u64, Option<&(PathBuf, CorpusEntry)>)> {
        let mut runs: Vec<(u64, Option<&(PathBuf, CorpusEntry)>)> =
            self.seeds.iter().map(|&seed| (seed, None)).collect();
        for kept in &self.kept {
            let entry = &kept.1;
            let same = runs.iter().position(|(seed, kept)| {
                *seed == entry.seed && kept.is_none() && entry.path() == self.plain_path(*seed)
            });
            match same {
                Some(index) if entry.meaning.is_default_mode() => runs[index].1 = Some(kept),
                _ => runs.push((entry.seed, Some(kept))),
            }
        }
        runs
    }

    /// Runs one seed with this simulation's config and returns what happened (the
    /// building block of sweeps; no determinism check, no printing).
    pub fn run_seed<F>(&self, seed: u64, body: &F) -> SeedRun
    where
        F: AsyncFn(crate::SimEnvironment) -> Result<(), Violation>,
    {
        execute::run_seed(&self.config_for(seed), body, &LogFilter(None))
    }

    /// The report for a failed run.
    pub fn report(
        &self,
        run: &SeedRun,
        class: FailureClass,
        message: String,
        divergence: Option<Divergence>,
    ) -> Box<FailureReport> {
        const INJECTIONS_SHOWN: usize = 20;
        let skip = run.injections.len().saturating_sub(INJECTIONS_SHOWN);
        Box::new(FailureReport {
            seed: run.seed,
            path: run.path.clone(),
            class,
            message,
            faults: run.faults.clone(),
            swarm: run.swarm.clone(),
            injections: run.injections[skip..].to_vec(),
            injections_total: run.injections.len(),
            sim_elapsed: run.sim_elapsed,
            steps: run.steps,
            events: run.events,
            trace_hash: run.trace_hash,
            tail: run.tail.clone(),
            divergence,
            replay: self.replay.clone().unwrap_or_else(ReplayTarget::detect),
        })
    }

    fn compare(&self, first: &SeedRun, second: &SeedRun) -> Option<Box<FailureReport>> {
        let found = determinism::compare_runs(first, second)?;
        Some(self.report(
            first,
            FailureClass::Nondeterminism,
            found.message,
            found.divergence,
        ))
    }

    #[allow(
        clippy::print_stderr,
        reason = "DST_TRACE and DST_PRINT_HASH ask for this output"
    )]
    fn print_run(&self, run: &SeedRun) {
        if self.settings.print_trace {
            eprintln!("umi: trace of seed {} ({} events):", run.seed, run.events);
            for event in run.full_trace.iter().flatten() {
                eprintln!("  {event}");
            }
        }
        if self.settings.print_hash {
            eprintln!("umi-trace-hash seed={} hash={}", run.seed, run.trace_hash);
        }
    }
}

/// Prints a failed seed's report and fails the calling test: the panic is what `cargo
/// test` shows last and what `should_panic` matches (the class, the seed, the first line
/// of the message, the replay).
fn fail_run(report: &FailureReport) -> ! {
    #[allow(
        clippy::print_stderr,
        reason = "the runner's job is to print the report"
    )]
    {
        eprintln!("{report}");
    }
    std::panic::resume_unwind(Box::new(format!(
        "simulation failed ({}) on seed {}: {}; replay: {}",
        report.class,
        report.seed,
        report.message.lines().next().unwrap_or(""),
        report.replay_command()
    )))
}

/// Prints a setup error in one line and fails the calling test without a backtrace.
fn fail_setup(error: &dyn fmt::Display) -> ! {
    #[allow(clippy::print_stderr, reason = "a one-line error is the whole point")]
    {
        eprintln!("error: {error}");
    }
    std::panic::resume_unwind(Box::new(error.to_string()))
}
