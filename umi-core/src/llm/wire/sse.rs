//! Server-sent events as the WHATWG spec defines them: `data:` lines (several join with
//! `\n`; one leading space after the colon is dropped, none is needed), `event:` names,
//! comments (`: keep-alive`, `: OPENROUTER PROCESSING`) ignored, an empty line
//! dispatching the event, and an event with no `data` never dispatched.
//!
//! One extension: llama.cpp's server reports an error inside a stream as a field named
//! `error` (`error: {"code":500,...}`), which a spec-only client would drop. The decoder
//! keeps it, and an event that carries one is dispatched even without `data`.

use super::lines::LineDecoder;
use crate::constants::WIRE_EVENT_BYTES_MAX;
use crate::llm::error::LlmError;

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` name, if one was given.
    pub event: Option<String>,
    /// The `data:` lines, joined by `\n`.
    pub data: String,
    /// The value of an `error:` field (llama.cpp's in-stream errors), if one was given.
    pub error: Option<String>,
}

/// Turns bytes into events, across chunk boundaries.
#[derive(Debug, Default)]
pub struct SseDecoder {
    lines: LineDecoder,
    data: Vec<String>,
    /// Bytes held in `data`: an event that never ends is refused at the limit.
    data_bytes: usize,
    event: Option<String>,
    error: Option<String>,
}

impl SseDecoder {
    /// An empty decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds `chunk`, pushing the events it completed onto `events`. On an error the
    /// events completed before it in the same chunk are still pushed.
    pub fn feed(&mut self, chunk: &[u8], events: &mut Vec<SseEvent>) -> Result<(), LlmError> {
        let mut lines = Vec::new();
        let fed = self.lines.feed(chunk, &mut lines);
        for line in lines {
            if let Some(event) = self.line(&line)? {
                events.push(event);
            }
        }
        fed
    }

    /// The event still pending when the body ended without its blank line, if any.
    pub fn finish(&mut self) -> Result<Option<SseEvent>, LlmError> {
        if let Some(line) = self.lines.finish()?
            && let Some(event) = self.line(&line)?
        {
            return Ok(Some(event));
        }
        Ok(self.dispatch())
    }

    fn line(&mut self, line: &str) -> Result<Option<SseEvent>, LlmError> {
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        if line.starts_with(':') {
            return Ok(None);
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                self.data_bytes += value.len() + 1;
                if self.data_bytes > WIRE_EVENT_BYTES_MAX {
                    return Err(LlmError::ResponseTooLarge {
                        what: "one server-sent event (data lines with no blank line between)"
                            .into(),
                        bytes: self.data_bytes,
                        limit: WIRE_EVENT_BYTES_MAX,
                    });
                }
                self.data.push(value.to_owned());
            }
            "event" => self.event = Some(value.to_owned()),
            "error" => self.error = Some(value.to_owned()),
            _ => {} // id, retry and unknown fields carry nothing a client needs here
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        let error = self.error.take();
        if self.data.is_empty() && error.is_none() {
            // The spec: an event with no data is not dispatched (its name is dropped too).
            return None;
        }
        let data = std::mem::take(&mut self.data).join("\n");
        self.data_bytes = 0;
        Some(SseEvent { event, data, error })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_split_at(input: &[u8], cut: usize) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        decoder.feed(&input[..cut], &mut events).unwrap();
        decoder.feed(&input[cut..], &mut events).unwrap();
        events.extend(decoder.finish().unwrap());
        events
    }

    #[test]
    fn an_event_without_data_is_not_dispatched() {
        let input =
            b"event: ping\n\nevent: message\ndata:{\"a\":1}\r\n\r\nerror: {\"code\":500}\n\n";
        for cut in 0..=input.len() {
            assert_eq!(
                decode_split_at(input, cut),
                vec![
                    SseEvent {
                        event: Some("message".into()),
                        data: "{\"a\":1}".into(),
                        error: None,
                    },
                    SseEvent {
                        event: None,
                        data: String::new(),
                        error: Some("{\"code\":500}".into()),
                    },
                ],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn an_event_that_never_ends_is_refused_at_the_limit() {
        let mut decoder = SseDecoder::new();
        let line = format!("data: {}\n", "x".repeat(64 * 1024));
        let mut events = Vec::new();
        let mut outcome = Ok(());
        for _ in 0..(WIRE_EVENT_BYTES_MAX / (64 * 1024) + 2) {
            outcome = decoder.feed(line.as_bytes(), &mut events);
            if outcome.is_err() {
                break;
            }
        }
        assert!(
            matches!(outcome, Err(LlmError::ResponseTooLarge { .. })),
            "{outcome:?}"
        );
        assert!(events.is_empty());
    }

    #[test]
    fn events_comments_and_multiline_data() {
        let input =
            b": keep-alive\n\ndata: {\"a\":\ndata: 1}\n\nevent: error\ndata: oops\n\ndata: [DONE]";
        for cut in 0..=input.len() {
            assert_eq!(
                decode_split_at(input, cut),
                vec![
                    SseEvent {
                        event: None,
                        data: "{\"a\":\n1}".into(),
                        error: None,
                    },
                    SseEvent {
                        event: Some("error".into()),
                        data: "oops".into(),
                        error: None,
                    },
                    SseEvent {
                        event: None,
                        data: "[DONE]".into(),
                        error: None,
                    },
                ],
                "cut at {cut}"
            );
        }
    }
}
