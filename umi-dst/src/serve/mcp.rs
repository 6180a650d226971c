//! `/mcp`: the simulated MCP server over real HTTP, for agents in any language.
//!
//! Each request is answered as a model request is: in a simulation of its own, seeded
//! from the session seed (or the request's `x-umi-seed`, `/seed/N/`), what it asks
//! (`mcp_hash`: the JSON-RPC method and params, never the request's id or `_meta`,
//! which clients number and fill as they like) and how many times it was asked before in
//! its scope. The server's MCP sessions live here between requests, per scope, and go
//! into each request's simulation and back out ([`crate::mcp::Sessions`]): an
//! `initialize` in a fresh scope begins the same session id, and a rerun in a fresh
//! scope (or after `POST /umi/reset`) gets the same bytes.
//!
//! A request from a browser page that is not local (its `Origin` header) is refused
//! with 403 before anything runs, unless `--allow-origin` names it (MCP 2025-11-25
//! requires servers to validate `Origin` against DNS rebinding).
//!
//! A scope is one run, and its world lasts the run: the simulated tools' state (the
//! effect ledger, the idempotency keys seen, the runs per call; [`super::world`]) goes
//! into each request's simulation and back out too, so a second `tools/call` with a key
//! the tool has seen applies nothing and answers the key's first answer, across the
//! scope's MCP sessions. A fresh scope starts from an empty world: its first request is
//! answered as it always was.
//!
//! Session and world state follow the order requests arrive within a scope (a tool list
//! that changed, a session that expired, a key seen, a call run before), as on a real
//! server: the scope's MCP requests take turns with its world, one simulation at a time,
//! in the order they reach it. Everything else about an answer depends on the request
//! alone.

use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use hyper::body::Incoming;
use hyper::{Request, Response};
use sha2::{Digest, Sha256};
use umi_core::llm::transport::HttpRequest;

use super::address::Address;
use super::answer::{HeldTrace, Recorded, exchange, failed_run, finish_record, simulation_for};
use super::config::ServeConfig;
use super::own::{at_capacity, own_error};
use super::play::log_and_play;
use super::read;
use super::reply::{Body, State, full, respond};
use super::world::tool_entry;
use crate::mcp::{SESSION_HEADER, Sessions, origin_allowed};
use crate::network::SimNetwork;
use crate::tools::ToolsWorld;

/// Where the MCP server is served (under any `/seed/N` and `/scope/S` prefix).
pub(crate) const MCP_PATH: &str = "/mcp";

/// Its URL inside each request's simulation.
const SIM_MCP_URL: &str = "http://umi.serve/mcp";

/// The endpoint key MCP requests are counted and logged under.
pub(crate) const MCP_ENDPOINT_KEY: &str = "mcp";

/// Answers one request to `/mcp`.
pub(super) async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
    address: Address,
) -> Result<Response<Body>, io::Error> {
    let origin = request
        .headers()
        .get("origin")
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
    if !origin_allowed(origin.as_deref(), &state.config.allowed_origins) {
        return Ok(forbidden(origin.as_deref().unwrap_or_default()));
    }
    let Ok(permit) = state.permits.clone().try_acquire_owned() else {
        return Ok(at_capacity(&state.config, None));
    };
    let http = match read::request(request, state.config.body_bytes_max).await {
        Ok(http) => http,
        Err((status, message)) => return Ok(own_error(None, status, &message, Vec::new())),
    };
    // The scope's MCP requests take turns with its world, in the order they reach it.
    let mut world = state.session.tools_world(&address.scope).lock_owned().await;
    let seed = address.seed.unwrap_or(state.config.seed);
    let hash = mcp_hash(&http);
    let session_id = http.header(SESSION_HEADER).map(str::to_owned);
    let (occurrence, arrival) =
        state
            .session
            .next_occurrence(&address.scope, seed, MCP_ENDPOINT_KEY, hash);
    let before = McpState {
        sessions: state
            .session
            .mcp_sessions(&address.scope, session_id.as_deref()),
        world: (*world).clone(),
    };
    // Drawn from the stream the request's path names at its arrival (`branch.rs`).
    let unbranched = run_seed(seed, &hash, occurrence);
    let run_seed = super::branch::run_seed_at(&address.branches, unbranched, arrival + 1);
    let asked_at = super::aim::mcp_operations(&http);
    let aimed = state
        .session
        .aimed_config(&state.config, &address.scope, asked_at);
    let worker = state.clone();
    let answered = state
        .simulations
        .run(move || {
            let config = aimed.as_deref().unwrap_or(&worker.config);
            answer(config, (seed, run_seed), &http, &before)
        })
        .await;
    let (recorded, after) = match answered {
        Ok(answered) => answered,
        Err(error) => return Ok(own_error(None, 500, &format!("umi: {error}"), Vec::new())),
    };
    state
        .session
        .merge_mcp(&address.scope, session_id.as_deref(), &after.sessions);
    *world = after.world;
    drop(world);
    let clock_us = address.clock_us;
    let key = (
        address.scope,
        seed,
        MCP_ENDPOINT_KEY.to_owned(),
        hash,
        occurrence,
    );
    log_and_play(&state, key, MCP_PATH, (recorded, clock_us), permit).await
}

/// The 403 of an `Origin` that is not allowed (MCP 2025-11-25, transports, security
/// warning), with a JSON-RPC error that has no id; nothing is simulated or logged.
fn forbidden(origin: &str) -> Response<Body> {
    let refusal = crate::mcp::streamable::forbidden_origin(origin);
    let body = refusal
        .body
        .map(|b| umi_core::canonical_json::to_string(&b))
        .unwrap_or_default();
    respond(
        refusal.status,
        vec![("content-type".into(), "application/json".into())],
        full(body),
    )
}

/// What an MCP request is seeded by: its HTTP method and its message (or each message of
/// a batch) without `id` and `params._meta` (canonical JSON), or its bytes when they are
/// not JSON.
pub(crate) fn mcp_hash(request: &HttpRequest) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(b"umi.serve.mcp.v1");
    hasher.update(request.method.as_bytes());
    hasher.update([0]);
    let parsed = serde_json::from_slice::<serde_json::Value>(&request.body).map(|mut value| {
        match &mut value {
            // A batch (MCP 2025-03-26): each message without its id and `_meta`.
            serde_json::Value::Array(messages) => messages.iter_mut().for_each(without_id),
            message => without_id(message),
        }
        value
    });
    super::answer::hash_json_or_bytes(&mut hasher, parsed.ok().as_ref(), &request.body);
    hasher.finalize().into()
}

/// A message without what clients number and fill as they like: `id`, `params._meta`.
fn without_id(message: &mut serde_json::Value) {
    if let Some(object) = message.as_object_mut() {
        object.remove("id");
        if let Some(params) = object.get_mut("params").and_then(|p| p.as_object_mut()) {
            params.remove("_meta");
        }
    }
}

/// The run seed of one MCP request.
pub(crate) fn run_seed(seed: u64, hash: &[u8; 32], occurrence: u64) -> u64 {
    let digest = Sha256::new()
        .chain_update(b"umi.serve.mcp.seed.v1")
        .chain_update(seed.to_le_bytes())
        .chain_update(hash)
        .chain_update(occurrence.to_le_bytes())
        .finalize();
    u64::from_le_bytes(
        digest[..8]
            .try_into()
            .expect("a SHA-256 digest has 8 bytes"),
    )
}

/// Whether the server of `seed` answers with SSE streams (else single JSON objects):
/// one way for every request of the seed, as a real server is configured.
pub(crate) fn sse_for(seed: u64) -> bool {
    crate::rng::DeterministicRng::new(seed)
        .stream(crate::rng::streams::seed::MCP_RESPONSE_MODE)
        .bool_with(crate::mcp::MCP_SSE_PROBABILITY)
}

/// What the MCP server of a scope holds between requests: its sessions (only the
/// request's own, going in) and the tools' world.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct McpState {
    pub(crate) sessions: Sessions,
    pub(crate) world: ToolsWorld,
}

/// Answers `request` in a simulation of `run_seed`, the server of `seed` holding
/// `before`; returns the record (with its `tool` field for a `tools/call`) and what the
/// server held after it. A run that failed leaves `before` as it was.
pub(crate) fn answer(
    config: &ServeConfig,
    (seed, run_seed): (u64, u64),
    request: &HttpRequest,
    before: &McpState,
) -> (Recorded, McpState) {
    let out: Arc<Mutex<Option<(Recorded, McpState)>>> = Arc::new(Mutex::new(None));
    let simulation = simulation_for(config, run_seed);
    let held = HeldTrace::default();
    let run = simulation.run_seed(run_seed, &|sim| {
        held.hold(&sim);
        let out = out.clone();
        let request = HttpRequest {
            url: SIM_MCP_URL.to_owned(),
            ..request.clone()
        };
        let before = before.clone();
        async move {
            let server = config.mcp.server(&sim);
            // The tools' clones share one ledger: the server's tools remember the world.
            let tools = server.tools().clone().with_world(before.world);
            let network = SimNetwork::new(&sim).with_mcp_sessions(
                SIM_MCP_URL,
                server,
                before.sessions,
                Some(sse_for(seed)),
            );
            let record = exchange(&sim, &network, request).await;
            let sessions = network
                .mcp_sessions(SIM_MCP_URL)
                .expect("the MCP server was put on the network");
            let after = McpState {
                sessions,
                world: tools.world(),
            };
            *out.lock().unwrap_or_else(PoisonError::into_inner) = Some((record, after));
            Ok(())
        }
    });
    let (record, after) = out
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
        .unwrap_or_else(|| {
            let failed = failed_run(&format!("{:?}", run.failure), run.trace_hash);
            (failed, before.clone())
        });
    let mut record = finish_record(record, run_seed, &run, &held);
    record.tool = tool_entry(
        &config.mcp,
        &request.body,
        (&before.world, &after.world),
        &record.trace,
    );
    (record, after)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(body: &str) -> HttpRequest {
        HttpRequest {
            method: "POST",
            url: String::new(),
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn the_seed_ignores_ids_and_meta_but_not_what_is_asked() {
        let a = mcp_hash(&post(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pay","arguments":{"n":1}}}"#,
        ));
        let b = mcp_hash(&post(
            r#"{"params":{"arguments":{"n":1},"name":"pay","_meta":{"progressToken":7}},"method":"tools/call","id":"x-9","jsonrpc":"2.0"}"#,
        ));
        assert_eq!(a, b);
        let c = mcp_hash(&post(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pay","arguments":{"n":2}}}"#,
        ));
        assert_ne!(a, c);
        let batch = |first: u32, second: u32| {
            mcp_hash(&post(&format!(
                r#"[{{"jsonrpc":"2.0","id":{first},"method":"ping"}},{{"jsonrpc":"2.0","id":{second},"method":"tools/list"}}]"#
            )))
        };
        assert_eq!(
            batch(1, 2),
            batch(7, 9),
            "a batch's ids are not what it asks"
        );
        let delete = HttpRequest {
            method: "DELETE",
            ..post("")
        };
        assert_ne!(mcp_hash(&delete), mcp_hash(&post("")));
    }
}
