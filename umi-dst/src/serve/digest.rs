//! What a model entry of the session log says beyond its trace, for the plugins' oracles:
//! what the response the client received carried (`carried`), and a digest of the
//! conversation its request sent (`history`).
//!
//! Both are read with the format's own code, never by hand: the body as it was sent
//! (every piece, up to where it was cut) through the format's client decoder
//! ([`crate::network::WireFormat::decode_as_client`], or its whole-body parser for a
//! JSON answer), the request through the format's server parser (the one that seeds the
//! answer, `answer::conversation_hash`). So `carried` is what a client of that format
//! saw: a text prefix and each tool call as far as its events arrived, and `whole` only
//! when the format's end of a whole answer came. Neither goes into any trace hash: the
//! same run hashes alike with or without them. They let the plugins judge evidence (did
//! a later request's history hold a turn built from a cut response, did a tool run with
//! its arguments: docs/adr/0019-the-cut-oracle-judges-evidence.md).

use std::collections::BTreeMap;

use serde::Serialize;
use umi_core::llm::{CompletionRequest, CompletionResponse, Message, StreamEvent, ToolCall};

use super::answer::Recorded;
use crate::network::WireFormat;

/// Tool calls kept per response at most (a call index past it is left out).
pub(crate) const CARRIED_TOOL_CALLS_MAX: usize = 1_024;

/// One tool call as a response carried it, or as a request's history holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct CallDigest {
    /// The call's id (`None`: none arrived before the cut).
    pub(crate) id: Option<String>,
    /// The tool's name (`None`: none arrived before the cut).
    pub(crate) name: Option<String>,
    /// The argument text as far as it was sent (a history's: the arguments as JSON).
    pub(crate) arguments: String,
}

/// What the response a client received carried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Carried {
    /// Whether the format's end of a whole answer arrived (false when cut).
    pub(crate) whole: bool,
    /// The answer's text as far as it arrived.
    pub(crate) text: String,
    /// The tool calls as far as they arrived, in index order.
    pub(crate) tool_calls: Vec<CallDigest>,
}

/// One assistant turn of a request's conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Turn {
    pub(crate) text: String,
    pub(crate) tool_calls: Vec<CallDigest>,
}

/// One tool result of a request's conversation: which call it answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ResultDigest {
    pub(crate) call_id: String,
}

/// A digest of a request's conversation: its assistant turns and its tool results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct History {
    pub(crate) assistant: Vec<Turn>,
    pub(crate) tool_results: Vec<ResultDigest>,
}

fn call_of(call: &ToolCall) -> CallDigest {
    CallDigest {
        id: Some(call.id.clone()),
        name: Some(call.name.clone()),
        // Canonical (sorted keys): the log reads the same with serde_json's `preserve_order`
        // on (a build with rig) or off.
        arguments: umi_core::canonical_json::to_string(&call.arguments),
    }
}

/// The digest of `request`'s conversation, as the format's server parsed it.
pub(crate) fn history(request: &CompletionRequest) -> History {
    let mut history = History {
        assistant: Vec::new(),
        tool_results: Vec::new(),
    };
    for message in &request.messages {
        match message {
            Message::Assistant {
                content,
                tool_calls,
            } => history.assistant.push(Turn {
                text: content.clone(),
                tool_calls: tool_calls.iter().map(call_of).collect(),
            }),
            Message::Tool { tool_call_id, .. } => history.tool_results.push(ResultDigest {
                call_id: tool_call_id.clone(),
            }),
            Message::System { .. } | Message::User { .. } => {}
        }
    }
    history
}

/// What `recorded` (a response of `format`) carried to its client, decoded from the
/// bytes sent; `None` for anything but a 200. `cut`: whether the body ended short of a
/// whole answer (the entry's `cut`).
pub(crate) fn carried(format: WireFormat, recorded: &Recorded, cut: bool) -> Option<Carried> {
    if recorded.status != Some(200) {
        return None;
    }
    let content_type = recorded
        .headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
        .map(|(_, value)| value.as_str());
    // A JSON body is a whole answer, the way the format's client tells (its
    // `ClientFormat::is_whole_body`); anything else, or JSON its parser refuses (an
    // Ollama stream's lines, a cut body), is read by its stream decoder.
    if content_type.is_some_and(|t| t.contains("application/json")) {
        let body: Vec<u8> = recorded
            .pieces
            .iter()
            .map(|(_, b)| b.as_slice())
            .collect::<Vec<_>>()
            .concat();
        if let Ok(response) = format.parse_as_client(&String::from_utf8_lossy(&body)) {
            return Some(from_response(&response, !cut));
        }
    }
    let reads: Vec<&[u8]> = recorded.pieces.iter().map(|(_, b)| b.as_slice()).collect();
    let decoded = format.decode_as_client(&reads);
    Some(from_events(
        &decoded.events,
        !cut && decoded.error.is_none(),
    ))
}

fn from_response(response: &CompletionResponse, whole: bool) -> Carried {
    Carried {
        whole,
        text: response.text.clone(),
        tool_calls: response
            .tool_calls
            .iter()
            .take(CARRIED_TOOL_CALLS_MAX)
            .map(call_of)
            .collect(),
    }
}

/// A stream's events gathered: the text deltas joined, each call's pieces by index.
fn from_events(events: &[StreamEvent], whole: bool) -> Carried {
    let mut text = String::new();
    let mut calls: BTreeMap<u32, CallDigest> = BTreeMap::new();
    for event in events {
        match event {
            StreamEvent::TextDelta { text: more } => text.push_str(more),
            StreamEvent::ToolCallDelta {
                index,
                id,
                name,
                arguments_fragment,
            } => {
                if !calls.contains_key(index) && calls.len() >= CARRIED_TOOL_CALLS_MAX {
                    continue;
                }
                let call = calls.entry(*index).or_default();
                if call.id.is_none() {
                    call.id.clone_from(id);
                }
                if call.name.is_none() {
                    call.name.clone_from(name);
                }
                if let Some(fragment) = arguments_fragment {
                    call.arguments.push_str(fragment);
                }
            }
            StreamEvent::ReasoningDelta { .. }
            | StreamEvent::Usage { .. }
            | StreamEvent::Done { .. } => {}
        }
    }
    Carried {
        whole,
        text,
        tool_calls: calls.into_values().collect(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::trace::TraceHash;

    fn recorded(content_type: &str, pieces: &[&str]) -> Recorded {
        Recorded {
            status: Some(200),
            headers: vec![("content-type".into(), content_type.into())],
            pieces: pieces
                .iter()
                .map(|p| (Duration::ZERO, p.as_bytes().to_vec()))
                .collect(),
            end: super::super::answer::End::Complete,
            head_at: Duration::ZERO,
            end_at: Duration::ZERO,
            run_seed: 0,
            faults: Vec::new(),
            trace: Vec::new(),
            trace_hash: TraceHash([0; 32]),
            tool: None,
        }
    }

    // Chunks as OpenAI streams a tool call (platform.openai.com API reference, "The chat
    // completion chunk object"): id and name first, then the arguments in fragments.
    const CHUNK_CALL: &str = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"issue_refund\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n";
    const CHUNK_ARGS: &str = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"amount\\\": 21\"}}]},\"finish_reason\":null}]}\n\n";

    #[test]
    fn a_cut_stream_carries_the_call_as_far_as_it_was_sent() {
        let cut = recorded("text/event-stream", &[CHUNK_CALL, CHUNK_ARGS]);
        let carried = carried(WireFormat::OpenAiChat, &cut, true).unwrap();
        assert!(!carried.whole);
        assert_eq!(carried.tool_calls.len(), 1);
        assert_eq!(carried.tool_calls[0].id.as_deref(), Some("call_1"));
        assert_eq!(carried.tool_calls[0].name.as_deref(), Some("issue_refund"));
        assert_eq!(carried.tool_calls[0].arguments, "{\"amount\": 21");
        // Half an SSE event is nothing to the client's decoder.
        let half = recorded("text/event-stream", &[CHUNK_CALL, &CHUNK_ARGS[..40]]);
        let carried = super::carried(WireFormat::OpenAiChat, &half, true).unwrap();
        assert_eq!(carried.tool_calls[0].arguments, "");
    }

    #[test]
    fn a_whole_json_body_is_read_by_the_format_parser_and_a_broken_one_carries_nothing() {
        let body = r#"{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Sunny."},"finish_reason":"stop"}]}"#;
        let whole = carried(
            WireFormat::OpenAiChat,
            &recorded("application/json", &[body]),
            false,
        );
        assert_eq!(
            whole,
            Some(Carried {
                whole: true,
                text: "Sunny.".into(),
                tool_calls: Vec::new()
            })
        );
        let broken = carried(
            WireFormat::OpenAiChat,
            &recorded("application/json", &[&body[..30]]),
            true,
        )
        .unwrap();
        assert!(!broken.whole && broken.text.is_empty());
        let mut refused = recorded("application/json", &[body]);
        refused.status = Some(429);
        assert_eq!(carried(WireFormat::OpenAiChat, &refused, false), None);
    }

    #[test]
    fn a_history_keeps_assistant_turns_and_tool_results() {
        let request = CompletionRequest {
            messages: vec![
                Message::user("refund"),
                Message::assistant_tool_calls(
                    "ok",
                    vec![ToolCall::new(
                        "call_1",
                        "issue_refund",
                        serde_json::json!({"amount": 216}),
                    )],
                ),
                Message::tool_result("call_1", "done", true),
            ],
            ..CompletionRequest::default()
        };
        let history = history(&request);
        assert_eq!(history.assistant.len(), 1);
        assert_eq!(history.assistant[0].text, "ok");
        assert_eq!(
            history.assistant[0].tool_calls[0].arguments,
            "{\"amount\":216}"
        );
        assert_eq!(history.tool_results[0].call_id, "call_1");
    }
}
