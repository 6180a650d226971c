//! Lines from a byte stream: `\n`, `\r\n` and lone `\r` all end a line.

use crate::constants::WIRE_LINE_BYTES_MAX;
use crate::llm::error::{LlmError, snippet};

/// Splits bytes into lines, across chunk boundaries.
#[derive(Debug, Default)]
pub struct LineDecoder {
    buffer: Vec<u8>,
    /// The previous byte was `\r`: a `\n` right after it is its pair, not a new line.
    pending_cr: bool,
}

impl LineDecoder {
    /// A decoder with an empty buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds `chunk`, pushing the lines it completed onto `lines`. On an error (a line
    /// over the limit or not UTF-8) the lines completed before it are still pushed.
    pub fn feed(&mut self, chunk: &[u8], lines: &mut Vec<String>) -> Result<(), LlmError> {
        for &byte in chunk {
            if std::mem::take(&mut self.pending_cr) && byte == b'\n' {
                continue; // the `\n` of a `\r\n`, possibly split across chunks
            }
            match byte {
                b'\n' => lines.push(self.take_line()?),
                b'\r' => {
                    lines.push(self.take_line()?);
                    self.pending_cr = true;
                }
                _ => {
                    if self.buffer.len() == WIRE_LINE_BYTES_MAX {
                        return Err(LlmError::ResponseTooLarge {
                            what: "a line of the response".into(),
                            bytes: WIRE_LINE_BYTES_MAX + 1,
                            limit: WIRE_LINE_BYTES_MAX,
                        });
                    }
                    self.buffer.push(byte);
                }
            }
        }
        Ok(())
    }

    /// The last line, if the stream ended without a newline.
    pub fn finish(&mut self) -> Result<Option<String>, LlmError> {
        if self.buffer.is_empty() {
            return Ok(None);
        }
        self.take_line().map(Some)
    }

    fn take_line(&mut self) -> Result<String, LlmError> {
        let bytes = std::mem::take(&mut self.buffer);
        // What this decoder hands over (the SSE decoder asserts the same on receipt): a
        // line, its terminator gone, within the line cap.
        debug_assert!(
            !bytes.contains(&b'\n')
                && !bytes.contains(&b'\r')
                && bytes.len() <= WIRE_LINE_BYTES_MAX,
            "the line decoder hands over a line with a line break or over its cap"
        );
        String::from_utf8(bytes).map_err(|error| LlmError::InvalidResponse {
            reason: "a line of the response is not UTF-8".into(),
            snippet: snippet(&String::from_utf8_lossy(error.as_bytes())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The handing-over side of the line decoder's seam: a buffer holding a line break
    /// (planted; `feed` never keeps one) trips the assertion.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "the line decoder hands over a line with a line break")]
    fn a_held_line_break_trips_the_seam_assertion() {
        let mut decoder = LineDecoder {
            buffer: b"data: a\ndata: b".to_vec(),
            pending_cr: false,
        };
        let _ = decoder.finish();
    }

    fn split_everywhere(input: &[u8]) -> Vec<Vec<String>> {
        (0..=input.len())
            .map(|cut| {
                let mut decoder = LineDecoder::new();
                let mut lines = Vec::new();
                decoder.feed(&input[..cut], &mut lines).unwrap();
                decoder.feed(&input[cut..], &mut lines).unwrap();
                lines.extend(decoder.finish().unwrap());
                lines
            })
            .collect()
    }

    #[test]
    fn every_split_gives_the_same_lines() {
        let input = "data: héllo\r\ndata: 東京\n\nlast\rmore".as_bytes();
        let expected = vec!["data: héllo", "data: 東京", "", "last", "more"];
        for lines in split_everywhere(input) {
            assert_eq!(lines, expected);
        }
    }

    #[test]
    fn bad_utf8_and_long_lines_are_typed_errors() {
        let mut decoder = LineDecoder::new();
        let mut lines = Vec::new();
        assert!(matches!(
            decoder.feed(b"good\n\xff\xfe\n", &mut lines),
            Err(LlmError::InvalidResponse { .. })
        ));
        assert_eq!(
            lines,
            ["good"],
            "a bad line never erases the good one before it"
        );
        let mut decoder = LineDecoder::new();
        let long = vec![b'a'; WIRE_LINE_BYTES_MAX + 1];
        assert!(matches!(
            decoder.feed(&long, &mut lines),
            Err(LlmError::ResponseTooLarge { .. })
        ));
    }
}
