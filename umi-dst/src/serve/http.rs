//! The HTTP side of `dst serve`, on hyper: routing a request to its endpoint (the
//! server's own paths, MCP, or a simulated model), the server's own limits (body size,
//! concurrency, slow clients) answered in the endpoint's error envelope, and the answer
//! computed in its simulation on the simulation pool, then handed to [`super::play`].
//!
//! This is the one place in umi-dst that is a real server in real time: it runs outside
//! any simulation. What it plays back was computed in simulated time only.

use std::io;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Request, Response};

use super::address::{Address, address, own_path_scope};
use super::answer::{self, Recorded};
use super::config::{EndpointSpec, ServeConfig};
use super::own::{
    at_capacity, belongs_elsewhere, models, models_path, no_such_path, own_error, unrouted,
};
use super::play::log_and_play_model;
use super::read;
use super::reply::{Body, State, full, respond};
use super::session::Key;
use crate::network::WireFormat;
use umi_core::llm::transport::HttpRequest;

/// The endpoint a path belongs to, and the path under its prefix. Among endpoints at
/// the same prefix, the one whose format owns the path (`/api/*` is Ollama's,
/// `/v1/messages` Anthropic's) wins; otherwise the first at the prefix.
pub(crate) fn route<'a>(config: &'a ServeConfig, path: &str) -> Option<(&'a EndpointSpec, String)> {
    let mut best: Option<(&EndpointSpec, String, bool)> = None;
    for endpoint in &config.endpoints {
        let Some(rest) = path.strip_prefix(endpoint.prefix.as_str()) else {
            continue;
        };
        if !(rest.is_empty() || rest.starts_with('/')) {
            continue;
        }
        let owns = endpoint.owns_path(rest)
            || rest == models_path(endpoint.profile.format())
            || crate::network::registry::serves(endpoint.profile, endpoint.api_root(), rest);
        let longer = best.as_ref().is_none_or(|(b, _, b_owns)| {
            endpoint.prefix.len() > b.prefix.len()
                || (endpoint.prefix.len() == b.prefix.len() && owns && !*b_owns)
        });
        if longer {
            best = Some((endpoint, rest.to_owned(), owns));
        }
    }
    best.map(|(endpoint, rest, _)| (endpoint, rest))
}

/// A header's value: `None` when absent, `Err(())` when not text.
fn header<'a>(request: &'a Request<Incoming>, name: &str) -> Option<Result<&'a str, ()>> {
    request
        .headers()
        .get(name)
        .map(|value| value.to_str().map_err(|_| ()))
}

/// What a request's path and headers say: its seed, scope and path (`address.rs`) and
/// the agent's clock (`x-umi-clock-us`, `clock.rs`); the refusal names what was wrong.
fn request_address(request: &Request<Incoming>) -> Result<Address, String> {
    let address = address(
        request.uri().path(),
        header(request, "x-umi-seed"),
        header(request, "x-umi-scope"),
    )?;
    let clock_us = super::clock::agent_clock_us(header(request, super::clock::CLOCK_HEADER))?;
    Ok(Address {
        clock_us,
        ..address
    })
}

/// Answers one HTTP request. An `Err` closes the connection without a response (a
/// connection the simulation refused or broke before the headers).
pub(crate) async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
) -> Result<Response<Body>, io::Error> {
    // A cassette matches on the query too (`?api-version=`, `?alt=sse`).
    let query = request.uri().query().map(str::to_owned);
    let address = match request_address(&request) {
        Ok(address) => address,
        Err(message) => return Ok(own_error(None, 400, &message, Vec::new())),
    };
    // The agent's own spans (OTLP/HTTP): `/v1/traces` never reaches a model endpoint.
    if address.path == super::spans_in::TRACES_PATH {
        return Ok(super::spans_in::handle(&state, request, &address).await);
    }
    if let Some(response) = own_path(&state, &request, &address) {
        return Ok(response);
    }
    if address.path == super::mcp::MCP_PATH {
        return super::mcp::handle(state, request, address).await;
    }
    let Some((endpoint, rest)) = route(&state.config, &address.path) else {
        return Ok(unrouted(&state.config, &address.path));
    };
    let format = endpoint.profile.format();
    if request.method() == hyper::Method::GET && rest == models_path(format) {
        return Ok(models(
            &state.config,
            listing_format(&state.config, endpoint, &request),
        ));
    }
    if !rest.starts_with(&format!("{}/", endpoint.api_root())) || belongs_elsewhere(endpoint, &rest)
    {
        return Ok(no_such_path(&state.config, endpoint, &rest));
    }
    let Ok(permit) = state.permits.clone().try_acquire_owned() else {
        return Ok(at_capacity(&state.config, Some(format)));
    };
    let http = match read::request(request, state.config.body_bytes_max).await {
        Ok(http) => http,
        Err((status, message)) => return Ok(own_error(Some(format), status, &message, Vec::new())),
    };
    let seed = address.seed.unwrap_or(state.config.seed);
    let (hash, conversation) = answer::conversation_hash(endpoint, &rest, &http);
    let history = conversation.as_ref().map(super::digest::history);
    let endpoint_key = format!("{}{}", endpoint.profile, endpoint.prefix);
    let session = &state.session;
    let (occurrence, arrival) = session.next_occurrence(&address.scope, seed, &endpoint_key, hash);
    let asked_at = super::aim::model_operations(endpoint.profile, endpoint.api_root(), &rest);
    let aimed = session.aimed_config(&state.config, &address.scope, asked_at);
    let clock_us = address.clock_us;
    let key = (address.scope, seed, endpoint_key, hash, occurrence);
    let asked = asked_path(&state.config, format, &rest, query);
    let branched = (&address.branches, arrival + 1);
    let recorded = match simulate(&state, endpoint, &key, &asked, (http, aimed), branched).await {
        Ok(recorded) => recorded,
        Err(error) => {
            return Ok(own_error(
                Some(format),
                500,
                &format!("umi: {error}"),
                Vec::new(),
            ));
        }
    };
    let carried = super::digest::carried(format, &recorded, super::session::is_cut(&recorded));
    let digest = (carried, history);
    log_and_play_model(&state, key, &rest, (recorded, clock_us), permit, digest).await
}

/// The path the simulation is asked: with the query when a cassette matches on it or
/// the format reads it (Gemini's `?alt=sse`, `?key=`).
fn asked_path(
    config: &ServeConfig,
    format: WireFormat,
    rest: &str,
    query: Option<String>,
) -> String {
    let reads_query = crate::network::server_format(format).reads_query();
    match (&config.cassette, query) {
        (Some(_), Some(query)) => format!("{rest}?{query}"),
        (None, Some(query)) if reads_query => format!("{rest}?{query}"),
        _ => rest.to_string(),
    }
}

/// The request answered in its own simulation (seeded by `key`'s seed, endpoint, hash
/// and occurrence, drawn from the stream its path names at its arrival `step`:
/// `branch.rs`), on the simulation pool; with `aimed`'s rules when its scope moved an
/// ordinal rule along (`aim.rs`).
async fn simulate(
    state: &Arc<State>,
    endpoint: &EndpointSpec,
    key: &Key,
    rest: &str,
    (http, aimed): (HttpRequest, Option<Arc<ServeConfig>>),
    (path, step): (&crate::path::RunPath, u64),
) -> Result<Recorded, String> {
    let unbranched = answer::run_seed(key.1, endpoint, &key.3, key.4);
    let (run_seed, occurrence) = (super::branch::run_seed_at(path, unbranched, step), key.4);
    let worker = state.clone();
    let endpoint = endpoint.clone();
    let rest = rest.to_owned();
    state
        .simulations
        .run(move || {
            answer::answer(
                aimed.as_deref().unwrap_or(&worker.config),
                &endpoint,
                run_seed,
                occurrence,
                &rest,
                http,
            )
        })
        .await
        .map_err(|error| error.to_string())
}

/// The server's own paths under `/umi`: the trace (`GET /umi/trace`, with
/// `?format=otlp` as OTLP JSON: `otlp_trace.rs`), what it reached (`GET /umi/marks`,
/// `marks.rs`), the agent's own spans (`GET /umi/spans`, `agent_spans.rs`) and the reset
/// (`POST /umi/reset`, which forgets both the log and the spans), of every scope or of one (`?scope=S`, or the scope of the path or header the request came with: a base
/// URL's `/scope/S/` reaches its own trace).
fn own_path(
    state: &State,
    request: &Request<Incoming>,
    address: &Address,
) -> Option<Response<Body>> {
    let path = address.path.as_str();
    if !["/umi/trace", "/umi/marks", "/umi/spans", "/umi/reset"].contains(&path) {
        return None;
    }
    let scope = match own_path_scope(request.uri().query(), &address.scope) {
        Ok(scope) => scope,
        Err(message) => return Some(own_error(None, 400, &message, Vec::new())),
    };
    Some(match (request.method(), path) {
        (&hyper::Method::GET, "/umi/trace") => {
            match super::otlp_trace::wants_otlp(request.uri().query()) {
                Ok(false) => session_trace(state, scope.as_deref()),
                Ok(true) => respond(
                    200,
                    vec![("content-type".into(), "application/json".into())],
                    full(super::otlp_trace::otlp_json(state, scope.as_deref())),
                ),
                Err(message) => own_error(None, 400, &message, Vec::new()),
            }
        }
        (&hyper::Method::GET, "/umi/spans") => respond(
            200,
            vec![("content-type".into(), "application/json".into())],
            full(super::agent_spans::spans_json(
                &state.agent_spans,
                scope.as_deref(),
            )),
        ),
        (&hyper::Method::GET, "/umi/marks") => respond(
            200,
            vec![("content-type".into(), "application/json".into())],
            full(super::marks::marks_json(&state.session, scope.as_deref())),
        ),
        (&hyper::Method::POST, "/umi/reset") => {
            state.session.reset(scope.as_deref());
            state.agent_spans.reset(scope.as_deref());
            let body = serde_json::json!({"reset": true, "scope": scope});
            respond(
                200,
                vec![("content-type".into(), "application/json".into())],
                full(umi_core::canonical_json::to_string(&body)),
            )
        }
        _ => own_error(
            None,
            405,
            "the server's own paths are GET /umi/trace, GET /umi/marks, GET /umi/spans and POST /umi/reset",
            Vec::new(),
        ),
    })
}

/// Whose model list a `GET` of a models path gets: that of a format at the same prefix
/// whose clients' own header the request carries (every Anthropic SDK sends
/// `anthropic-version`), else that of the endpoint the path routed to.
fn listing_format(
    config: &ServeConfig,
    routed: &EndpointSpec,
    request: &Request<Incoming>,
) -> WireFormat {
    config
        .endpoints
        .iter()
        .filter(|e| e.prefix == routed.prefix)
        .map(|e| e.profile.format())
        .find(|format| {
            format
                .surface()
                .listing_header()
                .is_some_and(|name| request.headers().contains_key(name))
        })
        .unwrap_or(routed.profile.format())
}

/// The session's trace (one scope's, when named), one entry per line, with its hash in
/// `x-umi-trace-hash`; the summary line counts the agent's spans (`agent_spans`).
fn session_trace(state: &State, scope: Option<&str>) -> Response<Body> {
    let (text, hash) = (state.session).trace_with_spans(scope, state.agent_spans.count(scope));
    respond(
        200,
        vec![
            ("content-type".into(), "application/x-ndjson".into()),
            ("x-umi-trace-hash".into(), hash),
        ],
        full(text),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_route_to_the_endpoint_that_owns_them() {
        let mut config = ServeConfig::default();
        config
            .endpoints
            .push(EndpointSpec::parse("anthropic").unwrap());
        config
            .endpoints
            .push(EndpointSpec::parse("deepseek_chat@/deepseek").unwrap());
        let routed = |path: &str| route(&config, path).map(|(e, rest)| (e.profile.name(), rest));
        assert_eq!(
            routed("/v1/chat/completions"),
            Some(("openai", "/v1/chat/completions".into()))
        );
        assert_eq!(routed("/api/chat"), Some(("ollama", "/api/chat".into())));
        assert_eq!(routed("/api/tags"), Some(("ollama", "/api/tags".into())));
        assert_eq!(
            routed("/v1/messages"),
            Some(("anthropic", "/v1/messages".into()))
        );
        assert_eq!(
            routed("/deepseek/v1/chat/completions"),
            Some(("deepseek_chat", "/v1/chat/completions".into()))
        );
        // Not a prefix match: `/deepseekx` is not under `/deepseek`.
        assert_eq!(
            routed("/deepseekx/v1/chat/completions").map(|r| r.0),
            Some("openai")
        );
    }
}
