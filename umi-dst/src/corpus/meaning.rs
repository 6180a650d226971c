//! What a kept seed records besides its number: the mode its replay needs, and what it
//! found, so that a replay runs the seed as the sweep did and notices when the seed no
//! longer reaches what it was kept for.
//!
//! A seed found in swarm mode and replayed without it is another run: most such seeds
//! passed when replayed plainly, testing nothing. So a corpus line carries its mode as
//! words between the seed and the comment:
//!
//! ```text
//! 179 swarm expect=correctness faults=llm.stream_cut  # a stream cut after its first event
//! 42 only=0:3,1:2  # the minimized schedule
//! ```
//!
//! - `swarm`: replay in swarm mode (the seed's draws switch and scale the rules);
//! - `only=<rule:ordinal>,...`: only these injections may happen (`dst minimize`'s form);
//! - `expect=<class>`: how the seed failed when it was kept;
//! - `faults=<kind>,...`: the fault kinds it injected then. A replay that injects none
//!   of them no longer reaches what the seed was kept for: the code changed under it, and
//!   the seed is reported stale with the command that finds a replacement.
//!
//! A line with only a seed (every line written before this format) replays in the
//! default mode and is never reported stale.

use std::fmt;

use crate::config::SimConfig;
use crate::failure_class::FailureClass;
use crate::fault::{FaultKind, FaultStats, InjectionId};

/// Fault kinds a kept seed records at most (the first, in catalog order).
pub(super) const MEANING_FAULT_KINDS_MAX: usize = 8;

/// Injection ids an `only=` schedule may list.
pub(super) const MEANING_ONLY_IDS_MAX: usize = 256;

/// Characters of a bad word quoted in an error.
const WORD_QUOTE_CHARS_MAX: usize = 40;

/// `word`, cut to `WORD_QUOTE_CHARS_MAX` characters for an error message.
fn quote(word: &str) -> String {
    let mut quoted: String = word.chars().take(WORD_QUOTE_CHARS_MAX).collect();
    if quoted.len() < word.len() {
        quoted.push('…');
    }
    format!("{quoted:?}")
}

/// The mode and findings of one kept seed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SeedMeaning {
    /// Replay in swarm mode.
    pub swarm: bool,
    /// Only these injections may happen.
    pub only: Option<Vec<InjectionId>>,
    /// How the seed failed when it was kept.
    pub expect: Option<FailureClass>,
    /// The fault kinds it injected then.
    pub faults: Vec<FaultKind>,
}

impl SeedMeaning {
    /// Parses the words between a seed and its comment. The error names the word.
    pub fn parse(words: &str) -> Result<Self, String> {
        let mut meaning = Self::default();
        for word in words.split_whitespace() {
            match word.split_once('=') {
                None if word == "swarm" => meaning.swarm = true,
                Some(("only", ids)) => meaning.only = Some(parse_ids(ids)?),
                Some(("expect", class)) => {
                    meaning.expect = Some(FailureClass::from_name(class).ok_or_else(|| {
                        format!(
                            "expect={}: not a failure class \
                             (crash, correctness, liveness, nondeterminism)",
                            quote(class)
                        )
                    })?);
                }
                Some(("faults", kinds)) => {
                    meaning.faults = kinds
                        .split(',')
                        .map(|kind| {
                            kind.parse::<FaultKind>().map_err(|_| {
                                format!("faults=: {} is not a fault kind", quote(kind))
                            })
                        })
                        .collect::<Result<_, _>>()?;
                    if meaning.faults.len() > MEANING_FAULT_KINDS_MAX {
                        return Err(format!(
                            "faults= lists {} kinds, over {MEANING_FAULT_KINDS_MAX}",
                            meaning.faults.len()
                        ));
                    }
                }
                _ => {
                    return Err(format!(
                        "{} is not a seed word (swarm, only=, expect=, faults=)",
                        quote(word)
                    ));
                }
            }
        }
        Ok(meaning)
    }

    /// The meaning of a failure the sweep found: its mode, class and injected kinds.
    pub fn found(swarm: bool, class: FailureClass, stats: Option<&FaultStats>) -> Self {
        let faults = stats
            .map(|stats| {
                stats
                    .injected_by_kind
                    .iter()
                    .filter(|(_, count)| **count > 0)
                    .map(|(kind, _)| *kind)
                    .take(MEANING_FAULT_KINDS_MAX)
                    .collect()
            })
            .unwrap_or_default();
        Self {
            swarm,
            only: None,
            expect: Some(class),
            faults,
        }
    }

    /// Whether `other` replays the same run (same seed aside): same swarm flag and
    /// schedule. A seed may be kept once per mode: a swarm run and a plain run of one seed
    /// are different runs.
    pub fn same_mode(&self, other: &SeedMeaning) -> bool {
        self.swarm == other.swarm && self.only == other.only
    }

    /// Whether the replay runs in the default mode (no swarm, no schedule).
    pub fn is_default_mode(&self) -> bool {
        !self.swarm && self.only.is_none()
    }

    /// `config` in this seed's mode.
    pub fn apply(&self, mut config: SimConfig) -> SimConfig {
        config.swarm |= self.swarm;
        if let Some(only) = &self.only {
            config.only_injections = Some(only.clone());
        }
        config
    }

    /// Whether a replay that injected `stats` still reaches what the seed was kept for:
    /// at least one of the recorded kinds fired (always true when none were recorded).
    pub fn still_reached_by(&self, stats: &FaultStats) -> bool {
        self.faults.is_empty()
            || self
                .faults
                .iter()
                .any(|kind| stats.injected_by_kind.get(kind).is_some_and(|n| *n > 0))
    }
}

impl fmt::Display for SeedMeaning {
    /// The words, each preceded by a space (nothing for a plain seed).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.swarm {
            f.write_str(" swarm")?;
        }
        if let Some(only) = &self.only {
            let ids: Vec<String> = only.iter().map(ToString::to_string).collect();
            write!(f, " only={}", ids.join(","))?;
        }
        if let Some(class) = self.expect {
            write!(f, " expect={class}")?;
        }
        if !self.faults.is_empty() {
            let kinds: Vec<&str> = self.faults.iter().map(|k| k.name()).collect();
            write!(f, " faults={}", kinds.join(","))?;
        }
        Ok(())
    }
}

fn parse_ids(text: &str) -> Result<Vec<InjectionId>, String> {
    let ids: Vec<InjectionId> = text
        .split(',')
        .filter(|id| !id.is_empty())
        .map(|id| {
            id.parse::<InjectionId>()
                .map_err(|_| format!("only=: {} is not rule:ordinal", quote(id)))
        })
        .collect::<Result<_, _>>()?;
    if ids.is_empty() {
        return Err("only= lists no injection (it would allow none)".to_owned());
    }
    if ids.len() > MEANING_ONLY_IDS_MAX {
        return Err(format!(
            "only= lists {} injections, over {MEANING_ONLY_IDS_MAX}",
            ids.len()
        ));
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip() {
        let table = [
            "",
            " swarm",
            " expect=correctness faults=llm.stream_cut,storage.write_fail",
            " swarm only=0:3,1:2 expect=liveness",
        ];
        for words in table {
            let meaning = SeedMeaning::parse(words).unwrap();
            assert_eq!(meaning.to_string(), words, "{words:?}");
        }
        assert!(SeedMeaning::parse("").unwrap().is_default_mode());
        assert!(!SeedMeaning::parse("swarm").unwrap().is_default_mode());
    }

    #[test]
    fn bad_words_are_named() {
        for (words, named) in [
            ("swarn", "swarn"),
            ("expect=flaky", "flaky"),
            ("faults=llm.explode", "llm.explode"),
            ("only=1-2", "1-2"),
        ] {
            let error = SeedMeaning::parse(words).unwrap_err();
            assert!(error.contains(named), "{words}: {error}");
        }
    }

    #[test]
    fn the_mode_reaches_the_config_and_staleness_reads_the_kinds() {
        let meaning = SeedMeaning::parse("swarm only=0:1 faults=llm.timeout").unwrap();
        let config = meaning.apply(SimConfig::new(5));
        assert!(config.swarm);
        assert_eq!(
            config.only_injections,
            Some(vec![InjectionId {
                rule: 0,
                ordinal: 1
            }])
        );
        let mut stats = FaultStats::default();
        assert!(!meaning.still_reached_by(&stats));
        stats.injected_by_kind.insert(FaultKind::LlmTimeout, 1);
        assert!(meaning.still_reached_by(&stats));
        assert!(SeedMeaning::default().still_reached_by(&FaultStats::default()));
    }
}
