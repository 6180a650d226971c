//! Server-sent events: `data:` lines (several join with `\n`), `event:` names, comments
//! (`: keep-alive`) ignored, an empty line dispatching the event.

use super::lines::LineDecoder;
use crate::llm::error::LlmError;

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` name, if one was given.
    pub event: Option<String>,
    /// The `data:` lines, joined by `\n`.
    pub data: String,
}

/// Turns bytes into events, across chunk boundaries.
#[derive(Debug, Default)]
pub struct SseDecoder {
    lines: LineDecoder,
    data: Vec<String>,
    event: Option<String>,
}

impl SseDecoder {
    /// An empty decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds `chunk`; returns the events it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, LlmError> {
        let mut events = Vec::new();
        for line in self.lines.feed(chunk)? {
            if let Some(event) = self.line(&line) {
                events.push(event);
            }
        }
        Ok(events)
    }

    /// The event still pending when the body ended without its blank line, if any.
    pub fn finish(&mut self) -> Result<Option<SseEvent>, LlmError> {
        if let Some(line) = self.lines.finish()?
            && let Some(event) = self.line(&line)
        {
            return Ok(Some(event));
        }
        Ok(self.dispatch())
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => self.data.push(value.to_owned()),
            "event" => self.event = Some(value.to_owned()),
            _ => {} // id, retry and unknown fields carry nothing a client needs here
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        if self.data.is_empty() && self.event.is_none() {
            return None;
        }
        let data = std::mem::take(&mut self.data).join("\n");
        Some(SseEvent {
            event: self.event.take(),
            data,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_comments_and_multiline_data() {
        let input =
            b": keep-alive\n\ndata: {\"a\":\ndata: 1}\n\nevent: error\ndata: oops\n\ndata: [DONE]";
        for cut in 0..=input.len() {
            let mut decoder = SseDecoder::new();
            let mut events = decoder.feed(&input[..cut]).unwrap();
            events.extend(decoder.feed(&input[cut..]).unwrap());
            events.extend(decoder.finish().unwrap());
            assert_eq!(
                events,
                vec![
                    SseEvent {
                        event: None,
                        data: "{\"a\":\n1}".into()
                    },
                    SseEvent {
                        event: Some("error".into()),
                        data: "oops".into()
                    },
                    SseEvent {
                        event: None,
                        data: "[DONE]".into()
                    },
                ],
                "cut at {cut}"
            );
        }
    }
}
