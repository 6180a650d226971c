//! Amazon's event-stream framing written (`application/vnd.amazon.eventstream`; smithy.io
//! "Amazon Event Stream Specification"): the simulator's own encoder, apart from the
//! client's decoder in umi-core, so one cannot hide the other's mistake.
//!
//! A message is a prelude (total length and headers length, u32 big-endian, and their
//! CRC32), the headers (each: name length u8, name, type 7 for a string, value length
//! u16 big-endian, value), the payload and the CRC32 of everything before it.

use crate::rng::DeterministicRng;

/// The prelude's bytes: two lengths and their CRC.
const PRELUDE_BYTES: usize = 12;
/// The message CRC at the end.
const CRC_BYTES: usize = 4;
/// Header value type 7: a string.
const STRING_TYPE: u8 = 7;
/// Messages [`cut_last_payload`] walks at most: one event's bytes hold a few (a block's
/// start, its delta, a block's stop).
const MESSAGES_PER_CUT_MAX: usize = 16;

/// One message with string `headers` (names and values each shorter than their length
/// fields allow: the ones this simulator writes are short constants) and `payload`.
pub(crate) fn message(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in headers {
        let name_len = u8::try_from(name.len()).expect("a header name under 256 bytes");
        let value_len = u16::try_from(value.len()).expect("a header value under 64 KiB");
        block.push(name_len);
        block.extend_from_slice(name.as_bytes());
        block.push(STRING_TYPE);
        block.extend_from_slice(&value_len.to_be_bytes());
        block.extend_from_slice(value.as_bytes());
    }
    framed(&block, payload)
}

/// The message of an encoded header `block` and `payload`: the prelude and both CRCs.
fn framed(block: &[u8], payload: &[u8]) -> Vec<u8> {
    let total = PRELUDE_BYTES + block.len() + payload.len() + CRC_BYTES;
    let total = u32::try_from(total).expect("a message under 4 GiB");
    let headers_len = u32::try_from(block.len()).expect("headers under 4 GiB");
    let mut out = Vec::with_capacity(total as usize);
    out.extend_from_slice(&total.to_be_bytes());
    out.extend_from_slice(&headers_len.to_be_bytes());
    let prelude_crc = crc32fast::hash(&out);
    out.extend_from_slice(&prelude_crc.to_be_bytes());
    out.extend_from_slice(block);
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

/// `messages` (whole messages this module wrote, one after another) with the last
/// one's JSON payload cut at a seeded byte inside its document
/// ([`crate::network::unparseable::cut_document`]) and framed again, so its lengths and
/// CRCs are right: the client reads a whole message whose payload is not JSON, as when
/// a service sends a broken event (an `llm.invalid_response` fault), not a cut
/// connection. `None` when `messages` holds no whole message.
pub(crate) fn cut_last_payload(messages: &[u8], rng: &mut DeterministicRng) -> Option<Vec<u8>> {
    let mut start = 0;
    let mut last = None;
    for _ in 0..MESSAGES_PER_CUT_MAX {
        let Some(prelude) = messages.get(start..start + PRELUDE_BYTES) else {
            break;
        };
        let total = u32::from_be_bytes(prelude[0..4].try_into().ok()?) as usize;
        let headers_len = u32::from_be_bytes(prelude[4..8].try_into().ok()?) as usize;
        if total < PRELUDE_BYTES + headers_len + CRC_BYTES || start + total > messages.len() {
            return None;
        }
        last = Some((start, total, headers_len));
        start += total;
    }
    let (start, total, headers_len) = last?;
    let block = &messages[start + PRELUDE_BYTES..start + PRELUDE_BYTES + headers_len];
    let payload = &messages[start + PRELUDE_BYTES + headers_len..start + total - CRC_BYTES];
    let cut = crate::network::unparseable::cut_document(payload, rng);
    let mut out = messages[..start].to_vec();
    out.extend(framed(block, &cut));
    Some(out)
}

/// An event: `:event-type`, `:content-type: application/json`, `:message-type: event`
/// (the headers' order in Bedrock's streams, as botocore's parser reads them).
pub(crate) fn event(kind: &str, payload: &[u8]) -> Vec<u8> {
    message(
        &[
            (":event-type", kind),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload,
    )
}

/// An exception: `:exception-type` names it, `:message-type: exception`, the payload
/// `{"message": ...}`.
pub(crate) fn exception(kind: &str, payload: &[u8]) -> Vec<u8> {
    message(
        &[
            (":exception-type", kind),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        payload,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// botocore `tests/unit/test_eventstream.py`: `PAYLOAD_NO_HEADERS` and
    /// `PAYLOAD_ONE_STR_HEADER` (awslabs/aws-c-event-stream's vectors), byte for byte.
    /// Headers, then the published encoding.
    type Case = (&'static [(&'static str, &'static str)], &'static [u8]);

    #[test]
    fn botocores_vectors_encode_byte_for_byte() {
        // Table: headers, the published encoding (of the payload `{'foo':'bar'}`).
        let cases: [Case; 2] = [
            (&[], b"\x00\x00\x00\x1d\x00\x00\x00\x00\xfdR\x8cZ{'foo':'bar'}\xc3e96"),
            (
                &[("content-type", "application/json")],
                b"\x00\x00\x00=\x00\x00\x00 \x07\xfd\x83\x96\x0ccontent-type\x07\x00\x10application/json{'foo':'bar'}\x8d\x9c\x08\xb1",
            ),
        ];
        for (headers, expected) in cases {
            assert_eq!(message(headers, b"{'foo':'bar'}"), expected, "{headers:?}");
        }
    }

    #[test]
    fn umi_cores_decoder_reads_what_this_writes() {
        use umi_core::llm::bedrock::eventstream::FrameDecoder;
        let mut bytes = event("messageStop", br#"{"stopReason":"end_turn"}"#);
        bytes.extend(exception(
            "throttlingException",
            br#"{"message":"slow down"}"#,
        ));
        let mut out = Vec::new();
        FrameDecoder::new().feed(&bytes, &mut out).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].header(":event-type"), Some("messageStop"));
        assert_eq!(out[1].header(":message-type"), Some("exception"));
        assert_eq!(out[1].payload, br#"{"message":"slow down"}"#);
    }
}
