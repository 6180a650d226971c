//! What a scenario's runs spent, as the sweep report keeps it: a [`Distribution`] per
//! counted quantity (tokens, cost, model calls, retries, fallbacks, tool calls, time to
//! the last answer) and the models some run used that the price table does not price.
//! Folded run by run by the collector; merged exactly across shards.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use umi_dst::usage::{PriceTable, RunUsage};

use crate::distribution::Distribution;

/// The quantities counted per run, in the order tables show them.
pub const USAGE_QUANTITIES: [&str; 10] = [
    "tokens",
    "input_tokens",
    "output_tokens",
    "cost_micros",
    "model_calls",
    "retries",
    "fallbacks",
    "tool_calls",
    "answer_ms",
    "models_used",
];

/// A scenario's spend over its runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageReport {
    /// By quantity ([`USAGE_QUANTITIES`]); `cost_micros` only over the runs whose every
    /// model was priced.
    #[serde(default)]
    pub quantities: BTreeMap<String, Distribution>,
    /// Models runs used that the price table does not price, with how many runs did.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unpriced_models: BTreeMap<String, u64>,
}

/// Distinct models one report lists as unpriced (the counts cover the rest).
const UNPRICED_MODELS_MAX: usize = 64;

impl UsageReport {
    /// Adds one run's spend, priced by `prices` when given.
    pub fn fold(&mut self, usage: &RunUsage, prices: Option<&PriceTable>) {
        let tokens = usage.tokens();
        let counted = [
            ("tokens", tokens.total()),
            ("input_tokens", tokens.input),
            ("output_tokens", tokens.output),
            ("model_calls", usage.model_calls),
            ("retries", usage.retries),
            ("fallbacks", usage.fallbacks),
            ("tool_calls", usage.tool_calls),
            ("answer_ms", usage.answer_ms),
            ("models_used", usage.models.len() as u64),
        ];
        for (name, value) in counted {
            self.quantities
                .entry(name.to_owned())
                .or_default()
                .record(value);
        }
        match prices.map(|table| usage.cost_micros(table)) {
            Some(Ok(cost)) => self
                .quantities
                .entry("cost_micros".to_owned())
                .or_default()
                .record(cost),
            Some(Err(models)) => {
                for model in models {
                    if self.unpriced_models.len() < UNPRICED_MODELS_MAX
                        || self.unpriced_models.contains_key(&model)
                    {
                        *self.unpriced_models.entry(model).or_insert(0) += 1;
                    }
                }
            }
            None => {}
        }
    }

    /// Adds another shard's report of the same scenario.
    pub fn merge(&mut self, other: &UsageReport) {
        for (name, distribution) in &other.quantities {
            self.quantities
                .entry(name.clone())
                .or_default()
                .merge(distribution);
        }
        for (model, runs) in &other.unpriced_models {
            *self.unpriced_models.entry(model.clone()).or_insert(0) += runs;
        }
    }

    /// `name`'s distribution, if any run counted it.
    pub fn get(&self, name: &str) -> Option<&Distribution> {
        self.quantities.get(name).filter(|d| d.count > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use umi_dst::usage::TokenCounts;

    #[test]
    fn runs_fold_into_distributions_and_unpriced_models_are_named() {
        let table = PriceTable::parse(
            "[models.a]\ninput = 1000000\ncached_input = 0\noutput = 2000000\nreasoning = 0\n",
            "p.toml",
        )
        .unwrap();
        let mut report = UsageReport::default();
        let mut run = RunUsage {
            model_calls: 2,
            ..RunUsage::default()
        };
        run.models.insert(
            "a".into(),
            TokenCounts {
                input: 10,
                output: 5,
                ..TokenCounts::default()
            },
        );
        report.fold(&run, Some(&table));
        run.models.insert("b".into(), TokenCounts::default());
        report.fold(&run, Some(&table));
        assert_eq!(report.get("tokens").map(|d| d.count), Some(2));
        assert_eq!(
            report.get("cost_micros").map(|d| (d.count, d.max)),
            Some((1, 20))
        );
        assert_eq!(
            report.unpriced_models,
            BTreeMap::from([("b".to_owned(), 1)])
        );
        let mut merged = UsageReport::default();
        merged.merge(&report);
        merged.merge(&report);
        assert_eq!(merged.get("model_calls").map(|d| d.count), Some(4));
        assert_eq!(merged.unpriced_models["b"], 2);
    }
}
