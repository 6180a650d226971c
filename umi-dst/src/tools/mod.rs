//! Simulated tools: an agent's tools as parts of the seeded world, with faults named for
//! what tools really do, latency drawn under the seed, and a ledger of side effects.
//!
//! An agent's failures come as often from its tools as from its model: a tool that times
//! out, fails, answers garbage or nothing, or is slow, and (the worst) a side effect done
//! twice because a cut stream, a retried turn or a timeout made the agent call again. A
//! [`SimTool`] is declared by its name, input schema and (optional) output schema; its
//! result comes from a function of the arguments and a seeded RNG, or is generated from
//! the output schema. [`SimTools`] turns a set of them into umi-core's `ToolRegistry`,
//! so the agent loop runs them exactly as real ones:
//!
//! ```
//! # fn demo(sim: &umi_dst::SimEnvironment) {
//! use serde_json::json;
//! use umi_dst::tools::{SimTool, SimTools};
//!
//! let tools = SimTools::new(sim)
//!     .with(SimTool::new("get_weather", "today's weather", json!({"type": "object"}))
//!         .with_output_schema(json!({"type": "object", "properties": {"c": {"type": "integer"}}, "required": ["c"]})))
//!     .with(SimTool::new("pay", "pays an invoice", json!({"type": "object"})).with_side_effects());
//! let registry = tools.registry(); // umi_core::agent::ToolRegistry
//! # let _ = (registry, tools.ledger());
//! # }
//! ```
//!
//! Each call is the fault point `tool.call.<name>` ([`crate::fault::point::TOOL_CALL`]),
//! so a rule can aim at one tool; the kinds are `tool.timeout` (a stall in simulated
//! time, after which the side effect may already be done), `tool.error_result` (MCP's
//! `isError`), `tool.transport_error` (the call never arrived), `tool.malformed_result`,
//! `tool.slow` and `tool.empty_result`. Arguments that break the input schema get the
//! JSON-RPC invalid-params error an MCP server sends, naming the JSON path.
//!
//! A tool with side effects records each effect in the run's [`EffectLedger`] with the
//! logical call it belongs to (the model's call id, and an idempotency key when the tool
//! reads one from its arguments); `crate::checkers::effects` says whether any was done
//! twice or for a call the model never made. A tool that reads an idempotency key
//! applies a key it has seen nothing, and answers such a call with the key's first
//! answer. Everything the tools remember is one value, [`ToolsWorld`], which `dst serve`
//! carries across a scope's requests ([`SimTools::world`], [`SimTools::with_world`]).

mod call;
mod ledger;
mod world;

use std::sync::Arc;

use serde_json::Value;
use umi_core::agent::ToolRegistry;
use umi_core::llm::ToolDefinition;

use crate::environment::SimEnvironment;
use crate::rng::DeterministicRng;

pub(crate) use call::SimToolHandler;
pub use call::{
    Called, Outcome, TOOL_SLOW_EXTRA_MS, TOOL_STALL_APPLIED_PROBABILITY, TOOL_STALL_MS, outcome_of,
};
#[cfg(feature = "serve")]
pub(crate) use ledger::idempotency_key;
pub use ledger::{EFFECTS_MAX, EffectLedger};
pub use world::Effect;
pub use world::{CALL_RUNS_MAX, ToolsWorld};

/// Simulated latency of a tool call by default, in ms (lowest, highest).
pub const TOOL_LATENCY_MS_DEFAULT: (u64, u64) = (5, 250);

/// A tool's own answer: from the arguments and the call's RNG, a JSON result or an
/// error result.
pub type ToolFn = dyn Fn(&Value, &mut DeterministicRng) -> Result<Value, String> + Send + Sync;

/// One simulated tool: what the model is offered, and how it behaves.
#[derive(Clone)]
pub struct SimTool {
    pub(crate) definition: ToolDefinition,
    pub(crate) output_schema: Option<Value>,
    pub(crate) answer: Option<Arc<ToolFn>>,
    pub(crate) side_effects: bool,
    pub(crate) idempotency_field: Option<String>,
    pub(crate) latency_ms: (u64, u64),
}

impl std::fmt::Debug for SimTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimTool")
            .field("name", &self.definition.name)
            .field("side_effects", &self.side_effects)
            .field("latency_ms", &self.latency_ms)
            .finish_non_exhaustive()
    }
}

impl SimTool {
    /// A tool named `name` taking arguments valid under `input_schema`; it answers
    /// `{"ok": true}` until given an output schema or a function.
    pub fn new(name: &str, description: &str, input_schema: Value) -> Self {
        Self {
            definition: ToolDefinition::new(name, description, input_schema),
            output_schema: None,
            answer: None,
            side_effects: false,
            idempotency_field: None,
            latency_ms: TOOL_LATENCY_MS_DEFAULT,
        }
    }

    /// Results generated under the seed, valid under `schema` (unless a fault breaks them).
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Results from `answer`, given the arguments and the call's own RNG.
    pub fn with_fn(
        mut self,
        answer: impl Fn(&Value, &mut DeterministicRng) -> Result<Value, String> + Send + Sync + 'static,
    ) -> Self {
        self.answer = Some(Arc::new(answer));
        self
    }

    /// The tool changes the world (pays, sends, books): each call it runs is an effect
    /// in the ledger.
    pub fn with_side_effects(mut self) -> Self {
        self.side_effects = true;
        self
    }

    /// The tool honours an idempotency key, read from the argument `field`: a second
    /// call with a key it has seen applies nothing and answers what the key's first
    /// call answered (as payment APIs do).
    pub fn with_idempotency_key(mut self, field: &str) -> Self {
        self.idempotency_field = Some(field.to_owned());
        self
    }

    /// Latency drawn per call between `low_ms` and `high_ms` (inclusive).
    pub fn with_latency_ms(mut self, low_ms: u64, high_ms: u64) -> Self {
        assert!(low_ms <= high_ms, "a latency range runs from low to high");
        self.latency_ms = (low_ms, high_ms);
        self
    }

    /// What the model is offered.
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }
}

/// A run's simulated tools and their effect ledger. Clones share both: the registry an
/// agent holds and an MCP server serving the same tools count one call's runs once.
#[derive(Clone)]
pub struct SimTools {
    pub(crate) sim: SimEnvironment,
    handlers: Vec<Arc<SimToolHandler>>,
    ledger: Arc<EffectLedger>,
}

impl std::fmt::Debug for SimTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.handlers.iter().map(|h| h.name()).collect();
        f.debug_struct("SimTools")
            .field("tools", &names)
            .finish_non_exhaustive()
    }
}

impl SimTools {
    /// No tools yet, for the run `sim`.
    pub fn new(sim: &SimEnvironment) -> Self {
        Self {
            sim: sim.clone(),
            handlers: Vec::new(),
            ledger: Arc::new(EffectLedger::default()),
        }
    }

    /// Adds `tool`.
    ///
    /// # Panics
    /// When a tool of that name is already there (a bug in the test's set-up).
    pub fn with(mut self, tool: SimTool) -> Self {
        assert!(
            self.handler(&tool.definition.name).is_none(),
            "simulated tools: two tools are named {:?}",
            tool.definition.name
        );
        let handler = SimToolHandler::new(&self.sim, Arc::new(tool), self.ledger.clone());
        self.handlers.push(Arc::new(handler));
        self
    }

    /// The tool named `name`'s handler.
    pub(crate) fn handler(&self, name: &str) -> Option<&Arc<SimToolHandler>> {
        self.handlers.iter().find(|h| h.name() == name)
    }

    /// Every tool, in the order they were added.
    pub fn tools(&self) -> impl Iterator<Item = &SimTool> {
        self.handlers.iter().map(|h| h.tool())
    }

    /// The registry an umi-core agent takes: every tool, handled in the simulation.
    ///
    /// # Panics
    /// When two tools share a name (a bug in the test's set-up).
    pub fn registry(&self) -> ToolRegistry {
        let mut registry = ToolRegistry::new();
        for handler in &self.handlers {
            registry
                .register(handler.tool().definition.clone(), handler.clone())
                .unwrap_or_else(|error| panic!("simulated tools: {error}"));
        }
        registry
    }

    /// The effects of the tools with side effects, so far.
    pub fn ledger(&self) -> Arc<EffectLedger> {
        self.ledger.clone()
    }

    /// Everything the tools remember now (effects, idempotency keys seen, runs per
    /// call): what a later run of the same world starts from.
    pub fn world(&self) -> ToolsWorld {
        self.ledger.world()
    }

    /// These tools, remembering `world` (what an earlier run of the same world ended
    /// with, from [`SimTools::world`]): its keys stay seen, its effects stay in the
    /// ledger. Clones share it.
    pub fn with_world(self, world: ToolsWorld) -> Self {
        self.ledger.restore(world);
        self
    }
}
