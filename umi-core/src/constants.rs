//! umi-core's shared limits (a limit of one module may live beside it).
//!
//! Names follow `<noun>_<unit>_<max|min|default>`, the unit and the qualifier last
//! (`prompt_bytes_max`, `router_backoff_ms_max`). Each has a doc comment saying why it is what it is, and the
//! `const` assertions at the bottom check how limits relate, so a change that makes them
//! inconsistent fails to compile rather than failing in production.

// ---- Language-model requests -------------------------------------------------------

/// Bytes of all message text in one request. A 128k-token context is about 512 KiB of
/// English; twice that leaves room for larger windows while refusing runaway prompts.
pub const PROMPT_BYTES_MAX: usize = 1024 * 1024;

/// Messages in one request.
pub const REQUEST_MESSAGES_MAX: usize = 10_000;

/// Tool definitions in one request (OpenAI accepts 128).
pub const REQUEST_TOOLS_MAX: usize = 128;

/// Stop sequences in one request (OpenAI accepts 4; others more).
pub const STOP_SEQUENCES_MAX: usize = 16;

/// Bytes of one stop sequence.
pub const STOP_SEQUENCE_BYTES_MAX: usize = 256;

// ---- Language-model responses ------------------------------------------------------

/// Bytes of a response's text (and of its reasoning text).
pub const RESPONSE_TEXT_BYTES_MAX: usize = 512 * 1024;

/// Highest tool-call index a stream may use (so at most 64 parallel calls).
pub const TOOL_CALL_INDEX_MAX: u32 = 63;

/// Tool calls in one response.
pub const TOOL_CALLS_PER_RESPONSE_MAX: usize = TOOL_CALL_INDEX_MAX as usize + 1;

/// Bytes of one tool call's arguments.
pub const TOOL_ARGUMENTS_BYTES_MAX: usize = 256 * 1024;

/// Events one stream may carry before the collector refuses it.
pub const STREAM_EVENTS_MAX: u64 = 1_000_000;

// ---- Token estimation --------------------------------------------------------------

/// Bytes of ASCII word characters per token (the usual rule of thumb for BPE tokenizers
/// on English text).
pub const TOKEN_ESTIMATE_ASCII_BYTES_PER_TOKEN: usize = 4;

/// Tokens every message costs beyond its text (role and separators).
pub const TOKEN_ESTIMATE_MESSAGE_OVERHEAD: u32 = 4;

/// Tokens that prime the reply in every request.
pub const TOKEN_ESTIMATE_REPLY_PRIMING: u32 = 3;

const _: () = assert!(STOP_SEQUENCE_BYTES_MAX < PROMPT_BYTES_MAX);
const _: () = assert!(TOOL_CALLS_PER_RESPONSE_MAX == TOOL_CALL_INDEX_MAX as usize + 1);
const _: () = assert!(TOOL_ARGUMENTS_BYTES_MAX <= RESPONSE_TEXT_BYTES_MAX);
const _: () = assert!(RESPONSE_TEXT_BYTES_MAX as u64 <= STREAM_EVENTS_MAX);
const _: () = assert!(TOKEN_ESTIMATE_ASCII_BYTES_PER_TOKEN > 0);

// ---- Memory ----------------------------------------------------------------------------

/// Bytes of text one `remember` call accepts.
pub const MEMORY_TEXT_BYTES_MAX: usize = 64 * 1024;

/// Bytes of a recall query.
pub const MEMORY_QUERY_BYTES_MAX: usize = 2 * 1024;

/// Entities one extraction may return.
pub const EXTRACTION_ENTITIES_MAX: usize = 32;

/// Relations one extraction may return.
pub const EXTRACTION_RELATIONS_MAX: usize = 64;

/// Bytes of an entity's name.
pub const ENTITY_NAME_BYTES_MAX: usize = 200;

/// Bytes of an entity's content.
pub const ENTITY_CONTENT_BYTES_MAX: usize = 16 * 1024;

/// Query variants a rewrite may return.
pub const QUERY_VARIANTS_MAX: usize = 5;

/// Existing entities one evolution-detection prompt shows the model.
pub const EVOLUTION_CANDIDATES_MAX: usize = 8;

/// Bytes of an evolution's reason.
pub const EVOLUTION_REASON_BYTES_MAX: usize = 1024;

const _: () = assert!(MEMORY_QUERY_BYTES_MAX < MEMORY_TEXT_BYTES_MAX);
const _: () = assert!(ENTITY_CONTENT_BYTES_MAX >= ENTITY_NAME_BYTES_MAX);
const _: () = assert!(MEMORY_TEXT_BYTES_MAX < PROMPT_BYTES_MAX / 4);
const _: () = assert!(QUERY_VARIANTS_MAX >= 1 && EVOLUTION_CANDIDATES_MAX >= 1);

// ---- Storage -----------------------------------------------------------------------------

/// Results one text search returns at most.
pub const SEARCH_RESULTS_MAX: usize = 200;

/// Results one recall returns at most.
pub const RECALL_RESULTS_MAX: usize = 50;

/// Results one recall returns by default.
pub const RECALL_RESULTS_DEFAULT: usize = 10;

/// Entities one `list` page returns at most.
pub const LIST_PAGE_MAX: usize = 1_000;

/// Longest name of an in-memory SQLite database (`SqliteStorage::open_in_memory`), bytes.
pub const SQLITE_MEMORY_NAME_BYTES_MAX: usize = 128;

/// Records one write batch may carry.
pub const WRITE_BATCH_RECORDS_MAX: usize = 1_024;

/// Evolution detections one `remember` runs at most (one LLM call each).
pub const EVOLUTION_DETECTIONS_MAX: usize = 8;

/// Constant k of reciprocal-rank fusion: score = sum over lists of 1 / (k + rank).
pub const RRF_K: u32 = 60;

const _: () = assert!(RECALL_RESULTS_DEFAULT <= RECALL_RESULTS_MAX);
const _: () = assert!(RECALL_RESULTS_MAX * (QUERY_VARIANTS_MAX + 1) <= SEARCH_RESULTS_MAX * 2);
const _: () = assert!(RECALL_RESULTS_MAX <= SEARCH_RESULTS_MAX);
const _: () = assert!(EVOLUTION_DETECTIONS_MAX <= EXTRACTION_ENTITIES_MAX);
// One remember is one batch: its note, its entities, a vector for each, and its evolution
// links.
const _: () =
    assert!(1 + 2 * EXTRACTION_ENTITIES_MAX + EVOLUTION_DETECTIONS_MAX <= WRITE_BATCH_RECORDS_MAX);

// ---- Agent loop ----------------------------------------------------------------------------

/// Model turns one agent run takes by default before giving up.
pub const AGENT_ITERATIONS_DEFAULT: u32 = 10;

/// Highest `iterations_max` a config may set.
pub const AGENT_ITERATIONS_MAX: u32 = 200;

/// Tool calls the agent runs at once by default.
pub const AGENT_PARALLEL_TOOLS_DEFAULT: usize = 4;

/// Highest `parallel_tools_max` a config may set.
pub const AGENT_PARALLEL_TOOLS_MAX: usize = 32;

/// Context trims after overflows, per run, by default.
pub const AGENT_OVERFLOW_RETRIES_DEFAULT: u32 = 3;

/// Highest `overflow_retries_max` a config may set.
pub const AGENT_OVERFLOW_RETRIES_MAX: u32 = 16;

/// Most retries of one agent turn whose stream was cut after it began
/// (`AgentConfig::stream_cut_retries_max` is at most this; off by default).
pub const AGENT_STREAM_CUT_RETRIES_MAX: u32 = 8;

/// Bytes of one tool result kept (the rest is cut and marked).
pub const TOOL_RESULT_BYTES_MAX: usize = 64 * 1024;

const _: () = assert!(AGENT_ITERATIONS_DEFAULT <= AGENT_ITERATIONS_MAX);
const _: () = assert!(AGENT_PARALLEL_TOOLS_DEFAULT <= AGENT_PARALLEL_TOOLS_MAX);
const _: () = assert!(AGENT_OVERFLOW_RETRIES_DEFAULT <= AGENT_OVERFLOW_RETRIES_MAX);
const _: () = assert!(AGENT_PARALLEL_TOOLS_MAX <= TOOL_CALLS_PER_RESPONSE_MAX);
const _: () = assert!(TOOL_RESULT_BYTES_MAX < PROMPT_BYTES_MAX);

// ---- HTTP clients ------------------------------------------------------------------------

/// Bytes of a whole (non-streamed) response body the clients read.
pub const HTTP_BODY_BYTES_MAX: usize = 8 * 1024 * 1024;

/// Bytes of an error body the clients read (the rest is ignored).
pub const HTTP_ERROR_BODY_BYTES_MAX: usize = 64 * 1024;

/// Nesting a JSON Schema check follows (`$ref` cycles and absurd documents end here).
pub const SCHEMA_DEPTH_MAX: usize = 16;

/// Bytes of one SSE or NDJSON line.
pub const WIRE_LINE_BYTES_MAX: usize = 1024 * 1024;

/// Bytes of one streamed body in all: a server that never ends a stream (keep-alives
/// forever) is cut here. Generous: 128 times the longest answer we keep, room for every
/// event's JSON envelope around a delta of a few bytes.
pub const WIRE_STREAM_BYTES_MAX: usize = 64 * 1024 * 1024;

/// Bytes of one server-sent event's data (all its `data:` lines together), which is
/// also what a pending event holds in memory. Generous: an event can carry a whole
/// answer (the Responses API's `response.completed`, a tool call sent in one piece), so
/// it is 8 times the longest answer kept, room for JSON escaping and the envelope.
pub const WIRE_EVENT_BYTES_MAX: usize = 4 * 1024 * 1024;

/// Default time to the response's headers, and between body chunks.
pub const HTTP_TIMEOUT_MS_DEFAULT: u64 = 60_000;

// ---- Secrets ---------------------------------------------------------------------------

/// Characters a token after `Bearer ` (or a secret header's value) must have to be
/// redacted by pattern when it is not a configured secret: shorter words are prose
/// ("Bearer auth"), real tokens are far longer.
pub const SECRET_TOKEN_CHARS_MIN: usize = 8;

/// Characters of a configured secret's start that, ending a cut text (an error snippet
/// cut at its limit), are redacted as a piece of the secret.
pub const SECRET_PREFIX_CHARS_MIN: usize = 4;

const _: () = assert!(WIRE_LINE_BYTES_MAX <= HTTP_BODY_BYTES_MAX);
const _: () = assert!(WIRE_LINE_BYTES_MAX <= WIRE_EVENT_BYTES_MAX);
const _: () = assert!(WIRE_EVENT_BYTES_MAX <= HTTP_BODY_BYTES_MAX);
const _: () = assert!(WIRE_EVENT_BYTES_MAX >= 8 * RESPONSE_TEXT_BYTES_MAX);
const _: () = assert!(HTTP_BODY_BYTES_MAX <= WIRE_STREAM_BYTES_MAX);
const _: () = assert!(HTTP_ERROR_BODY_BYTES_MAX <= HTTP_BODY_BYTES_MAX);
const _: () = assert!(RESPONSE_TEXT_BYTES_MAX <= HTTP_BODY_BYTES_MAX);

// ---- Router ----------------------------------------------------------------------------

/// Highest `max_retries` a router config may set.
pub const ROUTER_RETRIES_MAX: u32 = 10;

/// Models one routed call may try (primary and fallbacks together).
pub const ROUTER_CHAIN_MODELS_MAX: usize = 16;

/// Longest backoff a router config may set, in ms.
pub const ROUTER_BACKOFF_MS_MAX: u64 = 10 * 60 * 1000;

/// Attempts one routed call makes at most (every model, every retry).
pub const ROUTER_ATTEMPTS_MAX: usize = ROUTER_CHAIN_MODELS_MAX * (ROUTER_RETRIES_MAX as usize + 1);

const _: () = assert!(ROUTER_ATTEMPTS_MAX <= 1024);

// ---- Embeddings (`llm::embed`) ---------------------------------------------------------

/// Inputs one embeddings request may carry: OpenAI's limit ("an array ... of 2048 or fewer
/// elements", the API reference for `POST /embeddings`, `input`).
pub const EMBED_INPUTS_MAX: usize = 2_048;

/// Dimensions a client asks for or accepts in one vector, at most (OpenAI's largest
/// model, `text-embedding-3-large`, has 3072).
pub const EMBED_DIMENSIONS_MAX: u32 = 16_384;
