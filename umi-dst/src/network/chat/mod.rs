//! The server side of OpenAI chat completions, for every provider that speaks it: the
//! request parsed as the server does, and each response in shapes drawn from the
//! provider's profile ([`super::chat_shapes`] lists what varies; [`crate::network::profile`] what
//! each provider sends, with sources).

mod chunk;
mod draw;
mod envelope;
mod errors;
mod request;
mod stream;
mod stream_error;
pub(crate) mod surface;
mod whole;

use umi_core::llm::{CompletionResponse, LlmError};

use self::draw::Draw;
use super::format::{
    Parsed, RequestError, Responder, Route, ServerFormat, StreamEncoder, one_path,
};
use super::json::Spacing;
use super::profile::Profile;
use crate::network::chat_shapes::Envelope;
use crate::network::shapes::{HeaderSet, RetryAfterForm, ShapeMark};
use crate::rng::DeterministicRng;

/// An error as OpenAI's own API answers it (status and `{"error": {message, type,
/// param, code}}`), for the other OpenAI formats (the Responses API shares the envelope
/// and the words).
pub(crate) fn openai_error(
    server: DeterministicRng,
    response: DeterministicRng,
    created_s: u64,
    model: &str,
    error: &LlmError,
    param: Option<&str>,
) -> (u16, super::json::Json) {
    let shapes = Profile::OpenAi
        .chat_shapes()
        .expect("OpenAI's profile speaks chat completions");
    let mut draw = Draw::new(shapes, server, response, created_s, model);
    errors::error_body_with_param(&mut draw, error, param)
}

/// The table of `profile`, one of this format's profiles (the registry gives a chat
/// endpoint only those).
pub(crate) fn shapes_of(profile: Profile) -> &'static crate::network::chat_shapes::ChatShapes {
    profile
        .chat_shapes()
        .expect("a chat-format endpoint has a chat-format profile")
}

/// OpenAI chat completions.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ChatFormat;

impl ServerFormat for ChatFormat {
    fn path(&self) -> &'static str {
        "/chat/completions"
    }

    fn route(&self, path: &str, _query: Option<&str>) -> Option<Route> {
        one_path(self.path(), path)
    }

    fn reads_query(&self) -> bool {
        false
    }

    fn parse(
        &self,
        http: &umi_core::llm::transport::HttpRequest,
        profile: Profile,
    ) -> Result<Parsed, RequestError> {
        request::parse(&http.body, profile)
    }

    fn responder(
        &self,
        profile: Profile,
        server: DeterministicRng,
        response: DeterministicRng,
        created_s: u64,
        model: &str,
    ) -> Box<dyn Responder> {
        let shapes = shapes_of(profile);
        Box::new(ChatResponder {
            draw: Draw::new(shapes, server, response, created_s, model),
            marks: Vec::new(),
        })
    }
}

struct ChatResponder {
    draw: Draw,
    marks: Vec<&'static str>,
}

impl Responder for ChatResponder {
    fn refusal(&mut self, error: &LlmError, param: Option<&str>) -> (u16, Vec<u8>) {
        self.marks.push(errors::envelope_mark(&self.draw));
        let (status, body) = errors::error_body_with_param(&mut self.draw, error, param);
        // OpenAI's error bodies are indented, with a final newline (ENVOY
        // chat-unknown-model.yaml); Ollama's /v1 ends its own with one (json.Encoder).
        let spacing = match self.draw.envelope {
            Envelope::OpenAi => Spacing::Indented4,
            Envelope::Azure
            | Envelope::DeepSeek
            | Envelope::DashScope
            | Envelope::Glm
            | Envelope::OpenRouter
            | Envelope::VllmFlat
            | Envelope::VllmNested
            | Envelope::LlamaCpp
            | Envelope::OllamaV1
            | Envelope::FastApi
            | Envelope::Tgi => Spacing::Compact,
        };
        let mut bytes = body.to_bytes(spacing);
        if self.draw.envelope == Envelope::OllamaV1 {
            bytes.push(b'\n');
        }
        (status, bytes)
    }

    fn whole(&mut self, response: &CompletionResponse) -> Vec<u8> {
        self.marks.push(self.draw.layout.mark());
        whole::body(&mut self.draw, response).to_bytes(Spacing::Compact)
    }

    fn into_stream(self: Box<Self>, parsed: &Parsed) -> Box<dyn StreamEncoder> {
        Box::new(stream::ChatStream::new(self.draw, parsed.include_usage))
    }

    fn content_type(&self, stream: bool) -> &'static str {
        if stream {
            self.draw.shapes.stream_content_type
        } else {
            self.draw.shapes.json_content_type
        }
    }

    fn retry_after(&self) -> Option<RetryAfterForm> {
        self.draw.retry_after
    }

    fn header_set(&self) -> HeaderSet {
        self.draw.shapes.headers
    }

    fn marks(&mut self) -> Vec<&'static str> {
        std::mem::take(&mut self.marks)
    }

    fn refuses_in_stream(&self) -> bool {
        self.draw.shapes.refuses_in_stream
    }

    /// The request changes nothing in its answer's shapes.
    fn parsed(&mut self, _parsed: &Parsed) {}

    /// It sends no headers of its own beyond its header set.
    fn own_headers(&mut self, _status: u16, _server_now_ms: u64) -> Vec<(String, String)> {
        Vec::new()
    }

    /// Its 429 says nothing of the wait in its body.
    fn wait_in_body(&self) -> bool {
        false
    }

    /// It owns one path, which says nothing.
    fn routed(&mut self, _route: &Route) {}

    /// Its one operation always asks the model.
    fn own_answer(&mut self, _parsed: &Parsed) -> Option<Vec<u8>> {
        None
    }
}
