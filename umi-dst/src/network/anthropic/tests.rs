//! The Messages server's pure pieces: escape-safe fragments, padding, ids, and request
//! refusals in the API's words.

use umi_core::llm::transport::HttpRequest;
use umi_core::llm::{ToolChoice, tokens::estimate_request_tokens};

use super::request::parse;
use super::stream::escape_safe_len;
use super::{padded, tool_use_id};
use crate::network::json::Json;

#[test]
fn fragments_never_end_inside_an_escape() {
    let cases: [(&str, usize); 9] = [
        ("", 0),
        ("{\"a\": 1", 7),
        ("\"x\\", 2),
        ("\"x\\\"", 4),
        ("\\u00", 0),
        ("a\\u00e9", 7),
        ("a\\u00e9\\", 7),
        ("\\\\", 2),
        ("\\\\\\", 2),
    ];
    for (text, safe) in cases {
        assert_eq!(escape_safe_len(text), safe, "{text:?}");
    }
}

#[test]
fn padding_goes_before_the_last_brace() {
    let data = Json::object(vec![("type", "message_stop".into())]);
    assert_eq!(padded(&data, 0), br#"{"type":"message_stop"}"#);
    assert_eq!(padded(&data, 3), br#"{"type":"message_stop"   }"#);
}

#[test]
fn tool_ids_are_shaped_and_stable() {
    let id = tool_use_id("call_0123456789ab");
    assert!(id.starts_with("toolu_01"), "{id}");
    assert_eq!(id.len(), "toolu_01".len() + 22);
    assert!(id[8..].chars().all(|c| c.is_ascii_alphanumeric()));
    assert_eq!(id, tool_use_id("call_0123456789ab"));
    assert_ne!(id, tool_use_id("call_0123456789ac"));
}

fn http(body: &str, version: bool) -> HttpRequest {
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    if version {
        headers.push(("anthropic-version".to_owned(), "2023-06-01".to_owned()));
    }
    HttpRequest {
        method: "POST",
        url: "https://api.anthropic.sim/v1/messages".into(),
        headers,
        body: body.as_bytes().to_vec(),
    }
}

#[test]
fn refusals_use_the_apis_words() {
    let user = r#"[{"role":"user","content":"hi"}]"#;
    let cases: [(String, bool, &str); 7] = [
        (format!(r#"{{"model":"m","max_tokens":5,"messages":{user}}}"#), false, "anthropic-version: header is required"),
        (format!(r#"{{"model":"m","messages":{user}}}"#), true, "max_tokens: Field required"),
        (r#"{"max_tokens":5,"messages":[]}"#.into(), true, "model: Field required"),
        ("{not json".into(), true, "The request body is not valid JSON: "),
        (
            r#"{"model":"m","max_tokens":5,"messages":[{"role":"system","content":"x"}]}"#.into(),
            true,
            "messages: Unexpected role \"system\".",
        ),
        (
            r#"{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]},{"role":"user","content":"b"}]}"#.into(),
            true,
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1.",
        ),
        (
            r#"{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"x"}]}]}"#.into(),
            true,
            "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9.",
        ),
    ];
    for (body, version, words) in cases {
        let refused = parse(&http(&body, version)).expect_err(&body);
        assert!(
            refused.message.starts_with(words),
            "{body}: {:?} does not start with {words:?}",
            refused.message
        );
    }
}

#[test]
fn a_tool_round_trip_parses_to_the_conversation_the_client_sent() {
    let body = r#"{"model":"claude-x","max_tokens":64,"system":"be brief",
        "messages":[
          {"role":"user","content":[{"type":"text","text":"weather?"}]},
          {"role":"assistant","content":[{"type":"text","text":"checking"},{"type":"tool_use","id":"toolu_1","name":"weather","input":{"city":"Rome"}}]},
          {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"30 C"}],"is_error":true},{"type":"text","text":"and now?"}]}
        ],
        "tools":[{"name":"weather","description":"d","input_schema":{"type":"object"}}],
        "tool_choice":{"type":"any","disable_parallel_tool_use":true},
        "stop_sequences":["END"],"stream":true}"#;
    let parsed = parse(&http(body, true)).unwrap();
    let request = &parsed.request;
    assert!(parsed.stream && !parsed.reasoning_requested);
    assert_eq!(request.model, "claude-x");
    assert_eq!(request.max_tokens, Some(64));
    assert_eq!(request.messages.len(), 5, "{:?}", request.messages);
    assert_eq!(request.tool_choice, Some(ToolChoice::Required));
    assert_eq!(request.parallel_tool_calls, Some(false));
    assert_eq!(request.stop, ["END"]);
    assert_eq!(request.tools[0].name, "weather");
    let debug = format!("{:?}", request.messages);
    for part in ["be brief", "checking", "Rome", "30 C", "and now?"] {
        assert!(debug.contains(part), "{part} lost: {debug}");
    }
    assert!(estimate_request_tokens(request) > 0);
}

#[test]
fn a_thinking_budget_must_fit_under_max_tokens() {
    let body = r#"{"model":"m","max_tokens":1024,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"x"}]}"#;
    let refused = parse(&http(body, true)).unwrap_err();
    assert!(
        refused
            .message
            .starts_with("`max_tokens` must be greater than `thinking.budget_tokens`")
    );
    let body = body.replace("\"budget_tokens\":1024", "\"budget_tokens\":1000");
    assert!(parse(&http(&body, true)).unwrap().reasoning_requested);
}
