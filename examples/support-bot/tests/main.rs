//! The support bot's tests.

/// A simulation test of the bot under model faults (`DST_SEED=N cargo test -p
/// umi-example-support-bot` replays one seed), and the project's scenario swept.
mod simulation;
