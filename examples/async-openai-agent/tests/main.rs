//! The async-openai agent's tests: simulations of the unchanged agent.

/// The agent under faults, its seeds replayed, and the sweep over a default range.
mod simulation;

/// A scenario declared in one file is listed and swept by the crate's own `dst`.
mod declared;
