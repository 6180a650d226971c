//! Kept seeds that went stale: seeds of the corpus that no longer reach what they were
//! kept for.
//!
//! A kept seed is a regression test only while it drives the code into the situation it
//! once failed in. When the code changes under it (a new call, one more random draw), the
//! same seed can take another path, pass, and test nothing, silently. A corpus line that
//! recorded the fault kinds the seed injected (`faults=`, see [`crate::corpus::SeedMeaning`])
//! lets the replay notice: if none of them fires any more, the seed is stale, and the run
//! says so instead of passing.

use std::fmt;
use std::path::PathBuf;

use crate::corpus::SeedMeaning;

/// One kept seed that no longer reaches what it was kept for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleSeed {
    /// The corpus file.
    pub path: PathBuf,
    /// The seed.
    pub seed: u64,
    /// The corpus line it is on.
    pub line: usize,
    /// Its recorded mode and findings.
    pub meaning: SeedMeaning,
    /// Its comment (what it once found).
    pub comment: Option<String>,
}

/// The stale seeds of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleSeeds {
    /// The stale seeds, in the order they ran.
    pub seeds: Vec<StaleSeed>,
}

impl fmt::Display for StaleSeeds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} kept seed(s) no longer reach what they were kept for:",
            self.seeds.len()
        )?;
        for stale in &self.seeds {
            let kinds: Vec<&str> = stale.meaning.faults.iter().map(|k| k.name()).collect();
            writeln!(
                f,
                "  {}:{}: seed {} injected {} when it was kept{}; its replay injects none of them",
                stale.path.display(),
                stale.line,
                stale.seed,
                kinds.join(", "),
                stale
                    .comment
                    .as_deref()
                    .map_or_else(String::new, |c| format!(" ({c})")),
            )?;
        }
        let first = &self.seeds[0];
        let name = first
            .path
            .file_stem()
            .map_or_else(|| "<scenario>".into(), |s| s.to_string_lossy());
        let kinds: Vec<&str> = first.meaning.faults.iter().map(|k| k.name()).collect();
        write!(
            f,
            "the code changed under them. Find a seed that reaches the same faults again and \
             replace the line (for a scenario: `dst find --scenario {name} --faults {}{}`), or \
             delete the line if the case is covered elsewhere",
            kinds.join(","),
            if first.meaning.swarm { " --swarm" } else { "" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_file_line_seed_and_the_command_to_refind() {
        let stale = StaleSeeds {
            seeds: vec![StaleSeed {
                path: PathBuf::from("seeds/wire_faults.seeds"),
                seed: 14,
                line: 2,
                meaning: SeedMeaning::parse("swarm faults=network.timeout").unwrap(),
                comment: Some("correctness: stalled body".into()),
            }],
        };
        let text = stale.to_string();
        assert!(text.contains("seeds/wire_faults.seeds:2: seed 14 injected network.timeout"));
        assert!(text.contains("dst find --scenario wire_faults --faults network.timeout --swarm"));
    }
}
