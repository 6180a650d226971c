//! umi-dst's integration tests: the harness testing itself.

/// Workloads shared by the tests below (a planted-bug store, a busy agent-like run).
mod support;

mod golden_file;

/// Canaries: a planted bug of every failure class that the runner must catch, the replay
/// round trip, and the report's replay command.
mod self_test;

/// Same seed, same trace hash, in this process and in two fresh processes.
mod determinism;

/// Paths: a seed alone is the seed, a path replays exactly, a branch keeps the run up to
/// its step and switches every stream after it.
mod paths;

/// Steering marks: recorded with their steps, and free (no step, draw or trace event).
mod steering;

/// Fault injection statistics and scoping, over many operations.
mod faults;

/// Every fault kind, always on, has its effect through the real simulators.
mod fault_kinds;

/// The liveness phase: after `sim.heal()`, `eventually` passes a system that recovers and
/// fails one that never does as a liveness failure naming the condition and the bound.
mod liveness;

/// The seed corpus replayed through the runner, and bad `DST_*` input.
mod corpus;

/// The mock, scripted and function models, and the conformance suite on all three.
mod doubles;

/// Embeddings: umi-core's clients over SimNetwork's embeddings endpoints, conformance,
/// refusals and faults.
mod embeddings;

/// SimLLM: order-independent determinism, generators through the real parsers, schema-valid
/// tool arguments, natural limits, latency, stream shapes, faults and routes.
mod sim_llm;

/// What a run spent: the ledger against the answers, retries and fallbacks, budgets
/// (the call that pushed a run over, growth under faults), task and trial seeds.
mod usage;

/// SimStorage (conformance, faults) and the memory under LLM and storage faults, checked
/// by the memory checkers; the checkers catching planted bugs.
mod memory_sim;

/// The README's example test, compiled and run, and kept identical to the README.
mod readme;

/// The router with scripted providers in simulated time: the seed-004 suite and the
/// rest of the policy, with the router checkers.
mod router;

/// The real clients and the router over SimNetwork: contract over the wire, network
/// faults, Retry-After over HTTP, downtime, the router under random fault schedules.
mod wire;

/// Structured outputs: schema-valid answers over 1,000 seeds per schema, and seeded near
/// misses reported at their path.
mod structured;

/// A client nobody here wrote (async-openai's types, eventsource-stream) as the judge of
/// SimNetwork's bytes, for every OpenAI-format profile.
mod third_party;

/// The sweep engine on toy scenarios: crashes, hangs, time budgets, seed recording,
/// canaries, JSON reports and shard merging.
/// The Anthropic client over SimNetwork's Messages server: conformance, typed refusals,
/// the API's conversation rules, and the event grammar of its streams.
mod anthropic;

/// The Responses client over SimNetwork's Responses server: conformance, refusals whole
/// and inside the stream, and the event grammar of its streams.
mod responses;

/// async-openai's Responses types as the judge of SimNetwork's Responses API.
mod third_party_responses;

/// The same seed, the same answer, in every wire format and profile, streamed or whole.
mod formats;

/// A key with surrounding whitespace, echoed by a real HTTP server, never in an error.
mod secrets_over_http;

mod test_macro;

/// Bedrock's streams cut by the network inside an event-stream frame, typed by the client.
mod bedrock;

/// Cassettes: every profile recorded and replayed byte for byte under other seeds,
/// faults over recorded exchanges, misses explained, recorded time in simulated time.
mod cassette;

/// OpenTelemetry export: a run's spans (GenAI mapping, faults on their spans, MCP),
/// deterministic ids and bytes, judged by the official generated types.
mod otlp;

/// The official types' serde JSON is OTLP JSON (hex ids, camelCase, 64-bit strings).
mod otlp_json;

/// async-openai, unmodified, parses a replayed cassette exactly as it parsed the
/// recorded answers, whole and streamed (feature `async-openai`).
#[cfg(feature = "async-openai")]
mod async_openai_cassette;

/// rig, unmodified, over SimNetwork through `umi_dst::adapters::rig` (feature `rig`).
#[cfg(feature = "rig")]
mod rig_adapter;

/// rmcp, the official Rust MCP SDK, unmodified, over SimNetwork's MCP servers through
/// `umi_dst::adapters::rmcp` (feature `rmcp`).
#[cfg(feature = "rmcp")]
mod rmcp_adapter;
