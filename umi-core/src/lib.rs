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
//! - [`memory`]: the Umi memory; for now its prompts, task tags and parsers.
//! - [`constants`]: every limit, named with its unit last, with compile-time checks of
//!   how the limits relate.

pub mod constants;
pub mod env;
pub mod llm;
pub mod memory;
