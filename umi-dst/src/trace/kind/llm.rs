//! SimLLM's events: a call, its answer or refusal, and what faults did to the answer.

use std::fmt;
use std::time::Duration;

use super::Hex4;

/// An event of SimLLM (`llm.*`).
#[derive(Debug, Clone, PartialEq)]
pub enum LlmEvent {
    /// `llm.call`: SimLLM took a request.
    Call {
        /// The model (`provider/model`).
        model: String,
        /// The route that answers.
        route: String,
        /// The operation (the request's task, or `llm.call`).
        operation: String,
        /// The first bytes of the request's hash.
        request: [u8; 4],
        /// How many times this request was seen before.
        occurrence: u64,
        /// The request's estimated prompt tokens.
        prompt_tokens: u32,
    },
    /// `llm.near_miss`: an answer bent to just miss its schema.
    NearMiss {
        /// The kind of miss.
        miss: &'static str,
        /// Where, as a JSON path.
        path: String,
    },
    /// `llm.corrupt`: an answer corrupted (`llm.invalid_response`: `unparseable`;
    /// `llm.wrong_content`: `malformed`, `wrong_shape`, `empty`).
    Corrupt {
        /// The corruption's name.
        corruption: &'static str,
    },
    /// `llm.filter`: an answer cut by a content filter.
    Filter {
        /// The text kept.
        kept_bytes: usize,
    },
    /// `llm.answer`: SimLLM's answer.
    Answer {
        /// The model (`provider/model`).
        model: String,
        /// The finish reason.
        finish: String,
        /// Prompt tokens used.
        prompt_tokens: u32,
        /// Completion tokens used.
        completion_tokens: u32,
        /// The answer's whole latency.
        latency: Duration,
        /// Where a `llm.stream_cut` cuts the stream: how, and after which event.
        cut: Option<(&'static str, usize)>,
    },
    /// `llm.untagged`: task routes that untagged requests cannot match.
    Untagged {
        /// The routes' tasks.
        tasks: Vec<String>,
    },
    /// `llm.refuse`: SimLLM refused a request.
    Refuse {
        /// The model (`provider/model`).
        model: String,
        /// The error's text.
        error: String,
        /// The error's kind (`rate_limit`: umi-core's `LlmErrorKind`). Not in the text
        /// (so not in the hash): the OTLP export's `error.type`.
        error_kind: &'static str,
        /// The refused call's `llm.call` (its `request` and `occurrence`), `None` for a
        /// request refused before it was traced (an invalid one). Not in the text: what
        /// pairs the refusal with its call in the OTLP export when calls overlap.
        call: Option<([u8; 4], u64)>,
    },
}

impl LlmEvent {
    /// The dotted kind.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Call { .. } => "llm.call",
            Self::NearMiss { .. } => "llm.near_miss",
            Self::Corrupt { .. } => "llm.corrupt",
            Self::Filter { .. } => "llm.filter",
            Self::Answer { .. } => "llm.answer",
            Self::Untagged { .. } => "llm.untagged",
            Self::Refuse { .. } => "llm.refuse",
        }
    }

    /// The detail where it is a field as it is.
    pub(super) fn text(&self) -> Option<&str> {
        match self {
            Self::Corrupt { corruption } => Some(corruption),
            Self::Call { .. }
            | Self::NearMiss { .. }
            | Self::Filter { .. }
            | Self::Answer { .. }
            | Self::Untagged { .. }
            | Self::Refuse { .. } => None,
        }
    }
}

impl fmt::Display for LlmEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Call {
                model,
                route,
                operation,
                request,
                occurrence,
                prompt_tokens,
            } => write!(
                f,
                "{model} route={route} op={operation} req={} n={occurrence} prompt_tokens={prompt_tokens}",
                Hex4(request)
            ),
            Self::NearMiss { miss, path } => write!(f, "{miss} at {path}"),
            Self::Corrupt { corruption } => f.write_str(corruption),
            Self::Filter { kept_bytes } => write!(f, "kept {kept_bytes} bytes"),
            Self::Answer {
                model,
                finish,
                prompt_tokens,
                completion_tokens,
                latency,
                cut,
            } => {
                let usage = (*prompt_tokens, *completion_tokens);
                fmt_answer(f, model, finish, usage, *latency, *cut)
            }
            Self::Untagged { tasks } => write!(
                f,
                "routes for tasks {tasks:?} cannot match requests without a task tag (over SimNetwork none has one): use FnRoute::for_task_or"
            ),
            Self::Refuse { model, error, .. } => write!(f, "{model} {error}"),
        }
    }
}

/// `llm.answer`'s detail; `usage` is (prompt, completion) tokens.
fn fmt_answer(
    f: &mut fmt::Formatter<'_>,
    model: &str,
    finish: &str,
    (prompt_tokens, completion_tokens): (u32, u32),
    latency: Duration,
    cut: Option<(&str, usize)>,
) -> fmt::Result {
    write!(
        f,
        "{model} finish={finish} usage={prompt_tokens}+{completion_tokens} latency_ms={}",
        latency.as_millis()
    )?;
    match cut {
        Some((how, at)) => write!(f, " cut={how}@{at}"),
        None => Ok(()),
    }
}
