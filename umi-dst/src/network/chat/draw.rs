//! One response's shapes, drawn from its profile, and what every encoder of the chat
//! format asks of them: a chunk of the drawn layout ([`Chunk`], which writes itself), the
//! usage in the provider's fields, its finish reasons.

use serde_json::json;

use super::envelope::Stamps;
use crate::network::chat_shapes::{
    ChatShapes, ContentFilterShape, Envelope, Fingerprint, FinishNames, FinishShape, Framing,
    IdStyle, Layout, Opener, ReasoningField, StreamErrorShape, ToolShape, UsageDetails, UsageShape,
};
use crate::network::json::Json;
use crate::network::shapes::{RetryAfterForm, ShapeMark};
use crate::network::{ids, stamps};
use crate::rng::DeterministicRng;
use umi_core::llm::{FinishReason, TokenUsage};

/// What one response looks like: a variant of each knob, the ids and the stamps.
#[derive(Debug, Clone)]
pub(crate) struct Draw {
    pub(crate) shapes: &'static ChatShapes,
    pub(crate) layout: Layout,
    pub(crate) framing: Framing,
    pub(crate) fingerprint: Fingerprint,
    pub(crate) opener: Opener,
    pub(crate) finish: FinishShape,
    pub(crate) usage: UsageShape,
    pub(crate) tool: ToolShape,
    pub(crate) reasoning: ReasoningField,
    pub(crate) stream_error: StreamErrorShape,
    pub(crate) envelope: Envelope,
    /// `None` for servers that never answer 429.
    pub(crate) retry_after: Option<RetryAfterForm>,
    pub(crate) id: String,
    pub(crate) created: u64,
    pub(crate) model: String,
    fingerprint_value: String,
    /// The response's own stream, for what varies chunk by chunk (padding, key order).
    pub(crate) rng: DeterministicRng,
}

fn pick<T: Copy>(rng: &mut DeterministicRng, items: &'static [T]) -> T {
    assert!(!items.is_empty(), "a profile lists at least one variant");
    items[rng.index(items.len())]
}

impl Draw {
    /// Draws a response of a provider with `shapes`, answering with `model`, created at
    /// `created_s`.
    pub(crate) fn new(
        shapes: &'static ChatShapes,
        mut server: DeterministicRng,
        mut rng: DeterministicRng,
        created_s: u64,
        model: &str,
    ) -> Self {
        // What one server version fixes: the same for every response of an endpoint.
        let layout = pick(&mut server, shapes.layouts);
        let framing = pick(&mut server, shapes.framings);
        let fingerprint = pick(&mut server, shapes.fingerprints);
        let opener = pick(&mut server, shapes.openers);
        let finish = pick(&mut server, shapes.finishes);
        let usage = pick(&mut server, shapes.usages);
        let tool = pick(&mut server, shapes.tools);
        let reasoning = pick(&mut server, shapes.reasoning);
        let stream_error = pick(&mut server, shapes.stream_errors);
        let envelope = pick(&mut server, shapes.envelopes);
        // What varies per response.
        let retry_after =
            (!shapes.retry_after.is_empty()).then(|| pick(&mut rng, shapes.retry_after));
        let id = match shapes.id {
            IdStyle::OpenAi => format!("chatcmpl-{}", ids::alnum(&mut rng, 29)),
            IdStyle::Uuid => ids::uuid(&mut rng),
            IdStyle::ChatcmplUuid => format!("chatcmpl-{}", ids::uuid(&mut rng)),
            IdStyle::Timestamp => {
                format!("{}{}", stamps::compact(created_s), ids::hex(&mut rng, 16))
            }
            IdStyle::Generation => format!("gen-{created_s}-{}", ids::alnum(&mut rng, 20)),
            IdStyle::ChatcmplHex => format!("chatcmpl-{}", ids::hex(&mut rng, 32)),
            IdStyle::ChatcmplAlnum32 => format!("chatcmpl-{}", ids::alnum(&mut rng, 32)),
            IdStyle::ChatcmplNumber => format!("chatcmpl-{}", rng.below(999)),
            IdStyle::Empty => String::new(),
            IdStyle::ChatUuid => format!("chat{}", ids::uuid(&mut rng)),
        };
        let fingerprint_value = match fingerprint {
            Fingerprint::Fp => format!("fp_{}", ids::hex(&mut rng, 10)),
            Fingerprint::FpDeepSeek => {
                format!("fp_{}_prod0820_fp8_kvcache", ids::hex(&mut rng, 10))
            }
            Fingerprint::Hex32 => ids::hex(&mut rng, 32),
            Fingerprint::Build => {
                format!("b{}-{}", 6_000 + rng.below(1_000), ids::hex(&mut rng, 8))
            }
            Fingerprint::Ollama => "fp_ollama".to_owned(),
            Fingerprint::TgiNative => "2.0.1-native".to_owned(),
            Fingerprint::Absent | Fingerprint::Null | Fingerprint::Empty => String::new(),
        };
        Self {
            shapes,
            layout,
            framing,
            fingerprint,
            opener,
            finish,
            usage,
            tool,
            reasoning,
            stream_error,
            envelope,
            retry_after,
            id,
            created: created_s,
            model: model.to_owned(),
            fingerprint_value,
            rng,
        }
    }

    /// The marks of the shapes a streamed response uses.
    pub(crate) fn stream_marks(&self) -> [&'static str; 5] {
        [
            self.layout.mark(),
            self.framing.mark(),
            self.fingerprint.mark(),
            self.opener.mark(),
            self.finish.mark(),
        ]
    }

    /// The finish reason as this provider spells it.
    pub(crate) fn finish_name(&self, reason: &FinishReason) -> String {
        if self.shapes.finish_names == FinishNames::Tgi {
            return match reason {
                FinishReason::Length => "length",
                _ => "eos_token",
            }
            .to_owned();
        }
        match reason {
            FinishReason::ContentFilter => match self.shapes.content_filter {
                ContentFilterShape::Sensitive => "sensitive".to_owned(),
                ContentFilterShape::FinishReason | ContentFilterShape::OpenAiSpelling => {
                    "content_filter".to_owned()
                }
            },
            FinishReason::Aborted => "abort".to_owned(),
            other => other.as_str().to_owned(),
        }
    }

    /// The stamps every chunk of this response carries.
    pub(super) fn stamps(&self) -> Stamps<'_> {
        let fingerprint = match self.fingerprint {
            Fingerprint::Absent => None,
            Fingerprint::Null => Some(None),
            Fingerprint::Empty => Some(Some("")),
            Fingerprint::Fp
            | Fingerprint::FpDeepSeek
            | Fingerprint::Hex32
            | Fingerprint::Build
            | Fingerprint::Ollama
            | Fingerprint::TgiNative => Some(Some(self.fingerprint_value.as_str())),
        };
        Stamps {
            id: &self.id,
            created: self.created,
            model: &self.model,
            fingerprint,
            fingerprint_value: &self.fingerprint_value,
        }
    }

    /// The usage object in this provider's fields.
    pub(crate) fn usage_json(&self, usage: &TokenUsage) -> Json {
        let total = usage.total();
        let (prompt, completion) = (usage.prompt_tokens, usage.completion_tokens);
        let cached = usage.cached_prompt_tokens.unwrap_or(0);
        let details = || {
            let mut out = vec![(
                "prompt_tokens_details",
                Json::from(json!({"cached_tokens": cached})),
            )];
            if let Some(reasoning) = usage.reasoning_tokens {
                out.push((
                    "completion_tokens_details",
                    json!({"reasoning_tokens": reasoning}).into(),
                ));
            }
            out
        };
        let mut fields: Vec<(&'static str, Json)> = match self.shapes.usage_details {
            UsageDetails::Vllm => vec![
                ("prompt_tokens", prompt.into()),
                ("total_tokens", total.into()),
                ("completion_tokens", completion.into()),
            ],
            UsageDetails::Plain
            | UsageDetails::Details
            | UsageDetails::DeepSeek
            | UsageDetails::OpenRouter => vec![
                ("prompt_tokens", prompt.into()),
                ("completion_tokens", completion.into()),
                ("total_tokens", total.into()),
            ],
        };
        match self.shapes.usage_details {
            UsageDetails::Plain | UsageDetails::Vllm => {}
            UsageDetails::Details => fields.extend(details()),
            UsageDetails::DeepSeek => {
                fields.extend(details());
                fields.push(("prompt_cache_hit_tokens", cached.into()));
                fields.push((
                    "prompt_cache_miss_tokens",
                    prompt.saturating_sub(cached).into(),
                ));
            }
            UsageDetails::OpenRouter => {
                // Cost in credits: a fixed price per token, so it is the same on replay.
                let cost = total as f64 * 0.000_001;
                fields.push(("cost", json!(cost).into()));
                fields.push(("is_byok", false.into()));
                fields.extend(details());
            }
        }
        let out = Json::object(fields);
        if self.layout == Layout::Azure {
            out.sorted()
        } else {
            out
        }
    }

    /// Azure's first chunk: the prompt's filter results, empty ids (AZ-LOBE).
    pub(crate) fn azure_prompt_filter_chunk(&self) -> Json {
        Json::object(vec![
            ("choices", Json::Array(Vec::new())),
            ("created", 0u32.into()),
            ("id", "".into()),
            ("model", "".into()),
            ("object", "".into()),
            (
                "prompt_filter_results",
                Json::Array(vec![Json::object(vec![
                    ("prompt_index", 0u32.into()),
                    ("content_filter_results", content_filter_results(true)),
                ])]),
            ),
        ])
    }
}

/// A chunk's `usage` key.
#[derive(Debug, Clone)]
pub(crate) enum UsageField {
    /// No key.
    Absent,
    /// `"usage": null`.
    Null,
    /// The usage.
    Value(Json),
}

/// Azure's per-choice filter results: every category safe on content, `{}` elsewhere.
pub(super) fn content_filter_results(safe: bool) -> Json {
    if !safe {
        return Json::object(Vec::new());
    }
    let category = || {
        Json::object(vec![
            ("filtered", false.into()),
            ("severity", "safe".into()),
        ])
    };
    Json::object(vec![
        ("hate", category()),
        ("self_harm", category()),
        ("sexual", category()),
        ("violence", category()),
    ])
}
