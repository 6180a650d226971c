//! An example of a user's project under Umi: a support bot that recalls what it knows
//! about a customer, asks a model, and remembers the question.
//!
//! # Layout
//!
//! - [`bot`]: the bot, the code under test. It takes an `Env` and a model, like all code
//!   that runs in production and in simulation alike.
//! - [`scenario`]: the bot as a sweep scenario, with its invariants.
//! - `src/bin/dst.rs`: the project's own `dst` command over its scenarios.
//! - `tests/main.rs`: one simulation test, replayable with `DST_SEED=N cargo test`.

pub mod bot;
pub mod scenario;
