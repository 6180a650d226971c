//! # umi-scenarios
//!
//! Umi's own simulation scenarios and the `dst` command that sweeps them. Scenarios
//! arrive with the sweep engine; until then this crate only ties the workspace together.
