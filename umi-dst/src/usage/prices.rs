//! The price table: what a model's tokens cost, per model and token kind, in integer
//! micro-units (millionths of the table's currency) per million tokens, read from a
//! TOML file whose every mistake is refused naming the file, the line and the field.
//!
//! ```toml
//! # What the models cost, in micro-USD per million tokens.
//! currency = "USD"
//!
//! [models."gpt-4o-mini"]
//! input = 150_000          # $0.15 per million prompt tokens
//! cached_input = 75_000    # of which served from the prompt cache
//! output = 600_000         # $0.60 per million answer tokens
//! reasoning = 600_000      # of which spent on reasoning
//! ```
//!
//! A run's cost is `Σ tokens × price / 1_000_000`, summed exactly (in `u128`) over its
//! models and kinds and divided once, rounding down: the same tokens cost the same on
//! every platform. `cached_input` is priced instead of `input` for the cached part of the
//! prompt, `reasoning` instead of `output` for the reasoning part of the answer. A model
//! the run used that the table does not price is reported by name, never priced as
//! zero.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::TokenCounts;

/// The token kinds a model's entry must price, in the order a table lists them.
pub const TOKEN_KINDS: [&str; 4] = ["input", "cached_input", "output", "reasoning"];

/// Models one table may price.
pub const PRICE_TABLE_MODELS_MAX: usize = 1_024;

/// Tokens a price is quoted per.
const TOKENS_PER_PRICE: u128 = 1_000_000;

/// What one model's tokens cost, in micro-units per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelPrices {
    /// Prompt tokens not served from the cache.
    pub input: u64,
    /// Prompt tokens served from the cache.
    pub cached_input: u64,
    /// Answer tokens not spent on reasoning.
    pub output: u64,
    /// Answer tokens spent on reasoning.
    pub reasoning: u64,
}

impl ModelPrices {
    /// `tokens × price`, summed over the kinds, in micro-units × 10⁶.
    fn cost_scaled(&self, tokens: &TokenCounts) -> u128 {
        let cached = tokens.cached_input.min(tokens.input);
        let reasoning = tokens.reasoning.min(tokens.output);
        u128::from(tokens.input - cached) * u128::from(self.input)
            + u128::from(cached) * u128::from(self.cached_input)
            + u128::from(tokens.output - reasoning) * u128::from(self.output)
            + u128::from(reasoning) * u128::from(self.reasoning)
    }
}

/// Prices by model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PriceTable {
    /// The currency label (`USD` unless the file says).
    pub currency: String,
    /// By model name, as the request names it (`gpt-4o-mini`).
    pub models: BTreeMap<String, ModelPrices>,
    /// Where the table was read from, if from a file.
    pub source: Option<PathBuf>,
}

/// A price table that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PriceError {
    /// The file could not be read.
    #[error("price table {path}: cannot read it: {reason}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The file is not what a price table is.
    #[error("price table {path}:{line}: {field}: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// The line, from 1.
        line: usize,
        /// The field (`models."gpt-4o".output`), or `(file)` for the whole file.
        field: String,
        /// What is wrong.
        reason: String,
    },
}

/// One model's entry as the file has it: token kinds to values, checked after parsing.
type RawEntry = BTreeMap<Spanned<String>, Spanned<toml::Value>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    #[serde(default)]
    currency: Option<String>,
    models: Spanned<BTreeMap<Spanned<String>, Spanned<RawEntry>>>,
}

impl PriceTable {
    /// Reads the table at `path`.
    pub fn load(path: &Path) -> Result<Self, PriceError> {
        let text = std::fs::read_to_string(path).map_err(|error| PriceError::Read {
            path: path.display().to_string(),
            reason: error.to_string(),
        })?;
        let mut table = Self::parse(&text, &path.display().to_string())?;
        table.source = Some(path.to_owned());
        Ok(table)
    }

    /// Parses a table's text; `path` names it in errors.
    pub fn parse(text: &str, path: &str) -> Result<Self, PriceError> {
        let invalid =
            |span: Option<Range<usize>>, field: &str, reason: String| PriceError::Invalid {
                path: path.to_owned(),
                line: span.map_or(1, |span| line_of(text, span.start)),
                field: field.to_owned(),
                reason,
            };
        let raw: RawTable = toml::from_str(text)
            .map_err(|error| invalid(error.span(), "(file)", error.message().to_owned()))?;
        if raw.models.get_ref().len() > PRICE_TABLE_MODELS_MAX {
            return Err(invalid(
                Some(raw.models.span()),
                "models",
                format!("more than {PRICE_TABLE_MODELS_MAX} models"),
            ));
        }
        let mut models = BTreeMap::new();
        for (name, entry) in raw.models.into_inner() {
            let field = format!("models.{:?}", name.get_ref());
            let prices =
                model_prices(entry.get_ref(), &field).map_err(|(span, field, reason)| {
                    invalid(Some(span.unwrap_or(entry.span())), &field, reason)
                })?;
            if name.get_ref().trim().is_empty() {
                return Err(invalid(
                    Some(name.span()),
                    &field,
                    "a model needs a name".into(),
                ));
            }
            models.insert(name.into_inner(), prices);
        }
        Ok(Self {
            currency: raw.currency.unwrap_or_else(|| "USD".to_owned()),
            models,
            source: None,
        })
    }

    /// The cost of `tokens` by model, in micro-units (rounded down once, at the end), or
    /// the models used (any answered call) that the table does not price.
    pub fn cost_micros(&self, tokens: &BTreeMap<String, TokenCounts>) -> Result<u64, Vec<String>> {
        let mut scaled: u128 = 0;
        let mut unpriced = Vec::new();
        for (model, counts) in tokens {
            match self.models.get(model) {
                Some(prices) => scaled = scaled.saturating_add(prices.cost_scaled(counts)),
                None => unpriced.push(model.clone()),
            }
        }
        if !unpriced.is_empty() {
            return Err(unpriced);
        }
        Ok(u64::try_from(scaled / TOKENS_PER_PRICE).unwrap_or(u64::MAX))
    }
}

/// A model's entry: every kind in [`TOKEN_KINDS`], each a non-negative integer, nothing
/// else. An error carries the span to blame (None: the entry's), the field and why.
type EntryError = (Option<Range<usize>>, String, String);

fn model_prices(entry: &RawEntry, field: &str) -> Result<ModelPrices, EntryError> {
    let mut found: [Option<u64>; 4] = [None; 4];
    for (kind, value) in entry {
        let kind_field = format!("{field}.{}", kind.get_ref());
        let Some(slot) = TOKEN_KINDS.iter().position(|k| k == kind.get_ref()) else {
            return Err((
                Some(kind.span()),
                kind_field,
                format!("unknown token kind (the kinds: {})", TOKEN_KINDS.join(", ")),
            ));
        };
        found[slot] = Some(
            price_value(value.get_ref())
                .map_err(|reason| (Some(value.span()), kind_field, reason))?,
        );
    }
    let missing: Vec<&str> = TOKEN_KINDS
        .iter()
        .zip(&found)
        .filter(|(_, price)| price.is_none())
        .map(|(kind, _)| *kind)
        .collect();
    if let Some(first) = missing.first() {
        return Err((
            None,
            format!("{field}.{first}"),
            format!("missing (every model prices {})", TOKEN_KINDS.join(", ")),
        ));
    }
    let [input, cached_input, output, reasoning] = found.map(|price| price.unwrap_or(0));
    Ok(ModelPrices {
        input,
        cached_input,
        output,
        reasoning,
    })
}

/// A price: an integer number of micro-units per million tokens, zero or more.
fn price_value(value: &toml::Value) -> Result<u64, String> {
    match value {
        toml::Value::Integer(price) => u64::try_from(*price).map_err(|_| {
            format!("{price} is negative (a price is 0 or more micro-units per million tokens)")
        }),
        toml::Value::Float(price) => Err(format!(
            "{price} is not an integer (prices are integer micro-units per million tokens: $0.15 is 150000)"
        )),
        other => Err(format!(
            "a {} is not a price (an integer of micro-units per million tokens)",
            other.type_str()
        )),
    }
}

/// The line (from 1) holding byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "currency = \"USD\"\n\n[models.\"gpt-4o-mini\"]\ninput = 150_000\ncached_input = 75_000\noutput = 600_000\nreasoning = 600_000\n";

    #[test]
    fn a_table_prices_each_kind_exactly() {
        let table = PriceTable::parse(GOOD, "prices.toml").unwrap();
        let tokens = BTreeMap::from([(
            "gpt-4o-mini".to_owned(),
            TokenCounts {
                input: 1_000,
                cached_input: 400,
                output: 500,
                reasoning: 100,
            },
        )]);
        // (600×150k + 400×75k + 400×600k + 100×600k) / 10⁶ = 90 + 30 + 240 + 60.
        assert_eq!(table.cost_micros(&tokens), Ok(420));
        let unpriced = BTreeMap::from([("other".to_owned(), TokenCounts::default())]);
        assert_eq!(table.cost_micros(&unpriced), Err(vec!["other".to_owned()]));
    }

    #[test]
    fn bad_tables_are_refused_naming_line_and_field() {
        let cases: [(&str, usize, &str, &str); 6] = [
            (
                "[models.m]\ninput = 1\ncached_input = 1\noutput = -5\nreasoning = 1\n",
                4,
                "models.\"m\".output",
                "negative",
            ),
            (
                "[models.m]\ninput = 1.5\ncached_input = 1\noutput = 1\nreasoning = 1\n",
                2,
                "models.\"m\".input",
                "not an integer",
            ),
            (
                "[models.m]\ninput = 1\ncached_input = 1\noutput = 1\n",
                1,
                "models.\"m\".reasoning",
                "missing",
            ),
            (
                "[models.m]\ninput = 1\ncached_input = 1\noutput = 1\nreasoning = 1\ncache = 2\n",
                6,
                "models.\"m\".cache",
                "unknown token kind",
            ),
            (
                "currency = \"USD\"\nmodelz = 1\n",
                2,
                "(file)",
                "unknown field",
            ),
            (
                "[models.m]\ninput = \"1\"\ncached_input = 1\noutput = 1\nreasoning = 1\n",
                2,
                "models.\"m\".input",
                "not a price",
            ),
        ];
        for (text, line, field, reason) in cases {
            match PriceTable::parse(text, "p.toml") {
                Err(PriceError::Invalid {
                    path,
                    line: got_line,
                    field: got_field,
                    reason: got_reason,
                }) => {
                    assert_eq!(path, "p.toml");
                    assert_eq!((got_line, got_field.as_str()), (line, field), "{text}");
                    assert!(got_reason.contains(reason), "{got_reason} for {text}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }
}
