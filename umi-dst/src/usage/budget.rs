//! Budgets: what one run may spend, checked as an invariant when the run ends. A run
//! over budget fails with [`FailureClass::Budget`](crate::FailureClass::Budget), and the
//! breach names the model call that pushed it over (the first call at which the running
//! total passed the limit), so a failing seed says where its money went.
//!
//! The growth budget compares the run with the same seed run again with its faults
//! switched off: the workload is drawn from streams the faults do not touch, so the
//! second run asks the same of the agent, and the ratio is what the faults cost (retries
//! and fallbacks multiply spend silently). The check itself is a pure function over two
//! [`RunUsage`]s, so a table test reaches every limit.

use std::fmt;

use super::{PriceTable, RunUsage};

/// What one run may spend. `None` leaves a quantity unlimited.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Budget {
    /// Input and output tokens over every model.
    pub tokens_max: Option<u64>,
    /// Cost in the price table's micro-units.
    pub cost_micros_max: Option<u64>,
    /// Calls to a model (refused ones included).
    pub model_calls_max: Option<u64>,
    /// Tool calls the model asked for.
    pub tool_calls_max: Option<u64>,
    /// Simulated ms from the start to the end of the last answer.
    pub answer_ms_max: Option<u64>,
    /// Cost under faults at most this many percent of the same seed's fault-free cost
    /// (300: three times); measured in tokens when the budget has no price table.
    pub fault_growth_percent_max: Option<u64>,
}

impl Budget {
    /// No limit on anything.
    pub fn new() -> Self {
        Self::default()
    }

    /// At most `max` tokens.
    #[must_use]
    pub fn tokens_max(mut self, max: u64) -> Self {
        self.tokens_max = Some(max);
        self
    }

    /// At most `max` micro-units of cost (needs a price table).
    #[must_use]
    pub fn cost_micros_max(mut self, max: u64) -> Self {
        self.cost_micros_max = Some(max);
        self
    }

    /// At most `max` model calls.
    #[must_use]
    pub fn model_calls_max(mut self, max: u64) -> Self {
        self.model_calls_max = Some(max);
        self
    }

    /// At most `max` tool calls.
    #[must_use]
    pub fn tool_calls_max(mut self, max: u64) -> Self {
        self.tool_calls_max = Some(max);
        self
    }

    /// The last answer ends at most `max` simulated ms after the start.
    #[must_use]
    pub fn answer_ms_max(mut self, max: u64) -> Self {
        self.answer_ms_max = Some(max);
        self
    }

    /// Under faults, at most `percent` % of the fault-free run's cost.
    #[must_use]
    pub fn fault_growth_percent_max(mut self, percent: u64) -> Self {
        self.fault_growth_percent_max = Some(percent);
        self
    }

    /// Whether any limit is set.
    pub fn is_limited(&self) -> bool {
        *self != Self::default()
    }
}

/// Which limit a run broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetLimit {
    /// [`Budget::tokens_max`].
    Tokens,
    /// [`Budget::cost_micros_max`].
    Cost,
    /// [`Budget::model_calls_max`].
    ModelCalls,
    /// [`Budget::tool_calls_max`].
    ToolCalls,
    /// [`Budget::answer_ms_max`].
    AnswerTime,
    /// [`Budget::fault_growth_percent_max`].
    FaultGrowth,
    /// A cost limit with a model the table does not price.
    Unpriced,
}

impl BudgetLimit {
    /// The limit's name in messages (`tokens`, `cost_micros`...).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Tokens => "tokens",
            Self::Cost => "cost_micros",
            Self::ModelCalls => "model_calls",
            Self::ToolCalls => "tool_calls",
            Self::AnswerTime => "answer_ms",
            Self::FaultGrowth => "fault_growth_percent",
            Self::Unpriced => "unpriced_model",
        }
    }
}

/// A run over budget: which limit, by how much, and the call that pushed it over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetBreach {
    /// The limit broken.
    pub limit: BudgetLimit,
    /// The limit's value.
    pub max: u64,
    /// What the run reached.
    pub reached: u64,
    /// The call (from 1) at which the running total first passed the limit, with the
    /// model and the simulated ms it was made at, when known.
    pub pushed_by: Option<(u64, String, u64)>,
    /// More to say (the unpriced models, the fault-free figure).
    pub note: String,
}

impl fmt::Display for BudgetBreach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "over budget: {} {} > {} max",
            self.limit.name(),
            self.reached,
            self.max
        )?;
        if let Some((call, model, at_ms)) = &self.pushed_by {
            write!(
                f,
                "; pushed over by model call #{call} ({model}) at {at_ms} ms"
            )?;
        }
        if !self.note.is_empty() {
            write!(f, "; {}", self.note)?;
        }
        Ok(())
    }
}

/// The first limit of `budget` that `usage` breaks, checked in a fixed order (unpriced,
/// cost, tokens, model calls, tool calls, answer time, fault growth); `fault_free` is the
/// same seed's run without faults, when the budget limits growth.
pub fn check_budget(
    budget: &Budget,
    prices: Option<&PriceTable>,
    usage: &RunUsage,
    fault_free: Option<&RunUsage>,
) -> Result<(), BudgetBreach> {
    if let Some(max) = budget.cost_micros_max {
        let Some(prices) = prices else {
            return Err(unpriced(max, "no price table was given".into()));
        };
        let cost = usage.cost_micros(prices).map_err(|models| {
            unpriced(
                max,
                format!("used but not in the price table: {}", models.join(", ")),
            )
        })?;
        over(BudgetLimit::Cost, max, cost, || {
            first_crossing(usage, max, |u| u.cost_micros(prices).unwrap_or(u64::MAX))
        })?;
    }
    let total_tokens = usage.tokens().total();
    if let Some(max) = budget.tokens_max {
        over(BudgetLimit::Tokens, max, total_tokens, || {
            first_crossing(usage, max, |u| u.tokens().total())
        })?;
    }
    if let Some(max) = budget.model_calls_max {
        over(BudgetLimit::ModelCalls, max, usage.model_calls, || {
            call_at(usage, max.saturating_add(1))
        })?;
    }
    if let Some(max) = budget.tool_calls_max {
        over(BudgetLimit::ToolCalls, max, usage.tool_calls, || {
            first_crossing(usage, max, |u| u.tool_calls)
        })?;
    }
    if let Some(max) = budget.answer_ms_max {
        over(BudgetLimit::AnswerTime, max, usage.answer_ms, || None)?;
    }
    match (budget.fault_growth_percent_max, fault_free) {
        (Some(max), Some(base)) => growth(max, prices, usage, base),
        _ => Ok(()),
    }
}

fn unpriced(max: u64, note: String) -> BudgetBreach {
    BudgetBreach {
        limit: BudgetLimit::Unpriced,
        max,
        reached: 0,
        pushed_by: None,
        note,
    }
}

fn over(
    limit: BudgetLimit,
    max: u64,
    reached: u64,
    pushed_by: impl FnOnce() -> Option<(u64, String, u64)>,
) -> Result<(), BudgetBreach> {
    if reached <= max {
        return Ok(());
    }
    Err(BudgetBreach {
        limit,
        max,
        reached,
        pushed_by: pushed_by(),
        note: String::new(),
    })
}

/// The kept call after which `measure` of the calls so far first exceeds `max`.
fn first_crossing(
    usage: &RunUsage,
    max: u64,
    measure: impl Fn(&RunUsage) -> u64,
) -> Option<(u64, String, u64)> {
    let mut so_far = RunUsage::default();
    for record in usage.calls.iter().filter(|record| record.answered) {
        so_far
            .models
            .entry(record.model.clone())
            .or_default()
            .add(&record.tokens);
        so_far.tool_calls += record.tool_calls;
        if measure(&so_far) > max {
            return Some((record.call, record.model.clone(), record.at_ms));
        }
    }
    None
}

/// Call number `call`, if kept.
fn call_at(usage: &RunUsage, call: u64) -> Option<(u64, String, u64)> {
    usage
        .calls
        .iter()
        .find(|record| record.call == call)
        .map(|record| (record.call, record.model.clone(), record.at_ms))
}

/// The growth limit: cost (tokens without a table) under faults against fault-free.
fn growth(
    max_percent: u64,
    prices: Option<&PriceTable>,
    usage: &RunUsage,
    base: &RunUsage,
) -> Result<(), BudgetBreach> {
    // One unit for both runs: cost when the table prices both, else tokens.
    let costs = prices.and_then(|prices| {
        usage
            .cost_micros(prices)
            .ok()
            .zip(base.cost_micros(prices).ok())
    });
    let (faulted, clean) = costs.unwrap_or((usage.tokens().total(), base.tokens().total()));
    // faulted / clean > max% ⇔ faulted × 100 > max × clean (exact, no division).
    let breaks = u128::from(faulted) * 100 > u128::from(max_percent) * u128::from(clean.max(1));
    if !breaks {
        return Ok(());
    }
    let reached =
        u64::try_from(u128::from(faulted) * 100 / u128::from(clean.max(1))).unwrap_or(u64::MAX);
    let unit = if costs.is_some() {
        "cost_micros"
    } else {
        "tokens"
    };
    Err(BudgetBreach {
        limit: BudgetLimit::FaultGrowth,
        max: max_percent,
        reached,
        pushed_by: None,
        note: format!("{faulted} {unit} under faults against {clean} without them"),
    })
}

#[cfg(test)]
mod tests {
    use super::super::{CallRecord, TokenCounts};
    use super::*;

    fn usage(calls: &[(u64, u64)]) -> RunUsage {
        let mut run = RunUsage::default();
        for (index, (input, tools)) in calls.iter().enumerate() {
            let tokens = TokenCounts {
                input: *input,
                ..TokenCounts::default()
            };
            run.models.entry("m".into()).or_default().add(&tokens);
            run.tool_calls += tools;
            run.model_calls += 1;
            run.calls.push(CallRecord {
                call: index as u64 + 1,
                at_ms: index as u64 * 10,
                model: "m".into(),
                tokens,
                tool_calls: *tools,
                answered: true,
            });
        }
        run
    }

    #[test]
    fn each_limit_names_the_call_that_pushed_it_over() {
        let run = usage(&[(100, 0), (100, 1), (100, 2)]);
        let table = [
            (Budget::new().tokens_max(150), BudgetLimit::Tokens, Some(2)),
            (Budget::new().tokens_max(300), BudgetLimit::Tokens, None),
            (
                Budget::new().model_calls_max(2),
                BudgetLimit::ModelCalls,
                Some(3),
            ),
            (
                Budget::new().tool_calls_max(1),
                BudgetLimit::ToolCalls,
                Some(3),
            ),
        ];
        for (budget, limit, call) in table {
            match check_budget(&budget, None, &run, None) {
                Ok(()) => assert!(call.is_none(), "{budget:?} should break"),
                Err(breach) => {
                    assert_eq!(breach.limit, limit);
                    assert_eq!(
                        breach.pushed_by.as_ref().map(|(n, _, _)| *n),
                        call,
                        "{breach}"
                    );
                }
            }
        }
    }

    #[test]
    fn cost_needs_every_model_priced() {
        let run = usage(&[(1_000_000, 0)]);
        let budget = Budget::new().cost_micros_max(10);
        let breach = check_budget(&budget, None, &run, None).unwrap_err();
        assert_eq!(breach.limit, BudgetLimit::Unpriced);
        let table = PriceTable::parse(
            "[models.other]\ninput = 1\ncached_input = 1\noutput = 1\nreasoning = 1\n",
            "p.toml",
        )
        .unwrap();
        let breach = check_budget(&budget, Some(&table), &run, None).unwrap_err();
        assert!(
            breach.to_string().contains("not in the price table: m"),
            "{breach}"
        );
        let table = PriceTable::parse(
            "[models.m]\ninput = 20\ncached_input = 1\noutput = 1\nreasoning = 1\n",
            "p.toml",
        )
        .unwrap();
        let breach = check_budget(&budget, Some(&table), &run, None).unwrap_err();
        assert_eq!((breach.limit, breach.reached), (BudgetLimit::Cost, 20));
        assert_eq!(breach.pushed_by.map(|(n, _, _)| n), Some(1));
    }

    /// A refused call to an unpriced model is not what pushed a run over (review: it was
    /// named, its model being unpriced read as an infinite cost); and growth measures both
    /// runs in one unit (tokens when either is unpriced).
    #[test]
    fn refused_calls_are_never_blamed_and_growth_has_one_unit() {
        let mut run = usage(&[(100, 0), (100, 0)]);
        run.calls.insert(
            0,
            CallRecord {
                call: 0,
                at_ms: 0,
                model: "unpriced".into(),
                tokens: TokenCounts::default(),
                tool_calls: 0,
                answered: false,
            },
        );
        let table = PriceTable::parse(
            "[models.m]\ninput = 1000000\ncached_input = 0\noutput = 0\nreasoning = 0\n",
            "p.toml",
        )
        .unwrap();
        let breach = check_budget(
            &Budget::new().cost_micros_max(150),
            Some(&table),
            &run,
            None,
        )
        .unwrap_err();
        assert_eq!(
            breach.pushed_by.as_ref().map(|(n, _, _)| *n),
            Some(2),
            "{breach}"
        );
        let mut faulted = usage(&[(100, 0), (100, 0)]);
        faulted
            .models
            .insert("unpriced".into(), TokenCounts::default());
        let clean = usage(&[(100, 0)]);
        let breach = check_budget(
            &Budget::new().fault_growth_percent_max(150),
            Some(&table),
            &faulted,
            Some(&clean),
        )
        .unwrap_err();
        assert!(
            breach.note.contains("200 tokens under faults against 100"),
            "{breach}"
        );
    }

    #[test]
    fn growth_compares_with_the_fault_free_run() {
        let faulted = usage(&[(100, 0), (100, 0), (101, 0)]);
        let clean = usage(&[(100, 0)]);
        let budget = Budget::new().fault_growth_percent_max(300);
        let breach = check_budget(&budget, None, &faulted, Some(&clean)).unwrap_err();
        assert_eq!(
            (breach.limit, breach.reached),
            (BudgetLimit::FaultGrowth, 301)
        );
        let within = usage(&[(100, 0), (100, 0), (100, 0)]);
        assert_eq!(check_budget(&budget, None, &within, Some(&clean)), Ok(()));
        // Without the fault-free run there is nothing to compare with.
        assert_eq!(check_budget(&budget, None, &faulted, None), Ok(()));
    }
}
