//! A simulated MCP server at one URL in SimNetwork: it admits a request
//! ([`super::streamable`]), decides its faults, answers it ([`super::dispatch`]) and
//! writes the answer as HTTP: one JSON object or an SSE stream, as this server was drawn
//! to answer (servers answer one way: the TypeScript SDK's `enableJsonResponse`, the
//! Python SDK's `json_response`).

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Map, Value, json};
use umi_core::llm::transport::{BodyStream, HttpRequest, HttpResponse, TransportError};

use super::dispatch::{self, Answered, Reply, RequestFaults};
use super::jsonrpc::Incoming;
use super::session::{McpSession, Sessions};
use super::streamable::{self, Admitted, Refusal, SESSION_HEADER};
use super::{PROTOCOL_VERSION_OLDEST, SimMcpServer};
use crate::environment::SimEnvironment;
use crate::fault::point::{MCP_INITIALIZE, MCP_REQUEST, unreachable_kind};
use crate::fault::{FaultKind, ToolKind};
use crate::rng::DeterministicRng;
use crate::trace::{McpEvent, NetEvent};
use umi_core::hex::lower as hex;

/// How long a server that never answers holds the request, in simulated ms, before the
/// connection drops: well past any client's timeout.
pub const MCP_SILENCE_MS: u64 = 1_200_000;

/// The chance a simulated MCP server answers requests with SSE streams rather than
/// single JSON objects (drawn once per server).
pub const MCP_SSE_PROBABILITY: f64 = 0.5;

/// One simulated MCP server, reachable at `url`.
pub(crate) struct McpHost {
    pub(crate) url: String,
    server: SimMcpServer,
    sim: SimEnvironment,
    sessions: Mutex<Sessions>,
    sse: bool,
    rng: Mutex<DeterministicRng>,
}

impl std::fmt::Debug for McpHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHost")
            .field("url", &self.url)
            .field("sse", &self.sse)
            .finish_non_exhaustive()
    }
}

impl McpHost {
    /// `server` at `url`, with the sessions it already has, its stream `rng`, and how it
    /// answers (drawn from `rng` when not given: `dst serve` fixes it per server).
    pub(crate) fn new(
        url: &str,
        server: SimMcpServer,
        sessions: Sessions,
        mut rng: DeterministicRng,
        sse: Option<bool>,
    ) -> Self {
        let drawn = rng.bool_with(MCP_SSE_PROBABILITY);
        let sse = sse.unwrap_or(drawn);
        Self {
            url: url.to_owned(),
            sim: server.tools.sim.clone(),
            server,
            sessions: Mutex::new(sessions),
            sse,
            rng: Mutex::new(rng),
        }
    }

    /// The sessions it has now.
    pub(crate) fn sessions(&self) -> Sessions {
        self.lock_sessions().clone()
    }

    fn lock_sessions(&self) -> std::sync::MutexGuard<'_, Sessions> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next request's own stream.
    fn request_rng(&self) -> DeterministicRng {
        let mut rng = self.rng.lock().unwrap_or_else(PoisonError::into_inner);
        let draw = rng.next_u64();
        rng.fork_parts(&[
            crate::rng::streams::mcp::REQUEST.as_bytes(),
            &draw.to_le_bytes(),
        ])
    }

    /// Answers one HTTP request.
    pub(crate) async fn serve(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        let path = request.url.split('?').next().unwrap_or("");
        if path != self.url {
            return Ok(plain(404, "Not Found"));
        }
        let admitted = {
            let sessions = self.lock_sessions();
            streamable::admit(&request, &sessions)
        };
        self.sim.emit(NetEvent::Request {
            method: request.method.to_string(),
            url: request.url.to_string(),
            served_by: "mcp",
            body: None,
        });
        let admitted = match admitted {
            Ok(admitted) => admitted,
            Err(refusal) => {
                self.sim.emit(McpEvent::Refused {
                    method: request.method.to_string(),
                    status: refusal.status,
                });
                return Ok(refused(&refusal));
            }
        };
        match admitted {
            Admitted::Initialize { id, params } => self.initialize(&id, &params).await,
            Admitted::Request {
                session,
                id,
                method,
                params,
            } => self.request(&session, &id, &method, &params).await,
            Admitted::Notification { session, method } => {
                self.notified(&session, method.as_deref());
                Ok(plain(202, ""))
            }
            Admitted::Batch { session, messages } => self.batch(&session, messages).await,
            Admitted::End { session } => {
                self.lock_sessions().end(&session);
                self.sim.emit(McpEvent::SessionEnd { session });
                Ok(plain(200, ""))
            }
        }
    }

    /// `initialize`: a new session, its version negotiated (or not, under a fault).
    async fn initialize(
        &self,
        id: &Value,
        params: &Map<String, Value>,
    ) -> Result<HttpResponse, TransportError> {
        let env = self.sim.env();
        env.cover("mcp.initialize");
        let fault = initialize_fault(self.sim.fault(&MCP_INITIALIZE));
        let requested = params.get("protocolVersion").and_then(Value::as_str);
        let version = match fault {
            InitializeFault::VersionMismatch => {
                env.cover("mcp.version_mismatch");
                PROTOCOL_VERSION_OLDEST
            }
            InitializeFault::None
            | InitializeFault::InternalError
            | InitializeFault::StreamCut
            | InitializeFault::NoResponse => streamable::negotiated_version(requested),
        };
        let mut rng = self.request_rng();
        let session = hex(&rng.bytes(16));
        // A server that failed its initialize began no session.
        let begun = fault != InitializeFault::InternalError;
        if begun {
            self.lock_sessions()
                .begin(session.clone(), version.to_owned());
        }
        self.sim.emit(McpEvent::Initialize {
            session: session.clone(),
            version,
            asked: requested.map(str::to_owned),
        });
        // `listChanged` only where the notification can be delivered: this server has
        // no GET stream, so only on a POST's SSE stream.
        let capabilities = json!({"tools": {"listChanged": self.sse}});
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": {"name": self.server.name, "version": self.server.version},
        });
        if let Some(instructions) = &self.server.instructions {
            result["instructions"] = Value::String(instructions.clone());
        }
        let reply = match fault {
            InitializeFault::InternalError => Reply::Message(super::jsonrpc::error(
                Some(id),
                super::jsonrpc::INTERNAL_ERROR,
                "Internal error",
            )),
            InitializeFault::StreamCut => Reply::Cut(super::jsonrpc::result(id, result)),
            InitializeFault::NoResponse => Reply::Silence,
            InitializeFault::None | InitializeFault::VersionMismatch => {
                Reply::Message(super::jsonrpc::result(id, result))
            }
        };
        let answered = Answered {
            before: Vec::new(),
            reply,
        };
        self.deliver(answered, begun.then_some(session.as_str()))
            .await
    }

    /// A notification (`method`; `None` for a response of the client's) in `session`.
    fn notified(&self, session: &str, method: Option<&str>) {
        let mut sessions = self.lock_sessions();
        if let (Some("notifications/initialized"), Some(state)) =
            (method, sessions.get_mut(session))
        {
            state.initialized = true;
        }
    }

    /// A request in `session`.
    async fn request(
        &self,
        session: &str,
        id: &Value,
        method: &str,
        params: &Map<String, Value>,
    ) -> Result<HttpResponse, TransportError> {
        match self.answer(session, id, method, params).await {
            Ok(answered) => self.deliver(answered, None).await,
            Err(refusal) => Ok(refused(&refusal)),
        }
    }

    /// A batch in `session` (2025-03-26): its messages in order, its answer the array of
    /// its responses (JSON-RPC 2.0 §6), or 202 when it held no request (2025-03-26,
    /// transports, sending messages, rule 4). The first request whose answer does not
    /// arrive whole (a cut, a silence, a reset) ends the batch's answer that way, and
    /// the requests after it are not run: the response carrying them all broke. A
    /// session that expires on one is the 404 of the whole POST.
    async fn batch(
        &self,
        session: &str,
        messages: Vec<Incoming>,
    ) -> Result<HttpResponse, TransportError> {
        let mut before = Vec::new();
        let mut responses = Vec::new();
        // `admit` bounds a batch at `jsonrpc::BATCH_MESSAGES_MAX` messages.
        for message in messages {
            let (id, method, params) = match message {
                Incoming::Request { id, method, params } => (id, method, params),
                Incoming::Notification { method } => {
                    self.notified(session, Some(&method));
                    continue;
                }
                Incoming::Response => continue,
            };
            let mut answered = match self.answer(session, &id, &method, &params).await {
                Ok(answered) => answered,
                Err(refusal) => return Ok(refused(&refusal)),
            };
            before.append(&mut answered.before);
            let reply = match answered.reply {
                Reply::Message(message) => {
                    responses.push(message);
                    continue;
                }
                Reply::Cut(message) => {
                    responses.push(message);
                    Reply::Cut(Value::Array(responses))
                }
                ended @ Reply::Silence | ended @ Reply::Reset => ended,
            };
            return self.deliver(Answered { before, reply }, None).await;
        }
        if responses.is_empty() {
            return Ok(plain(202, ""));
        }
        let reply = Reply::Message(Value::Array(responses));
        self.deliver(Answered { before, reply }, None).await
    }

    /// Answers a request in `session` (not yet as HTTP); `Err` is the 404 of a session
    /// the server forgot, by a fault or meanwhile.
    async fn answer(
        &self,
        session: &str,
        id: &Value,
        method: &str,
        params: &Map<String, Value>,
    ) -> Result<Answered, Refusal> {
        let env = self.sim.env();
        let fault = self.sim.fault_qualified(&MCP_REQUEST, method);
        if fault == Some(FaultKind::McpSessionExpired) {
            self.lock_sessions().end(session);
            env.cover("mcp.session_expired");
            self.sim.emit(McpEvent::SessionExpired {
                session: session.to_owned(),
                method: method.to_owned(),
            });
            return Err(streamable::session_not_found());
        }
        let faults = RequestFaults {
            internal_error: fault == Some(FaultKind::McpInternalError),
            tools_changed: fault == Some(FaultKind::McpToolsChanged),
            cut: fault == Some(FaultKind::McpStreamCut),
            silence: fault == Some(FaultKind::McpNoResponse),
        };
        let Some(mut state): Option<McpSession> = self.lock_sessions().get(session).cloned() else {
            return Err(streamable::session_not_found());
        };
        match method {
            "tools/list" => env.cover("mcp.tools_list"),
            "tools/call" => env.cover("mcp.tools_call"),
            _ => {}
        }
        if faults.tools_changed {
            env.cover("mcp.tools_changed");
        }
        let mut rng = self.request_rng();
        let answered = dispatch::request(
            &self.server,
            (session, &mut state),
            (id, method, params),
            faults,
            &mut rng,
        )
        .await;
        self.sim.emit(McpEvent::Request {
            session: session.to_owned(),
            method: method.to_owned(),
            id: id.to_string(),
            reply: answered.reply.name(),
        });
        // Write back what the request changed, unless the session ended meanwhile.
        if let Some(kept) = self.lock_sessions().get_mut(session) {
            *kept = state;
        }
        Ok(answered)
    }

    /// The answer as HTTP, in this server's way (SSE or JSON).
    async fn deliver(
        &self,
        answered: Answered,
        session: Option<&str>,
    ) -> Result<HttpResponse, TransportError> {
        let mut headers: Vec<(String, String)> = Vec::new();
        if let Some(session) = session {
            headers.push((SESSION_HEADER.to_owned(), session.to_owned()));
        }
        if answered.reply == Reply::Reset {
            return Err(reset());
        }
        if !self.sse {
            if answered.reply == Reply::Silence {
                self.sim
                    .env()
                    .sleep(Duration::from_millis(MCP_SILENCE_MS))
                    .await;
                return Err(reset());
            }
            return Ok(self.json(answered.reply, headers));
        }
        Ok(self.sse(answered, headers))
    }

    /// A single JSON object (a cut one ends halfway, with the connection).
    fn json(&self, reply: Reply, mut headers: Vec<(String, String)>) -> HttpResponse {
        headers.push(("content-type".into(), "application/json".into()));
        let body: BodyStream = match reply {
            Reply::Message(message) => {
                let bytes = umi_core::canonical_json::to_string(&message).into_bytes();
                futures::stream::iter([Ok(bytes)]).boxed()
            }
            Reply::Cut(message) => {
                self.sim.env().cover("mcp.stream_cut");
                let mut bytes = umi_core::canonical_json::to_string(&message).into_bytes();
                bytes.truncate(bytes.len() / 2);
                futures::stream::iter([Ok(bytes), Err(reset())]).boxed()
            }
            Reply::Silence | Reply::Reset => unreachable!("answered before the headers"),
        };
        HttpResponse {
            status: 200,
            headers,
            body,
        }
    }

    /// An SSE stream, with the headers of the TypeScript SDK's streams: the notifications,
    /// then the reply (or the cut, or the silence).
    fn sse(&self, answered: Answered, mut headers: Vec<(String, String)>) -> HttpResponse {
        let env = self.sim.env();
        headers.push(("content-type".into(), "text/event-stream".into()));
        headers.push(("cache-control".into(), "no-cache, no-transform".into()));
        headers.push(("connection".into(), "keep-alive".into()));
        let mut events: Vec<Result<Vec<u8>, TransportError>> = answered
            .before
            .iter()
            .map(|m| Ok(streamable::sse_event(m)))
            .collect();
        let body: BodyStream = match answered.reply {
            // A batch's responses, each its own event, as the TypeScript SDK's server
            // writes them (`send`: one `event: message` per response on the POST's stream).
            Reply::Message(Value::Array(responses)) => {
                events.extend(responses.iter().map(|m| Ok(streamable::sse_event(m))));
                futures::stream::iter(events).boxed()
            }
            Reply::Message(message) => {
                events.push(Ok(streamable::sse_event(&message)));
                futures::stream::iter(events).boxed()
            }
            Reply::Cut(_) => {
                env.cover("mcp.stream_cut");
                events.push(Err(reset()));
                futures::stream::iter(events).boxed()
            }
            Reply::Silence => {
                let silence = futures::stream::once(async move {
                    env.sleep(Duration::from_millis(MCP_SILENCE_MS)).await;
                    Err(reset())
                });
                futures::stream::iter(events).chain(silence).boxed()
            }
            Reply::Reset => unreachable!("answered before the headers"),
        };
        HttpResponse {
            status: 200,
            headers,
            body,
        }
    }
}

/// The error of a connection the server closed.
fn reset() -> TransportError {
    TransportError::Reset {
        reason: "the MCP server closed the connection (simulated)".into(),
    }
}

/// A response with a plain body (202 and DELETE's 200 have none).
fn plain(status: u16, text: &str) -> HttpResponse {
    let body = text.as_bytes().to_vec();
    let headers = if body.is_empty() {
        Vec::new()
    } else {
        vec![("content-type".to_owned(), "text/plain".to_owned())]
    };
    HttpResponse {
        status,
        headers,
        body: futures::stream::iter([Ok(body)]).boxed(),
    }
}

/// A refusal as HTTP.
fn refused(refusal: &Refusal) -> HttpResponse {
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    if let Some(allow) = refusal.allow {
        headers.push(("allow".to_owned(), allow.to_owned()));
    }
    let body = refusal
        .body
        .as_ref()
        .map(|b| umi_core::canonical_json::to_string(b).into_bytes())
        .unwrap_or_default();
    HttpResponse {
        status: refusal.status,
        headers,
        body: futures::stream::iter([Ok(body)]).boxed(),
    }
}

/// What an `initialize` does under the fault drawn at [`MCP_INITIALIZE`]: one of the
/// kinds that point lists, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InitializeFault {
    None,
    VersionMismatch,
    InternalError,
    StreamCut,
    NoResponse,
}

/// `fault` as [`InitializeFault`], every tool kind listed: a kind the point never draws
/// (another tool fault, another domain's) is the injector's bug.
fn initialize_fault(fault: Option<FaultKind>) -> InitializeFault {
    let Some(kind) = fault else {
        return InitializeFault::None;
    };
    match kind.tool() {
        Some(ToolKind::McpVersionMismatch) => InitializeFault::VersionMismatch,
        Some(ToolKind::McpInternalError) => InitializeFault::InternalError,
        Some(ToolKind::McpStreamCut) => InitializeFault::StreamCut,
        Some(ToolKind::McpNoResponse) => InitializeFault::NoResponse,
        Some(
            ToolKind::Timeout
            | ToolKind::ErrorResult
            | ToolKind::TransportError
            | ToolKind::MalformedResult
            | ToolKind::Slow
            | ToolKind::EmptyResult
            | ToolKind::McpSessionExpired
            | ToolKind::McpToolsChanged,
        )
        | None => unreachable_kind(&MCP_INITIALIZE, kind),
    }
}
