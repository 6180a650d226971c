//! umi-core's integration tests.

/// Shared helpers: deterministic proptest configs.
mod support;

/// StreamCollector under random fragmentation of valid streams, and broken streams.
mod collector_props;
