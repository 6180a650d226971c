//! The bytes of an `llm.invalid_response` fault on the wire: a 200 whose body the client
//! cannot parse, in the provider's own shape, corrupted.
//!
//! SimLLM ends such an answer with an [`umi_core::llm::LlmError::InvalidResponse`] where
//! an event would have been. A whole answer's body is the format's own whole body (its
//! public source is the format's, see [`super::profile`]) for the text received so far,
//! cut at a seeded byte after its opening `{` or `[` and before its end: any proper
//! prefix of a JSON document fails to parse, and the connection ends cleanly, so the
//! client's JSON decoder (not its transport) is what fails. A stream's broken part is
//! the format's own frame for that text (an SSE `data:` line, an NDJSON line, a JSON
//! array element) cut the same way inside its JSON, then the frame's own terminator,
//! and the server closes: the client's per-event JSON decode fails.

use crate::rng::DeterministicRng;

/// `body` cut at a seeded byte strictly inside its JSON document (after the first `{`
/// or `[`, before the last non-blank byte), on a UTF-8 boundary. A body with no JSON in
/// it is cut in half.
pub(crate) fn cut_document(body: &[u8], rng: &mut DeterministicRng) -> Vec<u8> {
    let end = trimmed_len(body);
    let Some(open) = body[..end].iter().position(|b| matches!(b, b'{' | b'[')) else {
        return body[..body.len() / 2].to_vec();
    };
    let keep = cut_point(body, open + 1, end, rng);
    body[..keep].to_vec()
}

/// `frame` (one encoded event) with its last line's JSON cut at a seeded byte, then the
/// blank bytes it ended with (its terminator), or `None` when the frame has no JSON.
pub(crate) fn cut_frame(frame: &[u8], rng: &mut DeterministicRng) -> Option<Vec<u8>> {
    let end = trimmed_len(frame);
    let line_start = frame[..end]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let open = line_start
        + frame[line_start..end]
            .iter()
            .position(|b| matches!(b, b'{' | b'['))?;
    let keep = cut_point(frame, open + 1, end, rng);
    let mut out = frame[..keep].to_vec();
    out.extend_from_slice(&frame[end..]);
    Some(out)
}

/// A seeded cut in `low..end` (at least `low`, never `end`), moved back to a UTF-8
/// boundary no earlier than `low`.
fn cut_point(bytes: &[u8], low: usize, end: usize, rng: &mut DeterministicRng) -> usize {
    if end <= low {
        return low.min(bytes.len());
    }
    let mut keep = rng.range_inclusive(low as u64, end as u64 - 1) as usize;
    while keep > low && (bytes[keep] & 0b1100_0000) == 0b1000_0000 {
        keep -= 1;
    }
    keep
}

/// The length of `bytes` without trailing blanks (spaces, CR, LF).
fn trimmed_len(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\r' | b'\n' | b'\t'))
        .map_or(0, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_bodies_and_frames_never_parse_and_keep_their_framing() {
        let body =
            br#"{"id":"chatcmpl-1","choices":[{"message":{"content":"h\u00e9llo \u6771"}}]}"#;
        let frame = b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"caf\xc3\xa9\"}}\n\n";
        for seed in 0..200 {
            let mut rng = DeterministicRng::new(seed);
            let cut = cut_document(body, &mut rng);
            assert!(cut.len() < body.len() && cut.starts_with(b"{"));
            assert!(serde_json::from_slice::<serde_json::Value>(&cut).is_err());
            let cut = cut_frame(frame, &mut rng).unwrap();
            assert!(
                cut.ends_with(b"\n\n") && cut.starts_with(b"event: content_block_delta\ndata: {")
            );
            let line = &cut[cut.iter().position(|&b| b == b'{').unwrap()..cut.len() - 2];
            assert!(serde_json::from_slice::<serde_json::Value>(line).is_err());
            assert!(
                std::str::from_utf8(&cut).is_ok(),
                "cut on a character boundary"
            );
        }
        assert_eq!(
            cut_frame(b": ping\n\n", &mut DeterministicRng::new(1)),
            None
        );
    }
}
