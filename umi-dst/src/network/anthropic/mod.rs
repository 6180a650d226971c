//! The server side of Anthropic's Messages API (`POST /v1/messages`): requests parsed
//! as the API does ([`request`]), whole messages and named-event SSE streams
//! ([`stream`]) and errors in its envelope ([`errors`]), in the layouts the API has sent
//! over time.
//!
//! Sources, by short name:
//!
//! | name | what |
//! | --- | --- |
//! | PYSDK-FIX | anthropics/anthropic-sdk-python `tests/lib/streaming/fixtures/*.txt` (@3882829a, @009b0353): `basic_response`, `tool_use_response`, `incomplete_partial_json_response`, `refusal_response` |
//! | FANTASY | charmbracelet/fantasy `providertests/testdata/TestAnthropic*/**.yaml`, live api.anthropic.com recordings (@caf105e7, 2026-03) |
//! | VERCEL | vercel/ai `packages/anthropic/src/__fixtures__/` (`anthropic-issue-11719-quoted-tool-input.chunks.txt` @f405eeb2, `issue-14707-claude-opus-4-7-temperature-live.json` @1a0b2f97, `anthropic-json-output-format.1.chunks.txt` @d7e3880f, `anthropic-issue-17366-error.json` @1d03f2cf) |
//! | DOC-STREAM | platform.claude.com/docs/en/build-with-claude/streaming |
//! | DOC-ERR | docs.claude.com/en/api/errors |
//! | DOC-RL | docs.claude.com/en/api/rate-limits |
//! | DOC-OVERVIEW | platform.claude.com/docs/en/api/overview ("Response headers") |
//!
//! What every layout shares: one `event:` line and one `data:` line per event, the data's
//! `type` equal to the event name, no `[DONE]` (the stream ends after `message_stop`),
//! `ping` written `{"type": "ping"}` with a space unlike every other event, an empty
//! `partial_json` first in every tool block, and an `error` event followed by the end
//! of the connection (DOC-STREAM; FANTASY, all 23 streams).

mod errors;
mod request;
mod stream;
mod surface;

use sha2::{Digest, Sha256};
use umi_core::llm::transport::HttpRequest;
use umi_core::llm::{CompletionResponse, FinishReason, LlmError, TokenUsage};

use super::format::{
    Parsed, RequestError, Responder, Route, ServerFormat, StreamEncoder, one_path,
};
use super::ids;
use super::json::{Json, Spacing};
use super::profile::Profile;
use super::shapes::{HeaderSet, RetryAfterForm};
use crate::rng::DeterministicRng;

/// Every mark the format can hit.
pub const ANTHROPIC_MARKS: [&str; 9] = [
    "wire.shape.anthropic.y2024",
    "wire.shape.anthropic.y2025",
    "wire.shape.anthropic.y2026",
    "wire.shape.anthropic.padded",
    "wire.shape.anthropic.ping_after_first_block",
    "wire.shape.anthropic.ping_after_deltas",
    "wire.shape.anthropic.error_event",
    "wire.shape.anthropic.overloaded_529",
    "wire.shape.anthropic.refusal",
];

/// Which era of the API the server is: what changed in its bytes over time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// PYSDK-FIX `basic_response.txt`, DOC-STREAM: `id` first, usage
    /// `{input_tokens, output_tokens}`, `message_delta` with `output_tokens` alone, no
    /// padding, no `request_id` in error bodies, a 429 without `retry-after` at times
    /// (anthropic-sdk-typescript #357).
    Y2024,
    /// FANTASY (2025 to 2026-03): `model` first, the cache counts and `cache_creation`,
    /// `service_tier`, `inference_geo`, `caller` on tool blocks, 0 to 15 spaces before
    /// each event's last `}`, `message_delta` repeating every count, `request_id` in
    /// error bodies, `details: null` in error events (claude-code #309).
    Y2025,
    /// VERCEL (late 2026): as 2025, plus `stop_details`, `output_tokens_details`, ids
    /// `msg_011C…`, and `request_id` in error events (karthink/gptel #1512).
    Y2026,
}

impl Layout {
    const ALL: [Layout; 3] = [Layout::Y2024, Layout::Y2025, Layout::Y2026];

    fn mark(self) -> &'static str {
        match self {
            Self::Y2024 => "wire.shape.anthropic.y2024",
            Self::Y2025 => "wire.shape.anthropic.y2025",
            Self::Y2026 => "wire.shape.anthropic.y2026",
        }
    }

    /// Whether events carry the space padding before their last `}`.
    fn pads(self) -> bool {
        self != Self::Y2024
    }

    /// A message id: `msg_01…` (PYSDK-FIX, FANTASY), `msg_011C…` (VERCEL 2026).
    fn message_id(self, rng: &mut DeterministicRng) -> String {
        match self {
            Self::Y2026 => format!("msg_011C{}", ids::alnum(rng, 20)),
            Self::Y2024 | Self::Y2025 => format!("msg_01{}", ids::alnum(rng, 22)),
        }
    }

    /// A request id: `req_01…` (anthropic-sdk-typescript #616, 2024), `req_011C…`
    /// (every 2025-2026 capture in DOC-ERR's table).
    fn request_id(self, rng: &mut DeterministicRng) -> String {
        match self {
            Self::Y2024 => format!("req_01{}", ids::alnum(rng, 22)),
            Self::Y2025 | Self::Y2026 => format!("req_011C{}", ids::alnum(rng, 20)),
        }
    }
}

/// The Messages API.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AnthropicFormat;

impl ServerFormat for AnthropicFormat {
    fn path(&self) -> &'static str {
        "/v1/messages"
    }

    fn route(&self, path: &str, _query: Option<&str>) -> Option<Route> {
        one_path(self.path(), path)
    }

    fn reads_query(&self) -> bool {
        false
    }

    fn parse(&self, http: &HttpRequest, _profile: Profile) -> Result<Parsed, RequestError> {
        request::parse(http)
    }

    fn responder(
        &self,
        _profile: Profile,
        mut server: DeterministicRng,
        mut response: DeterministicRng,
        _created_s: u64,
        model: &str,
    ) -> Box<dyn Responder> {
        let layout = Layout::ALL[server.index(Layout::ALL.len())];
        let organization_id = ids::uuid(&mut server);
        // The 2024 API sent 429s without `retry-after` at first; Anthropic has sent one
        // on every 429 since (anthropic-sdk-typescript PR #358).
        let retry_after = match layout {
            Layout::Y2024 if server.bool_with(0.5) => RetryAfterForm::Absent,
            Layout::Y2024 | Layout::Y2025 | Layout::Y2026 => RetryAfterForm::Seconds,
        };
        let request_id = layout.request_id(&mut response);
        let message_id = layout.message_id(&mut response);
        Box::new(AnthropicResponder {
            era: Era {
                layout,
                model: model.to_owned(),
                request_id,
                message_id,
            },
            organization_id,
            retry_after,
            response,
            marks: vec![layout.mark()],
        })
    }
}

/// What one response's bytes share: the server's era and the response's ids.
#[derive(Debug, Clone)]
pub(crate) struct Era {
    pub(crate) layout: Layout,
    pub(crate) model: String,
    pub(crate) request_id: String,
    pub(crate) message_id: String,
}

impl Era {
    /// The usage object of a message (whole, or `message_start` with `output_tokens`
    /// so far). Anthropic counts cache reads and writes apart from `input_tokens`.
    pub(crate) fn usage(&self, usage: TokenUsage, output_tokens: u32) -> Json {
        let cache_read = usage.cached_prompt_tokens.unwrap_or(0);
        let cache_write = usage.cache_write_tokens.unwrap_or(0);
        let input = usage
            .prompt_tokens
            .saturating_sub(cache_read)
            .saturating_sub(cache_write);
        if self.layout == Layout::Y2024 {
            return Json::object(vec![
                ("input_tokens", usage.prompt_tokens.into()),
                ("output_tokens", output_tokens.into()),
            ]);
        }
        let mut out = Json::object(vec![
            ("input_tokens", input.into()),
            ("cache_creation_input_tokens", cache_write.into()),
            ("cache_read_input_tokens", cache_read.into()),
            (
                "cache_creation",
                Json::object(vec![
                    ("ephemeral_5m_input_tokens", cache_write.into()),
                    ("ephemeral_1h_input_tokens", 0u32.into()),
                ]),
            ),
            ("output_tokens", output_tokens.into()),
        ]);
        if self.layout == Layout::Y2026 {
            let thinking = usage.reasoning_tokens.unwrap_or(0);
            out.push(
                "output_tokens_details",
                Json::object(vec![("thinking_tokens", thinking.into())]),
            );
        }
        out.push("service_tier", "standard");
        out.push(
            "inference_geo",
            if self.layout == Layout::Y2026 {
                "global"
            } else {
                "not_available"
            },
        );
        out
    }

    /// The fields of a message before its content (`message_start`'s and a whole
    /// answer's): `id` first in 2024, `model` first since.
    pub(crate) fn message_head(&self) -> Json {
        let mut head = Json::object(Vec::new());
        if self.layout != Layout::Y2024 {
            head.push("model", self.model.clone());
        }
        head.push("id", self.message_id.clone());
        head.push("type", "message");
        head.push("role", "assistant");
        head
    }

    /// The stop fields of a message: `stop_reason`, `stop_sequence`, and since 2026
    /// `stop_details` (a refusal's category, PYSDK-FIX `refusal_response.txt`).
    pub(crate) fn push_stop(&self, into: &mut Json, finish: Option<&FinishReason>) {
        into.push("stop_reason", finish.map(stop_reason));
        into.push("stop_sequence", Json::null());
        if self.layout == Layout::Y2026 {
            let details = match finish {
                Some(FinishReason::ContentFilter) => Json::object(vec![
                    ("type", "refusal".into()),
                    ("category", "cyber".into()),
                    (
                        "explanation",
                        "This request was refused due to policy.".into(),
                    ),
                ]),
                _ => Json::null(),
            };
            into.push("stop_details", details);
        }
    }

    /// A `tool_use` block as it starts (`input` empty in a stream) or whole.
    pub(crate) fn tool_block(&self, id: &str, name: &str, input: Json) -> Json {
        let mut block = Json::object(vec![
            ("type", "tool_use".into()),
            ("id", tool_use_id(id).into()),
            ("name", name.into()),
            ("input", input),
        ]);
        // FANTASY 2026 captures carry the caller; PYSDK-FIX (claude-3-7) does not.
        if self.layout != Layout::Y2024 {
            block.push("caller", Json::object(vec![("type", "direct".into())]));
        }
        block
    }
}

/// A finish as a stop reason (the SDK's `stop_reason.py`). `stop_sequence` is never
/// sent: the simulated model does not say which sequence stopped it.
pub(crate) fn stop_reason(finish: &FinishReason) -> String {
    match finish {
        FinishReason::Length => "max_tokens".into(),
        FinishReason::ToolCalls => "tool_use".into(),
        FinishReason::ContentFilter => "refusal".into(),
        FinishReason::Other(raw) => raw.clone(),
        _ => "end_turn".into(),
    }
}

/// The API's id for a tool call the model named `id`: `toolu_01` and 22 letters and
/// digits (FANTASY), derived from the model's id so a stream and a whole answer agree.
pub(crate) fn tool_use_id(id: &str) -> String {
    const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let digest = Sha256::digest(id.as_bytes());
    let tail: String = digest
        .iter()
        .take(22)
        .map(|byte| char::from(ALNUM[usize::from(*byte) % ALNUM.len()]))
        .collect();
    format!("toolu_01{tail}")
}

/// A thinking block's signature: base64, `E` first (FANTASY `thinking.yaml`).
pub(crate) fn signature(rng: &mut DeterministicRng) -> String {
    const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    format!("Eu{}==", ids::chars(rng, BASE64, 190))
}

/// `json`'s bytes with `pad` spaces before its last `}` (FANTASY: every length from 0 to
/// 15 occurs, about evenly).
#[cfg(test)]
pub(crate) fn padded(json: &Json, pad: usize) -> Vec<u8> {
    let mut bytes = Vec::new();
    write_padded(json, pad, &mut bytes);
    bytes
}

/// Appends [`padded`]'s bytes to `out`, written in place.
pub(crate) fn write_padded(json: &Json, pad: usize, out: &mut Vec<u8>) {
    let start = out.len();
    json.write_to(out, Spacing::Compact);
    if pad > 0 {
        let last = out.len().saturating_sub(1).max(start);
        out.splice(last..last, std::iter::repeat_n(b' ', pad));
    }
}

struct AnthropicResponder {
    era: Era,
    organization_id: String,
    retry_after: RetryAfterForm,
    response: DeterministicRng,
    marks: Vec<&'static str>,
}

impl Responder for AnthropicResponder {
    fn refusal(&mut self, error: &LlmError, _param: Option<&str>) -> (u16, Vec<u8>) {
        let refusal = errors::refusal(&self.era, error, &self.organization_id);
        if refusal.status == 529 {
            self.marks.push("wire.shape.anthropic.overloaded_529");
        }
        (refusal.status, refusal.body.to_bytes(Spacing::Compact))
    }

    fn whole(&mut self, response: &CompletionResponse) -> Vec<u8> {
        let mut content = Vec::new();
        // Claude's reasoning is shown only to a request that enables thinking, which
        // this path cannot see; whole answers carry text and tool calls.
        if !response.text.is_empty() {
            content.push(Json::object(vec![
                ("type", "text".into()),
                ("text", response.text.clone().into()),
            ]));
        }
        for call in &response.tool_calls {
            content.push(
                self.era
                    .tool_block(&call.id, &call.name, call.arguments.clone().into()),
            );
        }
        if response.finish_reason == FinishReason::ContentFilter {
            self.marks.push("wire.shape.anthropic.refusal");
        }
        let usage = response.usage.unwrap_or_default();
        let mut body = self.era.message_head();
        body.push("content", Json::Array(content));
        self.era.push_stop(&mut body, Some(&response.finish_reason));
        body.push("usage", self.era.usage(usage, usage.completion_tokens));
        body.to_bytes(Spacing::Compact)
    }

    fn into_stream(self: Box<Self>, parsed: &Parsed) -> Box<dyn StreamEncoder> {
        let this = *self;
        Box::new(stream::AnthropicStream::new(
            this.era,
            this.organization_id,
            this.response,
            parsed,
            this.marks,
        ))
    }

    fn content_type(&self, stream: bool) -> &'static str {
        // FANTASY: every streaming cassette; DOC-ERR: errors are JSON.
        if stream {
            "text/event-stream; charset=utf-8"
        } else {
            "application/json"
        }
    }

    fn retry_after(&self) -> Option<RetryAfterForm> {
        Some(self.retry_after)
    }

    fn header_set(&self) -> HeaderSet {
        HeaderSet::Bare
    }

    fn own_headers(&mut self, status: u16, server_now_ms: u64) -> Vec<(String, String)> {
        errors::headers(
            &self.era,
            &self.organization_id,
            status,
            server_now_ms,
            &mut self.response,
        )
    }

    fn marks(&mut self) -> Vec<&'static str> {
        std::mem::take(&mut self.marks)
    }

    /// The request changes nothing in its answer's shapes.
    fn parsed(&mut self, _parsed: &Parsed) {}

    /// A refused request gets its HTTP error, streamed or not (the Messages API's errors reference).
    fn refuses_in_stream(&self) -> bool {
        false
    }

    /// Its 429 says nothing of the wait in its body.
    fn wait_in_body(&self) -> bool {
        false
    }

    /// It owns one path, which says nothing.
    fn routed(&mut self, _route: &Route) {}

    /// Its one operation always asks the model.
    fn own_answer(&mut self, _parsed: &Parsed) -> Option<Vec<u8>> {
        None
    }
}

#[cfg(test)]
mod tests;
