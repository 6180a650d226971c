//! Amazon Bedrock's Converse API (`Converse`, `ConverseStream`): every model Bedrock
//! hosts (Claude, Llama, Mistral, Nova, ...) behind one request and response shape, with
//! requests signed by AWS Signature Version 4 and a streamed answer framed as
//! `application/vnd.amazon.eventstream` binary messages.
//!
//! Requests go to `{base}/model/{modelId}/converse`, or `/converse-stream` for a stream
//! (BEDROCK-API `Converse` and `ConverseStream`, "Request Syntax"), the model id
//! percent-encoded as one path segment (`anthropic.claude-3-5-sonnet-20240620-v1%3A0`,
//! as botocore sends it). The base URL is the regional endpoint
//! (`https://bedrock-runtime.us-east-1.amazonaws.com`), whose host names the region the
//! request is signed for; any other host (a proxy, `dst serve`) is signed for
//! [`BedrockConfig::region`].
//!
//! The key is the AWS key pair in one string, `ACCESS_KEY_ID:SECRET_ACCESS_KEY`, with
//! `:SESSION_TOKEN` for temporary credentials ([`sigv4::Credentials::parse`]); the
//! secret and the token are redacted from every error, and the request carries
//! `x-amz-date`, `x-amz-security-token` (with a token) and `Authorization:
//! AWS4-HMAC-SHA256 Credential=…, SignedHeaders=content-type;host;x-amz-date,
//! Signature=…`. The time signed is the environment's wall clock (simulated time in a
//! simulation).
//!
//! Errors: an HTTP error's body is `{"message": ...}`, its kind in `x-amzn-errortype`
//! (BEDROCK-API "Errors": `ThrottlingException` 429, `ValidationException` 400, including
//! a prompt past the context window, `ModelTimeoutException` 408,
//! `ServiceUnavailableException` 503, ...): the shared classifier reads the status and
//! the message. In a stream, an exception is an event-stream message with
//! `:message-type` `exception` ([`BedrockDecoder`]).

pub mod eventstream;
mod resign;
pub mod sigv4;
mod stream;
#[cfg(test)]
mod tests;
mod wire;

pub use resign::resign;
pub use stream::BedrockDecoder;
pub use wire::{exception_error, overflow_refined, parse_response, request_body, stop_reason};

use super::client::{ClientFormat, ClientFormatExt, WireClient, json_content_type};
use super::connection::{Connection, KeyHeader};
use super::error::LlmError;
use super::request::CompletionRequest;
use super::response::{CompletionResponse, ModelRef};
use super::secrets::{ApiKey, Redactor};
use super::transport::HttpRequest;
use super::wire::exchange::Refused;
use crate::env::Env;

/// The service name requests are signed for (the credential scope's `bedrock`).
pub const SIGNING_SERVICE: &str = "bedrock";

/// The region signed for when the base URL's host does not name one.
pub const DEFAULT_REGION: &str = "us-east-1";

/// The content type of a streamed answer.
pub const EVENT_STREAM_CONTENT_TYPE: &str = "application/vnd.amazon.eventstream";

/// How to reach one model on Bedrock. `Debug` redacts the key pair (see [`Connection`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BedrockConfig {
    /// The regional endpoint (`https://bedrock-runtime.us-east-1.amazonaws.com`), the key
    /// pair (`ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN]`), timeouts, extra headers.
    pub connection: Connection,
    /// The model and its limits (`model_ref.model` is the model id or inference profile
    /// in the path, `anthropic.claude-3-5-haiku-20241022-v1:0`).
    pub model_ref: ModelRef,
    /// The region signed for when the endpoint's host names none.
    pub region: String,
    /// The clock requests are signed at.
    pub clock: Env,
}

impl BedrockConfig {
    /// A config for `model_ref` through `connection`, signing at `clock`'s time.
    pub fn new(connection: impl Into<Connection>, model_ref: ModelRef, clock: Env) -> Self {
        Self {
            connection: connection.into(),
            model_ref,
            region: DEFAULT_REGION.to_owned(),
            clock,
        }
    }

    /// The path below the base URL for `model`, streamed or not.
    pub fn path(model: &str, stream: bool) -> String {
        let method = if stream {
            "converse-stream"
        } else {
            "converse"
        };
        format!("/model/{}/{method}", sigv4::uri_encode(model))
    }

    /// The region the endpoint's host names (`bedrock-runtime.eu-west-1.amazonaws.com`),
    /// else [`BedrockConfig::region`].
    pub fn signing_region(&self) -> String {
        let host = host_of(&self.connection.base_url);
        let name = host.split(':').next().unwrap_or_default();
        name.strip_prefix("bedrock-runtime.")
            .and_then(|rest| rest.split('.').next())
            .filter(|region| !region.is_empty() && name.ends_with(".amazonaws.com"))
            .map_or_else(|| self.region.clone(), str::to_owned)
    }

    /// `http` signed with the connection's key pair at the clock's time.
    fn sign(&self, http: &mut HttpRequest) -> Result<(), LlmError> {
        let Some(key) = &self.connection.api_key else {
            return Err(LlmError::Auth {
                status: 401,
                message: "Bedrock needs an AWS key pair (`ACCESS_KEY_ID:SECRET_ACCESS_KEY`) to sign its requests; none was given".into(),
            });
        };
        let credentials = sigv4::Credentials::parse(key.expose())?;
        let amz_date = sigv4::amz_date(self.clock.unix_time_ms());
        http.headers.push(("x-amz-date".into(), amz_date.clone()));
        if let Some(token) = &credentials.session_token {
            http.headers
                .push(("x-amz-security-token".into(), token.expose().to_owned()));
        }
        let (path, query) = path_and_query(&http.url);
        let mut signed: Vec<(String, String)> = http
            .headers
            .iter()
            .filter(|(name, _)| {
                let name = name.to_ascii_lowercase();
                name == "content-type" || name.starts_with("x-amz-")
            })
            .cloned()
            .collect();
        signed.push(("host".into(), sigv4::canonical_host(&http.url).to_owned()));
        let region = self.signing_region();
        let scope = sigv4::Scope {
            region: &region,
            service: SIGNING_SERVICE,
            amz_date: &amz_date,
        };
        let signable = sigv4::Signable {
            method: http.method,
            path,
            query,
            headers: &signed,
            body: &http.body,
        };
        let authorization = sigv4::authorization(
            &signable,
            &credentials.access_key_id,
            credentials.secret_access_key.expose(),
            &scope,
        );
        http.headers.push(("authorization".into(), authorization));
        Ok(())
    }
}

/// A URL's authority (`host:port`, the port only when the URL names one).
fn host_of(url: &str) -> &str {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let end = after_scheme.find(['/', '?']).unwrap_or(after_scheme.len());
    let authority = &after_scheme[..end];
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
}

/// A URL's path and query (without `?`).
fn path_and_query(url: &str) -> (&str, &str) {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = after_scheme.find('/').map_or("", |at| &after_scheme[at..]);
    rest.split_once('?').unwrap_or((rest, ""))
}

/// A client for one Bedrock model.
pub type BedrockClient = WireClient<BedrockConfig>;

impl ClientFormat for BedrockConfig {
    type Decoder = BedrockDecoder;

    fn format_name(&self) -> &'static str {
        "bedrock"
    }

    fn model_ref(&self) -> &ModelRef {
        &self.model_ref
    }

    fn connection(&self) -> &Connection {
        &self.connection
    }

    fn http_request(
        &self,
        request: &CompletionRequest,
        stream: bool,
    ) -> Result<HttpRequest, LlmError> {
        let body = request_body(request);
        let path = Self::path(self.model_for(request), stream);
        let mut keyless = self.connection.clone();
        keyless.api_key = None;
        let mut http = keyless.post_json(&path, &[], KeyHeader::Bearer, &body);
        // The extra headers go after the signature's; the signature covers only its own.
        let extra = http.headers.split_off(1);
        self.sign(&mut http)?;
        http.headers.extend(extra);
        Ok(http)
    }

    fn parse_response(&self, body: &str) -> Result<CompletionResponse, LlmError> {
        parse_response(body, &self.model_ref.model)
    }

    fn stream_decoder(&self) -> BedrockDecoder {
        BedrockDecoder::new()
    }

    /// Converse does all a request asks: the one decoder.
    fn stream_decoder_for(&self, _request: &CompletionRequest) -> BedrockDecoder {
        self.stream_decoder()
    }

    /// Converse does all a request asks: the one parser.
    fn parse_response_for(
        &self,
        _request: &CompletionRequest,
        body: &str,
    ) -> Result<CompletionResponse, LlmError> {
        self.parse_response(body)
    }

    /// The shared classifier reads Bedrock's refusals by their status (429 throttling,
    /// 403 a refused signature, 5xx the service's) and `{"message"}` body ("prompt is
    /// too long" an overflow); `x-amzn-errortype` names the same kind (API_runtime_Converse,
    /// "Errors"). Bedrock's own overflow words ("Input is too long for requested
    /// model.") are read here ([`overflow_refined`]).
    fn refusal(&self, refused: Refused) -> LlmError {
        overflow_refined(refused.error)
    }

    /// A JSON body where `application/vnd.amazon.eventstream` was asked for is a whole
    /// answer (API_runtime_ConverseStream answers the event stream's content type).
    fn is_whole_body(&self, content_type: Option<&str>) -> bool {
        json_content_type(content_type)
    }

    fn redactor(&self) -> Redactor {
        let mut redactor = self.connection.redactor();
        if let Some(key) = &self.connection.api_key
            && let Ok(credentials) = sigv4::Credentials::parse(key.expose())
        {
            redactor = redactor
                .with_key(Some(&credentials.secret_access_key))
                .with_key(credentials.session_token.as_ref());
        }
        redactor
    }
}

/// Whether `key` is an AWS key pair this client can sign with.
pub fn is_key_pair(key: &ApiKey) -> bool {
    sigv4::Credentials::parse(key.expose()).is_ok()
}
