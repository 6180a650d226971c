//! The MCP client: one server, one session at a time, requests numbered from 1.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::read::{self, ReadError};
use super::{CALL_ID_META_KEY, McpError, PROTOCOL_VERSIONS, REINITIALIZE_MAX, TOOL_PAGES_MAX};
use crate::env::{Env, EnvironmentExt};
use crate::llm::transport::{HttpRequest, HttpResponse, Transport};

/// How long a request waits for its response by default.
pub const MCP_REQUEST_TIMEOUT_DEFAULT: Duration = Duration::from_secs(30);

/// How much of an error response's body an error keeps, in bytes.
pub const HTTP_ERROR_BODY_BYTES_MAX: usize = 500;

/// A client's settings.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct McpClientConfig {
    /// How long a request waits for its response.
    pub request_timeout: Duration,
    /// The `clientInfo.name` it introduces itself with.
    pub client_name: String,
}

impl Default for McpClientConfig {
    fn default() -> Self {
        Self {
            request_timeout: MCP_REQUEST_TIMEOUT_DEFAULT,
            client_name: "umi-core".to_owned(),
        }
    }
}

impl McpClientConfig {
    /// With `timeout` per request.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }
}

/// A tool a server offers.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct McpTool {
    /// Its name.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// Its arguments' JSON Schema.
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
    /// Its results' JSON Schema, when it declares one.
    #[serde(rename = "outputSchema", default)]
    pub output_schema: Option<Value>,
}

/// What a `tools/call` came to.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallResult {
    /// The text parts of its content, joined by newlines.
    pub text: String,
    /// Its structured content, when the tool sent one.
    pub structured: Option<Value>,
    /// Whether the tool failed (`isError`): the text says why, for the model.
    pub is_error: bool,
}

#[derive(Debug, Default)]
struct State {
    /// Whether a session began (a server may give no session id: MCP 2025-11-25,
    /// transports, session management, rule 1).
    connected: bool,
    session: Option<String>,
    protocol_version: Option<String>,
    next_id: u64,
    tools_changed: bool,
}

/// A client of one MCP server.
pub struct McpClient {
    transport: Arc<dyn Transport>,
    env: Env,
    url: String,
    config: McpClientConfig,
    state: Mutex<State>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("url", &self.shown_url())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Whether a POST was refused because its session is gone.
enum Sent {
    Answer(Value),
    SessionGone,
}

impl McpClient {
    /// A client of the server at `url` (the MCP endpoint, `https://host/mcp`), sending
    /// through `transport`, timing out in `env`'s time. Nothing is sent until
    /// [`McpClient::connect`] or the first request.
    pub fn new(transport: Arc<dyn Transport>, env: Env, url: &str) -> Self {
        Self {
            transport,
            env,
            url: url.to_owned(),
            config: McpClientConfig::default(),
            state: Mutex::new(State::default()),
        }
    }

    /// With `config`.
    pub fn with_config(mut self, config: McpClientConfig) -> Self {
        self.config = config;
        self
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The protocol version agreed, once connected.
    pub fn protocol_version(&self) -> Option<String> {
        self.state().protocol_version.clone()
    }

    /// Whether the server said its tool list changed since the last [`McpClient::list_tools`].
    pub fn tools_changed(&self) -> bool {
        self.state().tools_changed
    }

    /// Begins a session: `initialize`, the version checked, `notifications/initialized`.
    pub async fn connect(&self) -> Result<(), McpError> {
        {
            let mut state = self.state();
            state.connected = false;
            state.session = None;
            state.protocol_version = None;
        }
        let params = json!({
            "protocolVersion": PROTOCOL_VERSIONS[0],
            "capabilities": {},
            "clientInfo": {"name": self.config.client_name, "version": env!("CARGO_PKG_VERSION")},
        });
        let (response, session) = self.post_request("initialize", params, None).await?;
        let Sent::Answer(result) = response else {
            unreachable!("initialize carries no session, so it is never refused as a gone one")
        };
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| self.malformed("initialize", "$.result.protocolVersion is missing"))?;
        if !PROTOCOL_VERSIONS.contains(&version) {
            return Err(McpError::Version {
                url: self.shown_url(),
                version: version.to_owned(),
                supported: PROTOCOL_VERSIONS.join(", "),
            });
        }
        {
            let mut state = self.state();
            state.connected = true;
            state.session = session;
            state.protocol_version = Some(version.to_owned());
        }
        self.env.record(
            "mcp.connected",
            format_args!("{} version={version}", self.url),
        );
        self.notify("notifications/initialized").await
    }

    /// Every tool the server offers, following `nextCursor` (at most
    /// [`TOOL_PAGES_MAX`] pages).
    pub async fn list_tools(&self) -> Result<Vec<McpTool>, McpError> {
        self.state().tools_changed = false;
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _page in 0..TOOL_PAGES_MAX {
            let params = match &cursor {
                Some(cursor) => json!({"cursor": cursor}),
                None => json!({}),
            };
            let result = self.request("tools/list", params).await?;
            let page: Vec<McpTool> = result
                .get("tools")
                .cloned()
                .map(serde_json::from_value)
                .transpose()
                .map_err(|error| self.malformed("tools/list", &format!("$.result.tools: {error}")))?
                .ok_or_else(|| self.malformed("tools/list", "$.result.tools is missing"))?;
            tools.extend(page);
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => return Ok(tools),
            }
        }
        Err(self.malformed(
            "tools/list",
            &format!("more than {TOOL_PAGES_MAX} pages of tools"),
        ))
    }

    /// Calls `name` with `arguments`; `call_id` (the model's call id) goes in `_meta`.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        call_id: Option<&str>,
    ) -> Result<ToolCallResult, McpError> {
        let mut params = json!({"name": name, "arguments": arguments});
        if let Some(call_id) = call_id {
            params["_meta"] = json!({ CALL_ID_META_KEY: call_id });
        }
        let result = self.request("tools/call", params).await?;
        let content = result
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| self.malformed("tools/call", "$.result.content is not an array"))?;
        let text: Vec<&str> = content
            .iter()
            .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect();
        Ok(ToolCallResult {
            text: text.join("\n"),
            structured: result.get("structuredContent").cloned(),
            is_error: result
                .get("isError")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
    }

    /// Ends the session (DELETE); a server that does not allow it (405) is fine.
    pub async fn close(&self) -> Result<(), McpError> {
        let Some(session) = self.state().session.take() else {
            return Ok(());
        };
        let request = HttpRequest {
            method: "DELETE",
            url: self.shown_url(),
            headers: self.headers(Some(&session)),
            body: Vec::new(),
        };
        let exchange = async {
            let response = self.send("DELETE", request).await?;
            match response.status {
                200..=299 | 404 | 405 => Ok(()),
                status => Err(self.http_error("DELETE", status, response).await),
            }
        };
        self.timed("DELETE", exchange).await
    }

    /// `exchange`, or [`McpError::Timeout`] past the request timeout.
    async fn timed<T>(
        &self,
        method: &str,
        exchange: impl std::future::Future<Output = Result<T, McpError>>,
    ) -> Result<T, McpError> {
        match self
            .env
            .timeout(self.config.request_timeout, exchange)
            .await
        {
            Ok(done) => done,
            Err(_) => Err(McpError::Timeout {
                url: self.shown_url(),
                method: method.to_owned(),
                timeout_ms: u64::try_from(self.config.request_timeout.as_millis())
                    .unwrap_or(u64::MAX),
            }),
        }
    }

    /// The URL as errors and traces show it: credentials in it redacted.
    fn shown_url(&self) -> String {
        crate::llm::secrets::redact_url(&self.url)
    }

    /// A request in the session (one begun first if there is none), begun again once
    /// after a 404.
    async fn request(&self, method: &str, params: Value) -> Result<Value, McpError> {
        if !self.state().connected {
            self.connect().await?;
        }
        for attempt in 0..=REINITIALIZE_MAX {
            let session = self.state().session.clone();
            match self
                .post_request(method, params.clone(), session.as_deref())
                .await?
            {
                (Sent::Answer(result), _) => return Ok(result),
                (Sent::SessionGone, _) => {
                    self.env.record(
                        "mcp.session_gone",
                        format_args!("{} at {method} (attempt {attempt})", self.shown_url()),
                    );
                    // A new session only when the request will be sent in it.
                    if attempt < REINITIALIZE_MAX {
                        self.env.cover("mcp.client_reinitialized");
                        self.connect().await?;
                    }
                }
            }
        }
        Err(McpError::SessionExpired {
            url: self.shown_url(),
            attempts: REINITIALIZE_MAX,
        })
    }

    /// Sends a notification in the session.
    async fn notify(&self, method: &str) -> Result<(), McpError> {
        let session = self.state().session.clone();
        let body = json!({"jsonrpc": "2.0", "method": method});
        let request = self.post(&body, session.as_deref());
        let exchange = async {
            let response = self.send(method, request).await?;
            match response.status {
                200..=299 => Ok(()),
                status => Err(self.http_error(method, status, response).await),
            }
        };
        self.timed(method, exchange).await
    }

    /// POSTs request `method` and reads its result (and the session id a response to
    /// `initialize` carries).
    async fn post_request(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
    ) -> Result<(Sent, Option<String>), McpError> {
        let id = {
            let mut state = self.state();
            state.next_id += 1;
            state.next_id
        };
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let request = self.post(&body, session);
        let exchange = async {
            let response = self.send(method, request).await?;
            if response.status == 404 && session.is_some() {
                return Ok((Sent::SessionGone, None));
            }
            if !(200..=299).contains(&response.status) {
                return Err(self.http_error(method, response.status, response).await);
            }
            let session_id = response.header("mcp-session-id").map(str::to_owned);
            let sse = response
                .header("content-type")
                .is_some_and(|t| t.starts_with("text/event-stream"));
            let answer = read::answer(response.body, sse, id)
                .await
                .map_err(|error| self.read_error(method, error))?;
            if answer
                .notifications
                .iter()
                .any(|n| n == "notifications/tools/list_changed")
            {
                self.state().tools_changed = true;
                self.env.cover("mcp.client_saw_list_changed");
            }
            let response = answer.response.ok_or_else(|| McpError::NoResponse {
                url: self.shown_url(),
                method: method.to_owned(),
            })?;
            Ok((Sent::Answer(self.result_of(method, response)?), session_id))
        };
        self.timed(method, exchange).await
    }

    /// The `result` of a response, or its error.
    fn result_of(&self, method: &str, response: Value) -> Result<Value, McpError> {
        if let Some(error) = response.get("error") {
            return Err(McpError::Rpc {
                url: self.shown_url(),
                method: method.to_owned(),
                code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            });
        }
        match response {
            Value::Object(mut object) => object
                .remove("result")
                .ok_or_else(|| self.malformed(method, "$.result is missing")),
            _ => Err(self.malformed(method, "the response is not an object")),
        }
    }

    /// The headers every request carries (2025-11-25, transports).
    fn headers(&self, session: Option<&str>) -> Vec<(String, String)> {
        let mut headers = vec![
            (
                "accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
            ("content-type".to_owned(), "application/json".to_owned()),
        ];
        if let Some(session) = session {
            headers.push(("mcp-session-id".to_owned(), session.to_owned()));
        }
        if let Some(version) = &self.state().protocol_version {
            headers.push(("mcp-protocol-version".to_owned(), version.clone()));
        }
        headers
    }

    fn post(&self, body: &Value, session: Option<&str>) -> HttpRequest {
        HttpRequest {
            method: "POST",
            url: self.shown_url(),
            headers: self.headers(session),
            body: crate::canonical_json::to_string(body).into_bytes(),
        }
    }

    async fn send(&self, method: &str, request: HttpRequest) -> Result<HttpResponse, McpError> {
        self.transport
            .send(request)
            .await
            .map_err(|source| McpError::Transport {
                url: self.shown_url(),
                source,
            })
            .inspect_err(|error| {
                self.env
                    .record("mcp.transport_error", format_args!("{method}: {error}"));
            })
    }

    async fn http_error(&self, method: &str, status: u16, response: HttpResponse) -> McpError {
        let body = read::prefix(response.body, HTTP_ERROR_BODY_BYTES_MAX).await;
        McpError::Http {
            url: self.shown_url(),
            method: method.to_owned(),
            status,
            body,
        }
    }

    fn read_error(&self, method: &str, error: ReadError) -> McpError {
        match error {
            ReadError::Transport(source) => McpError::Transport {
                url: self.shown_url(),
                source,
            },
            ReadError::Malformed(reason) => self.malformed(method, &reason),
        }
    }

    fn malformed(&self, method: &str, reason: &str) -> McpError {
        McpError::Malformed {
            url: self.shown_url(),
            method: method.to_owned(),
            reason: reason.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use async_trait::async_trait;
    use futures::StreamExt;

    use super::*;
    use crate::env::SystemEnvironment;
    use crate::llm::transport::TransportError;

    /// A server that gives no session id (the spec's "MAY"): it counts `initialize`s.
    #[derive(Debug, Default)]
    struct Sessionless {
        initializes: AtomicU32,
    }

    #[async_trait]
    impl Transport for Sessionless {
        async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
            let message: Value = serde_json::from_slice(&request.body).unwrap();
            let (status, body) = match message["method"].as_str() {
                Some("initialize") => {
                    self.initializes.fetch_add(1, Ordering::Relaxed);
                    (
                        200,
                        json!({"jsonrpc": "2.0", "id": message["id"], "result": {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}}),
                    )
                }
                Some("tools/list") => (
                    200,
                    json!({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}}),
                ),
                _ => (202, Value::Null),
            };
            let bytes = if body.is_null() {
                Vec::new()
            } else {
                serde_json::to_vec(&body).unwrap()
            };
            Ok(HttpResponse {
                status,
                headers: vec![("content-type".into(), "application/json".into())],
                body: futures::stream::iter([Ok(bytes)]).boxed(),
            })
        }
    }

    /// A server without sessions once got an `initialize` before every request: the
    /// client took "no session id" for "not connected".
    #[tokio::test]
    async fn a_server_without_sessions_is_initialized_once() {
        let server = Arc::new(Sessionless::default());
        let env: Env = Arc::new(SystemEnvironment::new());
        let client = McpClient::new(server.clone(), env, "http://user:secret@tools.example/mcp");
        client.list_tools().await.unwrap();
        client.list_tools().await.unwrap();
        assert_eq!(server.initializes.load(Ordering::Relaxed), 1);
        assert!(!format!("{client:?}").contains("secret"), "{client:?}");
    }
}
