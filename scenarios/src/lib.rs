//! Umi's simulation scenarios: real agent code (memory, router, clients, agent loop) run
//! under faults over many seeds, each with the invariants it must keep and the rare paths
//! it must reach.
//!
//! Run them with the `dst` command (`cargo run --profile sim -p umi-scenarios --bin dst --
//! sweep`), or through `cargo test -p umi-scenarios`, which replays every seed in
//! `seeds/` and a fixed range per scenario. `DST_SEED=N cargo test -p umi-scenarios --
//! <scenario>` replays one seed.
//!
//! # Layout
//!
//! - [`common`]: workload text, a request-logging model, the router stack over
//!   SimNetwork, tool registries, conversation checks.
//! - One file per scenario, its `//!` header stating its goal and invariants:
//!   [`memory_no_data_loss`], [`sqlite_no_data_loss`], [`recall_degrades_gracefully`],
//!   [`recall_by_embeddings`], [`router_rate_limit_storm`],
//!   [`router_fallback_chain`], [`context_overflow_recovery`], [`streaming_tool_calls`],
//!   [`wire_faults`], [`wire_shapes`], [`mixed_formats`], [`agent_loop_under_faults`],
//!   [`tool_effects`], [`mcp_agent`], [`cassette_agent`], [`outbox_drains`] (a liveness
//!   phase), and the canaries [`canary`], [`canary_lost_link`],
//!   [`canary_double_charge`], [`canary_lost_update`], [`canary_mcp_resend`] and [`canary_cassette_drift`].
//! - Each scenario is one declaration, `#[umi_dst::scenario(goal = .., faults = [..],
//!   marks = [..], run = run)]` on a unit struct, which registers it: [`all`],
//!   [`deep_canaries`] and [`with_planted`] are views of
//!   [`umi_dst::scenario::registered`], and its corpus replay test (`cargo test -p
//!   umi-scenarios -- <scenario>`) is written by the declaration. A new scenario is a new
//!   file here (and its `pub mod` line below).
//! - [`all`]: every scenario a sweep runs, for the `dst` binary and the tests.
//! - [`planted_refund_twice`]: a support agent that refunds one order twice after a
//!   whole-run retry, and its correct twin (run by the tests, not in [`all`]).
//! - [`deep_canaries`]: planted bugs that need four faults in order (odds near 10⁻⁵ or
//!   lower per blind seed), [`deep_canary_outbox`] (memory on storage),
//!   [`deep_canary_resend`] (tools) and [`deep_canary_stale_answer`] (the agent loop),
//!   with a stepping-stone mark per event: what `dst explore` is measured on; in the `dst`
//!   binary, reachable only by name.
//! - [`planted_crashes`]: seeds that abort, overflow the stack, exit, allocate without
//!   bound or busy-loop, to test the harness; in the `dst` binary ([`with_planted`]),
//!   reachable only by name.

pub mod agent_loop_under_faults;
pub mod canary;
pub mod canary_cassette_drift;
pub mod canary_double_charge;
pub mod canary_lost_link;
pub mod canary_lost_update;
pub mod canary_mcp_resend;
pub mod cassette_agent;
pub mod common;
pub mod context_overflow_recovery;
pub mod deep_canary_outbox;
pub mod deep_canary_resend;
pub mod deep_canary_stale_answer;
pub mod mcp_agent;
pub mod memory_no_data_loss;
pub mod mixed_formats;
pub mod outbox_drains;
pub mod planted_crashes;
pub mod planted_refund_twice;
pub mod recall_by_embeddings;
pub mod recall_degrades_gracefully;
pub mod router_fallback_chain;
pub mod router_rate_limit_storm;
pub mod sqlite_no_data_loss;
pub mod streaming_tool_calls;
pub mod tool_effects;
pub mod wire_faults;
pub mod wire_shapes;

use std::sync::Arc;

use umi_dst::Scenario;

/// Every scenario a sweep of all runs (every declared one that does not run only when
/// named), in the order sweeps report them: each declaration's `rank`, then its name.
pub fn all() -> Vec<Arc<dyn Scenario>> {
    let mut scenarios = with_planted();
    scenarios.retain(|scenario| !scenario.only_when_named());
    scenarios
}

/// The deep canaries (the canaries that run only when named): bugs a blind sweep rarely
/// reaches, which guided exploration must find.
pub fn deep_canaries() -> Vec<Arc<dyn Scenario>> {
    let mut scenarios = with_planted();
    scenarios.retain(|scenario| scenario.is_canary() && scenario.only_when_named());
    scenarios
}

/// Every declared scenario ([`umi_dst::scenario::registered`]): [`all`], then the
/// [`deep_canaries`], [`outbox_drains::OutboxGivesUp`] and the [`planted_crashes`]
/// (which run only when named), by rank: the `dst` binary's scenarios.
pub fn with_planted() -> Vec<Arc<dyn Scenario>> {
    umi_dst::scenario::registered()
}
