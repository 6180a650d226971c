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
    /// The `data:` lines so far, joined by `\n` as they come: one buffer, so the bytes
    /// the event cap counts are the bytes held (a `String` per line would cost 24 bytes
    /// of header for every empty line the cap counts as one).
    data: String,
    /// Whether a `data:` line arrived (an event of empty lines still has data).
    has_data: bool,
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
        // One byte that ends no line (a split-invariance check feeds whole streams so)
        // completes no line, so no event: the line decoder keeps it, and nothing else
        // is touched (no moving the line decoder out and back for it).
        if let &[byte] = chunk
            && byte != b'\n'
            && byte != b'\r'
        {
            return self.lines.feed_each(chunk, &mut |_| Ok(()));
        }
        // The lines are read as they are split, lent rather than copied; the line decoder
        // is out of `self` meanwhile (so `line` can have the rest of it), and put back.
        let mut lines = std::mem::take(&mut self.lines);
        let fed = lines.feed_each(chunk, &mut |line| {
            if let Some(event) = self.line(line)? {
                events.push(event);
            }
            Ok(())
        });
        self.lines = lines;
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
        // What the line decoder hands over: one line, its terminator gone. A line break
        // here would be a field boundary (or a dispatch) the decoder never saw.
        debug_assert!(
            !super::lines::has_line_break(line.as_bytes()),
            "the SSE decoder received a line with a line break in it: {line:?}"
        );
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
                let separator = usize::from(self.has_data);
                let bytes = self.data.len() + separator + value.len();
                if bytes > WIRE_EVENT_BYTES_MAX {
                    return Err(LlmError::ResponseTooLarge {
                        what: "one server-sent event (data lines with no blank line between)"
                            .into(),
                        bytes,
                        limit: WIRE_EVENT_BYTES_MAX,
                    });
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_owned()),
            "error" => self.error = Some(value.to_owned()),
            _ => {} // id, retry and unknown fields carry nothing a client needs here
        }
        Ok(None)
    }

    /// Heap bytes the pending event holds: what the event cap bounds.
    #[cfg(test)]
    fn held_bytes(&self) -> usize {
        self.data.capacity()
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        let error = self.error.take();
        if !self.has_data && error.is_none() {
            // The spec: an event with no data is not dispatched (its name is dropped too).
            return None;
        }
        let data = std::mem::take(&mut self.data);
        self.has_data = false;
        // What the decoder hands over: an event within the event cap (`line` refuses the
        // data line that would pass it).
        debug_assert!(
            data.len() <= WIRE_EVENT_BYTES_MAX,
            "the SSE decoder hands over an event of {} bytes, over its cap of \
             {WIRE_EVENT_BYTES_MAX}",
            data.len()
        );
        Some(SseEvent { event, data, error })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The receiving side of the line decoder's handover: a line with a break in it
    /// (planted; the line decoder never makes one) trips the assertion.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "the SSE decoder received a line with a line break in it")]
    fn a_line_with_a_break_in_it_trips_the_seam_assertion() {
        let _ = SseDecoder::new().line("data: a\n\ndata: b");
    }

    /// The handing-over side: an event over the cap (planted past `line`'s check) trips
    /// the assertion.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "the SSE decoder hands over an event of")]
    fn an_event_over_the_cap_trips_the_seam_assertion() {
        let mut decoder = SseDecoder {
            data: "x".repeat(WIRE_EVENT_BYTES_MAX + 1),
            has_data: true,
            ..SseDecoder::default()
        };
        let _ = decoder.dispatch();
    }

    /// `feed` as it was before lines were lent: every line of the chunk copied out
    /// first, then read.
    fn feed_copied(
        decoder: &mut SseDecoder,
        chunk: &[u8],
        events: &mut Vec<SseEvent>,
    ) -> Result<(), LlmError> {
        let mut lines = Vec::new();
        let fed = decoder.lines.feed(chunk, &mut lines);
        for line in lines {
            if let Some(event) = decoder.line(&line)? {
                events.push(event);
            }
        }
        fed
    }

    /// Each chunk's events and result, and the decoder's pending event after it.
    fn run(chunks: &[&[u8]], copied: bool) -> Vec<String> {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        for chunk in chunks {
            let mut events = Vec::new();
            let result = if copied {
                feed_copied(&mut decoder, chunk, &mut events)
            } else {
                decoder.feed(chunk, &mut events)
            };
            out.push(format!(
                "{events:?} {result:?} {:?} {} {:?} {:?}",
                decoder.data, decoder.has_data, decoder.event, decoder.error
            ));
        }
        out.push(format!("{:?}", decoder.finish()));
        out
    }

    #[test]
    fn lent_lines_decode_as_copied_lines_did() {
        let big = format!("data: {}\n", "x".repeat(WIRE_EVENT_BYTES_MAX / 2 + 1));
        let over_cap = format!("{big}{big}\n").into_bytes();
        let table: [&[u8]; 7] = [
            b"event: ping\n\nevent: message\ndata:{\"a\":1}\r\n\r\nerror: {\"code\":500}\n\n",
            b"data: a\ndata: b\n\n: comment\ndata\n\nid: 1\nretry: 5\n\n",
            b"data: good\n\ndata: \xff\n\ndata: after\n\n",
            b"data: x\rdata: y\r\rdata: z",
            "data: 東京\n\n".as_bytes(),
            b"",
            &over_cap,
        ];
        for input in table {
            let cuts: Vec<usize> = if input.len() > 1_000 {
                vec![0, 7, input.len() / 2, input.len() - 3, input.len()]
            } else {
                (0..=input.len()).collect()
            };
            for cut in cuts {
                let chunks = [&input[..cut], &input[cut..]];
                assert_eq!(run(&chunks, false), run(&chunks, true), "cut at {cut}");
            }
        }
    }

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

    /// The cap bounds memory, not just a count: an event of empty `data:` lines (six
    /// bytes each on the wire) once held a `String` per line, 24 bytes of header each,
    /// so the 4 MiB cap let one event hold over 100 MB.
    #[test]
    fn a_pending_event_holds_no_more_than_the_cap() {
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        let lines = "data:\n".repeat(64 * 1024);
        let mut held_bytes_max = 0;
        for _ in 0..(WIRE_EVENT_BYTES_MAX / (64 * 1024) + 2) {
            if decoder.feed(lines.as_bytes(), &mut events).is_err() {
                break;
            }
            held_bytes_max = held_bytes_max.max(decoder.held_bytes());
        }
        assert!(
            held_bytes_max <= 2 * WIRE_EVENT_BYTES_MAX,
            "{held_bytes_max} bytes held for one pending event"
        );
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
