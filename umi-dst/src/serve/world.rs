//! A scope's tools' world over `dst serve`, and what each MCP `tools/call` did to it.
//!
//! A scope is one run: the simulated tools' world ([`ToolsWorld`]: the effect ledger,
//! the idempotency keys seen, the runs per call) lasts the scope, carried into each MCP
//! request's simulation and back out, as the MCP sessions are. The scope's MCP requests
//! take turns with it (one request's simulation at a time, in the order they reach the
//! lock: the order they arrive), so two calls with one key in flight at once still apply
//! it once. Each `tools/call` entry of the scope's log says, in its `tool` field, what
//! the call was and what it did, so an oracle (`umi.check_effects()`) need not parse
//! event text.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use super::mcp_tools::McpToolsSpec;
use crate::mcp::CALL_ID_META_KEY;
use crate::tools::ToolsWorld;
use crate::trace::{KeptEvent, ToolEvent, TraceKind};

/// A scope's world, shared by its requests: one holds it while its simulation runs.
pub(crate) type SharedWorld = Arc<tokio::sync::Mutex<ToolsWorld>>;

/// What one MCP `tools/call` was and did (the log entry's `tool` field).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ToolEntry {
    /// The tool asked for.
    pub(crate) name: String,
    /// Its arguments, as sent (`{}` when none were).
    pub(crate) arguments: Value,
    /// The model's call id the client sent in `_meta` (`umi.dev/tool_call_id`), if any.
    pub(crate) call_id: Option<String>,
    /// The idempotency key the arguments carry, when the tool declares one.
    pub(crate) idempotency_key: Option<String>,
    /// Whether the tool ran (and a tool with side effects did them, unless deduplicated).
    pub(crate) ran: bool,
    /// Whether it ran with a key the tool had seen in this scope: nothing applied, and
    /// the key's first answer again.
    pub(crate) deduplicated: bool,
    /// Whether the tool is declared with side effects: a run not deduplicated is an
    /// effect.
    pub(crate) side_effects: bool,
}

/// The `tool` field of a request whose body is one JSON-RPC `tools/call` (none for
/// anything else), from the world `before` and `after` it and the run's `trace`.
pub(crate) fn tool_entry(
    spec: &McpToolsSpec,
    body: &[u8],
    (before, after): (&ToolsWorld, &ToolsWorld),
    trace: &[KeptEvent],
) -> Option<ToolEntry> {
    let message: Value = serde_json::from_slice(body).ok()?;
    if message.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    let params = message.get("params");
    let name = params?.get("name")?.as_str()?.to_owned();
    let arguments = match params.and_then(|p| p.get("arguments")) {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(arguments) => arguments.clone(),
    };
    let call_id = params
        .and_then(|p| p.get("_meta"))
        .and_then(|meta| meta.get(CALL_ID_META_KEY))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let declared = spec.tools.iter().find(|tool| tool.name == name);
    let idempotency_key = crate::tools::idempotency_key(
        declared.and_then(|tool| tool.idempotency_key.as_ref()),
        &arguments,
    );
    let ran = trace.iter().any(|event| {
        matches!(&event.record, TraceKind::Tool(ToolEvent::Call { name: called, ran: true, .. }) if *called == name)
    });
    let done = after
        .effects()
        .get(before.effects().len()..)
        .unwrap_or_default();
    let deduplicated = done
        .iter()
        .any(|effect| effect.tool == name && !effect.applied);
    Some(ToolEntry {
        name,
        arguments,
        call_id,
        idempotency_key,
        ran,
        deduplicated,
        side_effects: declared.is_some_and(|tool| tool.side_effects),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;
    use umi_core::llm::transport::HttpRequest;

    use super::*;
    use crate::mcp::SESSION_HEADER;
    use crate::serve::ServeConfig;
    use crate::serve::answer::Recorded;
    use crate::serve::mcp::{McpState, answer, mcp_hash, run_seed};
    use crate::serve::mcp_tools::McpToolSpec;

    /// One scope of a server, driven as `mcp::handle` drives it: occurrences counted,
    /// the request's session and the world carried in and back out.
    struct Scope {
        config: ServeConfig,
        held: McpState,
        occurrences: BTreeMap<[u8; 32], u64>,
    }

    impl Scope {
        fn new(config: ServeConfig) -> Self {
            Self {
                config,
                held: McpState::default(),
                occurrences: BTreeMap::new(),
            }
        }

        fn send(&mut self, body: &str, session: Option<&str>) -> Recorded {
            let mut headers = vec![
                (
                    "accept".to_owned(),
                    "application/json, text/event-stream".to_owned(),
                ),
                ("content-type".to_owned(), "application/json".to_owned()),
            ];
            if let Some(session) = session {
                headers.push((SESSION_HEADER.to_owned(), session.to_owned()));
            }
            let http = HttpRequest {
                method: "POST",
                url: String::new(),
                headers,
                body: body.as_bytes().to_vec(),
            };
            let hash = mcp_hash(&http);
            let count = self.occurrences.entry(hash).or_insert(0);
            *count += 1;
            let seed = self.config.seed;
            let before = McpState {
                sessions: self.held.sessions.only(session),
                world: self.held.world.clone(),
            };
            let run = run_seed(seed, &hash, *count - 1);
            let (recorded, after) = answer(&self.config, (seed, run), &http, &before);
            self.held.sessions.merge(session, &after.sessions);
            self.held.world = after.world;
            recorded
        }

        /// A new MCP session's id.
        fn initialize(&mut self) -> String {
            let recorded = self.send(
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
                None,
            );
            header(&recorded, SESSION_HEADER).expect("initialize began a session")
        }
    }

    fn header(recorded: &Recorded, name: &str) -> Option<String> {
        recorded
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    }

    /// The JSON-RPC message a recorded answer carries (the last SSE event's, or the body).
    fn message(recorded: &Recorded) -> Value {
        let body: Vec<u8> = recorded
            .pieces
            .iter()
            .flat_map(|(_, b)| b.clone())
            .collect();
        let text = String::from_utf8(body).unwrap();
        let data = text
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .next_back()
            .unwrap_or(&text);
        serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    /// The built-in tools and `issue_refund`, which honours `idempotency_key`.
    fn refunds(seed: u64) -> ServeConfig {
        let mut config = ServeConfig {
            seed,
            ..ServeConfig::default()
        };
        config.mcp.tools.push(McpToolSpec {
            name: "issue_refund".into(),
            description: "refunds an order".into(),
            input_schema: json!({"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "integer"}, "idempotency_key": {"type": "string"}}, "required": ["order_id", "amount"]}),
            output_schema: Some(
                json!({"type": "object", "properties": {"refund_id": {"type": "string"}}, "required": ["refund_id"]}),
            ),
            side_effects: true,
            idempotency_key: Some("idempotency_key".into()),
            latency_ms: None,
        });
        config.mcp.check().unwrap();
        config
    }

    fn refund(id: u64, call_id: &str, key: Option<&str>) -> String {
        let mut arguments = json!({"order_id": "A-1", "amount": 40});
        if let Some(key) = key {
            arguments["idempotency_key"] = key.into();
        }
        let meta = json!({ crate::mcp::CALL_ID_META_KEY: call_id });
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "issue_refund", "arguments": arguments, "_meta": meta}})
        .to_string()
    }

    /// Before the world lasted the scope, each request began from a fresh one: the same
    /// key refunded again, with another refund id.
    #[test]
    fn a_key_seen_in_the_scope_applies_once_across_requests_and_sessions() {
        for seed in 1..=6 {
            let mut scope = Scope::new(refunds(seed));
            let first_session = scope.initialize();
            let first = scope.send(&refund(1, "call_a", Some("k-1")), Some(&first_session));
            let second_session = scope.initialize();
            assert_ne!(first_session, second_session);
            let again = scope.send(&refund(1, "call_b", Some("k-1")), Some(&second_session));
            let tool = first.tool.clone().unwrap();
            assert_eq!(
                (tool.ran, tool.deduplicated, tool.side_effects),
                (true, false, true),
                "seed {seed}: {tool:?}"
            );
            assert_eq!(tool.idempotency_key.as_deref(), Some("k-1"));
            assert_eq!(tool.call_id.as_deref(), Some("call_a"));
            let repeat = again.tool.clone().unwrap();
            assert!(repeat.ran && repeat.deduplicated, "seed {seed}: {repeat:?}");
            assert_eq!(
                message(&again)["result"],
                message(&first)["result"],
                "seed {seed}: the key's first answer again"
            );
            let applied: Vec<bool> = scope
                .held
                .world
                .effects()
                .iter()
                .map(|e| e.applied)
                .collect();
            assert_eq!(applied, [true, false], "seed {seed}");
            // Without a key, a call sent again is another effect (what the oracle finds).
            let third = scope.send(&refund(2, "call_c", None), Some(&second_session));
            let fourth = scope.send(&refund(3, "call_c", None), Some(&second_session));
            for sent in [&third, &fourth] {
                let tool = sent.tool.clone().unwrap();
                assert!(tool.ran && !tool.deduplicated && tool.idempotency_key.is_none());
            }
            assert_eq!(scope.held.world.effects().len(), 4);
            assert!(scope.held.world.effects()[2..].iter().all(|e| e.applied));
        }
    }

    #[test]
    fn only_a_tools_call_has_a_tool_field_and_a_tool_that_did_not_run_says_so() {
        let mut scope = Scope::new(refunds(3));
        let session = scope.initialize();
        let listed = scope.send(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            Some(&session),
        );
        assert_eq!(listed.tool, None);
        let refused = scope.send(
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"issue_refund","arguments":{"order_id":7}}}"#,
            Some(&session),
        );
        let tool = refused.tool.unwrap();
        assert_eq!(tool.arguments, json!({"order_id": 7}));
        assert!(!tool.ran && !tool.deduplicated && tool.call_id.is_none());
        let unknown = scope.send(
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope"}}"#,
            Some(&session),
        );
        let tool = unknown.tool.unwrap();
        assert_eq!((tool.arguments, tool.side_effects), (json!({}), false));
        assert!(scope.held.world.is_empty(), "nothing ran");
    }

    /// A body's SHA-256 and its entry's trace hash, both hex.
    type Pinned = (&'static str, &'static str);

    /// What a fresh scope's requests got before the world lasted the scope (main's `dst
    /// serve`, over HTTP: the body's SHA-256 and the entry's trace hash, per request),
    /// for an `initialize`, a payment and a weather call: a fresh scope answers as it
    /// always did, with and without faults.
    const BEFORE_THE_WORLD: [(u64, bool, [Pinned; 3]); 4] = [
        (
            7,
            false,
            [
                (
                    "9061778d50308dc6a045733007dcd8067ad06278ed461784675c33df76e660a6",
                    "0a3bdd78f0b55e8c28be9571af9cfb0775b8ffa4be4de8d8261b2fa9f130d02e",
                ),
                (
                    "4f6636032a817be6f0dc712922de6f85fd054eea619db92969d17279672992d6",
                    "fd260fff064b7692fdaf7cd043cec5789522ef505487a6f1b336e37fb430d24f",
                ),
                (
                    "d6fb699bb8dd320fe210599341afc22f553858506a9543b07fdd399ff5f41fd3",
                    "ef050abeab64027f754fab6ae470b0af9bbc24df9d0d2a5cce06bb4804fd0a84",
                ),
            ],
        ),
        (
            11,
            false,
            [
                (
                    "8a02094f42fdde84f257c56777e75667b9465cadf69aa820602aa2bd82e6efc8",
                    "6ddf0854e6d141e41befca8773341139fb2910f90bc33a43a3b4c21b1f31d57d",
                ),
                (
                    "7ee117ad709d1d457b21335875d45b8f085af3052bc8d9fa69e062f966112e8e",
                    "f3a7e6b7ec15d45126f1e45ee7da6df4772f2751139e32d8a3d5d81c491bfd87",
                ),
                (
                    "97439a62658f29e050f67e185ef9eecf01d1c9ea55365ebaf367e541edd0eec1",
                    "41435b591966f74ecd61f27082841f90c2b7778557995e5678f9ceee452e0e54",
                ),
            ],
        ),
        (
            7,
            true,
            [
                (
                    "9061778d50308dc6a045733007dcd8067ad06278ed461784675c33df76e660a6",
                    "16e80c8997c753f58a6f760ca6c2119b66aa8eb0eb29082e3066507a966fa45b",
                ),
                (
                    "4f6636032a817be6f0dc712922de6f85fd054eea619db92969d17279672992d6",
                    "edcee3233f600f481d295d8da0b2eae685cf55bd274ae9813bdd82351eed8d5c",
                ),
                (
                    "d6fb699bb8dd320fe210599341afc22f553858506a9543b07fdd399ff5f41fd3",
                    "d53d251f50c2950e1701e7cdc70cad8ae500e14064777c5fab84ef394defb28f",
                ),
            ],
        ),
        (
            12,
            true,
            [
                (
                    "9061778d50308dc6a045733007dcd8067ad06278ed461784675c33df76e660a6",
                    "d64c3a785bb828db5350e6cfd4bf9bb0b2273f2449d5eebe8b33b444688b7168",
                ),
                (
                    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                    "2e6dd4bc190bc9b1d8cda5dd87257a7111dfa9b13cf9bb8af236d5b8250c622e",
                ),
                (
                    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                    "f03668d0033c897d62e0883f8aba77a1c03b041393142a401abe075cb6ce6d08",
                ),
            ],
        ),
    ];

    #[test]
    fn a_fresh_scope_answers_as_it_did_before_the_world_lasted_the_scope() {
        use sha2::{Digest, Sha256};
        let calls = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_payment","arguments":{"invoice_id":"INV-7","amount_cents":1200},"_meta":{"umi.dev/tool_call_id":"call_1"}}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"Oslo"}}}"#,
        ];
        for (seed, faulted, pinned) in BEFORE_THE_WORLD {
            let mut config = ServeConfig {
                seed,
                ..ServeConfig::default()
            };
            if faulted {
                config.faults = vec![
                    crate::FaultConfig::chance(crate::FaultKind::ToolTimeout, 0.5),
                    crate::FaultConfig::chance(crate::FaultKind::McpStreamCut, 0.2),
                ];
            }
            let mut scope = Scope::new(config);
            let first = scope.send(
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
                None,
            );
            let session = header(&first, SESSION_HEADER);
            let mut got = vec![first];
            for call in calls {
                got.push(scope.send(call, session.as_deref()));
            }
            for (n, (recorded, (body, trace))) in got.iter().zip(pinned).enumerate() {
                let bytes: Vec<u8> = recorded
                    .pieces
                    .iter()
                    .flat_map(|(_, b)| b.clone())
                    .collect();
                let digest = umi_core::hex::lower(&Sha256::digest(&bytes));
                assert_eq!(
                    (digest.as_str(), recorded.trace_hash.to_string().as_str()),
                    (body, trace),
                    "seed {seed}, faults {faulted}, request {n}"
                );
            }
        }
    }
}
