//! Fault rules as text: the form `dst serve --faults`, `dst mcp --faults`, the pytest
//! marker and the TypeScript helper take, with [`FaultConfig`]'s meaning.
//!
//! ```text
//! rules       = rule *( "," rule )
//! rule        = kind [ "@" operation ] [ "#" ordinal [ ".." ] ] "=" probability
//! kind        = a FaultKind name: llm.rate_limit, tool.timeout, tool.mcp_stream_cut
//! operation   = 1*( ALPHA / DIGIT / "_" / "-" / "." / "/" ) [ "*" ]
//! ordinal     = 1*DIGIT, from 1
//! probability = a decimal number from 0 to 1
//! ```
//!
//! - `llm.rate_limit=0.2`: every operation of the kind's domain, as before aiming existed.
//! - `tool.timeout@tool.call.issue_refund=0.5`: only that operation
//!   ([`FaultConfig::on_operation`]); a trailing `*` is a prefix
//!   (`tool.mcp_stream_cut@tool.mcp.request.*=1`, [`OperationFilter::Prefix`]).
//! - `llm.rate_limit@llm.call#2=1`: only the 2nd matching operation
//!   ([`FaultConfig::with_at_operation`]); `#3..=0.5`: the 3rd and every later one
//!   ([`FaultConfig::with_after_operations`] of 2).
//!
//! `@` names the operation as the faults header and the trace name it
//! (`x-umi-faults: tool.timeout@tool.call.issue_refund`), and `#` the ordinal as
//! [`FaultConfig`]'s `Display` does (`at #2`). Which operations exist is the server's
//! question (its tools, its MCP methods): `crate::serve` refuses a rule that reaches none.
//! Over `dst serve` an ordinal counts a scope's requests in the order they arrive
//! (docs/adr/0020-aimed-faults-over-serve.md); [`earlier_matches`] is that count.

use std::collections::BTreeMap;

use super::point::BUILTIN;
use super::{FaultConfig, FaultConfigError, FaultKind, OperationFilter, UnknownFaultKind};
use crate::constants::FAULT_CONFIGS_MAX;

/// The longest `--faults` text read, in bytes.
pub const AIM_TEXT_BYTES_MAX: usize = 16 * 1024;

/// The most names [`close_names`] suggests.
pub const CLOSE_NAMES_MAX: usize = 3;

/// Why one rule of a `--faults` text is refused: the item as written, and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("rule {item:?}: {reason}")]
pub struct AimError {
    /// The rule as it was written (trimmed).
    pub item: String,
    /// What is wrong with it.
    pub reason: AimReason,
}

/// What is wrong with one rule.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AimReason {
    /// The text does not follow the grammar at `column` (1-based, in the rule).
    #[error("expected {expected} at column {column}, found {found}")]
    Syntax {
        /// What the grammar wanted there.
        expected: &'static str,
        /// Where, counting characters of the rule from 1.
        column: usize,
        /// What was there (`the end`, or the rest quoted).
        found: String,
    },
    /// The kind is not a fault kind.
    #[error("{0}")]
    Kind(UnknownFaultKind),
    /// `#0`: ordinals count from 1.
    #[error("`#0`: the ordinal counts from 1 (`#1` is the first matching operation)")]
    OrdinalZero,
    /// The ordinal does not fit in 64 bits.
    #[error("the ordinal {text} is too large")]
    OrdinalTooLarge {
        /// The digits.
        text: String,
    },
    /// The probability is not a number.
    #[error("{text:?} is not a probability (a number from 0 to 1)")]
    Probability {
        /// What was written.
        text: String,
    },
    /// The rule cannot work ([`FaultConfig`]'s own checks).
    #[error("{0}")]
    Config(FaultConfigError),
    /// More rules than a simulation may hold.
    #[error("{count} rules exceed the limit of {FAULT_CONFIGS_MAX}")]
    TooMany {
        /// How many were given.
        count: usize,
    },
    /// The text is longer than [`AIM_TEXT_BYTES_MAX`].
    #[error("{bytes} bytes exceed the limit of {AIM_TEXT_BYTES_MAX}")]
    TooLong {
        /// Its length.
        bytes: usize,
    },
}

/// Parses `rules` (`kind[@operation][#n[..]]=p,...`); empty items are skipped.
pub fn parse_rules(text: &str) -> Result<Vec<FaultConfig>, AimError> {
    if text.len() > AIM_TEXT_BYTES_MAX {
        return Err(AimError {
            item: text.chars().take(40).collect(),
            reason: AimReason::TooLong { bytes: text.len() },
        });
    }
    let items: Vec<&str> = text
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .collect();
    if items.len() > FAULT_CONFIGS_MAX {
        return Err(AimError {
            item: items[FAULT_CONFIGS_MAX].to_owned(),
            reason: AimReason::TooMany { count: items.len() },
        });
    }
    items.into_iter().map(parse_rule).collect()
}

/// Parses one rule (`tool.timeout@tool.call.pay#2=0.5`).
pub fn parse_rule(item: &str) -> Result<FaultConfig, AimError> {
    let item = item.trim();
    rule(&mut Cursor { text: item, at: 0 }).map_err(|reason| AimError {
        item: item.to_owned(),
        reason,
    })
}

/// The parts of a rule, before they become a [`FaultConfig`].
struct Parts<'a> {
    kind: FaultKind,
    operation: Option<&'a str>,
    ordinal: Option<(u64, bool)>,
    probability: f64,
}

fn rule(cursor: &mut Cursor<'_>) -> Result<FaultConfig, AimReason> {
    let parts = parts(cursor)?;
    let mut config = FaultConfig::new(parts.kind, parts.probability).map_err(AimReason::Config)?;
    if let Some(operation) = parts.operation {
        config = config
            .with_filter(OperationFilter::parse(operation))
            .map_err(AimReason::Config)?;
    }
    match parts.ordinal {
        None => {}
        Some((0, _)) => return Err(AimReason::OrdinalZero),
        Some((n, false)) => config = config.with_at_operation(n).map_err(AimReason::Config)?,
        Some((n, true)) => config = config.with_after_operations(n - 1),
    }
    Ok(config)
}

fn parts<'a>(cursor: &mut Cursor<'a>) -> Result<Parts<'a>, AimReason> {
    let kind_text = cursor.take_while(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if kind_text.is_empty() {
        return Err(cursor.expected("a fault kind (`llm.rate_limit`)"));
    }
    let kind: FaultKind = kind_text.parse().map_err(AimReason::Kind)?;
    let operation = if cursor.eat('@') {
        let name = cursor.take_while(is_operation_char);
        if name.is_empty() {
            return Err(cursor.expected("an operation after `@` (`tool.call.pay`)"));
        }
        let star = cursor.eat('*');
        Some(&cursor.text[cursor.at - name.len() - usize::from(star)..cursor.at])
    } else {
        None
    };
    let ordinal = if cursor.eat('#') {
        let digits = cursor.take_while(|c| c.is_ascii_digit());
        if digits.is_empty() {
            return Err(cursor.expected("an ordinal after `#` (`#2`)"));
        }
        let n: u64 = digits.parse().map_err(|_| AimReason::OrdinalTooLarge {
            text: digits.to_owned(),
        })?;
        Some((n, cursor.eat_str("..")))
    } else {
        None
    };
    if !cursor.eat('=') {
        return Err(cursor.expected("`=` and a probability"));
    }
    let text = cursor.rest().trim();
    let probability: f64 = text
        .parse()
        .ok()
        .filter(|_| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
        .ok_or_else(|| AimReason::Probability {
            text: text.to_owned(),
        })?;
    Ok(Parts {
        kind,
        operation,
        ordinal,
        probability,
    })
}

/// The characters of an operation name: tool names as MCP allows them (letters, digits,
/// `_`, `-`, `.`) and `/` for MCP methods (`tools/call`).
fn is_operation_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')
}

/// A position in a rule's text.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn rest(&self) -> &'a str {
        &self.text[self.at..]
    }

    fn take_while(&mut self, keep: impl Fn(char) -> bool) -> &'a str {
        let rest = self.rest();
        let len = rest.find(|c: char| !keep(c)).unwrap_or(rest.len());
        self.at += len;
        &rest[..len]
    }

    fn eat(&mut self, c: char) -> bool {
        if self.rest().starts_with(c) {
            self.at += c.len_utf8();
            return true;
        }
        false
    }

    fn eat_str(&mut self, s: &str) -> bool {
        if self.rest().starts_with(s) {
            self.at += s.len();
            return true;
        }
        false
    }

    fn expected(&self, expected: &'static str) -> AimReason {
        let rest = self.rest();
        AimReason::Syntax {
            expected,
            column: self.text[..self.at].chars().count() + 1,
            found: if rest.is_empty() {
                "the end".to_owned()
            } else {
                format!("{rest:?}")
            },
        }
    }
}

/// `config` in the text form [`parse_rule`] reads (`tool.timeout@tool.call.pay#2=0.5`);
/// what the form cannot say (a cap, a rule switched off) follows in words.
pub fn aim_text(config: &FaultConfig) -> String {
    let mut text = config.kind().to_string();
    if config.filter() != &OperationFilter::Any {
        text.push('@');
        text.push_str(&config.filter().to_string());
    }
    match (config.at_operation(), config.after_operations()) {
        (Some(n), _) => text.push_str(&format!("#{n}")),
        (None, 0) => {}
        (None, after) => text.push_str(&format!("#{}..", after.saturating_add(1))),
    }
    text.push_str(&format!("={}", config.probability()));
    if let Some(max) = config.max_injections() {
        text.push_str(&format!(" (max {max})"));
    }
    if !config.enabled() {
        text.push_str(" (disabled)");
    }
    text
}

/// Whether `config` counts operations: `#n` or `#n..`.
pub fn is_ordinal(config: &FaultConfig) -> bool {
    config.at_operation().is_some() || config.after_operations() > 0
}

/// How many operations `config` matched before, when `counts` says how many times each
/// operation was asked before: those its filter passes and its kind can fire at (the
/// built-in points'), as one simulation's injector would have counted them.
pub fn earlier_matches(config: &FaultConfig, counts: &BTreeMap<String, u64>) -> u64 {
    counts
        .iter()
        .filter(|(operation, _)| fires_at(config, operation))
        .map(|(_, count)| *count)
        .sum()
}

/// Whether `config`'s kind can fire at `operation` and its filter passes it.
pub fn fires_at(config: &FaultConfig, operation: &str) -> bool {
    let exact = OperationFilter::Exact(operation.to_owned());
    config.filter().matches(operation)
        && BUILTIN
            .iter()
            .any(|point| point.kinds().contains(&config.kind()) && point.reachable_by(&exact))
}

/// The names in `known` closest to `name` (by edit distance, at most a third of the
/// name's length, or sharing its last segment), nearest first, at most
/// [`CLOSE_NAMES_MAX`].
pub fn close_names<'a>(name: &str, known: &'a [String]) -> Vec<&'a str> {
    let limit = (name.chars().count() / 3).max(2);
    let last = |n: &str| n.rsplit(['.', '/']).next().unwrap_or("").to_owned();
    let mut scored: Vec<(usize, &str)> = known
        .iter()
        .map(|k| (edit_distance(name, k), k.as_str()))
        .filter(|(d, k)| *d <= limit || (!last(name).is_empty() && last(k) == last(name)))
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(CLOSE_NAMES_MAX)
        .map(|(_, k)| k)
        .collect()
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_with_the_rust_apis_meaning() {
        let table: &[(&str, FaultConfig)] = &[
            (
                "llm.rate_limit=0.2",
                FaultConfig::new(FaultKind::LlmRateLimit, 0.2).unwrap(),
            ),
            (
                " tool.timeout@tool.call.issue_refund=0.5 ",
                FaultConfig::new(FaultKind::ToolTimeout, 0.5)
                    .unwrap()
                    .on_operation("tool.call.issue_refund")
                    .unwrap(),
            ),
            (
                "tool.mcp_stream_cut@tool.mcp.request.tools/call=1",
                FaultConfig::always(FaultKind::McpStreamCut)
                    .on_operation("tool.mcp.request.tools/call")
                    .unwrap(),
            ),
            (
                "tool.mcp_stream_cut@tool.mcp.request.*=1",
                FaultConfig::always(FaultKind::McpStreamCut)
                    .with_filter(OperationFilter::Prefix("tool.mcp.request.".into()))
                    .unwrap(),
            ),
            (
                "llm.rate_limit@llm.call#2=1",
                FaultConfig::always(FaultKind::LlmRateLimit)
                    .on_operation("llm.call")
                    .unwrap()
                    .with_at_operation(2)
                    .unwrap(),
            ),
            (
                "llm.timeout#3..=0.25",
                FaultConfig::new(FaultKind::LlmTimeout, 0.25)
                    .unwrap()
                    .with_after_operations(2),
            ),
            (
                "tool.error_result@tool.call.send-payment.v2=.5",
                FaultConfig::new(FaultKind::ToolErrorResult, 0.5)
                    .unwrap()
                    .on_operation("tool.call.send-payment.v2")
                    .unwrap(),
            ),
        ];
        for (text, expected) in table {
            assert_eq!(&parse_rule(text).unwrap(), expected, "{text}");
        }
        let two = parse_rules("llm.rate_limit=0.2, ,tool.timeout@tool.call.pay#1=1,").unwrap();
        assert_eq!(two.len(), 2);
        assert_eq!(two[1].at_operation(), Some(1));
    }

    #[test]
    fn the_text_form_round_trips() {
        for text in [
            "llm.rate_limit=0.2",
            "tool.timeout@tool.call.issue_refund=0.5",
            "tool.mcp_stream_cut@tool.mcp.request.*=1",
            "llm.rate_limit@llm.call#2=1",
            "llm.timeout#3..=0.25",
        ] {
            assert_eq!(aim_text(&parse_rule(text).unwrap()), text);
        }
    }

    #[test]
    fn bad_rules_are_named_with_what_is_wrong() {
        let table: &[(&str, &str)] = &[
            (
                "",
                "expected a fault kind (`llm.rate_limit`) at column 1, found the end",
            ),
            (
                "llm.rate_limit",
                "expected `=` and a probability at column 15, found the end",
            ),
            (
                "llm.rate_limit:0.2",
                "expected `=` and a probability at column 15, found \":0.2\"",
            ),
            ("llm.rate_limt=0.2", "unknown fault kind \"llm.rate_limt\""),
            (
                "tool.timeout@=1",
                "expected an operation after `@` (`tool.call.pay`) at column 14",
            ),
            (
                "tool.timeout@tool.call.pay#=1",
                "expected an ordinal after `#` (`#2`) at column 28",
            ),
            (
                "tool.timeout@tool.call.pay#0=1",
                "`#0`: the ordinal counts from 1",
            ),
            (
                "tool.timeout@tool.call.pay#0..=1",
                "`#0`: the ordinal counts from 1",
            ),
            (
                "tool.timeout@tool.call.pay#99999999999999999999=1",
                "the ordinal 99999999999999999999 is too large",
            ),
            (
                "tool.timeout@tool.call.pay=high",
                "\"high\" is not a probability",
            ),
            (
                "tool.timeout@tool.call.pay=-0.5",
                "\"-0.5\" is not a probability",
            ),
            ("tool.timeout@tool.call.pay=", "\"\" is not a probability"),
            (
                "tool.timeout@tool.call.pay=NaN",
                "\"NaN\" is not a probability",
            ),
            (
                "tool.timeout@tool.call.pay=1.5",
                "probability 1.5 is outside [0, 1]",
            ),
            (
                "tool.timeout@llm.call=1",
                "filter llm.call names no tool operation",
            ),
            (
                "tool.timeout@tool.call.pay x=1",
                "expected `=` and a probability at column 27, found \" x=1\"",
            ),
            (
                "tool.timeout@tool.call.p*y=1",
                "expected `=` and a probability at column 26, found \"y=1\"",
            ),
            ("tööl=1", "unknown fault kind \"t\""),
        ];
        for (text, wanted) in table {
            let error = parse_rule(text).unwrap_err();
            let shown = error.to_string();
            assert!(
                shown.starts_with(&format!("rule {:?}: ", text.trim())),
                "{shown}"
            );
            assert!(shown.contains(wanted), "{text}: {shown}");
        }
        let many = vec!["llm.timeout=0.1"; FAULT_CONFIGS_MAX + 1].join(",");
        assert!(matches!(
            parse_rules(&many).unwrap_err().reason,
            AimReason::TooMany { .. }
        ));
        let long = "x".repeat(AIM_TEXT_BYTES_MAX + 1);
        assert!(matches!(
            parse_rules(&long).unwrap_err().reason,
            AimReason::TooLong { .. }
        ));
    }

    #[test]
    fn earlier_matches_count_what_the_rule_would_have_matched() {
        let counts: BTreeMap<String, u64> = [
            ("llm.call".to_owned(), 3),
            ("tool.mcp.request.tools/call".to_owned(), 2),
            ("tool.call.pay".to_owned(), 2),
            ("tool.call.refund".to_owned(), 1),
        ]
        .into();
        let rule = |text: &str| parse_rule(text).unwrap();
        assert_eq!(earlier_matches(&rule("llm.rate_limit#2=1"), &counts), 3);
        assert_eq!(earlier_matches(&rule("tool.timeout#2=1"), &counts), 3);
        assert_eq!(
            earlier_matches(&rule("tool.timeout@tool.call.pay#2=1"), &counts),
            2
        );
        assert_eq!(
            earlier_matches(&rule("tool.mcp_stream_cut@tool.mcp.request.*#2=1"), &counts),
            2
        );
        assert!(!fires_at(
            &rule("tool.mcp_session_expired=1"),
            "tool.mcp.initialize"
        ));
    }

    #[test]
    fn close_names_are_suggested_nearest_first() {
        let known: Vec<String> = [
            "llm.call",
            "llm.embed",
            "tool.call.issue_refund",
            "tool.call.lookup",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(close_names("llm.complete", &known), Vec::<&str>::new());
        assert_eq!(close_names("llm.cal", &known), vec!["llm.call"]);
        assert_eq!(
            close_names("tool.call.issue_refnd", &known),
            vec!["tool.call.issue_refund"]
        );
        assert_eq!(
            close_names("tool.call.lookup", &["tool.mcp.lookup".to_owned()]),
            vec!["tool.mcp.lookup"]
        );
    }
}
