//! The simulated MCP server over stdio, for agents that spawn their MCP servers
//! (`dst mcp`): one JSON-RPC message per line on stdin, one per line on stdout (MCP
//! 2025-11-25, `basic/transports.mdx`, stdio: "Messages are delimited by newlines, and
//! MUST NOT contain embedded newlines").
//!
//! Each line is answered as `dst serve` answers a POST to `/mcp` (the same host, in a
//! simulation of its own seeded by the seed, the message and its occurrence), and the
//! HTTP answer is turned into lines: a JSON object or each event of an SSE stream is a
//! line; a refusal is its JSON-RPC error with the request's id; a stream the simulation
//! cut is a server that dies mid-message (half a line, then exit), as a crashing stdio
//! server does; a stall is silence. stdio has no sessions: the process is one, and one
//! run: the tools' world (effects, idempotency keys seen, runs per call) lasts the
//! process, carried from each line's simulation to the next as `dst serve` carries it
//! across a scope, so a repeated key applies nothing and answers the key's first answer.

use std::collections::BTreeMap;

use serde_json::Value;
use umi_core::llm::transport::HttpRequest;
use umi_core::llm::wire::sse::SseDecoder;

use super::answer::{End, Recorded};
use super::config::ServeConfig;
use super::mcp::{McpState, answer, mcp_hash, run_seed};
use crate::mcp::{PROTOCOL_VERSION_HEADER, SESSION_HEADER};

/// What to do with one line of stdin.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StdioReply {
    /// Lines to write to stdout, in order (each without its newline).
    pub lines: Vec<String>,
    /// Bytes to write with no newline after them (a message cut off), then exit.
    pub died_mid_message: Option<String>,
}

/// A `dst mcp` process's state: its seed and tools, the session it runs in, the tools'
/// world, and how many times each message was seen.
#[derive(Debug)]
pub struct StdioServer {
    config: ServeConfig,
    held: McpState,
    session: Option<String>,
    protocol_version: Option<String>,
    occurrences: BTreeMap<[u8; 32], u64>,
    /// The operations an ordinal fault rule counts, as the process's lines asked them
    /// (the process is the run: `aim.rs`).
    aimed: BTreeMap<String, u64>,
}

impl StdioServer {
    /// A server answering with `config`'s seed, faults and MCP tools.
    pub fn new(config: ServeConfig) -> Self {
        Self {
            config,
            held: McpState::default(),
            session: None,
            protocol_version: None,
            occurrences: BTreeMap::new(),
            aimed: BTreeMap::new(),
        }
    }

    /// Answers one line of stdin.
    pub fn answer_line(&mut self, line: &str) -> StdioReply {
        let message = serde_json::from_str::<Value>(line).ok();
        let request_id = message.as_ref().and_then(|m| m.get("id")).cloned();
        let notification = message
            .as_ref()
            .is_some_and(|m| m.get("method").is_some() && m.get("id").is_none());
        let http = self.request(line);
        let hash = mcp_hash(&http);
        let occurrence = {
            let count = self.occurrences.entry(hash).or_insert(0);
            *count += 1;
            *count - 1
        };
        let seed = run_seed(self.config.seed, &hash, occurrence);
        let before = McpState {
            sessions: self.held.sessions.only(self.session.as_deref()),
            world: std::mem::take(&mut self.held.world),
        };
        let faults = &self.config.faults;
        let aimed = super::aim::counts(faults).then(|| {
            let asked = super::aim::counted(faults, super::aim::mcp_operations(&http));
            let earlier = super::aim::count_arrival(&mut self.aimed, asked);
            self.config.after_earlier(&earlier)
        });
        let config = aimed.flatten();
        let config = config.as_deref().unwrap_or(&self.config);
        let (recorded, after) = answer(config, (self.config.seed, seed), &http, &before);
        self.held
            .sessions
            .merge(self.session.as_deref(), &after.sessions);
        self.held.world = after.world;
        if let Some(session) = header(&recorded, SESSION_HEADER) {
            self.session = Some(session.to_owned());
        }
        let batch = message.as_ref().is_some_and(Value::is_array);
        let mut reply = lines_of(&recorded, request_id.as_ref(), notification);
        if batch {
            reply.lines = batched(reply.lines);
        }
        if let Some(version) = reply.lines.iter().find_map(|line| negotiated(line)) {
            self.protocol_version = Some(version);
        }
        reply
    }

    /// The line as the POST the HTTP transport would carry.
    fn request(&self, line: &str) -> HttpRequest {
        let mut headers = vec![
            (
                "accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
            ("content-type".to_owned(), "application/json".to_owned()),
        ];
        if let Some(session) = &self.session {
            headers.push((SESSION_HEADER.to_owned(), session.clone()));
        }
        if let Some(version) = &self.protocol_version {
            headers.push((PROTOCOL_VERSION_HEADER.to_owned(), version.clone()));
        }
        HttpRequest {
            method: "POST",
            url: String::new(),
            headers,
            body: line.as_bytes().to_vec(),
        }
    }
}

fn header<'a>(recorded: &'a Recorded, name: &str) -> Option<&'a str> {
    recorded
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The protocol version an `initialize` result agreed, if `line` is one.
fn negotiated(line: &str) -> Option<String> {
    let message: Value = serde_json::from_str(line).ok()?;
    let version = message.get("result")?.get("protocolVersion")?.as_str()?;
    Some(version.to_owned())
}

/// A batch's answer on stdio: its responses as one line, a JSON-RPC batch (2025-03-26,
/// stdio: messages "may be JSON-RPC requests, notifications, responses—or a JSON-RPC
/// batch"), after the notifications that came before them, each a line. Over HTTP an
/// SSE answer sends each response as its own event; a line of each here would be
/// responses to a batch that are no batch.
fn batched(lines: Vec<String>) -> Vec<String> {
    let mut responses: Vec<Value> = Vec::new();
    let mut out = Vec::new();
    for line in lines {
        match serde_json::from_str::<Value>(&line) {
            Ok(Value::Array(items)) => responses.extend(items),
            // A response, not a refusal of the whole batch (its error has `id: null`).
            Ok(message)
                if message.get("id").is_some_and(|id| !id.is_null())
                    && message.get("method").is_none() =>
            {
                responses.push(message);
            }
            _ => out.push(line),
        }
    }
    if !responses.is_empty() {
        out.push(umi_core::canonical_json::to_string(&Value::Array(
            responses,
        )));
    }
    out
}

/// The lines an HTTP answer comes to on stdio.
fn lines_of(recorded: &Recorded, request_id: Option<&Value>, notification: bool) -> StdioReply {
    let body: Vec<u8> = recorded
        .pieces
        .iter()
        .flat_map(|(_, bytes)| bytes.clone())
        .collect();
    let text = String::from_utf8_lossy(&body).into_owned();
    if recorded.end == End::Stall && body.is_empty() {
        // No answer, ever: on stdio, silence (the client's own timeout must fire).
        return StdioReply::default();
    }
    let Some(status) = recorded.status else {
        // The connection broke before any answer (a tool whose call never arrived): on
        // stdio, the server died.
        return StdioReply {
            lines: Vec::new(),
            died_mid_message: Some(String::new()),
        };
    };
    if status == 202 {
        return StdioReply::default();
    }
    let sse = header(recorded, "content-type").is_some_and(|t| t.starts_with("text/event-stream"));
    let mut reply = StdioReply::default();
    if sse {
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        let _ = decoder.feed(&body, &mut events);
        reply.lines = events
            .into_iter()
            .map(|e| e.data)
            .filter(|d| !d.is_empty())
            .collect();
    } else if recorded.end == End::Complete && !(status >= 400 && notification) {
        // A refused notification gets no line: JSON-RPC answers no notification.
        reply.lines.push(with_id(&text, status, request_id));
    }
    if recorded.end == End::Reset {
        let partial = if sse { String::new() } else { text };
        reply.died_mid_message = Some(partial);
    }
    reply
}

/// A refusal's error (written with `id: null` over HTTP) with the request's id: on stdio
/// there is no status to carry it, only the message.
fn with_id(text: &str, status: u16, request_id: Option<&Value>) -> String {
    if status < 400 {
        return text.to_owned();
    }
    match (serde_json::from_str::<Value>(text), request_id) {
        (Ok(mut message), Some(id)) if message.get("error").is_some() => {
            message["id"] = id.clone();
            umi_core::canonical_json::to_string(&message)
        }
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn say(server: &mut StdioServer, line: &str) -> Vec<Value> {
        let reply = server.answer_line(line);
        assert_eq!(reply.died_mid_message, None, "{line}");
        reply
            .lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// A session over stdio: initialize, the notification (no line back), the tools, a
    /// call; and a second process with the same seed says the same.
    #[test]
    fn a_stdio_session_initializes_lists_calls_and_replays() {
        let session = |seed: u64| {
            let config = ServeConfig {
                seed,
                ..ServeConfig::default()
            };
            let mut server = StdioServer::new(config);
            let mut seen = say(
                &mut server,
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            );
            assert!(
                say(
                    &mut server,
                    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
                )
                .is_empty()
            );
            seen.extend(say(
                &mut server,
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            ));
            seen.extend(say(
                &mut server,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"Oslo"}}}"#,
            ));
            seen.extend(say(
                &mut server,
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope"}}"#,
            ));
            seen
        };
        let seen = session(4);
        assert_eq!(seen[0]["result"]["protocolVersion"], "2025-06-18");
        assert_eq!(seen[1]["result"]["tools"].as_array().unwrap().len(), 3);
        assert_eq!(seen[2]["id"], 2);
        assert!(
            seen[2]["result"]["structuredContent"]["celsius"].is_i64(),
            "{}",
            seen[2]
        );
        assert_eq!(
            (&seen[3]["id"], &seen[3]["error"]["code"]),
            (&Value::from(3), &Value::from(-32602))
        );
        assert_eq!(session(4), seen, "the same seed, the same lines");
        assert_ne!(session(5)[2], seen[2], "another seed, another answer");
    }

    /// A server that never answers is silence on stdio, never a death: the stall of a
    /// JSON-mode server once came out as no status, and `dst mcp` exited.
    #[test]
    fn a_stall_is_silence_and_the_server_lives_on() {
        for seed in 1..=8 {
            let config = ServeConfig {
                seed,
                faults: vec![crate::FaultConfig::chance(
                    crate::FaultKind::McpNoResponse,
                    1.0,
                )],
                ..ServeConfig::default()
            };
            let mut server = StdioServer::new(config);
            let reply = server.answer_line(
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#,
            );
            assert_eq!(reply, StdioReply::default(), "seed {seed}");
        }
        let mut server = StdioServer::new(ServeConfig::default());
        let refused =
            server.answer_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert_eq!(
            refused,
            StdioReply::default(),
            "a refused notification is not answered"
        );
    }

    /// A batch on stdio, in a session that negotiated 2025-03-26: one line back, the
    /// array of its responses in order (whether the seed's server answers with JSON or
    /// SSE); in a 2025-11-25 session, the -32600 refusal.
    #[test]
    fn a_batch_is_one_line_of_responses_where_the_version_has_batches() {
        for seed in 1..=4 {
            let config = ServeConfig {
                seed,
                ..ServeConfig::default()
            };
            let mut server = StdioServer::new(config);
            let init = say(
                &mut server,
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}"#,
            );
            assert_eq!(init[0]["result"]["protocolVersion"], "2025-03-26");
            let batch = say(
                &mut server,
                r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"b","method":"tools/list"}]"#,
            );
            assert_eq!(batch.len(), 1, "seed {seed}: {batch:?}");
            let responses = batch[0].as_array().expect("a batch of responses");
            assert_eq!(responses.len(), 2, "seed {seed}");
            assert_eq!(
                (&responses[0]["id"], &responses[1]["id"]),
                (&json!(1), &json!("b"))
            );
            assert_eq!(responses[1]["result"]["tools"].as_array().unwrap().len(), 3);
        }
        let mut server = StdioServer::new(ServeConfig::default());
        say(
            &mut server,
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#,
        );
        let refused = say(&mut server, r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#);
        assert_eq!(refused[0]["error"]["code"], -32600, "{refused:?}");
    }

    #[test]
    fn refusals_carry_the_requests_id_on_stdio() {
        let mut server = StdioServer::new(ServeConfig::default());
        // Before initialize, a request has no session: the HTTP refusal, with its id.
        let lines = say(
            &mut server,
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#,
        );
        assert_eq!(lines[0]["id"], "a");
        assert_eq!(lines[0]["error"]["code"], -32000);
        let garbage = server.answer_line("{not json");
        assert_eq!(garbage.lines.len(), 1, "{garbage:?}");
        assert!(garbage.lines[0].contains("-32700"));
    }

    /// One process is one run: a key sent again applies nothing and answers the key's
    /// first answer (before, each line began from a fresh world and refunded again).
    #[test]
    fn a_process_is_one_run_and_a_repeated_key_applies_once() {
        let mut config = ServeConfig {
            seed: 3,
            ..ServeConfig::default()
        };
        config.mcp.tools.push(crate::serve::McpToolSpec {
            name: "issue_refund".into(),
            description: "refunds an order".into(),
            input_schema: serde_json::json!({"type": "object", "properties": {"order_id": {"type": "string"}, "key": {"type": "string"}}, "required": ["order_id"]}),
            output_schema: Some(
                serde_json::json!({"type": "object", "properties": {"refund_id": {"type": "string"}}, "required": ["refund_id"]}),
            ),
            side_effects: true,
            idempotency_key: Some("key".into()),
            latency_ms: None,
        });
        let mut server = StdioServer::new(config);
        say(
            &mut server,
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#,
        );
        let refund = |id: u64| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"issue_refund","arguments":{{"order_id":"A-1","key":"k"}}}}}}"#
            )
        };
        let first = say(&mut server, &refund(1));
        let again = say(&mut server, &refund(2));
        assert_eq!(again[0]["result"], first[0]["result"]);
        assert!(first[0]["result"]["structuredContent"]["refund_id"].is_string());
        let applied: Vec<bool> = server
            .held
            .world
            .effects()
            .iter()
            .map(|e| e.applied)
            .collect();
        assert_eq!(applied, [true, false]);
    }
}
