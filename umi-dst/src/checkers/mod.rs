//! Checkers: invariants a scenario verifies after (or while) driving real code.
//!
//! A checker takes the code under test and a model of what was acknowledged, and returns
//! a [`crate::Violation`] naming what broke. Run them after
//! [`crate::FaultInjector::heal`], so a transient fault is not mistaken for a broken
//! invariant; permanent damage the simulation did (a rotten record) is passed in, so it
//! counts only if it went unreported.

pub mod effects;
pub mod memory;
pub mod router;
pub mod tool_results;
pub mod wire;
