//! Every fixed RNG stream of the simulators, named once.
//!
//! A stream is either a [`Label`] forked from its parent ([`DeterministicRng::stream`],
//! the label hashed into the child's key; also the first part of a
//! [`DeterministicRng::fork_parts`] key) or a numbered [`Substream`] of its parent's key
//! ([`DeterministicRng::substream`], ChaCha's stream parameter). Both are part of what a
//! seed means: a label's text or an index changed here changes the numbers every seed
//! draws there. So each is written once, in the module of the stream it is drawn from,
//! and the tests below check that no two streams of one key share a label or an index by
//! accident (two subsystems drawing the same numbers).
//!
//! One key, one namespace: a substream keeps its parent's key, so the substreams *and*
//! the forks of a substream live in the parent's namespace (`llm_call::REASONING_CHUNKS`
//! is drawn from the chunk stream, `llm_call::CONVERSATION` from the generation stream:
//! both are keyed by the call's key and listed with the call's other streams).
//!
//! [`DeterministicRng::stream`]: super::DeterministicRng::stream
//! [`DeterministicRng::fork_parts`]: super::DeterministicRng::fork_parts
//! [`DeterministicRng::substream`]: super::DeterministicRng::substream

/// A stream forked by name from its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Label(&'static str);

impl Label {
    /// The stream named `label`.
    pub const fn new(label: &'static str) -> Self {
        Self(label)
    }

    /// The label's text, as it is hashed into the child's key.
    pub const fn as_str(self) -> &'static str {
        self.0
    }

    /// The label's bytes, as the first part of a [`super::DeterministicRng::fork_parts`] key.
    pub const fn as_bytes(self) -> &'static [u8] {
        self.0.as_bytes()
    }
}

/// A numbered sub-stream of its parent's key (from 1: 0 is the parent itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Substream(u64);

impl Substream {
    /// Sub-stream `index`; `index` must be positive (a compile error in a `const`).
    pub const fn new(index: u64) -> Self {
        assert!(index > 0, "substream 0 is the stream itself");
        Self(index)
    }

    /// The ChaCha stream parameter.
    pub const fn index(self) -> u64 {
        self.0
    }
}

/// The streams of a run's root (`DeterministicRng::new(seed)`, the kernel's root).
pub mod seed {
    use super::Label;

    /// Swarm testing's draws of which fault rules are on.
    pub const SWARM: Label = Label::new("swarm");
    /// The fault injector's rules (each forks `rule/{index}/{kind}` from it).
    pub const FAULTS: Label = Label::new("faults");
    /// The LLM simulator (forked per model from it).
    pub const LLM: Label = Label::new("llm");
    /// The storage simulator.
    pub const STORAGE: Label = Label::new("storage");
    /// The network simulator.
    pub const NETWORK: Label = Label::new("network");
    /// The tool simulator (each call forks its name, id and run from it).
    pub const TOOL: Label = Label::new("tool");
    /// Whether `dst serve`'s MCP server answers with SSE, per seed.
    pub const MCP_RESPONSE_MODE: Label = Label::new("mcp.response_mode");
    /// The seeded interleaving points (a `SimKernel::rng` label, counted per call).
    pub const SCHEDULE_INTERLEAVE: Label = Label::new("schedule.interleave");
    /// `fork_parts` prefix: a clock jump, keyed by the step it happens at.
    pub const CLOCK_JUMP: Label = Label::new("clock.jump");
    /// `fork_parts` prefix: `Environment::random_u64`'s streams, keyed by their name.
    pub const ENV: Label = Label::new("env");
    /// `fork_parts` prefix: the second and later `SimKernel::rng` calls of one label.
    pub const RNG: Label = Label::new("rng");

    /// The labels forked from the root by the simulators: `SimKernel::rng` refuses them,
    /// so a workload cannot draw a simulator's numbers by naming its stream.
    pub const SIMULATORS: [Label; 7] = [
        SWARM,
        FAULTS,
        LLM,
        STORAGE,
        NETWORK,
        TOOL,
        MCP_RESPONSE_MODE,
    ];
    /// Every label of the root's namespace.
    pub const ALL: [Label; 11] = [
        SWARM,
        FAULTS,
        LLM,
        STORAGE,
        NETWORK,
        TOOL,
        MCP_RESPONSE_MODE,
        SCHEDULE_INTERLEAVE,
        CLOCK_JUMP,
        ENV,
        RNG,
    ];
}

/// The streams of the network simulator's root ([`seed::NETWORK`]).
pub mod network {
    use super::Label;

    /// The network's own fault draws.
    pub const FAULTS: Label = Label::new("faults");
    /// `fork_parts` prefix: an MCP server's stream, keyed by its URL.
    pub const MCP: Label = Label::new("mcp");
    /// `fork_parts` prefix: an endpoint's server clock skew, keyed by its base URL.
    pub const SKEW: Label = Label::new("skew");
    /// `fork_parts` prefix: an endpoint's server (ids, fingerprints), keyed by its base URL.
    pub const SERVER: Label = Label::new("server");

    /// Every label of the namespace (a request's stream is keyed by its base URL, hash
    /// and occurrence, with no prefix: three parts, never two like these).
    pub const ALL: [Label; 4] = [FAULTS, MCP, SKEW, SERVER];
}

/// The streams of one HTTP request to a simulated endpoint (keyed by base URL, request
/// hash and occurrence).
pub mod request {
    use super::{Label, Substream};

    /// The responder's ids and choices (also the base of an embeddings answer).
    pub const RESPONDER: Substream = Substream::new(1);
    /// The response headers.
    pub const HEADERS: Substream = Substream::new(2);
    /// How a body is split into reads (a replayed body's too: one path or the other).
    pub const READS: Substream = Substream::new(3);
    /// A streamed body's pacing.
    pub const STREAM_BODY: Substream = Substream::new(4);
    /// A replayed exchange's fault draw.
    pub const REPLAY_FAULT: Substream = Substream::new(5);
    /// A replayed exchange's timing.
    pub const REPLAY_TIMING: Substream = Substream::new(6);
    /// Where a replayed body is cut.
    pub const REPLAY_CUT: Substream = Substream::new(7);
    /// A cassette replay of the request.
    pub const REPLAY: Substream = Substream::new(8);
    /// An embeddings answer (its responder is its [`EMBED_RESPONDER`]).
    pub const EMBED: Label = Label::new("embed");
    /// Where an unparseable body is cut (a whole body's or a stream's: one or the other).
    pub const UNPARSEABLE: Label = Label::new("unparseable");
    /// A Responses-API server's error draws (forked from the responder's stream).
    pub const ERRORS: Label = Label::new("errors");
    /// The embeddings answer's responder, in [`EMBED`]'s namespace.
    pub const EMBED_RESPONDER: Substream = Substream::new(1);

    /// Every substream of the request's key.
    pub const SUBSTREAMS: [Substream; 8] = [
        RESPONDER,
        HEADERS,
        READS,
        STREAM_BODY,
        REPLAY_FAULT,
        REPLAY_TIMING,
        REPLAY_CUT,
        REPLAY,
    ];
    /// Every label of the request's key.
    pub const LABELS: [Label; 3] = [EMBED, UNPARSEABLE, ERRORS];
}

/// The streams of an MCP server ([`network::MCP`]).
pub mod mcp {
    use super::Label;

    /// `fork_parts` prefix: one request's stream, keyed by a draw of the server's.
    pub const REQUEST: Label = Label::new("request");
}

/// The streams of one LLM call (keyed by the model, the request hash and occurrence).
pub mod llm_call {
    use super::{Label, Substream};

    /// The fault draw.
    pub const FAULT: Substream = Substream::new(1);
    /// The answer's content.
    pub const GENERATE: Substream = Substream::new(2);
    /// Latency and pacing.
    pub const TIMING: Substream = Substream::new(3);
    /// How the answer is chunked.
    pub const CHUNKS: Substream = Substream::new(4);
    /// The reasoning text.
    pub const REASONING: Substream = Substream::new(5);
    /// How the reasoning is chunked (drawn from the chunk stream, so the call's key).
    pub const REASONING_CHUNKS: Substream = Substream::new(9);
    /// Tool arguments taken from the conversation (forked from the generation stream).
    pub const CONVERSATION: Label = Label::new("tool_arguments.conversation");

    /// Every substream of the call's key.
    pub const SUBSTREAMS: [Substream; 6] =
        [FAULT, GENERATE, TIMING, CHUNKS, REASONING, REASONING_CHUNKS];
}

/// The streams of the explorer (`DeterministicRng::new(explorer_seed)`).
pub mod explore {
    use super::Label;

    /// `fork_parts` prefix: one shard's stream, keyed by its index.
    pub const SHARD: Label = Label::new("explore");
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn distinct<T: Ord + Copy + std::fmt::Debug>(streams: &[T]) -> Result<(), T> {
        let mut seen = BTreeSet::new();
        match streams.iter().find(|stream| !seen.insert(**stream)) {
            Some(shared) => Err(*shared),
            None => Ok(()),
        }
    }

    /// No two streams of one key share a label or an index.
    #[test]
    fn the_streams_of_one_key_are_distinct() {
        assert_eq!(distinct(&seed::ALL), Ok(()));
        assert_eq!(distinct(&network::ALL), Ok(()));
        assert_eq!(distinct(&request::SUBSTREAMS), Ok(()));
        assert_eq!(distinct(&request::LABELS), Ok(()));
        assert_eq!(distinct(&llm_call::SUBSTREAMS), Ok(()));
        for simulator in seed::SIMULATORS {
            assert!(seed::ALL.contains(&simulator), "{simulator:?}");
        }
    }

    /// The check itself finds a planted share, by label and by index.
    #[test]
    fn a_shared_stream_is_found() {
        let planted = [llm_call::FAULT, llm_call::GENERATE, Substream::new(1)];
        assert_eq!(distinct(&planted), Err(llm_call::FAULT));
        let planted = [network::FAULTS, seed::FAULTS];
        assert_eq!(distinct(&planted), Err(Label::new("faults")));
    }
}
