//! Faults: what can go wrong, where, how often, and the record of what did.
//!
//! - [`FaultKind`] is the catalog, grouped by [`FaultDomain`]. A kind fires only on its
//!   own domain's operations: a storage fault never fires on an LLM call (the original
//!   harness had no scope, and its storage faults broke LLM calls by accident).
//! - [`FaultConfig`] says how a kind fires: a probability, an operation filter, a cap,
//!   a warm-up, or exactly the Nth matching operation. Invalid settings are rejected
//!   when the config is built.
//! - [`FaultInjector`] makes the decisions, from its own forked RNG streams, counts them
//!   and records every injection in the trace.
//! - [`swarm`] draws, from the seed, which kinds are on and how often (swarm testing).
//!
//! - [`FaultPoint`]s are the operations where simulators ask (`llm.call`,
//!   `storage.write`, `network.connect`), declared once as constants in [`point`]; a
//!   filter that reaches no point where its kind can fire is refused at configuration.
//!
//! - [`aim`] reads rules as text (`tool.timeout@tool.call.pay#2=0.5`), the form the
//!   command lines and the plugins take.
//!
//! docs/adr/0002-fault-model.md records the design.

pub mod aim;
mod config;
mod injector;
mod kind;
pub mod point;
pub mod swarm;

pub use config::{FaultConfig, FaultConfigError, OperationFilter};
pub use injector::{FaultInjector, FaultStats, Injection, InjectionId};
pub use kind::{FaultDomain, FaultKind, UnknownFaultKind};
pub(crate) use kind::{LlmKind, NetworkKind, StorageKind, ToolKind};
pub use point::FaultPoint;
