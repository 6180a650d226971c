//! A forwarding proxy: every request a client sends is passed to one upstream through a
//! [`Transport`], and the upstream's response is streamed back read by read as it
//! arrives. `dst record` runs it with a recording transport, so the cassette holds what
//! the client really got.
//!
//! The proxy forwards the method, the path and query, the body and every header but the
//! hop-by-hop ones, `host`, `content-length` (the transport sets its own) and
//! `accept-encoding` (so the upstream answers uncompressed and the recorded bytes are
//! the ones a client reads). When the client sends no credential header, the proxy adds
//! the configured one (`--key-env`). A request its client signed with AWS SigV4
//! (Bedrock's: the signature covers the `host`, which the proxy changes) is signed again
//! for the upstream by the configured re-signer ([`ProxyConfig::resign`], umi-core's
//! `bedrock::resign` with `--key-env`'s key pair), or AWS would answer
//! `SignatureDoesNotMatch`. An upstream that cannot be reached gets the client
//! a 502 whose JSON body names the error (redacted), and the proxy's failure hook is told.
//! It lives here, beside `dst serve`, because it is the same hyper server.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, StreamBody};
use hyper::Request;
use hyper::body::{Frame, Incoming};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use umi_core::llm::secrets::Redactor;
use umi_core::llm::transport::{HttpRequest, Transport};

use super::error::ServeError;
use super::read;
use super::reply::{Body, full, respond};

/// The largest request body the proxy forwards, in bytes (a larger one gets a 413).
pub const PROXY_BODY_BYTES_MAX: usize = 64 * 1024 * 1024;

/// Headers that belong to one connection, never forwarded either way.
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
];

/// Request headers that carry a client's own credential.
const CREDENTIAL_HEADERS: [&str; 4] = ["authorization", "x-api-key", "api-key", "x-goog-api-key"];

/// Told of each request the upstream did not answer (its line, redacted).
pub type FailureHook = Arc<dyn Fn(&str) + Send + Sync>;

/// Signs a forwarded request again for the upstream's host; `false` when it carries no
/// signature of the kind it renews (then it goes as it came).
pub type ResignHook = Arc<dyn Fn(&mut HttpRequest) -> bool + Send + Sync>;

/// What the proxy forwards to, and how.
pub struct ProxyConfig {
    /// Where to listen.
    pub bind: SocketAddr,
    /// The upstream's base URL; a request's path and query are appended to it.
    pub upstream: String,
    /// What carries the requests (a recording transport, in `dst record`).
    pub transport: Arc<dyn Transport>,
    /// The header (name, value) added to a request that carries no credential of its own.
    pub credential: Option<(String, String)>,
    /// Removes secrets from the error texts the proxy hands out.
    pub redactor: Redactor,
    /// Told of each request the upstream did not answer.
    pub on_failure: FailureHook,
    /// Signs a SigV4-signed request again for the upstream (none: forwarded as signed).
    pub resign: Option<ResignHook>,
}

impl std::fmt::Debug for ProxyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyConfig")
            .field("bind", &self.bind)
            .field(
                "upstream",
                &umi_core::llm::secrets::redact_url(&self.upstream),
            )
            .field(
                "credential",
                &self.credential.as_ref().map(|(name, _)| name),
            )
            .finish_non_exhaustive()
    }
}

/// A proxy that is listening.
#[derive(Debug)]
pub struct RunningProxy {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningProxy {
    /// Binds `config.bind` and forwards until [`RunningProxy::shutdown`]. Must be called
    /// inside a multi-threaded tokio runtime.
    pub async fn start(config: ProxyConfig) -> Result<Self, ServeError> {
        let bind = config.bind;
        let error = |source| ServeError::Bind { addr: bind, source };
        let listener = TcpListener::bind(bind).await.map_err(error)?;
        let addr = listener.local_addr().map_err(error)?;
        let (stop, stopped) = oneshot::channel();
        let config = Arc::new(config);
        let handle = move |request| {
            let config = config.clone();
            async move { Ok::<_, std::io::Error>(forward(&config, request).await) }
        };
        let task = tokio::spawn(super::accept_loop(listener, handle, stopped));
        Ok(Self {
            addr,
            stop: Some(stop),
            task,
        })
    }

    /// `http://<addr>`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting, lets in-flight responses finish (for at most
    /// [`SHUTDOWN_GRACE_MS`](super::SHUTDOWN_GRACE_MS)), and returns.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }
}

/// The method as the transport names it, if it is one a provider API takes.
fn method_of(method: &hyper::Method) -> Option<&'static str> {
    Some(match *method {
        hyper::Method::GET => "GET",
        hyper::Method::POST => "POST",
        hyper::Method::PUT => "PUT",
        hyper::Method::PATCH => "PATCH",
        hyper::Method::DELETE => "DELETE",
        hyper::Method::HEAD => "HEAD",
        hyper::Method::OPTIONS => "OPTIONS",
        _ => return None,
    })
}

/// A 502 (or any status) with a JSON body naming what went wrong.
fn refusal(status: u16, kind: &str, message: &str) -> hyper::Response<Body> {
    let body = serde_json::json!({"error": {"type": kind, "message": message}});
    respond(
        status,
        vec![("content-type".into(), "application/json".into())],
        full(body.to_string()),
    )
}

/// The upstream request for the client's `request`.
fn upstream_request(config: &ProxyConfig, mut request: HttpRequest, path: &str) -> HttpRequest {
    request.url = format!("{}{path}", config.upstream.trim_end_matches('/'));
    request.headers.retain(|(name, _)| {
        let name = name.to_ascii_lowercase();
        !HOP_BY_HOP.contains(&name.as_str()) && name != "host" && name != "accept-encoding"
    });
    let has_credential = request
        .headers
        .iter()
        .any(|(name, _)| CREDENTIAL_HEADERS.contains(&name.to_ascii_lowercase().as_str()));
    if !has_credential && let Some(credential) = &config.credential {
        request.headers.push(credential.clone());
    }
    if let Some(resign) = &config.resign {
        resign(&mut request);
    }
    request
}

async fn forward(config: &ProxyConfig, request: Request<Incoming>) -> hyper::Response<Body> {
    let Some(method) = method_of(request.method()) else {
        let message = format!("method {} is not forwarded", request.method());
        return refusal(405, "method_not_allowed", &message);
    };
    let path = request
        .uri()
        .path_and_query()
        .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
    let mut read = match read::request(request, PROXY_BODY_BYTES_MAX).await {
        Ok(read) => read,
        Err((status, message)) => return refusal(status, "bad_request", &message),
    };
    read.method = method;
    let upstream = upstream_request(config, read, &path);
    match config.transport.send(upstream).await {
        Ok(response) => {
            let headers = response
                .headers
                .into_iter()
                .filter(|(name, _)| !HOP_BY_HOP.contains(&name.to_ascii_lowercase().as_str()))
                .collect();
            let body = response.body.map(|read| match read {
                Ok(bytes) => Ok(Frame::data(Bytes::from(bytes))),
                Err(error) => Err(std::io::Error::other(error.to_string())),
            });
            let body = BodyExt::boxed_unsync(StreamBody::new(body.boxed()));
            respond(response.status, headers, body)
        }
        Err(error) => {
            let message = config.redactor.redact(&error.to_string());
            let redacted_path = config.redactor.redact(&path);
            (config.on_failure)(&format!("{method} {redacted_path}: {message}"));
            refusal(
                502,
                "upstream_unreachable",
                &format!("the upstream: {message}"),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use umi_core::llm::transport::{HttpResponse, TransportError};

    #[derive(Debug)]
    struct Unused;

    #[async_trait::async_trait]
    impl Transport for Unused {
        async fn send(&self, _request: HttpRequest) -> Result<HttpResponse, TransportError> {
            Err(TransportError::Connect {
                reason: "not sent in this test".into(),
            })
        }
    }

    fn config(resign: Option<ResignHook>) -> ProxyConfig {
        ProxyConfig {
            bind: "127.0.0.1:0".parse().unwrap(),
            upstream: "https://bedrock-runtime.us-east-1.amazonaws.com".into(),
            transport: Arc::new(Unused),
            credential: None,
            redactor: Redactor::new(),
            on_failure: Arc::new(|_: &str| {}),
            resign,
        }
    }

    #[test]
    fn a_sigv4_request_is_signed_again_for_the_upstream_and_others_go_as_they_came() {
        let pair = umi_core::llm::bedrock::sigv4::Credentials::parse(
            "AKIDEXAMPLE:wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        )
        .unwrap();
        let hook: ResignHook =
            Arc::new(move |http| umi_core::llm::bedrock::resign(http, &pair, 1_709_208_000_000));
        let signed_for_proxy = HttpRequest {
            method: "POST",
            url: "http://127.0.0.1:8090/model/m/converse".into(),
            headers: vec![
                ("host".into(), "127.0.0.1:8090".into()),
                ("content-type".into(), "application/json".into()),
                ("x-amz-date".into(), "20240229T115900Z".into()),
                (
                    "authorization".into(),
                    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240229/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=00".into(),
                ),
            ],
            body: b"{}".to_vec(),
        };
        let forwarded = upstream_request(
            &config(Some(hook.clone())),
            signed_for_proxy.clone(),
            "/model/m/converse",
        );
        let mut expected = HttpRequest {
            url: "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse".into(),
            ..signed_for_proxy.clone()
        };
        expected.headers.retain(|(name, _)| name != "host");
        assert!(umi_core::llm::bedrock::resign(
            &mut expected,
            &umi_core::llm::bedrock::sigv4::Credentials::parse(
                "AKIDEXAMPLE:wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
            )
            .unwrap(),
            1_709_208_000_000
        ));
        assert_eq!(forwarded, expected);
        assert_ne!(
            forwarded.header("authorization"),
            signed_for_proxy.header("authorization")
        );
        // Without a re-signer, or for a Bearer key, the request goes as it came.
        let as_sent =
            upstream_request(&config(None), signed_for_proxy.clone(), "/model/m/converse");
        assert_eq!(
            as_sent.header("authorization"),
            signed_for_proxy.header("authorization")
        );
        let mut bearer = signed_for_proxy;
        bearer.headers.retain(|(name, _)| name != "authorization");
        bearer
            .headers
            .push(("authorization".into(), "Bearer sk-test".into()));
        let forwarded = upstream_request(&config(Some(hook)), bearer, "/v1/chat/completions");
        assert_eq!(forwarded.header("authorization"), Some("Bearer sk-test"));
    }
}
