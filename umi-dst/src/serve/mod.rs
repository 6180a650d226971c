//! `dst serve`: the simulated model over real HTTP, for agents in any language and
//! clients Umi cannot reach inside a process.
//!
//! Each request is answered in a simulation of its own, seeded from the session seed (or
//! the one the request names with `x-umi-seed` or a `/seed/{n}/` path prefix), the
//! endpoint, what the model is asked (the conversation as the format's server parses it,
//! never `stream` or fields no model reads: `answer::conversation_hash`) and how many
//! times that was asked before in the request's scope (`x-umi-scope`, `/scope/{name}/`;
//! a fresh scope starts again, and feeds no seed). So a response never depends on
//! arrival order, concurrency, the wall clock or what the server served before: a
//! server started with the same seed, endpoints and faults returns the same bytes for
//! the same request in a fresh scope, streamed and whole alike. The bytes are SimNetwork's, in the endpoint's profile;
//! there is no second encoder. Simulated latency is played back in real time multiplied
//! by `time_scale` (0, the default, waits not at all; Retry-After is scaled the same way).
//! A client on Umi's simulated clock (`x-umi-clock-us`: the pytest plugin, the TypeScript
//! helper) is told the drawn Retry-After and when each part was sent instead, and plays
//! the waits on its own clock (`clock.rs`).
//!
//! Every response says how to reproduce it: `x-umi-seed`, `x-umi-request-hash`,
//! `x-umi-occurrence`, `x-umi-run-seed` and the faults applied (`x-umi-faults`).
//! `GET /umi/trace` returns the session's log (one JSON line per answered request, in
//! key order) and its trace hash (`?scope=S`: one scope's); `GET /umi/marks` what a
//! scope reached (faults at fault points, shapes sent, tool outcomes: `marks.rs`);
//! `POST /umi/reset` forgets every occurrence. Where a request names a seed it may name
//! a path (`7/3:9913`: from the scope's 3rd request on, answers drawn from stream 9913:
//! `branch.rs`). With no endpoints named, every format is served at its standard
//! path, and any model name is answered. `/mcp` is a simulated MCP server (the tools of
//! `ServeConfig::mcp`), seeded and scoped the same way (`mcp.rs`); `dst mcp` serves the
//! same over stdio (`stdio.rs`). `dst record` forwards to a real provider through the same
//! server (`proxy.rs`).
//!
//! ```no_run
//! # async fn demo() -> Result<(), umi_dst::serve::ServeError> {
//! let server = umi_dst::serve::Server::start(umi_dst::serve::ServeConfig::default()).await?;
//! let base = server.base_url(); // http://127.0.0.1:<port>: /v1/chat/completions, /v1/messages, ...
//! server.shutdown().await;
//! # Ok(()) }
//! ```

mod address;
mod agent_spans;
mod aim;
mod answer;
mod branch;
mod clock;
mod config;
mod digest;
mod error;
mod http;
mod marks;
mod mcp;
mod mcp_tools;
mod model;
mod otlp_trace;
mod own;
mod play;
mod pool;
mod proxy;
mod read;
mod reply;
mod session;
mod spans_in;
mod stdio;
mod world;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, oneshot};

pub use agent_spans::{
    AGENT_SPAN_BYTES_MAX, AGENT_SPAN_BYTES_PER_SCOPE_MAX, AGENT_SPAN_SCOPES_MAX,
    AGENT_SPANS_PER_SCOPE_MAX,
};
pub use aim::{MCP_METHODS, served_operations};
pub use config::{
    BODY_BYTES_MAX_DEFAULT, CLIENT_READ_TIMEOUT_MS, CONCURRENCY_MAX_DEFAULT, DEFAULT_PROFILES,
    EndpointSpec, MODEL_DEFAULT, ServeConfig, TIME_SCALE_MAX, format_path, profile_serving,
};
pub use error::ServeError;
pub use mcp_tools::{MCP_TOOLS_FILE_BYTES_MAX, MCP_TOOLS_MAX, McpToolSpec, McpToolsSpec};
pub use otlp_trace::SERVICE_NAME_SERVE;
pub use proxy::{FailureHook, PROXY_BODY_BYTES_MAX, ProxyConfig, ResignHook, RunningProxy};
pub use spans_in::SCOPE_ATTRIBUTE;
pub use stdio::{StdioReply, StdioServer};

/// How long shutdown waits for in-flight responses before it drops them.
pub const SHUTDOWN_GRACE_MS: u64 = 30_000;

/// Starts servers.
#[derive(Debug, Clone, Copy)]
pub struct Server;

/// A server that is listening.
#[derive(Debug)]
pub struct RunningServer {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Checks `config`, binds its address and serves until [`RunningServer::shutdown`].
    /// Must be called inside a multi-threaded tokio runtime.
    pub async fn start(config: ServeConfig) -> Result<RunningServer, ServeError> {
        config.validate()?;
        let listener = TcpListener::bind(config.bind)
            .await
            .map_err(|source| ServeError::Bind {
                addr: config.bind,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| ServeError::Bind {
            addr: config.bind,
            source,
        })?;
        let state = Arc::new(reply::State {
            permits: Arc::new(Semaphore::new(config.concurrency_max)),
            simulations: pool::SimulationPool::start(
                pool::SimulationPool::threads_default(),
                config.concurrency_max,
            ),
            config,
            session: session::Session::default(),
            agent_spans: agent_spans::AgentSpans::default(),
        });
        let (stop, stopped) = oneshot::channel();
        let handle = move |request| http::handle(state.clone(), request);
        let task = tokio::spawn(accept_loop(listener, handle, stopped));
        Ok(RunningServer {
            addr,
            stop: Some(stop),
            task,
        })
    }
}

impl RunningServer {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting, lets in-flight responses finish (for at most
    /// [`SHUTDOWN_GRACE_MS`]), and returns.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }
}

/// One plain model request at `path` (its `headers` and `body`) answered in its
/// simulation alone, on the calling thread (outside any runtime), with no server around
/// it: the request's hash, its run seed (the session `seed`, first occurrence) and its
/// simulation, the least `dst serve` does for a request (the log entry, the digests and
/// the playback are not in it). The serve bench measures it as a floor of `dst serve`'s
/// own (not an API). Plain: `path` is an API path below an endpoint, with no query, no
/// `/seed/` or `/scope/` segment and no branch; what the server refuses before
/// simulating (an unknown path, a body over its limit) is simulated here. The answer's
/// body, the bytes a server started with `config` sends for such a request in a fresh
/// scope with `x-umi-seed: seed`; `None` for a path no endpoint of `config` routes.
#[doc(hidden)]
pub fn answer_alone(
    config: &ServeConfig,
    path: &str,
    (headers, body): (Vec<(String, String)>, Vec<u8>),
    seed: u64,
) -> Option<Vec<u8>> {
    let (endpoint, rest) = http::route(config, path)?;
    let request = umi_core::llm::transport::HttpRequest {
        method: "POST",
        url: String::new(),
        headers,
        body,
    };
    let (hash, _) = answer::conversation_hash(endpoint, &rest, &request);
    let run_seed = answer::run_seed(seed, endpoint, &hash, 0);
    let recorded = answer::answer(config, endpoint, run_seed, 0, &rest, request);
    Some(
        recorded
            .pieces
            .into_iter()
            .flat_map(|(_, piece)| piece)
            .collect(),
    )
}

/// Accepts connections until `stopped`, serving each request with `handle` (the
/// simulated model's server, or `dst record`'s proxy), then lets in-flight responses
/// finish for at most [`SHUTDOWN_GRACE_MS`].
pub(crate) async fn accept_loop<H, F>(
    listener: TcpListener,
    handle: H,
    mut stopped: oneshot::Receiver<()>,
) where
    H: Fn(hyper::Request<hyper::body::Incoming>) -> F + Clone + Send + Sync + 'static,
    F: std::future::Future<Output = Result<hyper::Response<reply::Body>, std::io::Error>>
        + Send
        + 'static,
{
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    loop {
        let accepted = tokio::select! {
            biased;
            _ = &mut stopped => break,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else {
            // Out of descriptors or a connection reset while queued: keep serving.
            continue;
        };
        // Streams are many small writes: without this, Nagle's algorithm and the
        // client's delayed ACKs hold each one for tens of milliseconds.
        let _ = stream.set_nodelay(true);
        let handle = handle.clone();
        let service = hyper::service::service_fn(handle);
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(Duration::from_millis(CLIENT_READ_TIMEOUT_MS))
            .serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // A client that hangs up, or a connection the simulation broke, ends here.
            let _ = connection.await;
        });
    }
    drop(listener);
    #[allow(clippy::disallowed_methods)] // the real server's shutdown grace, outside any simulation
    let _ = tokio::time::timeout(
        Duration::from_millis(SHUTDOWN_GRACE_MS),
        graceful.shutdown(),
    )
    .await;
}
