//! `dst cassette check`: every recorded exchange read again by Umi's own client for its
//! format, so a cassette whose bytes the clients cannot read is found before a
//! simulation replays it.
//!
//! Each exchange is answered, in process, by a transport that returns the recorded
//! status, headers and reads (and the recorded reset, if the body ended with one); the
//! umi-core client of the exchange's format (from `--endpoint`, or guessed from the
//! path) sends a request streamed or whole as the recorded one was, and reads the answer
//! to its end. A success status the client cannot read is a failure, named by line; an
//! error status is reported as the error the client maps it to.

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use umi_core::cassette::{BodyEnd, Exchange, RecordedResponse};
use umi_core::env::{Env, SystemEnvironment};
use umi_core::llm::transport::{HttpRequest, HttpResponse, Transport, TransportError};
use umi_core::llm::{CompletionRequest, Connection, LlmError, Message, ModelRef};
use umi_dst::network::{ClientOptions, Profile, WireFormat};

/// What reading one exchange again came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The client read the answer.
    Read,
    /// An error status or a broken body, mapped by the client to this error kind.
    Classified(String),
    /// Not a completion exchange (no format to read it with).
    Skipped(String),
    /// The client could not read a successful answer: its error.
    Failed(String),
}

/// A transport that answers every request with one recorded response.
#[derive(Debug)]
struct Replay(RecordedResponse);

#[async_trait]
impl Transport for Replay {
    async fn send(&self, _request: HttpRequest) -> Result<HttpResponse, TransportError> {
        let response = &self.0;
        let mut reads: Vec<Result<Vec<u8>, TransportError>> = response
            .reads()
            .into_iter()
            .map(|(bytes, _)| Ok(bytes))
            .collect();
        match response.end {
            BodyEnd::Clean | BodyEnd::Dropped => {}
            BodyEnd::Reset => reads.push(Err(TransportError::Reset {
                reason: "recorded: the connection broke".into(),
            })),
            BodyEnd::Timeout => reads.push(Err(TransportError::Reset {
                reason: "recorded: the server fell silent".into(),
            })),
        }
        Ok(HttpResponse {
            status: response.status,
            headers: response.headers.clone(),
            body: futures::stream::iter(reads).boxed(),
        })
    }
}

/// The format of `--endpoint` (a `dst serve` profile name), if it names one.
pub fn format_of_endpoint(name: &str) -> Option<WireFormat> {
    Profile::from_name(name).map(Profile::format)
}

/// The format a request path belongs to.
pub fn format_of_path(path: &str) -> Option<WireFormat> {
    WireFormat::of_request_path(path)
}

/// Whether `path` (query and all) is a provider's embeddings path.
fn is_embeddings_path(path: &str) -> bool {
    let path = path.split('?').next().unwrap_or_default();
    Profile::ALL
        .into_iter()
        .any(|profile| umi_dst::network::ends_in_embeddings(profile, path))
}

/// Reads `exchange` again with the client of `format` (or the one its path names).
pub async fn check(exchange: &Exchange, format: Option<WireFormat>) -> Verdict {
    let request = &exchange.request;
    let format = match format {
        // An embeddings exchange is not read as this format's answer.
        Some(_) if is_embeddings_path(&request.path) => {
            return Verdict::Skipped(format!("{} is an embeddings call", request.path));
        }
        Some(format) if request.method == "POST" => format,
        Some(_) => return Verdict::Skipped(format!("a {} request", request.method)),
        None => match format_of_path(&request.path) {
            Some(format) => format,
            None => return Verdict::Skipped("no client format reads this path".into()),
        },
    };
    let body = request.body.as_ref();
    let model = body
        .and_then(|b| b.get("model"))
        .and_then(|m| m.as_str())
        .unwrap_or("recorded");
    let stream = body
        .and_then(|b| b.get("stream"))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(format.streams_by_default());
    let outcome = read_with(format, model, stream, &exchange.response).await;
    let response = &exchange.response;
    let expected_error = response.status >= 400;
    match outcome {
        Ok(()) if expected_error => {
            Verdict::Failed(format!("status {} was read as a success", response.status))
        }
        Ok(()) => Verdict::Read,
        Err(error)
            if expected_error || !matches!(response.end, BodyEnd::Clean | BodyEnd::Dropped) =>
        {
            Verdict::Classified(format!("{} ({error})", error.kind()))
        }
        Err(error) => Verdict::Failed(format!("{}: {error}", error.kind())),
    }
}

/// Drives the client of `format` over the recorded response to its end.
async fn read_with(
    format: WireFormat,
    model: &str,
    stream: bool,
    response: &RecordedResponse,
) -> Result<(), LlmError> {
    let transport: Arc<dyn Transport> = Arc::new(Replay(response.clone()));
    let env: Env = Arc::new(SystemEnvironment::new());
    let base = "http://cassette.invalid";
    let model_ref = ModelRef::new("cassette", model, 1_000_000, 4_096);
    let connection = Connection::new(format!("{base}{}", format.api_root()));
    // The request is never sent (the transport replays the recording): no options.
    let mut options = ClientOptions::default();
    options.reasoning_summary = false;
    let client = format.client(connection, model_ref, &options, transport, env);
    let request = CompletionRequest::new(vec![Message::user("check")]).with_model(model);
    if !stream {
        return client.complete(&request).await.map(|_| ());
    }
    let mut events = client.stream(&request).await?;
    while let Some(event) = events.next().await {
        event?;
    }
    Ok(())
}
