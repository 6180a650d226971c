//! Every limit in umi-core, in one place.
//!
//! Names say what they measure with the unit last (`prompt_bytes_max`,
//! `llm_latency_ms_min`). Each has a doc comment saying why it is what it is, and the
//! `const` assertions at the bottom check how limits relate, so a change that makes them
//! inconsistent fails to compile rather than failing in production.
