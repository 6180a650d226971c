//! How many shards a sweep needs to finish in its time budget: the sizing rule the
//! nightly workflow and the Kubernetes Job take their shard counts from (`dst size`).
//!
//! Each scenario has a measured throughput, `seeds_per_core_second` (seeds one worker
//! runs per second of one core, in the `sim` profile), committed in
//! `scenarios/throughput.toml`. A sweep of `seeds` default seeds and `swarm_seeds` swarm
//! seeds per scenario, each run twice when the determinism check is on, costs
//!
//! ```text
//! core_seconds(scenario) = (seeds + swarm_seeds) × (2 if --check-determinism else 1)
//!                          / seeds_per_core_second(scenario)
//! ```
//!
//! Default and swarm seeds are separate sweeps sharded the same `N` ways (the nightly's
//! matrix is shard × mode), so each mode's shards must fit the budget on their own:
//!
//! ```text
//! shards = max over modes of ceil(core_seconds(mode) × (1 + margin)
//!                                  / (cores_per_shard × time_budget_s))
//! ```
//!
//! The margin covers what the rates do not: a slower or busier machine than the one
//! measured, the shard's start, a seed slower than its scenario's mean. A scenario with
//! no measured rate is an error: a new scenario must be measured before it is sized.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Why the rates cannot be read or the rule cannot be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SizingError {
    /// The rates file cannot be read.
    #[error("{path}: cannot read the rates: {message}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the file system said.
        message: String,
    },
    /// The rates file is not TOML of the expected shape.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message (it names the key and the line).
        message: String,
    },
    /// A rate that is not a positive, finite number.
    #[error("{path}: [{scenario}] seeds_per_core_second is {value}: {what}")]
    BadRate {
        /// The file.
        path: PathBuf,
        /// The scenario (the table's key).
        scenario: String,
        /// The value read.
        value: f64,
        /// What is wrong with it.
        what: &'static str,
    },
    /// A scenario the sweep runs has no rate.
    #[error(
        "{path}: no seeds_per_core_second for scenario {scenario:?}: measure it \
         (`dst sweep --scenario {scenario} --seeds 1000 --no-record --quiet`, \
         the seeds/s column) and add it"
    )]
    Unmeasured {
        /// The file.
        path: PathBuf,
        /// The scenario.
        scenario: String,
    },
    /// An input the rule cannot use (no cores, no budget, a negative margin).
    #[error("cannot size the sweep: {0}")]
    Invalid(String),
}

/// One scenario's entry in the rates file.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
struct RateEntry {
    seeds_per_core_second: f64,
}

/// Measured throughputs: seeds per core-second per scenario, from the file they came
/// from (named in errors).
#[derive(Debug, Clone, PartialEq)]
pub struct Throughput {
    path: PathBuf,
    seeds_per_core_second: BTreeMap<String, f64>,
}

impl Throughput {
    /// Reads a rates file: a table per scenario with its `seeds_per_core_second`.
    pub fn load(path: &Path) -> Result<Self, SizingError> {
        let text = std::fs::read_to_string(path).map_err(|error| SizingError::Read {
            path: path.to_owned(),
            message: error.to_string(),
        })?;
        Self::parse(path, &text)
    }

    /// Parses the text of a rates file (`path` names it in errors).
    pub fn parse(path: &Path, text: &str) -> Result<Self, SizingError> {
        let entries: BTreeMap<String, RateEntry> =
            toml::from_str(text).map_err(|error| SizingError::Parse {
                path: path.to_owned(),
                message: error.to_string(),
            })?;
        let mut seeds_per_core_second = BTreeMap::new();
        for (scenario, entry) in entries {
            let value = entry.seeds_per_core_second;
            let what = if !value.is_finite() {
                Some("not a finite number")
            } else if value <= 0.0 {
                Some("a rate must be above zero")
            } else {
                None
            };
            if let Some(what) = what {
                return Err(SizingError::BadRate {
                    path: path.to_owned(),
                    scenario,
                    value,
                    what,
                });
            }
            seeds_per_core_second.insert(scenario, value);
        }
        Ok(Self {
            path: path.to_owned(),
            seeds_per_core_second,
        })
    }

    /// The rate of `scenario`; an error names the file and the scenario.
    pub fn seeds_per_core_second(&self, scenario: &str) -> Result<f64, SizingError> {
        self.seeds_per_core_second
            .get(scenario)
            .copied()
            .ok_or_else(|| SizingError::Unmeasured {
                path: self.path.clone(),
                scenario: scenario.to_owned(),
            })
    }
}

/// What a sweep is to run, and on what.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepSize {
    /// Default-mode seeds per scenario.
    pub seeds: u64,
    /// Swarm-mode seeds per scenario (0: no swarm sweep).
    pub swarm_seeds: u64,
    /// Whether each seed runs twice (`--check-determinism`).
    pub check_determinism: bool,
    /// Cores (workers) each shard has.
    pub cores_per_shard: u32,
    /// Each shard's `--time-budget`, in seconds.
    pub time_budget_s: f64,
    /// Extra work planned for, as a fraction (0.25: the work plus a quarter must fit).
    pub margin: f64,
}

/// One scenario's cost in a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioCost {
    /// The scenario.
    pub name: String,
    /// Its rate, seeds per core-second.
    pub seeds_per_core_second: f64,
    /// Core-seconds its default seeds take (determinism re-runs included).
    pub default_core_seconds: f64,
    /// Core-seconds its swarm seeds take.
    pub swarm_core_seconds: f64,
}

/// The rule's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Sizing {
    /// Per scenario, in the order given.
    pub scenarios: Vec<ScenarioCost>,
    /// Core-seconds of the default sweep, all scenarios.
    pub default_core_seconds: f64,
    /// Core-seconds of the swarm sweep, all scenarios.
    pub swarm_core_seconds: f64,
    /// Shards needed so that each mode's shards finish in the budget with the margin.
    pub shards: u64,
}

/// The shards `size` needs over `scenarios`, with their rates from `rates`.
pub fn size(
    rates: &Throughput,
    scenarios: &[&str],
    size: &SweepSize,
) -> Result<Sizing, SizingError> {
    if size.cores_per_shard == 0 {
        return Err(SizingError::Invalid(
            "a shard needs at least one core".into(),
        ));
    }
    if !(size.time_budget_s.is_finite() && size.time_budget_s > 0.0) {
        return Err(SizingError::Invalid(format!(
            "time budget {} s: give a positive budget",
            size.time_budget_s
        )));
    }
    if !(size.margin.is_finite() && size.margin >= 0.0) {
        return Err(SizingError::Invalid(format!(
            "margin {}: give a fraction at or above 0",
            size.margin
        )));
    }
    let runs_per_seed = if size.check_determinism { 2.0 } else { 1.0 };
    let mut costs = Vec::with_capacity(scenarios.len());
    for name in scenarios {
        let rate = rates.seeds_per_core_second(name)?;
        let core_seconds = |seeds: u64| seeds as f64 * runs_per_seed / rate;
        costs.push(ScenarioCost {
            name: (*name).to_owned(),
            seeds_per_core_second: rate,
            default_core_seconds: core_seconds(size.seeds),
            swarm_core_seconds: core_seconds(size.swarm_seeds),
        });
    }
    let default_core_seconds: f64 = costs.iter().map(|c| c.default_core_seconds).sum();
    let swarm_core_seconds: f64 = costs.iter().map(|c| c.swarm_core_seconds).sum();
    let shard_core_seconds = f64::from(size.cores_per_shard) * size.time_budget_s;
    let shards_for =
        |core_seconds: f64| (core_seconds * (1.0 + size.margin) / shard_core_seconds).ceil() as u64;
    Ok(Sizing {
        scenarios: costs,
        default_core_seconds,
        swarm_core_seconds,
        shards: shards_for(default_core_seconds)
            .max(shards_for(swarm_core_seconds))
            .max(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rates(text: &str) -> Result<Throughput, SizingError> {
        Throughput::parse(Path::new("throughput.toml"), text)
    }

    #[test]
    fn the_shard_count_is_each_modes_work_over_a_shards_core_seconds() {
        let rates =
            rates("[a]\nseeds_per_core_second = 100\n[b]\nseeds_per_core_second = 50\n").unwrap();
        let sweep = |seeds, swarm_seeds, check_determinism, cores_per_shard, margin| SweepSize {
            seeds,
            swarm_seeds,
            check_determinism,
            cores_per_shard,
            time_budget_s: 100.0,
            margin,
        };
        // a: seeds/100, b: seeds/50 core-seconds; a shard has cores × 100 core-seconds.
        let cases = [
            // 1000 seeds: 10 + 20 = 30 core-s, one 1-core shard of 100.
            (sweep(1_000, 0, false, 1, 0.0), 30.0, 0.0, 1),
            // Determinism doubles: 60 core-s.
            (sweep(1_000, 0, true, 1, 0.0), 60.0, 0.0, 1),
            // 10,000 seeds: 300 core-s over 100 per shard: 3; with a 25% margin: 4.
            (sweep(10_000, 0, false, 1, 0.0), 300.0, 0.0, 3),
            (sweep(10_000, 0, false, 1, 0.25), 300.0, 0.0, 4),
            // Two cores a shard halve it.
            (sweep(10_000, 0, false, 2, 0.25), 300.0, 0.0, 2),
            // Swarm is its own sweep over the same N shards: the larger mode decides.
            (sweep(1_000, 20_000, false, 1, 0.0), 30.0, 600.0, 6),
            // Nothing to run still takes one shard.
            (sweep(0, 0, false, 1, 0.0), 0.0, 0.0, 1),
        ];
        for (input, default_core_seconds, swarm_core_seconds, shards) in cases {
            let sizing = size(&rates, &["a", "b"], &input).unwrap();
            assert_eq!(
                (
                    sizing.default_core_seconds,
                    sizing.swarm_core_seconds,
                    sizing.shards
                ),
                (default_core_seconds, swarm_core_seconds, shards),
                "{input:?}"
            );
        }
    }

    #[test]
    fn a_scenario_without_a_rate_and_bad_rates_are_named() {
        let known = rates("[a]\nseeds_per_core_second = 100\n").unwrap();
        let input = SweepSize {
            seeds: 10,
            swarm_seeds: 0,
            check_determinism: false,
            cores_per_shard: 1,
            time_budget_s: 60.0,
            margin: 0.0,
        };
        let error = size(&known, &["a", "new_one"], &input).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("throughput.toml: no seeds_per_core_second for scenario \"new_one\""),
            "{error}"
        );
        let error = rates("[a]\nseeds_per_core_second = 0\n").unwrap_err();
        assert_eq!(
            error.to_string(),
            "throughput.toml: [a] seeds_per_core_second is 0: a rate must be above zero"
        );
        let error = rates("[a]\nseeds_per_second = 3\n").unwrap_err();
        assert!(matches!(error, SizingError::Parse { .. }), "{error}");
        assert!(error.to_string().contains("seeds_per_second"), "{error}");
        let error = rates("[a]\nseeds_per_core_second = \"fast\"\n").unwrap_err();
        assert!(
            error.to_string().starts_with("throughput.toml: "),
            "{error}"
        );
        let no_cores = SweepSize {
            cores_per_shard: 0,
            ..input
        };
        assert!(matches!(
            size(&known, &["a"], &no_cores),
            Err(SizingError::Invalid(_))
        ));
    }

    /// The committed rates parse, and name every scenario `dst sweep` runs by default.
    #[test]
    fn the_committed_rates_parse() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/throughput.toml");
        let rates = Throughput::load(&path).unwrap();
        assert!(rates.seeds_per_core_second("canary").unwrap() > 0.0);
    }
}
