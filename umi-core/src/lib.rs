//! # umi-core
//!
//! The agent code Umi tests, and a library to use in production: LLM types and typed
//! errors, the streaming provider trait, real provider clients, a router with retries and
//! fallbacks, the Umi memory, storage and a tool-using agent loop.
//!
//! umi-core holds no simulation code. Everything that needs time or randomness takes an
//! [`env::Env`]: the real one in production, umi-dst's simulated one under test. That
//! single seam is what lets one `u64` seed replay a whole run of this code exactly.
//!
//! # Layout
//!
//! - [`env`](mod@env): the injected environment (time, sleeps, timeouts, randomness, events) and
//!   its production implementation.
//! - [`llm`]: messages, requests, responses, stream events, `LlmError`, the
//!   `LanguageModel` trait and its contract, the stream collector, stop sequences, the
//!   token estimator.
//! - [`memory`]: the Umi memory: remember (extraction, evolution detection) and recall
//!   (text search, query rewriting, rank fusion), with graceful degradation.
//! - [`storage`]: the memory's storage trait, SQLite and in-memory backends, and the
//!   storage conformance suite.
//! - [`agent`]: a tool-using agent loop with loop detection and context trimming.
//! - [`cassette`]: recorded provider traffic (a file of exchanges), the recording
//!   transport that writes it, HAR import and the request matching a replay uses.
//! - [`portable_math`]: `ln` and fractional powers with the same bits on every
//!   platform, for seeded paths (the standard library's are platform-dependent).
//! - [`canonical_json`]: JSON serialized and iterated with its object keys sorted, so a
//!   seed means the same whether or not a dependency turns on serde_json's
//!   `preserve_order`.
//! - [`constants`]: the shared limits, named `<noun>_<unit>_<max|min|default>`, with
//!   compile-time checks of how they relate.

pub mod agent;
pub mod canonical_json;
pub mod cassette;
pub mod constants;
pub mod env;
pub mod hex;
pub mod llm;
pub mod mcp;
pub mod memory;
pub mod portable_math;
pub mod storage;

/// Type-checks the README's code blocks (the memory example is `no_run`: compiled, not
/// run), so the snippets people copy keep building.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
