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
        self.feed_each(chunk, &mut |line| {
            lines.push(line.to_owned());
            Ok(())
        })
    }

    /// Feeds `chunk`, handing each line it completes to `on_line`, in order, without a
    /// copy of its own (a line inside `chunk` is lent from it). The lines are those
    /// [`LineDecoder::feed`] pushes. Once `on_line` fails no other line is handed over,
    /// but the rest of `chunk` is still split (the decoder is left as `feed` leaves it);
    /// the first error `on_line` returned is returned, else the decoder's own.
    pub fn feed_each(
        &mut self,
        mut chunk: &[u8],
        on_line: &mut dyn FnMut(&str) -> Result<(), LlmError>,
    ) -> Result<(), LlmError> {
        // A run of bytes up to the next line break is taken at once (not byte by byte):
        // the same lines, errors and state as one byte at a time, for every split.
        // One byte that ends no line (a split-invariance check feeds a whole stream so)
        // is the general path below in short: no line, the byte kept, no CR pending.
        if let &[byte] = chunk
            && byte != b'\n'
            && byte != b'\r'
        {
            self.pending_cr = false;
            return self.extend(chunk);
        }
        let mut failed = None;
        let mut hand_over = |line: &str, failed: &mut Option<LlmError>| {
            if failed.is_none() {
                *failed = on_line(line).err();
            }
        };
        while let Some(&first) = chunk.first() {
            if std::mem::take(&mut self.pending_cr) && first == b'\n' {
                chunk = &chunk[1..]; // the `\n` of a `\r\n`, possibly split across chunks
                continue;
            }
            let end = line_break(chunk);
            let run = &chunk[..end.unwrap_or(chunk.len())];
            let Some(at) = end else {
                if let Err(error) = self.extend(run) {
                    return Err(failed.unwrap_or(error));
                }
                break;
            };
            let lent = self.buffer.is_empty() && run.len() <= WIRE_LINE_BYTES_MAX;
            if !lent && let Err(error) = self.extend(run) {
                return Err(failed.unwrap_or(error)); // over the cap: the bytes up to it kept
            }
            debug_assert!(
                lent || !has_line_break(&self.buffer),
                "the line decoder hands over a line with a line break or over its cap"
            );
            // A whole line inside this chunk is lent from it, not copied.
            let line = line_text(if lent { run } else { &self.buffer });
            match line {
                Ok(line) => hand_over(line, &mut failed),
                Err(error) => {
                    self.buffer.clear();
                    return Err(failed.unwrap_or(error));
                }
            }
            self.buffer.clear();
            self.pending_cr = chunk[at] == b'\r';
            chunk = &chunk[at + 1..];
        }
        failed.map_or(Ok(()), Err)
    }

    /// Appends `bytes` (no line break in them) to the line being read; past
    /// `WIRE_LINE_BYTES_MAX` the bytes up to it are kept and the line is refused.
    fn extend(&mut self, bytes: &[u8]) -> Result<(), LlmError> {
        let room = WIRE_LINE_BYTES_MAX - self.buffer.len();
        if bytes.len() > room {
            self.buffer.extend_from_slice(&bytes[..room]);
            return Err(LlmError::ResponseTooLarge {
                what: "a line of the response".into(),
                bytes: WIRE_LINE_BYTES_MAX + 1,
                limit: WIRE_LINE_BYTES_MAX,
            });
        }
        match *bytes {
            [byte] => self.buffer.push(byte),
            _ => self.buffer.extend_from_slice(bytes),
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
            !has_line_break(&bytes) && bytes.len() <= WIRE_LINE_BYTES_MAX,
            "the line decoder hands over a line with a line break or over its cap"
        );
        String::from_utf8(bytes).map_err(|error| LlmError::InvalidResponse {
            reason: "a line of the response is not UTF-8".into(),
            snippet: snippet(&String::from_utf8_lossy(error.as_bytes())),
        })
    }
}

/// `bytes` (one line, its terminator gone) as text, or the error for a line that is
/// not UTF-8.
fn line_text(bytes: &[u8]) -> Result<&str, LlmError> {
    // What this decoder hands over (the SSE decoder asserts the same on receipt): a
    // line, its terminator gone, within the line cap. A line lent from a chunk ends at
    // the first break `line_break` found, so only a line held across chunks is scanned.
    debug_assert!(
        bytes.len() <= WIRE_LINE_BYTES_MAX,
        "the line decoder hands over a line over its cap"
    );
    std::str::from_utf8(bytes).map_err(|_| LlmError::InvalidResponse {
        reason: "a line of the response is not UTF-8".into(),
        snippet: snippet(&String::from_utf8_lossy(bytes)),
    })
}

/// Whether `bytes` holds a `\n` or a `\r`: the seam assertions' check, sixteen bytes at a
/// time (a fold over a fixed block, which the compiler turns into vector compares). Two
/// `contains` scans per line cost a sim build (which keeps the workspace's assertions)
/// about 3× as much, on every line of every stream (issue 41). Public for the
/// simulator's framing assertion, which checks its payloads the same way.
pub fn has_line_break(bytes: &[u8]) -> bool {
    let mut blocks = bytes.chunks_exact(16);
    for block in &mut blocks {
        let breaks = block.iter().fold(0u8, |seen, &byte| {
            seen | u8::from(byte == b'\n') | u8::from(byte == b'\r')
        });
        if breaks != 0 {
            return true;
        }
    }
    blocks
        .remainder()
        .iter()
        .any(|&byte| byte == b'\n' || byte == b'\r')
}

/// Where the first `\n` or `\r` in `bytes` is: eight bytes at a time, then the byte.
fn line_break(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // Whether a byte of `word` is `byte`: a byte of `word ^ byte…` is zero.
    let holds = |word: u64, byte: u8| {
        let x = word ^ (ONES * u64::from(byte));
        x.wrapping_sub(ONES) & !x & HIGHS != 0
    };
    let mut at = 0;
    for chunk in bytes.chunks_exact(8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let word = u64::from_le_bytes(word);
        if holds(word, b'\n') || holds(word, b'\r') {
            break;
        }
        at += 8;
    }
    let found = bytes[at..].iter().position(|&b| b == b'\n' || b == b'\r');
    found.map(|offset| at + offset)
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

    #[test]
    fn a_line_break_is_found_where_a_byte_scan_finds_it() {
        let mut inputs: Vec<Vec<u8>> = vec![Vec::new(), b"\n".to_vec(), b"\r".to_vec()];
        for len in 1..40 {
            for at in 0..len {
                for byte in [b'\n', b'\r', 0x0b, 0x0c, 0x8a, 0x8d, 0xff] {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = byte;
                    inputs.push(bytes.clone());
                    bytes[len - 1] = b'\n';
                    inputs.push(bytes);
                }
            }
        }
        inputs.push("東京 héllo\r\n".repeat(5).into_bytes());
        for bytes in inputs {
            let expected = bytes.iter().position(|&b| b == b'\n' || b == b'\r');
            assert_eq!(line_break(&bytes), expected, "{bytes:?}");
            assert_eq!(has_line_break(&bytes), expected.is_some(), "{bytes:?}");
        }
    }

    /// The decoder as it was before it copied runs of bytes: one byte at a time.
    fn feed_bytewise(
        decoder: &mut LineDecoder,
        chunk: &[u8],
        lines: &mut Vec<String>,
    ) -> Result<(), LlmError> {
        for &byte in chunk {
            if std::mem::take(&mut decoder.pending_cr) && byte == b'\n' {
                continue;
            }
            match byte {
                b'\n' => lines.push(decoder.take_line()?),
                b'\r' => {
                    lines.push(decoder.take_line()?);
                    decoder.pending_cr = true;
                }
                _ => {
                    if decoder.buffer.len() == WIRE_LINE_BYTES_MAX {
                        return Err(LlmError::ResponseTooLarge {
                            what: "a line of the response".into(),
                            bytes: WIRE_LINE_BYTES_MAX + 1,
                            limit: WIRE_LINE_BYTES_MAX,
                        });
                    }
                    decoder.buffer.push(byte);
                }
            }
        }
        Ok(())
    }

    /// Every chunk's lines and result, and the decoder's state after each, fed through
    /// `feed`.
    type Run = Vec<(Vec<String>, String, Vec<u8>, bool)>;

    fn run(chunks: &[&[u8]], bytewise: bool) -> Run {
        let mut decoder = LineDecoder::new();
        let mut out = Vec::new();
        for chunk in chunks {
            let mut lines = Vec::new();
            let result = if bytewise {
                feed_bytewise(&mut decoder, chunk, &mut lines)
            } else {
                decoder.feed(chunk, &mut lines)
            };
            let state = (decoder.buffer.clone(), decoder.pending_cr);
            out.push((lines, format!("{result:?}"), state.0, state.1));
        }
        let finish = format!("{:?}", decoder.finish());
        out.push((
            Vec::new(),
            finish,
            decoder.buffer.clone(),
            decoder.pending_cr,
        ));
        out
    }

    #[test]
    fn runs_of_bytes_decode_as_one_byte_at_a_time_did() {
        let table: [&[u8]; 10] = [
            b"",
            b"\n",
            b"\r\n\r\n",
            b"\r\r\n\n\r",
            b"data: {\"a\":1}\n\ndata: [DONE]\n\n",
            "data: héllo\r\ndata: 東京\n\nlast\rmore".as_bytes(),
            b"good\n\xff\xfe\nafter\n",
            b"a\rb\r\nc\n\rd",
            b"no newline at all",
            b"\xe6\x9d\xb1\r\n\xe6\x9d",
        ];
        for input in table {
            for cut in 0..=input.len() {
                let chunks = [&input[..cut], &input[cut..]];
                assert_eq!(run(&chunks, false), run(&chunks, true), "cut at {cut}");
            }
            let bytes: Vec<&[u8]> = input.chunks(1).collect();
            assert_eq!(run(&bytes, false), run(&bytes, true));
        }
        // Lines at and past the cap, cut around it.
        let at_cap = [vec![b'a'; WIRE_LINE_BYTES_MAX - 2], b"bc\nd".to_vec()].concat();
        let over = [vec![b'a'; WIRE_LINE_BYTES_MAX - 1], b"bcd\nok\n".to_vec()].concat();
        for input in [at_cap, over] {
            let near = WIRE_LINE_BYTES_MAX - 3..=WIRE_LINE_BYTES_MAX + 3;
            let cuts = [0, 1, input.len()].into_iter().chain(near);
            for cut in cuts.filter(|&cut| cut <= input.len()) {
                let chunks = [&input[..cut], &input[cut..]];
                assert_eq!(run(&chunks, false), run(&chunks, true), "cut at {cut}");
            }
        }
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
