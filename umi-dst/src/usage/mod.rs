//! What a run spent: every model call's tokens (per model and token kind), the calls
//! themselves, the retries and fallbacks among them, the tool calls the model asked
//! for, and the simulated time to the last answer. The run's [`UsageLedger`] is filled
//! by SimLLM as it answers; at the end of the run it becomes a [`RunUsage`] in the
//! run's record, which a [`PriceTable`] turns into cost and a [`Budget`] judges.
//!
//! The ledger counts what the simulated provider served, as a provider bills it: an
//! answer a fault cut short still spent its tokens, a refusal (a 429, a timeout) spent
//! none but was a call. A *retry* is a call that repeats a conversation already sent to
//! the same model in the run; a *fallback* is a call whose conversation was already
//! sent to another model. Both are read off the requests themselves, so they are
//! counted the same whichever router or retry loop made them.
//!
//! Every count is an integer and nothing here reads a float: a run's usage is part of
//! what its seed means.

mod budget;
mod prices;
mod task;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use umi_core::llm::TokenUsage;

pub use budget::{Budget, BudgetBreach, BudgetLimit, check_budget};
pub use prices::{ModelPrices, PRICE_TABLE_MODELS_MAX, PriceError, PriceTable, TOKEN_KINDS};
pub use task::{TASKS_MAX, TRIAL_BITS, TRIALS_MAX, TaskTrial, split_seed, trial_seed};

/// Model calls a run's ledger keeps one by one (what a budget breach is traced to);
/// past it the totals still count every call.
pub const USAGE_CALLS_KEPT_MAX: usize = 4_096;

/// Conversations a run's ledger remembers to tell retries and fallbacks apart; past it
/// a new conversation is neither.
pub const USAGE_CONVERSATIONS_MAX: usize = 4_096;

/// Tokens by kind. `input` includes `cached_input` and `output` includes `reasoning`,
/// as the providers count them (`prompt_tokens` with `cached_tokens` inside it;
/// `completion_tokens` with `reasoning_tokens` inside it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenCounts {
    /// Prompt tokens, cached ones included.
    pub input: u64,
    /// Prompt tokens served from the provider's cache.
    pub cached_input: u64,
    /// Answer tokens, reasoning included.
    pub output: u64,
    /// Answer tokens spent on reasoning.
    pub reasoning: u64,
}

impl TokenCounts {
    /// The counts of one answer's usage.
    pub fn of(usage: &TokenUsage) -> Self {
        Self {
            input: u64::from(usage.prompt_tokens),
            cached_input: u64::from(usage.cached_prompt_tokens.unwrap_or(0)),
            output: u64::from(usage.completion_tokens),
            reasoning: u64::from(usage.reasoning_tokens.unwrap_or(0)),
        }
    }

    /// Input and output tokens.
    pub fn total(&self) -> u64 {
        self.input.saturating_add(self.output)
    }

    /// Adds `other`, kind by kind.
    pub fn add(&mut self, other: &TokenCounts) {
        self.input = self.input.saturating_add(other.input);
        self.cached_input = self.cached_input.saturating_add(other.cached_input);
        self.output = self.output.saturating_add(other.output);
        self.reasoning = self.reasoning.saturating_add(other.reasoning);
    }
}

/// What one model call was, in the order the calls were made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallRecord {
    /// The call's number in the run, from 1.
    pub call: u64,
    /// When it was made, in simulated ms since the run started.
    pub at_ms: u64,
    /// The model asked.
    pub model: String,
    /// The tokens its answer spent (zero for a refusal).
    pub tokens: TokenCounts,
    /// The tool calls its answer asked for.
    pub tool_calls: u64,
    /// Whether it was answered (false: refused, timed out, overflowed).
    pub answered: bool,
}

/// What a run spent, as its record keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunUsage {
    /// Tokens by model.
    pub models: BTreeMap<String, TokenCounts>,
    /// Calls made to a model (refused ones included).
    pub model_calls: u64,
    /// Calls that repeated a conversation already sent to the same model.
    pub retries: u64,
    /// Calls whose conversation was already sent to another model.
    pub fallbacks: u64,
    /// Tool calls the model's answers asked for.
    pub tool_calls: u64,
    /// Simulated ms from the run's start to the end of its last answer (0: none).
    pub answer_ms: u64,
    /// The first `USAGE_CALLS_KEPT_MAX` calls, in order.
    pub calls: Vec<CallRecord>,
    /// The task class the run declared ([`crate::SimKernel::set_task_class`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_class: Option<String>,
}

impl RunUsage {
    /// Tokens over every model.
    pub fn tokens(&self) -> TokenCounts {
        let mut total = TokenCounts::default();
        for counts in self.models.values() {
            total.add(counts);
        }
        total
    }

    /// The run's cost in the table's micro-units, or the models it used that the table
    /// does not price (never priced as zero).
    pub fn cost_micros(&self, prices: &PriceTable) -> Result<u64, Vec<String>> {
        prices.cost_micros(&self.models)
    }
}

/// The run's ledger: SimLLM writes to it as calls come and answers go.
#[derive(Debug, Default)]
pub struct UsageLedger {
    state: Mutex<LedgerState>,
}

#[derive(Debug, Default)]
struct LedgerState {
    usage: RunUsage,
    /// For each conversation (a request's hash without its model), the models it was
    /// sent to.
    conversations: BTreeMap<u64, BTreeSet<String>>,
}

impl UsageLedger {
    /// A call to `model` with the conversation whose model-free key is `conversation`
    /// ([`crate::llm::conversation_hash`]),
    /// at `at` in simulated time; returns its number (for [`UsageLedger::answer`]).
    pub fn call(&self, model: &str, conversation: u64, at: Duration) -> u64 {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let state = &mut *state;
        state.check();
        state.usage.model_calls += 1;
        let call = state.usage.model_calls;
        let remembered = state.conversations.len();
        match state.conversations.get_mut(&conversation) {
            Some(models) if models.contains(model) => state.usage.retries += 1,
            Some(models) => {
                state.usage.fallbacks += 1;
                models.insert(model.to_owned());
            }
            None if remembered < USAGE_CONVERSATIONS_MAX => {
                state
                    .conversations
                    .insert(conversation, BTreeSet::from([model.to_owned()]));
            }
            None => {}
        }
        if state.usage.calls.len() < USAGE_CALLS_KEPT_MAX {
            state.usage.calls.push(CallRecord {
                call,
                at_ms: millis(at),
                model: model.to_owned(),
                tokens: TokenCounts::default(),
                tool_calls: 0,
                answered: false,
            });
        }
        state.check();
        call
    }

    /// Call `call` (to `model`) was answered with `usage` and `tool_calls` tool calls;
    /// its answer ends at `end` in simulated time.
    pub fn answer(
        &self,
        call: u64,
        model: &str,
        usage: &TokenUsage,
        tool_calls: u64,
        end: Duration,
    ) {
        let tokens = TokenCounts::of(usage);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.check();
        assert!(
            (1..=state.usage.model_calls).contains(&call),
            "usage ledger: call {call} answered, but {} made",
            state.usage.model_calls
        );
        let usage = &mut state.usage;
        usage
            .models
            .entry(model.to_owned())
            .or_default()
            .add(&tokens);
        usage.tool_calls = usage.tool_calls.saturating_add(tool_calls);
        usage.answer_ms = usage.answer_ms.max(millis(end));
        let kept = usize::try_from(call - 1)
            .ok()
            .and_then(|i| usage.calls.get_mut(i));
        if let Some(record) = kept {
            assert_eq!(record.call, call, "the ledger keeps calls in order");
            record.tokens = tokens;
            record.tool_calls = tool_calls;
            record.answered = true;
        }
        state.check();
    }

    /// Names the run's task class (the last call wins).
    pub fn set_task_class(&self, class: &str) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.usage.task_class = Some(class.to_owned());
    }

    /// What the run spent so far.
    pub fn usage(&self) -> RunUsage {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .usage
            .clone()
    }
}

impl LedgerState {
    /// The ledger's invariant, before and after each entry: a retry or fallback is a
    /// call, the calls kept are the first ones in order, and both lists are bounded.
    fn check(&self) {
        let usage = &self.usage;
        assert!(
            usage.retries.saturating_add(usage.fallbacks) <= usage.model_calls,
            "usage ledger: {} retries and {} fallbacks in {} calls",
            usage.retries,
            usage.fallbacks,
            usage.model_calls
        );
        let kept = usage.calls.len();
        assert!(
            kept <= USAGE_CALLS_KEPT_MAX
                && kept as u64 <= usage.model_calls
                && usage
                    .calls
                    .last()
                    .is_none_or(|last| last.call == kept as u64),
            "usage ledger: {kept} calls kept of {} made, the last numbered {:?}",
            usage.model_calls,
            usage.calls.last().map(|last| last.call)
        );
        assert!(
            self.conversations.len() <= USAGE_CONVERSATIONS_MAX,
            "usage ledger: {} conversations remembered",
            self.conversations.len()
        );
    }
}

fn millis(at: Duration) -> u64 {
    u64::try_from(at.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u32, output: u32) -> TokenUsage {
        TokenUsage::new(input, output)
    }

    #[test]
    fn repeats_are_retries_and_other_models_are_fallbacks() {
        let ledger = UsageLedger::default();
        let first = ledger.call("a", 1, Duration::from_millis(5));
        ledger.answer(first, "a", &usage(10, 2), 1, Duration::from_millis(40));
        ledger.call("a", 1, Duration::from_millis(50));
        ledger.call("b", 1, Duration::from_millis(60));
        let fourth = ledger.call("b", 2, Duration::from_millis(70));
        ledger.answer(fourth, "b", &usage(7, 3), 0, Duration::from_millis(90));
        let run = ledger.usage();
        assert_eq!(run.model_calls, 4);
        assert_eq!(run.retries, 1);
        assert_eq!(run.fallbacks, 1);
        assert_eq!(run.tool_calls, 1);
        assert_eq!(run.answer_ms, 90);
        assert_eq!(run.tokens().total(), 22);
        assert_eq!(run.models["a"].input, 10);
        assert_eq!(run.calls.len(), 4);
        assert!(run.calls[0].answered && !run.calls[1].answered);
        assert_eq!(run.calls[3].tokens.output, 3);
    }

    /// A planted ledger with more retries than calls trips the invariant at the next
    /// call.
    #[test]
    #[should_panic(expected = "usage ledger: 2 retries and 0 fallbacks in 1 calls")]
    fn more_retries_than_calls_trips_the_invariant() {
        let ledger = UsageLedger::default();
        ledger.call("a", 1, Duration::ZERO);
        ledger.state.lock().unwrap().usage.retries = 2;
        ledger.call("a", 1, Duration::ZERO);
    }

    /// An answer to a call never made trips the precondition.
    #[test]
    #[should_panic(expected = "usage ledger: call 2 answered, but 1 made")]
    fn an_answer_to_a_call_never_made_trips_the_precondition() {
        let ledger = UsageLedger::default();
        let first = ledger.call("a", 1, Duration::ZERO);
        ledger.answer(first + 1, "a", &usage(1, 1), 0, Duration::ZERO);
    }

    #[test]
    fn cached_and_reasoning_tokens_are_kept_inside_their_totals() {
        let mut with_details = usage(100, 40);
        with_details.cached_prompt_tokens = Some(60);
        with_details.reasoning_tokens = Some(25);
        let counts = TokenCounts::of(&with_details);
        assert_eq!(
            counts,
            TokenCounts {
                input: 100,
                cached_input: 60,
                output: 40,
                reasoning: 25
            }
        );
        assert_eq!(counts.total(), 140);
    }
}
