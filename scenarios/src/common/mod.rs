//! Pieces the scenarios share, a file each: workload text, the router stack over
//! SimNetwork, tools, and the calls and faults the scenarios make. (A model that logs its
//! requests is `umi_dst::doubles::RecordingLanguageModel`.)

mod calls;
mod deep;
mod router_stack;
mod tools;
mod workload;

pub use calls::{ask, chat, chat_owned, fault_on};
pub use deep::{DEEP_EVENT_CHANCE, Stages, event};
pub use router_stack::{PROVIDERS, RouterStack, scenario_retry, sim_model};
pub use tools::{
    Execution, orphan_tool_result, tool_definitions, tool_registry, unanswered_tool_call,
};
pub use workload::{facts, question};
