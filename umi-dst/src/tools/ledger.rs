//! The effect ledger: every side effect the run's simulated tools did, with the logical
//! call it belongs to, for the checkers that say whether an effect was done twice or
//! for a call the model never made (`crate::checkers::effects`). It holds the run's
//! [`ToolsWorld`], which `dst serve` carries from one request's simulation to the next.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::Value;
use umi_core::agent::ToolInvocation;

use super::SimTool;
use super::world::{Effect, ToolsWorld};

/// Effects kept at most; past it the ledger stops growing and says so (a run that does
/// this many side effects is a runaway the checkers report).
pub const EFFECTS_MAX: usize = 100_000;

/// The run's effects, in the order they happened (and the rest of the tools' world).
#[derive(Debug, Default)]
pub struct EffectLedger {
    state: Mutex<ToolsWorld>,
}

/// The idempotency key `arguments` carry for a tool that reads one from `field`: the
/// field's text, or its canonical JSON when it is not a string.
pub(crate) fn idempotency_key(field: Option<&String>, arguments: &Value) -> Option<String> {
    field.and_then(|field| {
        arguments.get(field).map(|value| match value {
            Value::String(text) => text.clone(),
            other => umi_core::canonical_json::to_string(other),
        })
    })
}

impl EffectLedger {
    fn lock(&self) -> MutexGuard<'_, ToolsWorld> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records that `tool` ran `invocation` at `at` and answered `answer`. It honours its
    /// idempotency key, if it reads one: a key it has seen applies nothing, and the call
    /// gets the answer the key's first call got (returned here), as payment APIs replay
    /// a key's first response.
    pub(crate) fn apply(
        &self,
        tool: &SimTool,
        invocation: &ToolInvocation,
        at: Duration,
        answer: &Value,
    ) -> Option<Value> {
        let mut state = self.lock();
        if state.effects.len() == EFFECTS_MAX {
            state.overflowed = true;
            return None;
        }
        let idempotency_key =
            idempotency_key(tool.idempotency_field.as_ref(), &invocation.arguments);
        let first = idempotency_key.as_ref().and_then(|key| {
            let keyed = (invocation.name.clone(), key.clone());
            match state.keyed.get(&keyed) {
                Some(first) => Some(first.clone()),
                None => {
                    state.keyed.insert(keyed, answer.clone());
                    None
                }
            }
        });
        let applied = first.is_none();
        state.effects.push(Effect {
            tool: invocation.name.clone(),
            call_id: invocation.call_id.clone(),
            idempotency_key,
            arguments: umi_core::canonical_json::to_string(&invocation.arguments),
            at,
            applied,
        });
        first
    }

    /// Which run of `call_id` of `tool` this is (0 the first time), counted.
    pub(crate) fn next_run(&self, tool: &str, call_id: &str) -> u64 {
        self.lock().next_run(tool, call_id)
    }

    /// Every effect so far, in order.
    pub fn effects(&self) -> Vec<Effect> {
        self.lock().effects.clone()
    }

    /// Whether effects were dropped past `EFFECTS_MAX`.
    pub fn overflowed(&self) -> bool {
        self.lock().overflowed
    }

    /// The tools' world as it is now.
    pub fn world(&self) -> ToolsWorld {
        self.lock().clone()
    }

    /// Puts the tools' world back to `world` (what an earlier run of the same scope
    /// ended with).
    pub(crate) fn restore(&self, world: ToolsWorld) {
        *self.lock() = world;
    }
}
