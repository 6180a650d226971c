//! The plan of one call: what SimLLM will answer, when, and how it is cut.
//!
//! A [`CallPlan`] is built once per call. `complete` reads the shaped answer directly and
//! sleeps once, for the time the stream's last event would arrive; `stream` chunks the
//! same answer into events spaced over the same time. On the paths where collecting
//! events is what defines the outcome (a stream cut, malformed tool arguments),
//! `complete` builds the events too and runs the real [`StreamCollector`] over them, so
//! `complete` always equals collecting `stream`.

use std::time::Duration;

use umi_core::llm::stop::apply_stop;
use umi_core::llm::tokens::estimate_text_tokens;
use umi_core::llm::{
    CompletionResponse, FinishReason, LlmError, ModelRef, StreamCollector, StreamEvent, TokenUsage,
    ToolCall,
};

use super::config::LatencyModel;
use super::route::Generated;
use crate::rng::DeterministicRng;

/// One planned item and the simulated time before it.
#[derive(Debug, Clone)]
pub(crate) struct Planned {
    pub(crate) delay: Duration,
    pub(crate) item: Result<StreamEvent, LlmError>,
}

/// Simulated latency of one answer: time to first token and per token, in ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timing {
    pub(crate) first_token_ms: u64,
    pub(crate) token_ms: u64,
}

impl Timing {
    /// Draws the timing of one call (zero without a latency model).
    pub(crate) fn draw(latency: Option<LatencyModel>, rng: &mut DeterministicRng) -> Self {
        match latency {
            None => Self {
                first_token_ms: 0,
                token_ms: 0,
            },
            Some(model) => Self {
                first_token_ms: rng
                    .range_inclusive(model.first_token_ms_min, model.first_token_ms_max),
                token_ms: rng.range_inclusive(model.token_ms_min, model.token_ms_max),
            },
        }
    }

    /// When the whole answer has arrived.
    pub(crate) fn total(self, completion_tokens: u32) -> Duration {
        let first = if self.token_ms == 0 && self.first_token_ms == 0 {
            0
        } else {
            self.first_token_ms
        };
        Duration::from_millis(first + u64::from(completion_tokens.max(1)) * self.token_ms)
    }
}

/// Everything one call will send.
#[derive(Debug, Clone)]
pub(crate) struct CallPlan {
    pub(crate) model: String,
    pub(crate) shaped: Shaped,
    pub(crate) timing: Timing,
    pub(crate) cut: Option<Cut>,
    pub(crate) chunk_rng: DeterministicRng,
    pub(crate) chunk_chars_max: usize,
}

impl CallPlan {
    /// When the last event arrives (before any cut).
    pub(crate) fn total_delay(&self) -> Duration {
        self.timing.total(self.shaped.usage.completion_tokens)
    }

    /// The streamed items, with their delays.
    pub(crate) fn items(&self) -> Vec<Planned> {
        let events = events(
            &self.shaped,
            self.chunk_chars_max,
            &mut self.chunk_rng.clone(),
        );
        let delays = delays(&events, self.timing, self.total_delay());
        let mut items: Vec<Planned> = events
            .into_iter()
            .zip(delays)
            .map(|(event, delay)| Planned {
                delay,
                item: Ok(event),
            })
            .collect();
        match self.cut {
            Some(Cut::Error(k)) => {
                items.truncate(k);
                items.push(Planned {
                    delay: Duration::ZERO,
                    item: Err(LlmError::Connection {
                        reason: format!(
                            "connection reset after {k} event(s) (simulated stream_cut)"
                        ),
                    }),
                });
            }
            Some(Cut::ServerError(k)) => {
                items.truncate(k);
                items.push(Planned {
                    delay: Duration::ZERO,
                    item: Err(LlmError::ServiceUnavailable {
                        status: None,
                        message: format!(
                            "the model failed after {k} event(s) (simulated stream_cut)"
                        ),
                    }),
                });
            }
            Some(Cut::Silent(k)) => items.truncate(k),
            Some(Cut::Unparseable(k)) => unparseable(&mut items, k),
            None => {}
        }
        items
    }

    /// What collecting the stream gives, and the simulated time it takes.
    pub(crate) fn response(self) -> (Result<CompletionResponse, LlmError>, Duration) {
        if self.cut.is_none() && self.shaped.raw_arguments.is_none() {
            let elapsed = self.total_delay();
            let shaped = self.shaped;
            let response = CompletionResponse {
                text: shaped.text,
                tool_calls: shaped.tool_calls,
                reasoning: shaped.reasoning,
                finish_reason: shaped.finish_reason,
                usage: Some(shaped.usage),
                model: self.model,
            };
            return (Ok(response), elapsed);
        }
        let items = self.items();
        let mut collector = StreamCollector::new(self.model.clone());
        let mut elapsed = Duration::ZERO;
        for planned in items {
            elapsed += planned.delay;
            let pushed = planned.item.and_then(|event| collector.push(event));
            if let Err(error) = pushed {
                return (Err(error), elapsed);
            }
        }
        (collector.finish(), elapsed)
    }

    /// The number of events the stream would carry.
    pub(crate) fn event_count(&self) -> usize {
        self.items().len()
    }
}

/// `items` with event `k` replaced by a part the client cannot parse, and none after it.
fn unparseable(items: &mut Vec<Planned>, k: usize) {
    let snippet = match items.get(k).map(|planned| &planned.item) {
        Some(Ok(StreamEvent::TextDelta { text })) if !text.is_empty() => text.clone(),
        _ => UNPARSEABLE_SNIPPET.to_owned(),
    };
    let delay = items.get(k).map_or(Duration::ZERO, |planned| planned.delay);
    items.truncate(k);
    items.push(Planned {
        delay,
        item: Err(LlmError::InvalidResponse {
            reason: format!(
                "the response could not be parsed: it breaks off mid-JSON after {k} event(s) (simulated invalid_response)"
            ),
            snippet,
        }),
    });
}

/// The answer after natural limits: what the model really says.
#[derive(Debug, Clone)]
pub(crate) struct Shaped {
    pub(crate) text: String,
    /// Reasoning text before the answer (models that think aloud).
    pub(crate) reasoning: Option<String>,
    pub(crate) tool_calls: Vec<ToolCall>,
    /// Raw argument text overriding a call's serialized arguments (malformed-JSON faults).
    pub(crate) raw_arguments: Option<(usize, String)>,
    pub(crate) finish_reason: FinishReason,
    pub(crate) usage: TokenUsage,
}

/// The longest prefix of `text` within `budget` tokens (prefix estimates only grow).
fn cut_to_tokens(text: &str, budget: u32) -> &str {
    if estimate_text_tokens(text) <= budget {
        return text;
    }
    let boundaries: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect();
    let (mut low, mut high) = (0usize, boundaries.len() - 1);
    while low < high {
        let mid = (low + high).div_ceil(2);
        if estimate_text_tokens(&text[..boundaries[mid]]) <= budget {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    &text[..boundaries[low]]
}

fn call_tokens(call: &ToolCall) -> u32 {
    estimate_text_tokens(&call.name).saturating_add(estimate_text_tokens(
        &umi_core::canonical_json::to_string(&call.arguments),
    ))
}

/// Applies stop sequences and the token budget to `generated`.
pub(crate) fn shape(
    generated: Generated,
    stop: &[String],
    max_tokens: Option<u32>,
    model: &ModelRef,
    prompt_tokens: u32,
) -> Shaped {
    let room = model.context_window_tokens.saturating_sub(prompt_tokens);
    let budget = max_tokens
        .unwrap_or(model.max_output_tokens)
        .min(model.max_output_tokens)
        .min(room);
    let (stopped_text, stopped) = apply_stop(&generated.text, stop);
    let stopped_bytes = stopped_text.len();
    // The generated text itself, cut where a stop sequence begins (not a copy of it).
    let mut text = generated.text;
    text.truncate(stopped_bytes);
    let mut tool_calls = if stopped {
        Vec::new()
    } else {
        generated.tool_calls
    };
    let mut finish_reason = FinishReason::Stop;
    let mut text_tokens = estimate_text_tokens(&text);
    let mut calls_tokens: u32 = tool_calls
        .iter()
        .map(call_tokens)
        .fold(0, u32::saturating_add);
    if text_tokens > budget {
        text = cut_to_tokens(&text, budget).to_owned();
        text_tokens = estimate_text_tokens(&text);
        tool_calls.clear();
        calls_tokens = 0;
        finish_reason = FinishReason::Length;
    } else if !tool_calls.is_empty() {
        if text_tokens.saturating_add(calls_tokens) > budget {
            tool_calls.clear();
            calls_tokens = 0;
            finish_reason = FinishReason::Length;
        } else {
            finish_reason = FinishReason::ToolCalls;
        }
    }
    let reasoning = generated.reasoning.filter(|r| !r.is_empty());
    let reasoning_tokens = reasoning.as_deref().map(estimate_text_tokens);
    let completion = text_tokens
        .saturating_add(calls_tokens)
        .saturating_add(reasoning_tokens.unwrap_or(0));
    let mut usage = TokenUsage::new(prompt_tokens, completion);
    usage.reasoning_tokens = reasoning_tokens;
    Shaped {
        text,
        reasoning,
        tool_calls,
        raw_arguments: None,
        finish_reason,
        usage,
    }
}

/// Stops `shaped` the way a content filter does: the text cut at a seeded character,
/// no tool calls, finish reason `content_filter`.
pub(crate) fn filter(shaped: &mut Shaped, rng: &mut DeterministicRng) {
    let boundaries: Vec<usize> = shaped.text.char_indices().map(|(i, _)| i).collect();
    let keep = if boundaries.is_empty() {
        0
    } else {
        boundaries[rng.index(boundaries.len())]
    };
    shaped.text.truncate(keep);
    shaped.tool_calls.clear();
    shaped.raw_arguments = None;
    shaped.finish_reason = FinishReason::ContentFilter;
    let reasoning = shaped.usage.reasoning_tokens.unwrap_or(0);
    shaped.usage.completion_tokens = estimate_text_tokens(&shaped.text).saturating_add(reasoning);
}

/// The corruption name of `llm.invalid_response` (trace `llm.corrupt`, and the cut of
/// `llm.answer`).
pub(crate) const UNPARSEABLE: &str = "unparseable";

/// The snippet of an unparseable part when the event it replaces carries no text: what
/// a server would have written there is cut anyway.
const UNPARSEABLE_SNIPPET: &str = "ok";

/// The ways an `llm.wrong_content` fault makes an answer plausible but wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Corruption {
    /// Content JSON that does not parse (cut in half; for tool calls, cut arguments).
    Malformed,
    /// Valid JSON of the wrong shape (for tool calls, a tool that was not offered).
    WrongShape,
    /// Nothing at all.
    Empty,
}

impl Corruption {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Malformed => "malformed",
            Self::WrongShape => "wrong_shape",
            Self::Empty => "empty",
        }
    }
}

/// Breaks `shaped` the way `rng` picks; returns how.
pub(crate) fn corrupt(
    shaped: &mut Shaped,
    structured: bool,
    rng: &mut DeterministicRng,
) -> Corruption {
    let corruption = match rng.below(3) {
        0 => Corruption::Malformed,
        1 => Corruption::WrongShape,
        _ => Corruption::Empty,
    };
    match corruption {
        Corruption::Malformed if !shaped.tool_calls.is_empty() => {
            let index = rng.index(shaped.tool_calls.len());
            let full = umi_core::canonical_json::to_string(&shaped.tool_calls[index].arguments);
            // Any proper prefix of an object's text is invalid JSON.
            let keep = full
                .len()
                .saturating_sub(1 + rng.below(full.len().max(2) as u64 / 2) as usize);
            let keep = (0..=keep)
                .rev()
                .find(|&i| full.is_char_boundary(i))
                .unwrap_or(0);
            shaped.raw_arguments = Some((index, full[..keep].to_owned()));
        }
        Corruption::Malformed => {
            shaped.text = if structured && shaped.text.len() > 1 {
                let half = shaped.text.len() / 2;
                let cut = (1..=half)
                    .rev()
                    .find(|&i| shaped.text.is_char_boundary(i))
                    .unwrap_or(1);
                shaped.text[..cut].to_owned()
            } else {
                "{\"answer\": \"".to_owned()
            };
        }
        Corruption::WrongShape if !shaped.tool_calls.is_empty() => {
            shaped.tool_calls[0].name = "tool_that_was_not_offered".to_owned();
        }
        Corruption::WrongShape => {
            shaped.text = if shaped.text.trim_start().starts_with('[') {
                "{\"result\": \"ok\"}".to_owned()
            } else {
                "[\"unexpected\"]".to_owned()
            };
        }
        Corruption::Empty => {
            shaped.text.clear();
            shaped.tool_calls.clear();
            shaped.finish_reason = FinishReason::Stop;
        }
    }
    corruption
}

/// `text` split at seeded char boundaries into pieces of 1 to `chars_max` characters.
fn chunks(text: &str, chars_max: usize, rng: &mut DeterministicRng) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let take = rng.range_inclusive(1, chars_max as u64) as usize;
        let end = rest.char_indices().nth(take).map_or(rest.len(), |(i, _)| i);
        pieces.push(rest[..end].to_owned());
        rest = &rest[end..];
    }
    pieces
}

/// JSON text with non-ASCII written as `\u` escapes (surrogate pairs for the astral
/// plane), as some providers stream arguments.
fn ascii_escaped(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// The events of `shaped`, in the shapes real providers send: reasoning first, then
/// text, in chunks; tool calls one after another, in index order (no provider in the
/// profiles opens a call before the previous one is complete: openai-python's own
/// accumulator fails on that); each call's id and name in its first delta only;
/// arguments raw or `\u`-escaped, split anywhere (inside escapes too); usage as its own
/// event before `Done` or inside it.
pub(crate) fn events(
    shaped: &Shaped,
    chars_max: usize,
    rng: &mut DeterministicRng,
) -> Vec<StreamEvent> {
    let mut events: Vec<StreamEvent> = Vec::new();
    if let Some(reasoning) = &shaped.reasoning {
        // The reasoning's own stream, so thinking aloud does not move the answer's chunks.
        let mut reasoning_rng = rng.substream(crate::rng::streams::llm_call::REASONING_CHUNKS);
        events.extend(
            chunks(reasoning, chars_max, &mut reasoning_rng)
                .into_iter()
                .map(|text| StreamEvent::ReasoningDelta { text }),
        );
    }
    events.extend(
        chunks(&shaped.text, chars_max, rng)
            .into_iter()
            .map(StreamEvent::text),
    );
    let mut queues: Vec<Vec<StreamEvent>> = Vec::new();
    for (index, call) in shaped.tool_calls.iter().enumerate() {
        let arguments = match &shaped.raw_arguments {
            Some((raw_index, raw)) if *raw_index == index => raw.clone(),
            _ if rng.bool_with(0.3) => {
                ascii_escaped(&umi_core::canonical_json::to_string(&call.arguments))
            }
            _ => umi_core::canonical_json::to_string(&call.arguments),
        };
        let mut pieces = chunks(&arguments, chars_max * 2, rng).into_iter();
        let first = if rng.bool_with(0.5) {
            pieces.next()
        } else {
            None
        };
        let mut deltas = vec![StreamEvent::ToolCallDelta {
            index: index as u32,
            id: Some(call.id.clone()),
            name: Some(call.name.clone()),
            arguments_fragment: first,
        }];
        deltas.extend(pieces.map(|piece| StreamEvent::ToolCallDelta {
            index: index as u32,
            id: None,
            name: None,
            arguments_fragment: Some(piece),
        }));
        queues.push(deltas);
    }
    events.extend(queues.into_iter().flatten());
    if rng.bool_with(0.5) {
        events.push(StreamEvent::Usage {
            usage: shaped.usage,
        });
        events.push(StreamEvent::done(shaped.finish_reason.clone(), None));
    } else {
        events.push(StreamEvent::done(
            shaped.finish_reason.clone(),
            Some(shaped.usage),
        ));
    }
    events
}

/// Simulated time before each event: the first waits for the first token; content
/// events are spaced by their share of the answer's bytes, so the last one arrives at
/// `total` (what `complete` sleeps); usage and `Done` follow at once.
fn delays(events: &[StreamEvent], timing: Timing, total: Duration) -> Vec<Duration> {
    let weight = |event: &StreamEvent| -> u64 {
        match event {
            StreamEvent::TextDelta { text } | StreamEvent::ReasoningDelta { text } => {
                text.len() as u64
            }
            StreamEvent::ToolCallDelta {
                arguments_fragment,
                name,
                ..
            } => (arguments_fragment.as_deref().map_or(0, str::len)
                + name.as_deref().map_or(0, str::len))
            .max(1) as u64,
            StreamEvent::Usage { .. } | StreamEvent::Done { .. } => 0,
        }
    };
    let total_ms = u64::try_from(total.as_millis()).unwrap_or(u64::MAX);
    let mut out = vec![Duration::ZERO; events.len()];
    let weight_total: u64 = events.iter().map(weight).sum();
    if weight_total == 0 {
        // Nothing but Done (an empty answer): it arrives when the answer would have.
        if let Some(first) = out.first_mut() {
            *first = total;
        }
        return out;
    }
    let first_ms = timing.first_token_ms.min(total_ms);
    let spread_ms = total_ms - first_ms;
    let mut done_weight = 0u64;
    let mut previous_ms = 0u64;
    for (slot, event) in out.iter_mut().zip(events) {
        done_weight += weight(event);
        let at_ms = (first_ms + spread_ms * done_weight / weight_total).max(previous_ms);
        *slot = Duration::from_millis(at_ms - previous_ms);
        previous_ms = at_ms;
    }
    debug_assert_eq!(
        previous_ms, total_ms,
        "the last content event arrives with the whole answer"
    );
    out
}

/// How a `llm.stream_cut` (or `llm.invalid_response`) fault ends a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cut {
    /// A broken connection after `k` events.
    Error(usize),
    /// A server error after `k` events (sent inside the 200 stream).
    ServerError(usize),
    /// The stream just ends after `k` events, without `Done`.
    Silent(usize),
    /// `llm.invalid_response`: event `k` is a part the client cannot parse (an
    /// [`LlmError::InvalidResponse`] in process, bytes cut mid-JSON on the wire), and
    /// the stream ends there.
    Unparseable(usize),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_cuts_are_maximal_prefixes() {
        let text = "alpha beta gamma delta epsilon";
        for budget in 0..12 {
            let cut = cut_to_tokens(text, budget);
            assert!(estimate_text_tokens(cut) <= budget);
            if cut.len() < text.len() {
                let next = text[cut.len()..].chars().next().unwrap();
                let longer = &text[..cut.len() + next.len_utf8()];
                assert!(
                    estimate_text_tokens(longer) > budget,
                    "budget {budget}: {cut:?} is not maximal"
                );
            }
        }
    }

    #[test]
    fn chunks_never_split_a_character() {
        let mut rng = DeterministicRng::new(3);
        let text = "héllo 東京 😀 wörld";
        for _ in 0..100 {
            let pieces = chunks(text, 4, &mut rng);
            assert_eq!(pieces.concat(), text);
            assert!(
                pieces
                    .iter()
                    .all(|p| !p.is_empty() && p.chars().count() <= 4)
            );
        }
    }
}
