//! One chunk of a chat-completions stream, written in its response's drawn layout as it is
//! serialized: the envelope ([`super::envelope`]) and the choice go straight into the
//! serializer, in the layout's key order; the values inside them that vary by shape (the
//! delta, the usage, a caller's own choice, Azure's filter results, an in-stream error,
//! llama.cpp's timings) are still trees ([`Json`]). A stream writes one chunk per event:
//! the encoder, a tree of every chunk and all, was a fifth of a streamed `dst serve`
//! simulation, and writing the envelope and the choice straight saved about 3% of it
//! (issue 41, twelfth round). The bytes are the tree's, key for key: the wire-bytes golden
//! file pins them.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use super::draw::{Draw, UsageField, content_filter_results};
use super::envelope;
use crate::network::chat_shapes::{Framing, Layout};
use crate::network::ids;
use crate::network::json::Json;

/// One chunk of a response, as [`super::draw::Draw::chunk`] drew it, written in its
/// layout when serialized (the module says how).
pub(crate) struct Chunk<'a> {
    pub(super) draw: &'a Draw,
    pub(super) choice: Option<ChunkChoice>,
    pub(super) usage: UsageField,
    /// OpenAI's padding, drawn with the chunk (tiered layouts).
    pub(super) padding: Option<String>,
    pub(super) before_choices: Option<(&'static str, Json)>,
    pub(super) after: Option<(&'static str, Json)>,
}

/// A chunk's one choice.
pub(super) enum ChunkChoice {
    /// A delta (its keys sorted for Azure) and the finish reason; `delta_first`:
    /// DashScope's drawn key order.
    Delta {
        delta: Json,
        finish: Option<String>,
        delta_first: bool,
    },
    /// A choice built by the caller.
    Raw(Json),
}

impl Chunk<'_> {
    /// The chunk with `key` just before its choices (OpenRouter's in-stream `error`).
    pub(crate) fn with_before_choices(mut self, key: &'static str, value: Json) -> Self {
        self.before_choices = Some((key, value));
        self
    }

    /// The chunk with `key` after every other key (llama.cpp's `timings`).
    pub(crate) fn with_after(mut self, key: &'static str, value: Json) -> Self {
        self.after = Some((key, value));
        self
    }

    /// The framing of the response the chunk belongs to.
    pub(crate) fn framing(&self) -> Framing {
        self.draw.framing
    }
}

/// Drawing a chunk: what varies from chunk to chunk is drawn as the chunk is made
/// (DashScope's key order, then OpenAI's padding; a seed's bytes depend on that order).
impl Draw {
    /// A chunk of the drawn layout around `choice`: a delta and its finish reason (`None`
    /// while the answer goes on), or no choice at all (a usage chunk's empty `choices`).
    /// What varies chunk by chunk (DashScope's key order, OpenAI's padding) is drawn now.
    pub(crate) fn chunk(
        &mut self,
        choice: Option<(Json, Option<String>)>,
        usage: UsageField,
    ) -> Chunk<'_> {
        let choice = choice.map(|(delta, finish)| {
            // DashScope's key order inside a choice varies from chunk to chunk (VERCEL
            // alibaba-text.chunks.txt): one of its two orders, drawn.
            let delta_first = self.layout == Layout::DashScope && self.rng.bool_with(0.5);
            let delta = if self.layout == Layout::Azure {
                delta.sorted()
            } else {
                delta
            };
            ChunkChoice::Delta {
                delta,
                finish,
                delta_first,
            }
        });
        self.chunk_of(choice, usage)
    }

    /// A chunk around a choice built by the caller (a choice with unusual keys).
    pub(crate) fn chunk_raw(&mut self, choice: Json, usage: UsageField) -> Chunk<'_> {
        self.chunk_of(Some(ChunkChoice::Raw(choice)), usage)
    }

    fn chunk_of(&mut self, choice: Option<ChunkChoice>, usage: UsageField) -> Chunk<'_> {
        let padding = match self.layout {
            Layout::OpenAiTiered | Layout::OpenAiTieredNoLogprobs => {
                // Random padding, last, on every chunk (ENVOY, GOMODEL).
                let len = self.rng.below(16) as usize;
                Some(ids::alnum(&mut self.rng, len))
            }
            Layout::OpenAi2024
            | Layout::Azure
            | Layout::DeepSeek
            | Layout::DashScope
            | Layout::Glm
            | Layout::GlmNoObject
            | Layout::OpenRouter
            | Layout::Vllm
            | Layout::LlamaCpp
            | Layout::OllamaV1
            | Layout::Tgi
            | Layout::Xinference => None,
        };
        Chunk {
            draw: self,
            choice,
            usage,
            padding,
            before_choices: None,
            after: None,
        }
    }
}

impl Serialize for Chunk<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let draw = self.draw;
        let mut map = serializer.serialize_map(None)?;
        let choices = ChoicesOf(self);
        let choices = envelope::Choices {
            choices: &choices,
            before: self
                .before_choices
                .as_ref()
                .map(|(key, value)| (*key, value)),
        };
        envelope::write(&mut map, draw.layout, &draw.stamps(), &choices)?;
        match &self.usage {
            UsageField::Absent => {}
            UsageField::Null => map.serialize_entry("usage", &())?,
            UsageField::Value(value) => map.serialize_entry("usage", value)?,
        }
        if draw.layout == Layout::DashScope {
            // DashScope writes the stamps after the usage, `id` last.
            map.serialize_entry("created", &draw.created)?;
            map.serialize_entry("system_fingerprint", &())?;
            map.serialize_entry("model", &draw.model)?;
            map.serialize_entry("id", &draw.id)?;
        }
        if let Some(padding) = &self.padding {
            map.serialize_entry("obfuscation", padding)?;
        }
        if let Some((key, value)) = &self.after {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// A chunk's `choices`: none, or its one choice.
struct ChoicesOf<'c, 'a>(&'c Chunk<'a>);

impl Serialize for ChoicesOf<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let chunk = self.0;
        let count = usize::from(chunk.choice.is_some());
        let mut seq = serializer.serialize_seq(Some(count))?;
        match &chunk.choice {
            None => {}
            Some(ChunkChoice::Raw(choice)) => seq.serialize_element(choice)?,
            Some(ChunkChoice::Delta {
                delta,
                finish,
                delta_first,
            }) => seq.serialize_element(&ChoiceOf {
                layout: chunk.draw.layout,
                delta,
                finish: finish.as_deref(),
                delta_first: *delta_first,
            })?,
        }
        seq.end()
    }
}

/// One choice in a layout's key order.
struct ChoiceOf<'a> {
    layout: Layout,
    delta: &'a Json,
    finish: Option<&'a str>,
    delta_first: bool,
}

impl Serialize for ChoiceOf<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (delta, finish) = (self.delta, &self.finish);
        let mut map = serializer.serialize_map(None)?;
        match self.layout {
            Layout::OpenAi2024
            | Layout::OpenAiTiered
            | Layout::DeepSeek
            | Layout::Vllm
            | Layout::Tgi
            | Layout::Xinference => {
                map.serialize_entry("index", &0u64)?;
                map.serialize_entry("delta", delta)?;
                map.serialize_entry("logprobs", &())?;
                map.serialize_entry("finish_reason", finish)?;
                if self.layout == Layout::Vllm && finish.is_some() {
                    map.serialize_entry("stop_reason", &())?;
                }
            }
            Layout::OpenAiTieredNoLogprobs | Layout::OllamaV1 => {
                map.serialize_entry("index", &0u64)?;
                map.serialize_entry("delta", delta)?;
                map.serialize_entry("finish_reason", finish)?;
            }
            Layout::Azure => {
                let filter = content_filter_results(finish.is_none());
                map.serialize_entry("content_filter_results", &filter)?;
                map.serialize_entry("delta", delta)?;
                map.serialize_entry("finish_reason", finish)?;
                map.serialize_entry("index", &0u64)?;
                map.serialize_entry("logprobs", &())?;
            }
            Layout::DashScope if self.delta_first => {
                map.serialize_entry("delta", delta)?;
                map.serialize_entry("index", &0u64)?;
                map.serialize_entry("logprobs", &())?;
                map.serialize_entry("finish_reason", finish)?;
            }
            Layout::DashScope => {
                map.serialize_entry("finish_reason", finish)?;
                map.serialize_entry("logprobs", &())?;
                map.serialize_entry("delta", delta)?;
                map.serialize_entry("index", &0u64)?;
            }
            Layout::Glm | Layout::GlmNoObject => {
                map.serialize_entry("index", &0u64)?;
                if finish.is_some() {
                    map.serialize_entry("finish_reason", finish)?;
                }
                map.serialize_entry("delta", delta)?;
            }
            Layout::OpenRouter => {
                map.serialize_entry("index", &0u64)?;
                map.serialize_entry("delta", delta)?;
                map.serialize_entry("finish_reason", finish)?;
                map.serialize_entry("native_finish_reason", finish)?;
            }
            Layout::LlamaCpp => {
                map.serialize_entry("finish_reason", finish)?;
                map.serialize_entry("index", &0u64)?;
                map.serialize_entry("delta", delta)?;
            }
        }
        map.end()
    }
}
