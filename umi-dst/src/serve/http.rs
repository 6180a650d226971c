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
use serde_json::json;
use tokio::sync::Semaphore;

use super::answer::{self, End, Recorded};
use super::config::{EndpointSpec, ServeConfig, format_path};
use super::pool::SimulationPool;
use super::read;
use super::session::{Entry, Session, hex};
use crate::network::WireFormat;
use crate::simulation::settings::parse_seed;

/// The body type of every response.
pub(crate) type Body = UnsyncBoxBody<Bytes, io::Error>;

/// What every connection shares.
pub(crate) struct State {
    pub(crate) config: ServeConfig,
    pub(crate) session: Session,
    pub(crate) permits: Arc<Semaphore>,
    pub(crate) simulations: SimulationPool,
}

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never: Infallible| match never {})
        .boxed_unsync()
}

fn respond(status: u16, headers: Vec<(String, String)>, body: Body) -> Response<Body> {
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

/// An error the server itself raises, in the envelope of `format`'s provider.
fn own_error(
    format: Option<WireFormat>,
    status: u16,
    message: &str,
    extra: Vec<(String, String)>,
) -> Response<Body> {
    let body = match format {
        Some(WireFormat::Ollama) => json!({"error": message}),
        Some(WireFormat::AnthropicMessages) => {
            let kind = match status {
                413 => "request_too_large",
                503 => "overloaded_error",
                404 => "not_found_error",
                _ => "invalid_request_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
        _ => {
            let kind = if status >= 500 {
                "server_error"
            } else {
                "invalid_request_error"
            };
            json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
        }
    };
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    headers.extend(extra);
    respond(
        status,
        headers,
        full(umi_core::canonical_json::to_string(&body)),
    )
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
        let owns =
            rest == format_path(endpoint.profile) || rest == models_path(endpoint.profile.format());
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

fn models_path(format: WireFormat) -> &'static str {
    match format {
        WireFormat::Ollama => "/api/tags",
        _ => "/v1/models",
    }
}

/// The model list a client asks for before it starts (`/v1/models`, `/api/tags`).
fn models(config: &ServeConfig, format: WireFormat) -> Response<Body> {
    let body = match format {
        WireFormat::Ollama => json!({"models": config.models.iter().map(|m| json!({
            "name": m, "model": m, "modified_at": "2024-01-01T00:00:00Z", "size": 0,
            "digest": hex(&sha2::Sha256::digest(m.as_bytes())),
            "details": {"format": "gguf", "family": "umi", "parameter_size": "", "quantization_level": ""},
        })).collect::<Vec<_>>()}),
        WireFormat::AnthropicMessages => json!({
            "data": config.models.iter().map(|m| json!({"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"})).collect::<Vec<_>>(),
            "has_more": false, "first_id": config.models.first(), "last_id": config.models.last(),
        }),
        _ => {
            json!({"object": "list", "data": config.models.iter().map(|m| json!({"id": m, "object": "model", "created": 1_704_067_200, "owned_by": "umi"})).collect::<Vec<_>>()})
        }
    };
    respond(
        200,
        vec![("content-type".into(), "application/json".into())],
        full(umi_core::canonical_json::to_string(&body)),
    )
}

use sha2::Digest;

/// The seed a request asks for: `/seed/{n}/…` first, then `x-umi-seed`.
fn seed_of(request: &Request<Incoming>, path: &mut String) -> Result<Option<u64>, String> {
    let mut seed = None;
    if let Some(rest) = path.strip_prefix("/seed/") {
        let (number, tail) = rest.split_once('/').unwrap_or((rest, ""));
        seed = Some(parse_seed(number).map_err(|e| format!("path /seed/{number}: {e}"))?);
        *path = format!("/{tail}");
    }
    if let Some(value) = request.headers().get("x-umi-seed") {
        let text = value
            .to_str()
            .map_err(|_| "header x-umi-seed: not text".to_owned())?;
        seed = Some(parse_seed(text).map_err(|e| format!("header x-umi-seed {text:?}: {e}"))?);
    }
    Ok(seed)
}

/// Answers one HTTP request. An `Err` closes the connection without a response (a
/// connection the simulation refused or broke before the headers).
pub(crate) async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
) -> Result<Response<Body>, io::Error> {
    let mut path = request.uri().path().to_owned();
    let seed = match seed_of(&request, &mut path) {
        Ok(seed) => seed.unwrap_or(state.config.seed),
        Err(message) => return Ok(own_error(None, 400, &message, Vec::new())),
    };
    if path == "/umi/trace" {
        return Ok(session_trace(&state.session));
    }
    let Some((endpoint, rest)) = route(&state.config, &path) else {
        return Ok(unrouted(&state.config, &path));
    };
    let format = endpoint.profile.format();
    if request.method() == hyper::Method::GET && rest == models_path(format) {
        return Ok(models(&state.config, format));
    }
    if !rest.starts_with(&format!("{}/", endpoint.api_root())) {
        return Ok(no_such_path(endpoint, &rest));
    }
    let Ok(permit) = state.permits.clone().try_acquire_owned() else {
        return Ok(at_capacity(&state.config, format));
    };
    let http = match read::request(request, state.config.body_bytes_max).await {
        Ok(http) => http,
        Err((status, message)) => return Ok(own_error(Some(format), status, &message, Vec::new())),
    };
    let hash = answer::request_hash(&rest, &http.body);
    let endpoint_key = format!("{}{}", endpoint.profile, endpoint.prefix);
    let occurrence = state.session.next_occurrence(seed, &endpoint_key, hash);
    let run_seed = answer::run_seed(seed, endpoint, &hash, occurrence);
    let worker = state.clone();
    let endpoint_owned = endpoint.clone();
    let rest_owned = rest.clone();
    let answered = state
        .simulations
        .run(move || {
            answer::answer(
                &worker.config,
                &endpoint_owned,
                run_seed,
                &rest_owned,
                &http,
            )
        })
        .await;
    let mut recorded = match answered {
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
    let key = (seed, endpoint_key, hash, occurrence);
    let entry = Entry::new(&key, &rest, &mut recorded);
    state.session.record(key, entry);
    play(&state.config, seed, &hash, occurrence, recorded, permit).await
}

/// The session's trace, one event per line, with its hash in `x-umi-trace-hash`.
fn session_trace(session: &Session) -> Response<Body> {
    let (text, hash) = session.trace();
    respond(
        200,
        vec![
            ("content-type".into(), "application/x-ndjson".into()),
            ("x-umi-trace-hash".into(), hash),
        ],
        full(text),
    )
}

/// The 404 for a path no endpoint serves, naming the paths that are served.
fn unrouted(config: &ServeConfig, path: &str) -> Response<Body> {
    let known: Vec<String> = config
        .endpoints
        .iter()
        .map(|e| format!("{}{}", e.prefix, format_path(e.profile)))
        .collect();
    let message = format!("no endpoint serves {path}; served: {}", known.join(", "));
    own_error(None, 404, &message, Vec::new())
}

/// The 503 (with `retry-after: 1`) for a request past `--concurrency-max`.
fn at_capacity(config: &ServeConfig, format: WireFormat) -> Response<Body> {
    let message = format!(
        "the server is at its limit of {} requests in flight; retry shortly",
        config.concurrency_max
    );
    let retry_after = vec![("retry-after".into(), "1".into())];
    own_error(Some(format), 503, &message, retry_after)
}

/// The 404 for a path under `endpoint`'s prefix that its API does not have.
fn no_such_path(endpoint: &EndpointSpec, rest: &str) -> Response<Body> {
    let prefix = if endpoint.prefix.is_empty() {
        "/"
    } else {
        &endpoint.prefix
    };
    let message = format!(
        "no such path {rest} under {prefix}: it serves {}{}",
        endpoint.prefix,
        format_path(endpoint.profile)
    );
    own_error(Some(endpoint.profile.format()), 404, &message, Vec::new())
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
async fn play(
    config: &ServeConfig,
    seed: u64,
    hash: &[u8; 32],
    occurrence: u64,
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
    let headers = played_headers(&mut recorded, seed, hash, occurrence, scale);
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
                    End::Reset => Some((
                        Err(io::Error::new(
                            io::ErrorKind::ConnectionReset,
                            "reset by the simulated server",
                        )),
                        (pieces, last, true, permit),
                    )),
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
fn played_headers(
    recorded: &mut Recorded,
    seed: u64,
    hash: &[u8; 32],
    occurrence: u64,
    scale: f64,
) -> Vec<(String, String)> {
    let mut headers: Vec<(String, String)> = std::mem::take(&mut recorded.headers)
        .into_iter()
        .filter(|(n, _)| {
            !n.eq_ignore_ascii_case("content-length")
                && !n.eq_ignore_ascii_case("transfer-encoding")
        })
        .collect();
    scale_retry_headers(&mut headers, scale);
    headers.push(("x-umi-seed".into(), seed.to_string()));
    headers.push(("x-umi-request-hash".into(), hex(hash)));
    headers.push(("x-umi-occurrence".into(), occurrence.to_string()));
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
