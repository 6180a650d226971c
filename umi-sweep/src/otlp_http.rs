//! `--otlp-export`: an export sent to an OpenTelemetry collector over OTLP/HTTP,
//! configured as every OpenTelemetry SDK is, by the standard variables
//! (<https://opentelemetry.io/docs/specs/otel/protocol/exporter/>):
//!
//! - where: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, else
//!   `OTEL_EXPORTER_OTLP_ENDPOINT` with `v1/traces` appended to its path; neither is a
//!   typed error naming both;
//! - headers: `OTEL_EXPORTER_OTLP_TRACES_HEADERS`, else `OTEL_EXPORTER_OTLP_HEADERS`:
//!   `key=value` pairs separated by commas, values percent-decoded (the W3C Baggage
//!   form the spec names);
//! - encoding: `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`:
//!   `http/protobuf` (the default) or `http/json` (`grpc` is refused: no gRPC client here);
//! - `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else `OTEL_EXPORTER_OTLP_TIMEOUT`: the whole
//!   request's limit in milliseconds (default 10 s).
//!
//! The request is a `POST` by reqwest (the workspace's HTTP client, rustls with ring).
//! A collector's non-2xx answer is an error naming its status and (the start of) its
//! body. Header values hold API keys: no error, log line or `Debug` prints them, nor a
//! headers entry whose name is not a header name (the colon form `Authorization: Basic
//! ...` splits at the first `=`, so its "name" is the credential): its entry number
//! only. The endpoint may hold credentials too (`https://user:token@host`, `?api_key=`):
//! errors, log lines and `Debug` show it without its userinfo, query and fragment
//! ([`ExporterConfig::endpoint_shown`]).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use umi_dst::otlp::{self, ExportTraceServiceRequest};

/// The default timeout (the spec's 10 s).
pub const OTLP_TIMEOUT_MS_DEFAULT: u64 = 10_000;

/// The most headers taken from the headers variable.
pub const OTLP_HEADERS_MAX: usize = 64;

/// The most bytes of a collector's answer kept (for an error's text, or to read its
/// partial success).
pub const COLLECTOR_ANSWER_BYTES_MAX: usize = 64 * 1024;

/// The most bytes of a collector's answer an error quotes.
const ERROR_BODY_CHARS_MAX: usize = 512;

/// The variables, by the spec's names.
pub const TRACES_ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
/// The base endpoint, for every signal.
pub const ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// The traces' headers.
pub const TRACES_HEADERS_VAR: &str = "OTEL_EXPORTER_OTLP_TRACES_HEADERS";
/// Every signal's headers.
pub const HEADERS_VAR: &str = "OTEL_EXPORTER_OTLP_HEADERS";
/// The traces' protocol.
pub const TRACES_PROTOCOL_VAR: &str = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL";
/// Every signal's protocol.
pub const PROTOCOL_VAR: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
/// The traces' timeout.
pub const TRACES_TIMEOUT_VAR: &str = "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT";
/// Every signal's timeout.
pub const TIMEOUT_VAR: &str = "OTEL_EXPORTER_OTLP_TIMEOUT";

/// How the request's body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `http/protobuf`: `application/x-protobuf`.
    HttpProtobuf,
    /// `http/json`: `application/json` (OTLP JSON).
    HttpJson,
}

impl Protocol {
    /// The body's content type.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::HttpProtobuf => "application/x-protobuf",
            Self::HttpJson => "application/json",
        }
    }
}

/// Where and how to send: read from the variables.
#[derive(Clone, PartialEq, Eq)]
pub struct ExporterConfig {
    /// The full URL the request goes to.
    pub endpoint: String,
    /// The variable it came from.
    pub endpoint_var: &'static str,
    /// Extra headers (name, value), values decoded.
    pub headers: Vec<(String, String)>,
    /// The body's encoding.
    pub protocol: Protocol,
    /// The whole request's limit.
    pub timeout: Duration,
}

/// Never the header values: they hold API keys.
impl fmt::Debug for ExporterConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("ExporterConfig")
            .field("endpoint", &self.endpoint_shown())
            .field("headers", &names)
            .field("protocol", &self.protocol)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// What went wrong reading the variables or sending.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OtlpHttpError {
    /// No endpoint variable is set.
    #[error(
        "--otlp-export: no collector: set {TRACES_ENDPOINT_VAR} (the full URL) or {ENDPOINT_VAR} (the base; /v1/traces is appended)"
    )]
    NoEndpoint,
    /// An endpoint that is not an http(s) URL.
    #[error("{var}: not an http:// or https:// URL: {reason}")]
    BadEndpoint {
        /// The variable.
        var: &'static str,
        /// Why.
        reason: String,
    },
    /// A headers entry that is not `key=value`, or a name or value HTTP refuses.
    #[error("{var}: entry {entry} (1-based) {reason}")]
    BadHeader {
        /// The variable.
        var: &'static str,
        /// The entry's position.
        entry: usize,
        /// What is wrong (naming a valid key, never a value or an invalid key).
        reason: String,
    },
    /// A protocol other than `http/protobuf` or `http/json`.
    #[error("{var}: {value:?} is not supported here (http/protobuf or http/json)")]
    BadProtocol {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
    },
    /// A timeout that is not a whole number of milliseconds.
    #[error("{var}: {value:?} is not a timeout in milliseconds")]
    BadTimeout {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
    },
    /// The request could not be sent or its answer not read (connection, timeout).
    #[error("OTLP export to {endpoint} failed: {reason}")]
    Send {
        /// The URL.
        endpoint: String,
        /// Why.
        reason: String,
    },
    /// The collector answered with a status other than 2xx.
    #[error("OTLP export to {endpoint}: the collector answered {status}: {body}")]
    Status {
        /// The URL.
        endpoint: String,
        /// The status.
        status: u16,
        /// The start of its answer's body, as text.
        body: String,
    },
}

impl ExporterConfig {
    /// The configuration the variables give, `var` reading one (`std::env::var` for the
    /// process; a map in tests).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, OtlpHttpError> {
        let set = |name: &'static str| {
            var(name)
                .map(|value| value.trim().to_owned())
                .filter(|value| !value.is_empty())
                .map(|value| (name, value))
        };
        let (endpoint_var, endpoint) = match (set(TRACES_ENDPOINT_VAR), set(ENDPOINT_VAR)) {
            (Some(traces), _) => traces,
            (None, Some((name, base))) => (name, traces_url(&base)),
            (None, None) => return Err(OtlpHttpError::NoEndpoint),
        };
        check_url(endpoint_var, &endpoint)?;
        let headers = match set(TRACES_HEADERS_VAR).or_else(|| set(HEADERS_VAR)) {
            Some((name, text)) => parse_headers(name, &text)?,
            None => Vec::new(),
        };
        let protocol = match set(TRACES_PROTOCOL_VAR).or_else(|| set(PROTOCOL_VAR)) {
            None => Protocol::HttpProtobuf,
            Some((_, value)) if value == "http/protobuf" => Protocol::HttpProtobuf,
            Some((_, value)) if value == "http/json" => Protocol::HttpJson,
            Some((var, value)) => return Err(OtlpHttpError::BadProtocol { var, value }),
        };
        let timeout_ms = match set(TRACES_TIMEOUT_VAR).or_else(|| set(TIMEOUT_VAR)) {
            None => OTLP_TIMEOUT_MS_DEFAULT,
            Some((var, value)) => value
                .parse::<u64>()
                .map_err(|_| OtlpHttpError::BadTimeout { var, value })?,
        };
        Ok(Self {
            endpoint,
            endpoint_var,
            headers,
            protocol,
            timeout: Duration::from_millis(timeout_ms),
        })
    }

    /// The endpoint as errors and logs show it: without userinfo, query and fragment,
    /// where credentials go.
    pub fn endpoint_shown(&self) -> String {
        shown(&self.endpoint)
    }

    /// The configuration of this process's environment.
    pub fn from_env() -> Result<Self, OtlpHttpError> {
        Self::from_vars(|name| std::env::var(name).ok())
    }
}

/// The base endpoint's traces URL: `v1/traces` appended to its path (the spec's rule
/// for `OTEL_EXPORTER_OTLP_ENDPOINT`).
fn traces_url(base: &str) -> String {
    if base.ends_with('/') {
        format!("{base}v1/traces")
    } else {
        format!("{base}/v1/traces")
    }
}

/// `endpoint` without userinfo, query and fragment (parsed by reqwest's URL parser);
/// one that does not parse as a URL (never the case past [`check_url`]) shows as a
/// placeholder, not as itself.
fn shown(endpoint: &str) -> String {
    let Ok(mut url) = reqwest::Url::parse(endpoint) else {
        return "(an endpoint that is not a URL)".to_owned();
    };
    // Both fail only for URLs that cannot have userinfo (no host), which is what we want.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}

/// Refuses what is not an absolute http(s) URL (parsed by reqwest's URL parser).
fn check_url(var: &'static str, endpoint: &str) -> Result<(), OtlpHttpError> {
    let url = reqwest::Url::parse(endpoint).map_err(|error| OtlpHttpError::BadEndpoint {
        var,
        reason: error.to_string(),
    })?;
    match url.scheme() {
        "http" | "https" => Ok(()),
        other => Err(OtlpHttpError::BadEndpoint {
            var,
            reason: format!("scheme {other:?}"),
        }),
    }
}

/// `k=v,k2=v2`: names trimmed, values trimmed and percent-decoded; checked as HTTP
/// header names and values. An error names the entry and its key, never a value.
fn parse_headers(var: &'static str, text: &str) -> Result<Vec<(String, String)>, OtlpHttpError> {
    let mut headers = BTreeMap::new();
    for (index, entry) in text.split(',').enumerate() {
        let entry_number = index + 1;
        let bad = |reason: String| OtlpHttpError::BadHeader {
            var,
            entry: entry_number,
            reason,
        };
        if entry.trim().is_empty() {
            continue;
        }
        if headers.len() >= OTLP_HEADERS_MAX {
            return Err(bad(format!("is past the {OTLP_HEADERS_MAX} headers taken")));
        }
        let Some((name, value)) = entry.split_once('=') else {
            return Err(bad("is not key=value".to_owned()));
        };
        let name = name.trim();
        // Checked first, and never printed when it fails: a name that is not a header
        // name may be a credential (`Authorization: Basic ...=` splits at its `=`).
        reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| bad("has a key that is not an HTTP header name".to_owned()))?;
        let value = percent_encoding::percent_decode_str(value.trim())
            .decode_utf8()
            .map_err(|_| {
                bad(format!(
                    "({name}): its value is not UTF-8 once percent-decoded"
                ))
            })?
            .into_owned();
        reqwest::header::HeaderValue::from_str(&value)
            .map_err(|_| bad(format!("({name}): its value is not an HTTP header value")))?;
        headers.insert(name.to_ascii_lowercase(), value);
    }
    Ok(headers.into_iter().collect())
}

/// What the collector said to a request it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// Its status (2xx).
    pub status: u16,
    /// The request body's size.
    pub body_bytes: usize,
    /// Spans it rejected (`partial_success.rejected_spans`), when it said.
    pub rejected_spans: i64,
    /// Its partial success message, when it gave one.
    pub message: String,
}

/// Sends `request` as `config` says, on a runtime of its own (the commands are sync).
pub fn send(
    config: &ExporterConfig,
    request: &ExportTraceServiceRequest,
) -> Result<Sent, OtlpHttpError> {
    let failed = |reason: String| OtlpHttpError::Send {
        endpoint: config.endpoint_shown(),
        reason,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| failed(format!("no runtime: {error}")))?;
    runtime.block_on(post(config, request))
}

/// The `POST`, and its answer read.
async fn post(
    config: &ExporterConfig,
    request: &ExportTraceServiceRequest,
) -> Result<Sent, OtlpHttpError> {
    let failed = |error: reqwest::Error| OtlpHttpError::Send {
        endpoint: config.endpoint_shown(),
        reason: error_chain(error),
    };
    umi_core::llm::transport::install_crypto_provider();
    let client = reqwest::Client::builder()
        .user_agent(concat!("umi-dst/", env!("CARGO_PKG_VERSION")))
        .timeout(config.timeout)
        .build()
        .map_err(failed)?;
    let body = match config.protocol {
        Protocol::HttpProtobuf => otlp::to_protobuf(request),
        Protocol::HttpJson => otlp::to_json(request),
    };
    let body_bytes = body.len();
    let mut builder = client
        .post(&config.endpoint)
        .header(
            reqwest::header::CONTENT_TYPE,
            config.protocol.content_type(),
        )
        .body(body);
    for (name, value) in &config.headers {
        builder = builder.header(name, value);
    }
    let mut response = builder.send().await.map_err(failed)?;
    let status = response.status().as_u16();
    let mut answer = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(failed)? {
        let room = COLLECTOR_ANSWER_BYTES_MAX.saturating_sub(answer.len());
        answer.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if room <= chunk.len() {
            break;
        }
    }
    if !response_is_success(status) {
        return Err(OtlpHttpError::Status {
            endpoint: config.endpoint_shown(),
            status,
            body: quote(&answer),
        });
    }
    let partial = partial_success(config.protocol, &answer);
    Ok(Sent {
        status,
        body_bytes,
        rejected_spans: partial.as_ref().map_or(0, |p| p.rejected_spans),
        message: partial.map(|p| p.error_message).unwrap_or_default(),
    })
}

/// A reqwest error's text and its causes', without the URL (reqwest's text names it,
/// credentials and all; the error names the endpoint already).
fn error_chain(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    let mut depth = 0;
    while let Some(cause) = source
        && depth < ERROR_CAUSES_MAX
    {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
        depth += 1;
    }
    text
}

/// The most causes an error's text follows.
const ERROR_CAUSES_MAX: usize = 8;

fn response_is_success(status: u16) -> bool {
    (200..300).contains(&status)
}

/// The collector's `ExportTraceServiceResponse.partial_success`, when its answer is one.
fn partial_success(
    protocol: Protocol,
    answer: &[u8],
) -> Option<opentelemetry_proto::tonic::collector::trace::v1::ExportTracePartialSuccess> {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
    let response: ExportTraceServiceResponse = match protocol {
        Protocol::HttpProtobuf => prost::Message::decode(answer).ok()?,
        Protocol::HttpJson => serde_json::from_slice(answer).ok()?,
    };
    response.partial_success
}

/// The start of an answer's body as text, for an error.
fn quote(answer: &[u8]) -> String {
    let text = String::from_utf8_lossy(answer);
    let text = text.trim();
    if text.is_empty() {
        return "(no body)".to_owned();
    }
    let mut quoted: String = text.chars().take(ERROR_BODY_CHARS_MAX).collect();
    if quoted.len() < text.len() {
        quoted.push('…');
    }
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<ExporterConfig, OtlpHttpError> {
        let vars: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        ExporterConfig::from_vars(|name| vars.get(name).cloned())
    }

    #[test]
    fn the_endpoint_comes_from_the_traces_variable_else_the_base() {
        assert_eq!(config(&[]), Err(OtlpHttpError::NoEndpoint));
        let base = config(&[(ENDPOINT_VAR, "http://c:4318")]).unwrap();
        assert_eq!(base.endpoint, "http://c:4318/v1/traces");
        assert_eq!(base.protocol, Protocol::HttpProtobuf);
        assert_eq!(base.timeout, Duration::from_secs(10));
        let slash = config(&[(ENDPOINT_VAR, "http://c:4318/otlp/")]).unwrap();
        assert_eq!(slash.endpoint, "http://c:4318/otlp/v1/traces");
        let traces = config(&[
            (ENDPOINT_VAR, "http://c:4318"),
            (TRACES_ENDPOINT_VAR, "https://t/x"),
        ])
        .unwrap();
        assert_eq!(traces.endpoint, "https://t/x");
        let error = config(&[(ENDPOINT_VAR, "c:4318")]).unwrap_err();
        assert!(error.to_string().starts_with(ENDPOINT_VAR), "{error}");
        let error = config(&[(TRACES_ENDPOINT_VAR, "nonsense")]).unwrap_err();
        assert!(
            error.to_string().starts_with(TRACES_ENDPOINT_VAR),
            "{error}"
        );
    }

    #[test]
    fn headers_are_pairs_with_percent_decoded_values_and_errors_hide_values() {
        let parsed = config(&[
            (ENDPOINT_VAR, "http://c"),
            (HEADERS_VAR, " Api-Key = s%20cret%3D1 ,x-tenant=a,"),
        ])
        .unwrap();
        assert_eq!(
            parsed.headers,
            [
                ("api-key".to_owned(), "s cret=1".to_owned()),
                ("x-tenant".to_owned(), "a".to_owned())
            ]
        );
        assert!(!format!("{parsed:?}").contains("cret"), "{parsed:?}");
        let traces_first = config(&[
            (ENDPOINT_VAR, "http://c"),
            (HEADERS_VAR, "a=1"),
            (TRACES_HEADERS_VAR, "b=2"),
        ])
        .unwrap();
        assert_eq!(traces_first.headers, [("b".to_owned(), "2".to_owned())]);
        let error =
            config(&[(ENDPOINT_VAR, "http://c"), (HEADERS_VAR, "a=1,secretvalue")]).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("{HEADERS_VAR}: entry 2 (1-based) is not key=value")
        );
        let error =
            config(&[(ENDPOINT_VAR, "http://c"), (HEADERS_VAR, "k=bad%0Avalue")]).unwrap_err();
        assert!(error.to_string().contains("(k)"), "{error}");
        assert!(!error.to_string().contains("bad"), "{error}");
    }

    #[test]
    fn a_key_that_is_not_a_header_name_is_never_printed() {
        // The colon form splits at the first `=`: the whole credential is the "key".
        let error = config(&[
            (ENDPOINT_VAR, "http://c"),
            (HEADERS_VAR, "a=1,Authorization: Basic dXNlcjpw=="),
        ])
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("{HEADERS_VAR}: entry 2 (1-based) has a key that is not an HTTP header name")
        );
        assert!(!format!("{error:?}").contains("dXNlcjpw"), "{error:?}");
    }

    #[test]
    fn the_endpoint_is_shown_without_userinfo_query_or_fragment() {
        let secret = "http://user:t0ken@127.0.0.1:1/v1/traces?api_key=k3y#frag";
        let config = config(&[(TRACES_ENDPOINT_VAR, secret)]).unwrap();
        assert_eq!(config.endpoint, secret, "sent as given");
        assert_eq!(config.endpoint_shown(), "http://127.0.0.1:1/v1/traces");
        let debug = format!("{config:?}");
        for hidden in ["user", "t0ken", "k3y", "frag"] {
            assert!(!debug.contains(hidden), "{debug}");
        }
        // Port 1 on loopback: nothing listens, the send fails and names the endpoint.
        let error = send(&config, &ExportTraceServiceRequest::default()).unwrap_err();
        let text = format!("{error} {error:?}");
        assert!(matches!(error, OtlpHttpError::Send { .. }), "{text}");
        assert!(text.contains("http://127.0.0.1:1/v1/traces"), "{text}");
        for hidden in ["user", "t0ken", "k3y", "frag"] {
            assert!(!text.contains(hidden), "{text}");
        }
    }

    #[test]
    fn protocol_and_timeout_are_checked_by_variable() {
        let json = config(&[
            (ENDPOINT_VAR, "http://c"),
            (PROTOCOL_VAR, "http/json"),
            (TIMEOUT_VAR, "2500"),
        ])
        .unwrap();
        assert_eq!(json.protocol, Protocol::HttpJson);
        assert_eq!(json.timeout, Duration::from_millis(2_500));
        let grpc = config(&[(ENDPOINT_VAR, "http://c"), (TRACES_PROTOCOL_VAR, "grpc")]);
        assert_eq!(
            grpc,
            Err(OtlpHttpError::BadProtocol {
                var: TRACES_PROTOCOL_VAR,
                value: "grpc".into()
            })
        );
        let timeout = config(&[(ENDPOINT_VAR, "http://c"), (TIMEOUT_VAR, "10s")]).unwrap_err();
        assert!(timeout.to_string().starts_with(TIMEOUT_VAR), "{timeout}");
    }

    #[test]
    fn an_error_body_is_quoted_short() {
        assert_eq!(quote(b""), "(no body)");
        assert_eq!(quote(b" not found \n"), "not found");
        let long = "x".repeat(ERROR_BODY_CHARS_MAX * 2);
        assert_eq!(
            quote(long.as_bytes()).chars().count(),
            ERROR_BODY_CHARS_MAX + 1
        );
    }
}
