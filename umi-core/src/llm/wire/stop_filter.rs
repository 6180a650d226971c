//! Stop sequences applied by the client, for a format whose API has none (OpenAI's
//! Responses API takes no `stop`): the text is cut at the first stop sequence by the
//! same rule every model here follows ([`crate::llm::stop`]), so a caller's stop
//! sequences mean the same whichever format serves them.
//!
//! Streamed, the filter holds back the end of the text that could still become a stop
//! sequence (at most the longest stop's length less one byte) and releases it when the
//! next text rules that out. Once a stop matches, the text before it is released, the
//! rest of the model's output (text and tool calls alike) is dropped, and the server's
//! own end is awaited for its usage; the finish is then `stop`.

use crate::llm::event::StreamEvent;
use crate::llm::response::FinishReason;
use crate::llm::stop::find_stop;

use super::reader::WireDecoder;
use crate::llm::error::LlmError;

/// A decoder whose text is cut at the request's stop sequences.
#[derive(Debug)]
pub struct StopFilter<D> {
    inner: D,
    stops: Vec<String>,
    /// Text not yet released: it may be the start of a stop sequence.
    held: String,
    stopped: bool,
    scratch: Vec<StreamEvent>,
}

impl<D: WireDecoder> StopFilter<D> {
    /// Filters `inner`'s events by `stops` (empty strings are ignored).
    pub fn new(inner: D, stops: &[String]) -> Self {
        Self {
            inner,
            stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(),
            held: String::new(),
            stopped: false,
            scratch: Vec::new(),
        }
    }

    /// How many bytes at the end of `held` could begin a stop sequence.
    fn open_suffix_len(&self) -> usize {
        let mut longest = 0;
        for stop in &self.stops {
            for (end, _) in stop.char_indices().skip(1) {
                if end > longest && self.held.ends_with(&stop[..end]) {
                    longest = end;
                }
            }
        }
        longest
    }

    fn release(&mut self, all: bool, out: &mut Vec<StreamEvent>) {
        let keep = if all { 0 } else { self.open_suffix_len() };
        let cut = self.held.len() - keep;
        if cut > 0 {
            let rest = self.held.split_off(cut);
            out.push(StreamEvent::text(std::mem::replace(&mut self.held, rest)));
        }
    }

    fn filter(&mut self, event: StreamEvent, out: &mut Vec<StreamEvent>) {
        if self.stopped {
            if let StreamEvent::Done { usage, .. } = event {
                out.push(StreamEvent::done(FinishReason::Stop, usage));
            }
            return;
        }
        match event {
            StreamEvent::TextDelta { text } => {
                self.held.push_str(&text);
                if let Some(found) = find_stop(&self.held, &self.stops) {
                    self.held.truncate(found.position);
                    self.release(true, out);
                    self.stopped = true;
                } else {
                    self.release(false, out);
                }
            }
            StreamEvent::ReasoningDelta { .. } | StreamEvent::Usage { .. } => out.push(event),
            other @ StreamEvent::ToolCallDelta { .. } | other @ StreamEvent::Done { .. } => {
                self.release(true, out);
                out.push(other);
            }
        }
    }

    fn drain(&mut self, out: &mut Vec<StreamEvent>) {
        let events = std::mem::take(&mut self.scratch);
        for event in events {
            self.filter(event, out);
        }
    }
}

impl<D: WireDecoder> WireDecoder for StopFilter<D> {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if self.stops.is_empty() {
            return self.inner.feed(bytes, out);
        }
        let fed = self.inner.feed(bytes, &mut self.scratch);
        self.drain(out);
        fed
    }

    fn finish(&mut self, events_so_far: u64, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if self.stops.is_empty() {
            return self.inner.finish(events_so_far, out);
        }
        let finished = self.inner.finish(events_so_far, &mut self.scratch);
        self.drain(out);
        // The body ended: nothing more can complete a stop sequence.
        if !self.stopped {
            self.release(true, out);
        }
        finished
    }

    fn is_done(&self) -> bool {
        self.inner.is_done()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::wire::reader::decode_reads;
    use crate::llm::wire::sse::SseDecoder;

    /// A decoder of `data: <text>` lines, each a text delta; `data: [DONE]` ends.
    #[derive(Default)]
    struct Lines {
        sse: SseDecoder,
        done: bool,
    }

    impl WireDecoder for Lines {
        fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
            let mut events = Vec::new();
            let fed = self.sse.feed(bytes, &mut events);
            for event in events {
                if event.data == "[DONE]" {
                    self.done = true;
                    out.push(StreamEvent::done(FinishReason::Length, None));
                } else {
                    out.push(StreamEvent::text(event.data));
                }
            }
            fed
        }
        fn finish(&mut self, _: u64, _: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
            Ok(())
        }
        fn is_done(&self) -> bool {
            self.done
        }
    }

    fn text_and_finish(body: &str, stops: &[&str], read: usize) -> (String, Option<FinishReason>) {
        let stops: Vec<String> = stops.iter().map(|s| (*s).to_owned()).collect();
        let decoded = decode_reads(
            StopFilter::new(Lines::default(), &stops),
            body.as_bytes().chunks(read),
        );
        let mut text = String::new();
        let mut finish = None;
        for event in decoded.events {
            match event {
                StreamEvent::TextDelta { text: t } => text.push_str(&t),
                StreamEvent::Done { finish_reason, .. } => finish = Some(finish_reason),
                other => panic!("{other:?}"),
            }
        }
        (text, finish)
    }

    #[test]
    fn a_stop_split_across_deltas_cuts_the_text_in_every_read_pattern() {
        let body = "data: Hello wo\n\ndata: rld, EN\n\ndata: D and more\n\ndata: [DONE]\n\n";
        for read in 1..=body.len() {
            assert_eq!(
                text_and_finish(body, &["END"], read),
                ("Hello world, ".to_owned(), Some(FinishReason::Stop)),
                "read {read}"
            );
        }
    }

    #[test]
    fn held_text_is_released_when_no_stop_completes() {
        let body = "data: an E\n\ndata: Nd\n\ndata: [DONE]\n\n";
        assert_eq!(
            text_and_finish(body, &["END"], 7),
            ("an ENd".to_owned(), Some(FinishReason::Length))
        );
        // Without stops the events pass untouched.
        assert_eq!(
            text_and_finish(body, &[], 3),
            ("an ENd".to_owned(), Some(FinishReason::Length))
        );
        // The earliest of two stops wins, as in `find_stop`.
        assert_eq!(
            text_and_finish("data: a, b. c\n\ndata: [DONE]\n\n", &[".", ","], 4),
            ("a".to_owned(), Some(FinishReason::Stop))
        );
    }

    #[test]
    fn text_held_at_a_cut_body_is_not_lost() {
        let body = "data: the EN\n\n";
        assert_eq!(
            text_and_finish(body, &["END"], 5),
            ("the EN".to_owned(), None)
        );
    }
}
