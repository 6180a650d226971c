//! Amazon's event-stream framing (`application/vnd.amazon.eventstream`), read sans I/O:
//! the binary messages a Bedrock `ConverseStream` body is made of (smithy.io, "Amazon
//! Event Stream Specification"; AWS docs, "Event stream encoding").
//!
//! | bytes | what |
//! | --- | --- |
//! | 4 | total length, u32 big-endian (the whole message, both CRCs included) |
//! | 4 | headers length, u32 big-endian |
//! | 4 | prelude CRC32 (of the 8 bytes before) |
//! | headers length | headers: name length u8, name, type u8, value |
//! | total − headers − 16 | payload |
//! | 4 | message CRC32 (of everything before it) |
//!
//! Header value types: 0 true, 1 false (no value), 2 byte, 3 i16, 4 i32, 5 i64 (big
//! endian), 6 byte array and 7 string (u16 length, then the bytes), 8 timestamp (i64
//! ms), 9 UUID (16 bytes). A Bedrock event names itself in the string headers
//! `:message-type` (`event`, `exception`, `error`), `:event-type` or `:exception-type`,
//! and `:content-type`. A message is handed out only once it is whole and both CRCs
//! hold, so the messages out are the same for every split of the bytes.

use crate::llm::error::{LlmError, snippet};

/// The prelude: two lengths and their CRC.
pub const PRELUDE_BYTES: usize = 12;
/// The message CRC at the end.
const CRC_BYTES: usize = 4;
/// The smallest message: a prelude and a message CRC, no headers, no payload.
pub const MESSAGE_BYTES_MIN: usize = PRELUDE_BYTES + CRC_BYTES;
/// The largest message the specification allows (16 MiB).
pub const MESSAGE_BYTES_MAX: usize = 16 * 1024 * 1024;
/// The largest headers block the specification allows (128 KiB).
pub const HEADERS_BYTES_MAX: usize = 128 * 1024;

/// A header's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderValue {
    /// Types 0 and 1.
    Bool(bool),
    /// Types 2 to 5 and 8 (a timestamp, in ms), widened.
    Int(i64),
    /// Type 6, and 9 (a UUID's 16 bytes).
    Bytes(Vec<u8>),
    /// Type 7.
    String(String),
}

/// One whole message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Its headers, in order.
    pub headers: Vec<(String, HeaderValue)>,
    /// Its payload.
    pub payload: Vec<u8>,
}

impl Message {
    /// The string header `name`, if the message has one.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find_map(|(n, value)| match value {
            HeaderValue::String(text) if n == name => Some(text.as_str()),
            HeaderValue::String(_) | HeaderValue::Bool(_) | HeaderValue::Int(_) => None,
            HeaderValue::Bytes(_) => None,
        })
    }
}

/// Bytes in, whole messages out.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    buffer: Vec<u8>,
}

fn framing(reason: impl Into<String>, bytes: &[u8]) -> LlmError {
    LlmError::InvalidResponse {
        reason: format!("event stream: {}", reason.into()),
        snippet: snippet(&String::from_utf8_lossy(bytes)),
    }
}

fn be_u32(bytes: &[u8]) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[..4]);
    u32::from_be_bytes(word)
}

impl FrameDecoder {
    /// A decoder at the start of a body.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes `bytes`, the next read: every message it completed goes onto `out`, in
    /// order, before an error (a bad length or CRC) is returned.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Message>) -> Result<(), LlmError> {
        self.buffer.extend_from_slice(bytes);
        let mut start = 0;
        let result = loop {
            match next_message(&self.buffer[start..]) {
                Ok(Some((message, used))) => {
                    out.push(message);
                    start += used;
                }
                Ok(None) => break Ok(()),
                Err(error) => break Err(error),
            }
        };
        self.buffer.drain(..start);
        result
    }

    /// Bytes of a message not yet whole (a body that ends with some was cut).
    pub fn pending_bytes(&self) -> usize {
        self.buffer.len()
    }
}

/// The first message of `bytes` and its length, `None` when it is not whole yet.
fn next_message(bytes: &[u8]) -> Result<Option<(Message, usize)>, LlmError> {
    if bytes.len() < PRELUDE_BYTES {
        return Ok(None);
    }
    let total = be_u32(bytes) as usize;
    let headers_len = be_u32(&bytes[4..]) as usize;
    let prelude_crc = be_u32(&bytes[8..]);
    if crc32fast::hash(&bytes[..8]) != prelude_crc {
        return Err(framing(
            "the prelude's CRC does not match",
            &bytes[..PRELUDE_BYTES],
        ));
    }
    if !(MESSAGE_BYTES_MIN..=MESSAGE_BYTES_MAX).contains(&total)
        || headers_len > HEADERS_BYTES_MAX
        || headers_len > total - MESSAGE_BYTES_MIN
    {
        return Err(framing(
            format!("a message of {total} bytes with {headers_len} bytes of headers"),
            &bytes[..PRELUDE_BYTES],
        ));
    }
    if bytes.len() < total {
        return Ok(None);
    }
    let message = &bytes[..total];
    let crc = be_u32(&message[total - CRC_BYTES..]);
    if crc32fast::hash(&message[..total - CRC_BYTES]) != crc {
        return Err(framing("the message's CRC does not match", message));
    }
    let header_bytes = &message[PRELUDE_BYTES..PRELUDE_BYTES + headers_len];
    let headers = read_headers(header_bytes)?;
    let payload = message[PRELUDE_BYTES + headers_len..total - CRC_BYTES].to_vec();
    Ok(Some((Message { headers, payload }, total)))
}

/// A cursor over a headers block.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], LlmError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|end| *end <= self.bytes.len());
        let Some(end) = end else {
            return Err(framing("a header runs past its block", self.bytes));
        };
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn int(&mut self, n: usize) -> Result<i64, LlmError> {
        let bytes = self.take(n)?;
        let mut wide = [if bytes[0] & 0x80 != 0 { 0xff } else { 0 }; 8];
        wide[8 - n..].copy_from_slice(bytes);
        Ok(i64::from_be_bytes(wide))
    }
}

/// The headers of a block.
fn read_headers(bytes: &[u8]) -> Result<Vec<(String, HeaderValue)>, LlmError> {
    let mut cursor = Cursor { bytes, at: 0 };
    let mut headers = Vec::new();
    while cursor.at < bytes.len() {
        let name_len = usize::from(cursor.take(1)?[0]);
        let name = String::from_utf8(cursor.take(name_len)?.to_vec())
            .map_err(|_| framing("a header name is not UTF-8", bytes))?;
        let value = match cursor.take(1)?[0] {
            0 => HeaderValue::Bool(true),
            1 => HeaderValue::Bool(false),
            2 => HeaderValue::Int(cursor.int(1)?),
            3 => HeaderValue::Int(cursor.int(2)?),
            4 => HeaderValue::Int(cursor.int(4)?),
            5 | 8 => HeaderValue::Int(cursor.int(8)?),
            kind @ (6 | 7) => {
                let len = usize::from(u16::from_be_bytes([cursor.take(1)?[0], cursor.take(1)?[0]]));
                let raw = cursor.take(len)?.to_vec();
                if kind == 6 {
                    HeaderValue::Bytes(raw)
                } else {
                    HeaderValue::String(
                        String::from_utf8(raw)
                            .map_err(|_| framing("a string header is not UTF-8", bytes))?,
                    )
                }
            }
            9 => HeaderValue::Bytes(cursor.take(16)?.to_vec()),
            other => return Err(framing(format!("header type {other} is unknown"), bytes)),
        };
        headers.push((name, value));
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// botocore `tests/unit/test_eventstream.py`, `PAYLOAD_NO_HEADERS` and
    /// `PAYLOAD_ONE_STR_HEADER` (the same bytes as awslabs/aws-c-event-stream's
    /// encoded test vectors): real encodings with their CRCs.
    const NO_HEADERS: &[u8] = b"\x00\x00\x00\x1d\x00\x00\x00\x00\xfdR\x8cZ{'foo':'bar'}\xc3e96";
    const ONE_STRING_HEADER: &[u8] = b"\x00\x00\x00=\x00\x00\x00 \x07\xfd\x83\x96\x0ccontent-type\x07\x00\x10application/json{'foo':'bar'}\x8d\x9c\x08\xb1";

    fn decode(reads: &[&[u8]]) -> (Vec<Message>, Result<(), LlmError>) {
        let mut decoder = FrameDecoder::new();
        let mut out = Vec::new();
        for read in reads {
            if let Err(error) = decoder.feed(read, &mut out) {
                return (out, Err(error));
            }
        }
        (out, Ok(()))
    }

    #[test]
    fn botocores_vectors_decode_whole_and_split_anywhere() {
        let mut both = NO_HEADERS.to_vec();
        both.extend_from_slice(ONE_STRING_HEADER);
        for cut in 0..=both.len() {
            let (messages, result) = decode(&[&both[..cut], &both[cut..]]);
            result.unwrap();
            assert_eq!(messages.len(), 2, "cut at {cut}");
            assert!(messages[0].headers.is_empty());
            assert_eq!(messages[0].payload, b"{'foo':'bar'}");
            assert_eq!(messages[1].header("content-type"), Some("application/json"));
            assert_eq!(messages[1].payload, b"{'foo':'bar'}");
        }
        // Byte by byte.
        let reads: Vec<&[u8]> = both.chunks(1).collect();
        assert_eq!(decode(&reads).0.len(), 2);
    }

    #[test]
    fn broken_frames_are_typed_errors_after_the_whole_messages_before_them() {
        let flip = |at: usize| {
            let mut bytes = NO_HEADERS.to_vec();
            bytes.extend_from_slice(ONE_STRING_HEADER);
            bytes[NO_HEADERS.len() + at] ^= 0x01;
            bytes
        };
        // Table: which byte of the second message is flipped, what the error says.
        for (at, says) in [
            (9, "prelude's CRC"),  // the prelude CRC itself
            (3, "prelude's CRC"),  // the total length
            (20, "message's CRC"), // a header byte
            (50, "message's CRC"), // the payload
            (60, "message's CRC"), // the message CRC
        ] {
            let bytes = flip(at);
            let (messages, result) = decode(&[&bytes]);
            assert_eq!(messages.len(), 1, "flip {at}");
            match result {
                Err(LlmError::InvalidResponse { reason, .. }) => {
                    assert!(reason.contains(says), "flip {at}: {reason}");
                }
                other => panic!("flip {at}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_length_past_the_limit_or_below_the_minimum_is_refused() {
        for (total, headers) in [(u32::MAX, 0u32), (8, 0), (20, 10)] {
            let mut prelude = total.to_be_bytes().to_vec();
            prelude.extend_from_slice(&headers.to_be_bytes());
            let crc = crc32fast::hash(&prelude);
            prelude.extend_from_slice(&crc.to_be_bytes());
            let (_, result) = decode(&[&prelude]);
            assert!(
                matches!(result, Err(LlmError::InvalidResponse { .. })),
                "{total}/{headers}"
            );
        }
    }

    #[test]
    fn every_header_type_reads() {
        let mut block = Vec::new();
        let mut push = |name: &str, kind: u8, value: &[u8]| {
            block.push(name.len() as u8);
            block.extend_from_slice(name.as_bytes());
            block.push(kind);
            block.extend_from_slice(value);
        };
        push("t", 0, &[]);
        push("f", 1, &[]);
        push("b", 2, &[0xff]);
        push("s", 3, &[0x01, 0x00]);
        push("i", 4, &[0, 0, 1, 0]);
        push("l", 5, &[0, 0, 0, 0, 0, 0, 0, 9]);
        push("y", 6, &[0, 2, 7, 8]);
        push("z", 7, &[0, 2, b'h', b'i']);
        push("d", 8, &[0, 0, 0, 0, 0, 0, 3, 0xe8]);
        push("u", 9, &[1; 16]);
        let headers = read_headers(&block).unwrap();
        let values: Vec<HeaderValue> = headers.into_iter().map(|(_, v)| v).collect();
        assert_eq!(
            values,
            [
                HeaderValue::Bool(true),
                HeaderValue::Bool(false),
                HeaderValue::Int(-1),
                HeaderValue::Int(256),
                HeaderValue::Int(256),
                HeaderValue::Int(9),
                HeaderValue::Bytes(vec![7, 8]),
                HeaderValue::String("hi".into()),
                HeaderValue::Int(1_000),
                HeaderValue::Bytes(vec![1; 16]),
            ]
        );
        assert!(read_headers(&[1, b'x', 10]).is_err(), "an unknown type");
        assert!(
            read_headers(&[1, b'x', 7, 0, 9, b'a']).is_err(),
            "a string past the block"
        );
    }
}
