//! The Responses server's pure pieces: request refusals in OpenAI's words, event key
//! order per era, obfuscation lengths, ids.

use super::object::{Ids, event, obfuscation};
use super::request::parse;
use super::{Layout, code_for};
use crate::network::json::{Json, Spacing};
use crate::rng::DeterministicRng;

#[test]
fn refusals_use_openais_words_and_codes() {
    let cases = [
        (
            r#"{"model":"m","input":"hi","stop":["x"]}"#,
            "Unknown parameter: 'stop'.",
            Some("unknown_parameter"),
        ),
        (
            r#"{"model":"m","messages":[]}"#,
            "Unknown parameter: 'messages'.",
            Some("unknown_parameter"),
        ),
        (
            r#"{"input":"hi"}"#,
            "Missing required parameter: 'model'.",
            Some("missing_required_parameter"),
        ),
        (
            r#"{"model":"m","input":"hi","max_output_tokens":5}"#,
            "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got 5 instead.",
            Some("integer_below_min_value"),
        ),
    ];
    for (body, message, code) in cases {
        let refused = parse(body.as_bytes()).expect_err(body);
        assert_eq!(refused.message, message, "{body}");
        assert_eq!(code_for(&refused.message), code, "{body}");
    }
}

#[test]
fn input_items_become_the_conversation() {
    let body = r#"{"model":"m","instructions":"be brief","input":[
        {"role":"user","content":"capital?"},
        {"role":"assistant","content":"checking"},
        {"type":"function_call","call_id":"call_1","name":"get_capital","arguments":"{\"country\":\"X\"}"},
        {"type":"function_call_output","call_id":"call_1","output":"Y"},
        {"role":"user","content":[{"type":"input_text","text":"and?"}]}],
        "reasoning":{"summary":"auto"},"max_output_tokens":64,"stream":true}"#;
    let parsed = parse(body.as_bytes()).unwrap();
    assert!(parsed.stream && parsed.reasoning_requested);
    assert_eq!(parsed.request.max_tokens, Some(64));
    let debug = format!("{:?}", parsed.request.messages);
    assert_eq!(parsed.request.messages.len(), 5, "{debug}");
    for part in [
        "be brief",
        "capital?",
        "checking",
        "get_capital",
        "Y",
        "and?",
    ] {
        assert!(debug.contains(part), "{part}: {debug}");
    }
}

#[test]
fn events_keep_each_eras_key_order() {
    let fields = || {
        vec![
            ("item_id", Json::from("msg_1")),
            ("output_index", 0u32.into()),
            ("delta", "Hi".into()),
        ]
    };
    let y2025 =
        event(Layout::Y2025, "response.output_text.delta", 4, fields()).to_bytes(Spacing::Compact);
    assert_eq!(
        String::from_utf8(y2025).unwrap(),
        r#"{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"delta":"Hi"}"#
    );
    let y2026 =
        event(Layout::Y2026, "response.output_text.delta", 4, fields()).to_bytes(Spacing::Compact);
    assert_eq!(
        String::from_utf8(y2026).unwrap(),
        r#"{"type":"response.output_text.delta","delta":"Hi","item_id":"msg_1","output_index":0,"sequence_number":4}"#
    );
}

#[test]
fn obfuscation_evens_out_sizes_and_ids_share_the_response_prefix() {
    let mut rng = DeterministicRng::new(1);
    // GM: `Hello` 11, ` World` 10; V-RSN: `**Calcul` 8, `{"` 14.
    for (delta, len) in [("Hello", 11), (" World", 10), ("**Calcul", 8), ("{\"", 14)] {
        assert_eq!(obfuscation(delta, &mut rng).len(), len, "{delta:?}");
    }
    let ids = Ids::new(&mut rng, 0x69a3_1433);
    let (response, message) = (ids.next("resp", &mut rng), ids.next("msg", &mut rng));
    assert_eq!(response.len(), "resp_".len() + 50);
    assert_eq!(&response[5..31], &message[4..30], "{response} {message}");
    assert!(response[5..].contains("0069a31433"));
}
