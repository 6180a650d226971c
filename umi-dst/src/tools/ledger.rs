//! The effect ledger: every side effect the run's simulated tools did, with the logical
//! call it belongs to, for the checkers that say whether an effect was done twice or
//! for a call the model never made (`crate::checkers::effects`).

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use umi_core::agent::ToolInvocation;

use super::SimTool;

/// Effects kept at most; past it the ledger stops growing and says so (a run that does
/// this many side effects is a runaway the checkers report).
pub const EFFECTS_MAX: usize = 100_000;

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

/// The run's effects, in the order they happened.
#[derive(Debug, Default)]
pub struct EffectLedger {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    effects: Vec<Effect>,
    keys_seen: BTreeSet<(String, String)>,
    overflowed: bool,
}

impl EffectLedger {
    /// Records that `tool` ran `invocation` at `at` (it honours its idempotency key, if
    /// it reads one: a key it has seen applies nothing).
    pub(crate) fn apply(&self, tool: &SimTool, invocation: &ToolInvocation, at: Duration) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.effects.len() == EFFECTS_MAX {
            state.overflowed = true;
            return;
        }
        let idempotency_key = tool.idempotency_field.as_ref().and_then(|field| {
            invocation.arguments.get(field).map(|value| match value {
                Value::String(text) => text.clone(),
                other => umi_core::canonical_json::to_string(other),
            })
        });
        let applied = match &idempotency_key {
            Some(key) => state
                .keys_seen
                .insert((invocation.name.clone(), key.clone())),
            None => true,
        };
        state.effects.push(Effect {
            tool: invocation.name.clone(),
            call_id: invocation.call_id.clone(),
            idempotency_key,
            arguments: umi_core::canonical_json::to_string(&invocation.arguments),
            at,
            applied,
        });
    }

    /// Every effect so far, in order.
    pub fn effects(&self) -> Vec<Effect> {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .effects
            .clone()
    }

    /// Whether effects were dropped past `EFFECTS_MAX`.
    pub fn overflowed(&self) -> bool {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .overflowed
    }
}
