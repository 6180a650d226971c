//! The Umi memory: remember and recall with entity extraction, query rewriting and
//! evolution detection.
//!
//! [`prompts`] holds the three LLM prompts, their task tags and their strict parsers;
//! simulated models are tested against exactly these.

pub mod prompts;
