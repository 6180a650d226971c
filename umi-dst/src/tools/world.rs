//! The tools' world: everything the simulated tools remember between calls (the effects
//! done, the idempotency keys seen with the answer each first got, and how many times
//! each logical call ran), as one value.
//!
//! Inside one simulation it lives in the run's [`super::EffectLedger`]. Over `dst serve`
//! a scope is one run, yet each request is a simulation of its own: the server keeps the
//! scope's world between requests and carries it into each request's simulation and
//! back out ([`super::SimTools::world`], [`super::SimTools::with_world`]), as it carries
//! the MCP sessions. So a key a tool has seen stays seen for the rest of the scope, and
//! the effect ledger spans the whole run (ADR 0018).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

/// Distinct logical calls whose runs are counted at most; past it a new call is counted
/// as run for the first time (its stream is then that of a first run), and the world
/// says so.
pub const CALL_RUNS_MAX: usize = 100_000;

/// One side effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effect {
    /// The tool that did it.
    pub tool: String,
    /// The model's id of the call that asked for it.
    pub call_id: String,
    /// The idempotency key the call carried, when the tool reads one.
    pub idempotency_key: Option<String>,
    /// The arguments, as canonical JSON.
    pub arguments: String,
    /// When, in simulated time since the run began.
    pub at: Duration,
    /// Whether it changed the world: false when the tool had seen its idempotency key
    /// and did nothing again.
    pub applied: bool,
}

/// What the simulated tools remember: a value, so a server can carry it from one
/// request's simulation to the next.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolsWorld {
    /// Every effect, in the order it happened.
    pub(crate) effects: Vec<Effect>,
    /// Per tool and idempotency key: the answer of the call that applied the key.
    pub(crate) keyed: BTreeMap<(String, String), Value>,
    /// Effects were dropped past `EFFECTS_MAX`.
    pub(crate) overflowed: bool,
    /// Per tool and call id: how many times the call ran.
    pub(crate) runs: BTreeMap<(String, String), u64>,
    /// Calls left uncounted past `CALL_RUNS_MAX`.
    pub(crate) runs_left_out: u64,
}

impl ToolsWorld {
    /// Every effect so far, in order.
    pub fn effects(&self) -> &[Effect] {
        &self.effects
    }

    /// Whether nothing has happened in it yet (a fresh run's world).
    pub fn is_empty(&self) -> bool {
        self.effects.is_empty()
            && self.keyed.is_empty()
            && self.runs.is_empty()
            && !self.overflowed
            && self.runs_left_out == 0
    }

    /// The answer the call that first applied `key` of `tool` got, if one did.
    pub fn answer_for_key(&self, tool: &str, key: &str) -> Option<&Value> {
        self.keyed.get(&(tool.to_owned(), key.to_owned()))
    }

    /// Which run of `call_id` of `tool` this is (0 the first time), counted.
    pub(crate) fn next_run(&mut self, tool: &str, call_id: &str) -> u64 {
        let counted = (tool.to_owned(), call_id.to_owned());
        if let Some(count) = self.runs.get_mut(&counted) {
            *count += 1;
            return *count - 1;
        }
        if self.runs.len() >= CALL_RUNS_MAX {
            self.runs_left_out += 1;
            return 0;
        }
        self.runs.insert(counted, 1);
        0
    }
}
