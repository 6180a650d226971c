//! Adapters: agent code built on a third-party client runs inside a simulation without
//! changing it, through the HTTP seam that client offers.
//!
//! | client | seam | adapter |
//! | --- | --- | --- |
//! | async-openai | `Client::with_http_service` (a tower service; its `middleware` feature) | `adapters::async_openai` (feature `async-openai`) |
//! | rig (rig-core 0.44) | `HttpClientExt`, taken by every provider configuration's `connect` and a client's `with_http` | `adapters::rig` (feature `rig`) |
//! | rmcp (the official Rust MCP SDK, 3.11) | `StreamableHttpClient`, taken by `StreamableHttpClientTransport::with_client` | `adapters::rmcp` (feature `rmcp`), for SimNetwork's MCP servers (`with_mcp`) |
//! | the `openai`/`anthropic`/`ollama` packages, other languages, anything else | none Umi can reach in-process | `dst serve` (real HTTP) |
//!
//! An adapter only moves bytes: the client's requests go to SimNetwork, which answers in
//! the endpoint's profile with the seed's faults, in simulated time. What the client
//! does with time and randomness is its own; each adapter's docs say what that is, as a
//! [`foreign::ForeignClient`] the determinism check names when two runs of a seed part.

#[cfg(feature = "async-openai")]
pub mod async_openai;
pub mod foreign;
#[cfg(any(feature = "async-openai", feature = "rig"))]
mod http_bridge;
#[cfg(feature = "rig")]
pub mod rig;
#[cfg(feature = "rmcp")]
pub mod rmcp;
