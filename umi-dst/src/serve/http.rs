//! The HTTP side of `dst serve`, on hyper: routing a request to its endpoint, the
//! server's own limits (body size, concurrency, slow clients) answered in the endpoint's
//! error envelope, the answer computed in its simulation on a blocking thread, and the
//! recorded response played back in real time scaled by `--time-scale`.
//!
//! This is the one place in umi-dst that is a real server in real time: it runs outside
//! any simulation, so its sleeps and its blocking threads are the wall clock's (the
//! `allow`s below say so). What it plays back was computed in simulated time only.

use std::convert::Infallible;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use tokio::sync::Semaphore;

use super::address::{Address, address, own_path_scope};
use super::answer::{self, End, Recorded};
use super::config::{EndpointSpec, ServeConfig};
use super::own::{
    at_capacity, belongs_elsewhere, models, models_path, no_such_path, own_error, unrouted,
};
use super::pool::SimulationPool;
use super::read;
use super::session::{Entry, Key, Session, hex};
use crate::network::WireFormat;
use umi_core::llm::transport::HttpRequest;

/// The body type of every response.
pub(crate) type Body = UnsyncBoxBody<Bytes, io::Error>;

/// What every connection shares.
pub(crate) struct State {
    pub(crate) config: ServeConfig,
    pub(crate) session: Session,
    pub(crate) permits: Arc<Semaphore>,
    pub(crate) simulations: SimulationPool,
}

pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never: Infallible| match never {})
        .boxed_unsync()
}

pub(crate) fn respond(status: u16, headers: Vec<(String, String)>, body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            hyper::header::HeaderName::from_bytes(name.as_bytes()),
            hyper::header::HeaderValue::from_str(&value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    response
}

/// The endpoint a path belongs to, and the path under its prefix. Among endpoints at
/// the same prefix, the one whose format owns the path (`/api/*` is Ollama's,
/// `/v1/messages` Anthropic's) wins; otherwise the first at the prefix.
fn route<'a>(config: &'a ServeConfig, path: &str) -> Option<(&'a EndpointSpec, String)> {
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
            || crate::network::embed::serves(endpoint.profile, endpoint.api_root(), rest);
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

/// Answers one HTTP request. An `Err` closes the connection without a response (a
/// connection the simulation refused or broke before the headers).
pub(crate) async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
) -> Result<Response<Body>, io::Error> {
    // A cassette matches on the query too (`?api-version=`, `?alt=sse`).
    let query = request.uri().query().map(str::to_owned);
    let address = match address(
        request.uri().path(),
        header(&request, "x-umi-seed"),
        header(&request, "x-umi-scope"),
    ) {
        Ok(address) => address,
        Err(message) => return Ok(own_error(None, 400, &message, Vec::new())),
    };
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
    let hash = answer::conversation_hash(endpoint, &rest, &http);
    let endpoint_key = format!("{}{}", endpoint.profile, endpoint.prefix);
    let occurrence = state
        .session
        .next_occurrence(&address.scope, seed, &endpoint_key, hash);
    let key = (address.scope, seed, endpoint_key, hash, occurrence);
    let asked = asked_path(&state.config, format, &rest, query);
    let recorded = match simulate(&state, endpoint, &key, &asked, http).await {
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
    log_and_play(&state, key, &rest, recorded, permit).await
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

/// Logs a recorded answer under `key` (scope, seed, endpoint, hash, occurrence) and plays
/// it back: the last steps of every simulated request, model or MCP.
pub(crate) async fn log_and_play(
    state: &State,
    key: Key,
    path: &str,
    mut recorded: Recorded,
    permit: tokio::sync::OwnedSemaphorePermit,
) -> Result<Response<Body>, io::Error> {
    let entry = Entry::new(&key, path, &mut recorded);
    let played = Played {
        seed: key.1,
        scope: key.0.clone(),
        hash: key.3,
        occurrence: key.4,
    };
    state.session.record(key, entry);
    play(&state.config, &played, recorded, permit).await
}

/// The request answered in its own simulation (seeded by `key`'s seed, endpoint, hash
/// and occurrence), on the simulation pool.
async fn simulate(
    state: &Arc<State>,
    endpoint: &EndpointSpec,
    key: &Key,
    rest: &str,
    http: HttpRequest,
) -> Result<Recorded, String> {
    let (run_seed, occurrence) = (answer::run_seed(key.1, endpoint, &key.3, key.4), key.4);
    let worker = state.clone();
    let endpoint = endpoint.clone();
    let rest = rest.to_owned();
    state
        .simulations
        .run(move || {
            answer::answer(
                &worker.config,
                &endpoint,
                run_seed,
                occurrence,
                &rest,
                &http,
            )
        })
        .await
        .map_err(|error| error.to_string())
}

/// The server's own paths under `/umi`: the trace (`GET /umi/trace`) and the reset
/// (`POST /umi/reset`), of every scope or of one (`?scope=S`, or the scope of the path
/// or header the request came with: a base URL's `/scope/S/` reaches its own trace).
fn own_path(
    state: &State,
    request: &Request<Incoming>,
    address: &Address,
) -> Option<Response<Body>> {
    let path = address.path.as_str();
    if path != "/umi/trace" && path != "/umi/reset" {
        return None;
    }
    let scope = match own_path_scope(request.uri().query(), &address.scope) {
        Ok(scope) => scope,
        Err(message) => return Some(own_error(None, 400, &message, Vec::new())),
    };
    Some(match (request.method(), path) {
        (&hyper::Method::GET, "/umi/trace") => session_trace(&state.session, scope.as_deref()),
        (&hyper::Method::POST, "/umi/reset") => {
            state.session.reset(scope.as_deref());
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
            "the server's own paths are GET /umi/trace and POST /umi/reset",
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
/// `x-umi-trace-hash`.
fn session_trace(session: &Session, scope: Option<&str>) -> Response<Body> {
    let (text, hash) = session.trace(scope);
    respond(
        200,
        vec![
            ("content-type".into(), "application/x-ndjson".into()),
            ("x-umi-trace-hash".into(), hash),
        ],
        full(text),
    )
}

/// Pieces that would be sent at the same real instant, joined into one write (TCP keeps
/// no read boundaries anyway; a client sees its own).
fn coalesce(pieces: Vec<(Duration, Vec<u8>)>, scale: f64) -> Vec<(Duration, Vec<u8>)> {
    let mut out: Vec<(Duration, Vec<u8>)> = Vec::with_capacity(pieces.len());
    for (at, bytes) in pieces {
        match out.last_mut() {
            Some((last_at, last)) if scaled(at.saturating_sub(*last_at), scale).is_zero() => {
                last.extend_from_slice(&bytes);
            }
            _ => out.push((at, bytes)),
        }
    }
    out
}

/// Scales a delay of the simulation into real time.
fn scaled(delay: Duration, scale: f64) -> Duration {
    if scale == 0.0 {
        Duration::ZERO
    } else {
        delay.mul_f64(scale)
    }
}

#[allow(clippy::disallowed_methods)] // real-time playback, outside any simulation
async fn wait(delay: Duration) {
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
}

/// Retry-After headers in scaled time, so a client that honours them waits what the
/// simulation meant, scaled (an HTTP date becomes the seconds it stood for).
fn scale_retry_headers(headers: &mut [(String, String)], scale: f64) {
    let date_ms = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("date"))
        .and_then(|(_, v)| httpdate::parse_http_date(v).ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as u64);
    for (name, value) in headers.iter_mut() {
        if name.eq_ignore_ascii_case("retry-after-ms") {
            if let Ok(ms) = value.trim().parse::<f64>() {
                *value = format!("{}", (ms * scale).ceil() as u64);
            }
        } else if name.eq_ignore_ascii_case("retry-after") {
            let wait_ms = match value.trim().parse::<f64>() {
                Ok(seconds) => Some(seconds * 1000.0),
                Err(_) => httpdate::parse_http_date(value.trim())
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .zip(date_ms)
                    .map(|(at, now)| (at.as_millis() as u64).saturating_sub(now) as f64),
            };
            if let Some(wait_ms) = wait_ms {
                *value = format!("{}", (wait_ms * scale / 1000.0).ceil() as u64);
            }
        }
    }
}

/// Plays `recorded` back: headers, then each piece after its scaled delay, then its end.
/// The permit is held until the body ends, so `--concurrency-max` bounds the streams in
/// flight too.
/// What a played response says about where its answer came from.
struct Played {
    seed: u64,
    scope: String,
    hash: [u8; 32],
    occurrence: u64,
}

async fn play(
    config: &ServeConfig,
    played: &Played,
    mut recorded: Recorded,
    permit: tokio::sync::OwnedSemaphorePermit,
) -> Result<Response<Body>, io::Error> {
    let scale = config.time_scale;
    let Some(status) = recorded.status else {
        // Refused or broken before the headers: the connection closes (after the stall,
        // scaled, when the server hung instead).
        wait(scaled(recorded.end_at, scale)).await;
        return Err(io::Error::new(
            io::ErrorKind::ConnectionReset,
            "closed by the simulated server",
        ));
    };
    let headers = played_headers(&mut recorded, played, scale);
    let first_at = recorded
        .pieces
        .first()
        .map_or(recorded.end_at, |(at, _)| *at);
    wait(scaled(first_at, scale)).await;
    let pieces = coalesce(recorded.pieces, scale);
    let body = played_body(
        pieces,
        first_at,
        (recorded.end, recorded.end_at),
        scale,
        permit,
    );
    Ok(respond(status, headers, body))
}

/// The body of a played response: each piece at its time after the first (`first_at`),
/// scaled; then the end as recorded (`ending`: how and when): complete, a reset, or a
/// stall that times out. The permit is held until the body ends.
fn played_body(
    pieces: Vec<(Duration, Vec<u8>)>,
    first_at: Duration,
    ending: (End, Duration),
    scale: f64,
    permit: tokio::sync::OwnedSemaphorePermit,
) -> Body {
    let (end, end_at) = ending;
    let stream = futures::stream::unfold(
        (pieces.into_iter(), first_at, false, Some(permit)),
        move |(mut pieces, last, finished, mut permit)| async move {
            if finished {
                drop(permit.take());
                return None;
            }
            match pieces.next() {
                Some((at, bytes)) => {
                    wait(scaled(at.saturating_sub(last), scale)).await;
                    Some((
                        Ok(Frame::data(Bytes::from(bytes))),
                        (pieces, at, false, permit),
                    ))
                }
                None => match end {
                    End::Complete => None,
                    End::Reset => {
                        // Let hyper write what it holds (the head, when no byte of the body
                        // came) before the reset: the client saw the 200 in the simulation,
                        // and a reset with nothing written reads as no response at all.
                        tokio::task::yield_now().await;
                        Some((
                            Err(io::Error::new(
                                io::ErrorKind::ConnectionReset,
                                "reset by the simulated server",
                            )),
                            (pieces, last, true, permit),
                        ))
                    }
                    End::Stall => {
                        wait(scaled(end_at.saturating_sub(last), scale)).await;
                        Some((
                            Err(io::Error::new(
                                io::ErrorKind::TimedOut,
                                "the simulated server stalled",
                            )),
                            (pieces, last, true, permit),
                        ))
                    }
                },
            }
        },
    );
    BodyExt::boxed_unsync(StreamBody::new(stream.boxed()))
}

/// The recorded response's headers as played: framing headers left to hyper, waits in
/// retry headers scaled to real time, and the `x-umi-*` headers that name the seed, the
/// request, its occurrence, the run's seed and its faults.
fn played_headers(recorded: &mut Recorded, played: &Played, scale: f64) -> Vec<(String, String)> {
    let mut headers: Vec<(String, String)> = std::mem::take(&mut recorded.headers)
        .into_iter()
        .filter(|(n, _)| {
            !n.eq_ignore_ascii_case("content-length")
                && !n.eq_ignore_ascii_case("transfer-encoding")
        })
        .collect();
    scale_retry_headers(&mut headers, scale);
    headers.push(("x-umi-seed".into(), played.seed.to_string()));
    if !played.scope.is_empty() {
        headers.push(("x-umi-scope".into(), played.scope.clone()));
    }
    headers.push(("x-umi-request-hash".into(), hex(&played.hash)));
    headers.push(("x-umi-occurrence".into(), played.occurrence.to_string()));
    headers.push(("x-umi-run-seed".into(), recorded.run_seed.to_string()));
    let faults = if recorded.faults.is_empty() {
        "none".to_owned()
    } else {
        recorded.faults.join(",")
    };
    headers.push(("x-umi-faults".into(), faults));
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_scaled_in_every_form() {
        let mut headers = vec![
            (
                "date".to_owned(),
                "Mon, 01 Jan 2024 00:00:00 GMT".to_owned(),
            ),
            (
                "retry-after".to_owned(),
                "Mon, 01 Jan 2024 00:00:20 GMT".to_owned(),
            ),
            ("retry-after-ms".to_owned(), "1500".to_owned()),
        ];
        scale_retry_headers(&mut headers, 0.5);
        assert_eq!(headers[1].1, "10");
        assert_eq!(headers[2].1, "750");
        let mut seconds = vec![("retry-after".to_owned(), "7".to_owned())];
        scale_retry_headers(&mut seconds, 0.0);
        assert_eq!(seconds[0].1, "0");
    }

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
