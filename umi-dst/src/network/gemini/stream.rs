//! A `streamGenerateContent` body: one `GenerateContentResponse` per chunk of the
//! model's answer, the last with the finish and the final usage.
//!
//! Framing (GEMINI-REST): with `?alt=sse`, each chunk is `data: <one line>\r\n\r\n`
//! (the CRLF pair Google's SDK readers expect, GEMINI-JSGENAI; one-line spacing
//! GEMINI-CAPTURES); without it, the body is one JSON array written as the model goes:
//! `[` then each chunk indented by two spaces, `\n,\r\n` between chunks, `\n]` at the
//! end (the array a stream request's error is wrapped in, continuedev/continue #8516).
//!
//! Each text delta is a chunk of its own; the last one waits for the finish and goes
//! out with it (GEMINI-CAPTURES: the last event carries text and `STOP`), or an empty
//! text part does when the last thing written was not text. A function call is held
//! until its arguments are whole and goes out as one `functionCall` part, parallel calls
//! as parts of one chunk (GEMINI-VERCEL `google-tool-call.json`); arguments that are
//! not a JSON object end the answer as `MALFORMED_FUNCTION_CALL` with no content
//! (GEMINI-REST `FinishReason`). Thoughts are `thought: true` text parts, sent only to a
//! request with `thinkingConfig.includeThoughts`.

use crate::rng::DeterministicRng;
use umi_core::llm::tokens::estimate_text_tokens;
use umi_core::llm::{FinishReason, LlmError, StreamEvent, TokenUsage};

use super::{Era, Layout, call_part, finish_name};
use crate::network::format::{Flow, Parsed, StreamEncoder};
use crate::network::json::{Json, Spacing};
use crate::network::shapes::KeepAlive;

/// A call whose arguments are still arriving.
struct OpenCall {
    index: u32,
    name: String,
    arguments: String,
}

pub(crate) struct GeminiStream {
    era: Era,
    reasoning_requested: bool,
    prompt_tokens_estimate: u32,
    /// Output tokens so far, estimated, for the running usage of chunks before the last.
    output_tokens_estimate: u32,
    thought_tokens_estimate: u32,
    /// The parts of the chunk not written yet, and whether they are calls.
    pending: Vec<Json>,
    pending_calls: bool,
    open_call: Option<OpenCall>,
    any_calls: bool,
    malformed: bool,
    usage: Option<TokenUsage>,
    chunks_written: usize,
    marks: Vec<&'static str>,
}

impl GeminiStream {
    pub(crate) fn new(era: Era, parsed: &Parsed, marks: Vec<&'static str>) -> Self {
        Self {
            era,
            reasoning_requested: parsed.reasoning_requested,
            prompt_tokens_estimate: crate::llm::memo::request_tokens(&parsed.request),
            output_tokens_estimate: 0,
            thought_tokens_estimate: 0,
            pending: Vec::new(),
            pending_calls: false,
            open_call: None,
            any_calls: false,
            malformed: false,
            usage: None,
            chunks_written: 0,
            marks,
        }
    }

    /// Writes one chunk in the stream's framing.
    fn write(&mut self, chunk: &Json, out: &mut Vec<u8>) {
        if self.era.route.sse {
            out.extend_from_slice(b"data: ");
            chunk.write_to(out, Spacing::ColonSpace);
            out.extend_from_slice(b"\r\n\r\n");
        } else {
            out.extend_from_slice(if self.chunks_written == 0 {
                b"["
            } else {
                b"\n,\r\n"
            });
            chunk.write_to(out, Spacing::Indented2);
        }
        self.chunks_written += 1;
    }

    /// The usage of a chunk before the last: the prompt and the output so far.
    fn running_usage(&self) -> TokenUsage {
        let mut usage = TokenUsage::new(
            self.prompt_tokens_estimate,
            self.output_tokens_estimate + self.thought_tokens_estimate,
        );
        if self.thought_tokens_estimate > 0 {
            usage.reasoning_tokens = Some(self.thought_tokens_estimate);
        }
        usage
    }

    /// Writes the pending parts as a chunk without a finish.
    fn flush(&mut self, out: &mut Vec<u8>) {
        if self.pending.is_empty() {
            return;
        }
        let parts = std::mem::take(&mut self.pending);
        let candidate = self.era.candidate(parts, None, false);
        let chunk = self.era.response(Some(candidate), self.running_usage());
        self.write(&chunk, out);
        self.pending_calls = false;
    }

    /// Adds a text (or thought) part as the next chunk.
    fn text(&mut self, text: &str, thought: bool, out: &mut Vec<u8>) {
        self.close_call(out);
        self.flush(out);
        let mut part = Json::object(vec![("text", text.into())]);
        let tokens = estimate_text_tokens(text);
        if thought {
            part.push("thought", true);
            self.thought_tokens_estimate += tokens;
        } else {
            self.output_tokens_estimate += tokens;
        }
        self.pending.push(part);
    }

    /// Closes the call whose arguments were arriving: a whole `functionCall` part.
    fn close_call(&mut self, out: &mut Vec<u8>) {
        let Some(call) = self.open_call.take() else {
            return;
        };
        let arguments = if call.arguments.trim().is_empty() {
            Ok(serde_json::json!({}))
        } else {
            serde_json::from_str::<serde_json::Value>(&call.arguments)
        };
        let part = arguments.ok().and_then(|a| call_part(&call.name, &a));
        let Some(part) = part else {
            self.malformed = true;
            return;
        };
        if !self.pending_calls {
            self.flush(out);
        }
        self.output_tokens_estimate += estimate_text_tokens(&call.arguments);
        self.pending.push(part);
        self.pending_calls = true;
        self.any_calls = true;
    }

    fn call_delta(
        &mut self,
        index: u32,
        name: Option<&str>,
        fragment: Option<&str>,
        out: &mut Vec<u8>,
    ) {
        if self
            .open_call
            .as_ref()
            .is_some_and(|open| open.index != index)
        {
            self.close_call(out);
        }
        let open = self.open_call.get_or_insert_with(|| OpenCall {
            index,
            name: String::new(),
            arguments: String::new(),
        });
        if let Some(name) = name
            && open.name.is_empty()
        {
            open.name = name.to_owned();
        }
        open.arguments.push_str(fragment.unwrap_or_default());
    }

    /// The last chunk: what is pending, the finish, the final usage; then the array's end.
    fn finish(&mut self, finish: &FinishReason, usage: Option<TokenUsage>, out: &mut Vec<u8>) {
        self.close_call(out);
        let usage = usage.or(self.usage).unwrap_or_else(|| self.running_usage());
        let mut parts = std::mem::take(&mut self.pending);
        let filtered = *finish == FinishReason::ContentFilter;
        let finish_text = if self.malformed {
            parts.clear();
            "MALFORMED_FUNCTION_CALL".to_owned()
        } else {
            finish_name(finish)
        };
        if filtered {
            self.marks.push("wire.shape.gemini.safety");
        }
        if self.any_calls && !self.malformed {
            self.marks.push("wire.shape.gemini.function_call");
        }
        let chunk = if filtered && parts.is_empty() && self.chunks_written == 0 {
            // Nothing was written: the prompt itself was blocked.
            self.era.response(None, usage)
        } else {
            if parts.is_empty() && !self.malformed && !filtered {
                // GEMINI-VERCEL: an empty text part carries the finish.
                parts.push(Json::object(vec![("text", "".into())]));
            }
            let calls = self.any_calls && !self.malformed && self.era.layout == Layout::Y2025;
            let candidate = self.era.candidate(parts, Some(&finish_text), calls);
            self.era.response(Some(candidate), usage)
        };
        self.write(&chunk, out);
        if !self.era.route.sse {
            out.extend_from_slice(b"\n]");
        }
    }
}

impl StreamEncoder for GeminiStream {
    fn event(&mut self, event: &StreamEvent, out: &mut Vec<u8>) -> Flow {
        match event {
            StreamEvent::TextDelta { text } if !text.is_empty() => self.text(text, false, out),
            StreamEvent::ReasoningDelta { text }
                if self.reasoning_requested && !text.is_empty() =>
            {
                self.text(text, true, out);
            }
            StreamEvent::TextDelta { .. } | StreamEvent::ReasoningDelta { .. } => {}
            StreamEvent::ToolCallDelta {
                index,
                name,
                arguments_fragment,
                ..
            } => self.call_delta(*index, name.as_deref(), arguments_fragment.as_deref(), out),
            StreamEvent::Usage { usage } => self.usage = Some(*usage),
            StreamEvent::Done {
                finish_reason,
                usage,
            } => {
                self.finish(finish_reason, *usage, out);
                return Flow::End;
            }
        }
        Flow::Continue
    }

    fn error(&mut self, _error: &LlmError, _out: &mut Vec<u8>) -> Flow {
        // No capture shows an error inside a 200 Gemini stream (ADR 0009): the
        // connection breaks.
        Flow::Reset
    }

    fn keep_alive(&self) -> Option<KeepAlive> {
        None
    }

    fn marks(&mut self) -> Vec<&'static str> {
        std::mem::take(&mut self.marks)
    }

    fn line_end(&self) -> &'static str {
        "\r\n"
    }

    fn unparseable(&self, frame: &[u8], rng: &mut DeterministicRng) -> Option<Vec<u8>> {
        crate::network::unparseable::cut_frame(frame, rng)
    }

    /// Its first event answers the model's first event (GEMINI-REST).
    fn preamble(&mut self, _out: &mut Vec<u8>) {}
}
