//! The `dst replay` command line that reproduces one run: the one place it is spelled,
//! for the sweep's failure lines and reports, `dst minimize`'s result, and the watchdog's
//! hang report.

use std::fmt;

use umi_dst::Branch;
use umi_dst::fault::InjectionId;

/// A `dst replay` command: `dst replay --scenario S --seed N [--swarm] [--only IDS]
/// [--check-determinism]`, in that order; `--path N/STEP:STREAM/...` in place of `--seed
/// N` for a path with branch points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayCommand<'a> {
    /// How the binary is invoked (`dst`, `cargo run -p umi-scenarios --bin dst --`).
    pub program: &'a str,
    /// The scenario's name.
    pub scenario: &'a str,
    /// The seed.
    pub seed: u64,
    /// The path's branch points after the seed (none: the seed alone, `--seed`).
    pub branches: &'a [Branch],
    /// Whether the run was in swarm mode.
    pub swarm: bool,
    /// The injections the replay allows (a minimized fault schedule); `None`: all.
    pub only: Option<&'a [InjectionId]>,
    /// Whether the replay checks determinism (the failure was a divergence).
    pub check_determinism: bool,
}

impl<'a> ReplayCommand<'a> {
    /// The plain replay of `seed` of `scenario`.
    pub fn new(program: &'a str, scenario: &'a str, seed: u64) -> Self {
        Self {
            program,
            scenario,
            seed,
            branches: &[],
            swarm: false,
            only: None,
            check_determinism: false,
        }
    }

    /// The run of the path of `seed` with `branches` (the `--path` flag when there are
    /// any).
    #[must_use]
    pub fn branches(mut self, branches: &'a [Branch]) -> Self {
        self.branches = branches;
        self
    }

    /// In swarm mode or not.
    #[must_use]
    pub fn swarm(mut self, swarm: bool) -> Self {
        self.swarm = swarm;
        self
    }

    /// Allowing only `ids` (the `--only` flag).
    #[must_use]
    pub fn only(mut self, ids: Option<&'a [InjectionId]>) -> Self {
        self.only = ids;
        self
    }

    /// Checking determinism or not.
    #[must_use]
    pub fn check_determinism(mut self, check: bool) -> Self {
        self.check_determinism = check;
        self
    }
}

impl fmt::Display for ReplayCommand<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flag = if self.branches.is_empty() {
            "--seed"
        } else {
            "--path"
        };
        write!(
            f,
            "{} replay --scenario {} {flag} {}",
            self.program,
            self.scenario,
            seed_text(self.seed)
        )?;
        for branch in self.branches {
            write!(f, "/{}:{}", branch.step, branch.stream)?;
        }
        if self.swarm {
            f.write_str(" --swarm")?;
        }
        if let Some(ids) = self.only {
            // Quoted: the ids hold colons and commas, and the list may be empty.
            let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
            write!(f, " --only '{}'", ids.join(","))?;
        }
        if self.check_determinism {
            f.write_str(" --check-determinism")?;
        }
        Ok(())
    }
}

/// A seed as a command takes it: decimal, or hex for a trial seed (its task and trial
/// read off the digits: `0x8000000000070004` is task 7, trial 4).
fn seed_text(seed: u64) -> String {
    if umi_dst::usage::split_seed(seed).trial.is_some() {
        format!("{seed:#x}")
    } else {
        seed.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flag_in_its_place() {
        let ids: Vec<InjectionId> = vec!["0:1".parse().unwrap(), "2:3".parse().unwrap()];
        let branches = [
            Branch {
                step: 412,
                stream: 9913,
            },
            Branch {
                step: 1200,
                stream: 55,
            },
        ];
        let cases: [(ReplayCommand<'_>, &str); 8] = [
            (
                ReplayCommand::new("dst", "wire_faults", 7),
                "dst replay --scenario wire_faults --seed 7",
            ),
            (
                ReplayCommand::new("dst", "s", 0x8000_0000_0007_0004),
                "dst replay --scenario s --seed 0x8000000000070004",
            ),
            (
                ReplayCommand::new("dst", "wire_faults", 7).swarm(true),
                "dst replay --scenario wire_faults --seed 7 --swarm",
            ),
            (
                ReplayCommand::new("dst", "s", 1).only(Some(&ids)),
                "dst replay --scenario s --seed 1 --only '0:1,2:3'",
            ),
            (
                ReplayCommand::new("dst", "s", 1).only(Some(&[])),
                "dst replay --scenario s --seed 1 --only ''",
            ),
            (
                ReplayCommand::new("x --", "s", u64::MAX)
                    .swarm(true)
                    .check_determinism(true),
                "x -- replay --scenario s --seed 0xffffffffffffffff --swarm --check-determinism",
            ),
            (
                ReplayCommand::new("dst", "s", 7).branches(&branches[..1]),
                "dst replay --scenario s --path 7/412:9913",
            ),
            (
                ReplayCommand::new("dst", "s", 7)
                    .branches(&branches)
                    .swarm(true)
                    .only(Some(&ids)),
                "dst replay --scenario s --path 7/412:9913/1200:55 --swarm --only '0:1,2:3'",
            ),
        ];
        for (command, expected) in cases {
            assert_eq!(command.to_string(), expected);
        }
    }
}
