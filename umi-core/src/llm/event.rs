//! StreamEvent: the pieces a streaming answer arrives in.
//!
//! Real providers send a tool call's id and name only in its first delta, interleave
//! parallel calls by index, split arguments anywhere (inside a JSON escape, between the
//! halves of a `\ud83d\ude00` surrogate pair), send text before the calls and usage in a
//! chunk of its own. The events mirror that, and [`super::StreamCollector`] puts them
//! back together. Fragments are `String`s: splits at arbitrary *bytes* (a TCP chunk
//! ending inside a multi-byte character) are the wire decoders' business, below this
//! layer, and they buffer bytes until a line is whole.

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};

use super::error::LlmError;
use super::response::{FinishReason, TokenUsage};

/// One piece of a streamed answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// More answer text.
    TextDelta {
        /// The text to append.
        text: String,
    },
    /// More reasoning text (models that think aloud, e.g. `reasoning_content`).
    ReasoningDelta {
        /// The text to append.
        text: String,
    },
    /// A piece of tool call number `index`.
    ToolCallDelta {
        /// Which call (0-based); parallel calls interleave by index.
        index: u32,
        /// The call's id: usually only in its first delta.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The tool's name: usually only in its first delta.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// More of the arguments' JSON text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arguments_fragment: Option<String>,
    },
    /// Token usage (some providers send it in a chunk of its own).
    Usage {
        /// The usage.
        usage: TokenUsage,
    },
    /// The end of the answer: exactly one, last.
    Done {
        /// Why generation stopped.
        finish_reason: FinishReason,
        /// Usage, if the provider reports it here.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<TokenUsage>,
    },
}

impl StreamEvent {
    /// A text delta.
    pub fn text(text: impl Into<String>) -> Self {
        Self::TextDelta { text: text.into() }
    }

    /// A Done with `finish_reason` and optional usage.
    pub fn done(finish_reason: FinishReason, usage: Option<TokenUsage>) -> Self {
        Self::Done {
            finish_reason,
            usage,
        }
    }

    /// Whether this is the Done event.
    pub fn is_done(&self) -> bool {
        matches!(self, Self::Done { .. })
    }
}

/// A streamed answer: events until exactly one Done, or an `Err` that ends it.
pub type EventStream = BoxStream<'static, Result<StreamEvent, LlmError>>;
