//! umi-core's integration tests.

/// Shared helpers: deterministic proptest configs.
mod support;

/// StreamCollector under random fragmentation of valid streams, and broken streams.
mod collector_props;

/// Storage: conformance on SQLite and in-memory, foreign files, schema versions, reopening.
mod storage;

/// The memory with scripted models: every path, bad input, durability.
mod memory;

/// The memory with an embedder: vectors beside entities, fused recall, degradations.
mod memory_embed;

/// The agent loop with scripted tool-call turns: parallel calls, failures, limits, trims.
mod agent;

/// Recorded responses of five providers through the real clients; hostile bytes.
mod contract;

/// Secrets: a key echoed by a server or held in the URL, through every failure path.
mod secrets;
