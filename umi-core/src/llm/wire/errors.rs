//! Provider errors into [`LlmError`]s: one classifier for HTTP error responses and for
//! error objects inside a 200 stream, by status, code, type and (only where providers
//! give nothing else) message, never by a provider's name.
//!
//! The envelopes read (every format's module hands its error body to [`envelope`]):
//!
//! | shape | who sends it |
//! | --- | --- |
//! | `{"error": {"message", "type", "param", "code": "string"}}` | OpenAI, Azure, DeepSeek, Ollama's /v1 |
//! | `{"error": {"message", "code": 429, "metadata"}}` (numeric code) | OpenRouter, llama.cpp's server |
//! | `{"object": "error", "message", "type", "code": 400}` | vLLM |
//! | `{"error": {"code": "1261", "message"}}` | GLM |
//! | `{"code", "message", "request_id"}` | DashScope's native errors |
//! | `{"error": "text"}` | Ollama's native API |
//! | `{"error": "text", "error_type": "validation"}` | HuggingFace TGI |
//! | `{"type": "error", "error": {"type", "message"}, "request_id"}` | Anthropic |
//! | `{"error": {"code": 429, "message", "status": "RESOURCE_EXHAUSTED", "details": [...]}}` (`status` read as the type) | Google's Gemini API |
//! | `{"detail": "text"}` | FastAPI servers (Xinference) |
//! | anything else (an HTML page from a proxy) | kept as a snippet |
//!
//! | condition | error |
//! | --- | --- |
//! | quota or balance exhausted (`insufficient_quota`, HTTP 402) | `Auth`: retrying will not help |
//! | HTTP 429, or a rate-limit code or type (Google's `RESOURCE_EXHAUSTED`) | `RateLimit` with Retry-After (`retry-after-ms`, seconds, or an HTTP date measured against the response's `Date`), else Google's `RetryInfo.retryDelay` |
//! | a context-length code, type or message | `ContextOverflow`, with the numbers the message gives |
//! | HTTP 401/403, an authentication or permission type (Google's `UNAUTHENTICATED`, `PERMISSION_DENIED`), or Google's `API_KEY_INVALID` reason (sent with HTTP 400) | `Auth` |
//! | the model does not exist (`model_not_found`, Azure's `DeploymentNotFound`, OpenRouter's "No endpoints found", Google's `NOT_FOUND`, a 404 naming a model) | `ModelNotFound` |
//! | HTTP 408 or 504, or a timeout code (Google's `DEADLINE_EXCEEDED`) | `ServerTimeout`, with the server's message |
//! | HTTP 5xx (529 included), or any other error inside a stream | `ServiceUnavailable` |
//! | other 4xx, or an invalid-request type inside a stream | `BadRequest` |

use std::time::{Duration, UNIX_EPOCH};

use serde_json::Value;

use crate::llm::error::{LlmError, snippet};

/// The wait a 429 asks for, in ms, from `retry-after-ms` or `retry-after` (seconds or
/// an HTTP date). An HTTP date is measured against `now_unix_ms`: the response's own
/// `Date` header when it has one (see [`response_now_ms`]), else the environment's clock.
pub fn retry_after_ms(header: impl Fn(&str) -> Option<String>, now_unix_ms: u64) -> Option<u64> {
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(ms.ceil() as u64);
    }
    let value = header("retry-after")?;
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| (seconds * 1000.0).ceil() as u64);
    }
    let date_ms = http_date_ms(value)?;
    Some(date_ms.saturating_sub(now_unix_ms))
}

/// "Now" for a response: its `Date` header if it has a valid one (so an HTTP-date
/// Retry-After means what the server meant, whatever the skew between the clocks), else
/// `clock_unix_ms`.
pub fn response_now_ms(header: impl Fn(&str) -> Option<String>, clock_unix_ms: u64) -> u64 {
    header("date")
        .and_then(|date| http_date_ms(date.trim()))
        .unwrap_or(clock_unix_ms)
}

fn http_date_ms(value: &str) -> Option<u64> {
    let date = httpdate::parse_http_date(value).ok()?;
    let since = date.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    Some(u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
}

/// The number after `marker` in `text`, e.g. "maximum context length is 8192".
fn number_after(text: &str, marker: &str) -> Option<u32> {
    let start = text.find(marker)? + marker.len();
    let digits: String = text[start..]
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    // A count past u32 is saturated, never wrapped.
    digits
        .parse::<u64>()
        .ok()
        .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
}

/// Phrases that mean "the prompt does not fit" in the messages of OpenAI, DeepSeek, vLLM,
/// Qwen (DashScope), GLM, llama.cpp's server, Ollama, Anthropic-style gateways and
/// Google's Gemini API ("The input token count (132478) exceeds the maximum number of
/// tokens allowed (131072).", an `INVALID_ARGUMENT`: google-gemini/gemini-cli#4118).
const CONTEXT_MARKERS: [&str; 15] = [
    "maximum context length",
    "context length",
    "context_length",
    "context window",
    "context size",
    "prompt is too long",
    "too many tokens",
    "input length",
    "range of input length",
    "exceeds max length",
    "reduce the length",
    "input tokens exceed",
    "`inputs` tokens + `max_new_tokens` must be",
    "超长",
    "exceeds the maximum number of tokens allowed",
];

/// `Some((prompt_tokens, limit))` if the error says the prompt is longer than the
/// context window: by its code or type, or by its message.
pub fn context_overflow(
    message: &str,
    error: Option<&Value>,
) -> Option<(Option<u32>, Option<u32>)> {
    let lower = message.to_lowercase();
    let field = |name: &str| {
        error
            .and_then(|e| e.get(name))
            .map(value_text)
            .unwrap_or_default()
            .to_lowercase()
    };
    let (code, kind) = (field("code"), field("type"));
    let by_code = code.contains("context_length_exceeded")
        || kind.contains("exceed_context_size")
        || code == "1261";
    if !by_code && !CONTEXT_MARKERS.iter().any(|m| lower.contains(m)) {
        return None;
    }
    let mut limit = number_after(&lower, "maximum context length is")
        .or_else(|| number_after(&lower, "context window of"))
        .or_else(|| number_after(&lower, "context length of"))
        .or_else(|| number_after(&lower, "must be <="))
        .or_else(|| number_after(&lower, "number of tokens allowed"))
        .or_else(|| {
            lower
                .find("[1,")
                .and_then(|i| number_after(&lower[i..], "[1,"))
        });
    let mut prompt = number_after(&lower, "resulted in")
        .or_else(|| number_after(&lower, "you requested"))
        .or_else(|| number_after(&lower, "prompt is too long:"))
        .or_else(|| number_after(&lower, "request ("))
        .or_else(|| number_after(&lower, "given:"))
        .or_else(|| number_after(&lower, "input token count"));
    if let Some(position) = lower.find("tokens >") {
        // "210000 tokens > 200000 maximum": the limit follows the `>`.
        limit = limit.or_else(|| number_after(&lower[position..], ">"));
    }
    if let Some(error) = error {
        let count = |name: &str| {
            error
                .get(name)
                .and_then(Value::as_u64)
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
        };
        prompt = prompt.or_else(|| count("n_prompt_tokens"));
        limit = limit.or_else(|| count("n_ctx"));
    }
    Some((prompt, limit))
}

/// A string, or a number's text (`"429"` and `429` read the same).
fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Number(number) => number.to_string(),
        _ => String::new(),
    }
}

/// An error body, read: its message, code and type, whatever the envelope.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Envelope {
    /// The message (empty when the body gave none).
    pub message: String,
    /// The code, as text (`"rate_limit_exceeded"`, `"429"`, `"1261"`).
    pub code: String,
    /// The type (`"invalid_request_error"`, `"exceed_context_size_error"`).
    pub kind: String,
    /// The error object itself, for fields a classifier reads (`n_ctx`).
    pub object: Option<Value>,
    /// Whether the body was JSON at all.
    pub is_json: bool,
}

/// Reads an error body in any of the envelopes of the module docs. A body that is not
/// JSON (a proxy's HTML page) keeps a snippet of itself as the message.
pub fn envelope(body: &str) -> Envelope {
    match serde_json::from_str::<Value>(body) {
        Ok(value) => envelope_of(&value),
        Err(_) => Envelope {
            message: snippet(body.trim()),
            ..Envelope::default()
        },
    }
}

/// Reads an error value already parsed (a chunk carrying `error`).
pub fn envelope_of(value: &Value) -> Envelope {
    let object = match value.get("error") {
        Some(Value::Object(object)) => Value::Object(object.clone()),
        Some(Value::String(text)) => {
            // Ollama's `{"error": "..."}`; TGI adds `error_type`.
            return Envelope {
                message: text.clone(),
                kind: value.get("error_type").map(value_text).unwrap_or_default(),
                is_json: true,
                ..Envelope::default()
            };
        }
        _ => match value.get("detail") {
            // FastAPI's `{"detail": "..."}`.
            Some(Value::String(text)) => {
                return Envelope {
                    message: text.clone(),
                    is_json: true,
                    ..Envelope::default()
                };
            }
            _ => value.clone(),
        },
    };
    let text = |name: &str| object.get(name).map(value_text).unwrap_or_default();
    // Google's envelope names the kind in `status` (`RESOURCE_EXHAUSTED`), not `type`.
    let mut kind = text("type");
    if kind.is_empty() {
        kind = text("status");
    }
    Envelope {
        message: text("message"),
        code: text("code"),
        kind,
        object: Some(object),
        is_json: true,
    }
}

/// The error for an HTTP error response: `status` (not 2xx), its body and headers.
/// `now_unix_ms` is "now" for an HTTP-date Retry-After ([`response_now_ms`]).
pub fn from_status(
    status: u16,
    header: impl Fn(&str) -> Option<String>,
    body: &str,
    now_unix_ms: u64,
) -> LlmError {
    let read = envelope(body);
    // A Retry-After header wins; Google says the wait in the body instead.
    let retry =
        || retry_after_ms(&header, now_unix_ms).or_else(|| retry_info_ms(read.object.as_ref()));
    classify(Some(status), &read, &retry, body)
}

/// The details of a Google error object (`error.details`), each a typed message
/// (`google.rpc.RetryInfo`, `google.rpc.ErrorInfo`; googleapis/googleapis
/// `google/rpc/error_details.proto`).
fn google_details<'a>(
    object: Option<&'a Value>,
    kind: &'a str,
) -> impl Iterator<Item = &'a Value> + 'a {
    object
        .and_then(|o| o.get("details"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(move |detail| {
            detail
                .get("@type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.ends_with(kind))
        })
}

/// The wait a Google error asks for, in ms: its `google.rpc.RetryInfo` detail's
/// `retryDelay`, a protobuf JSON duration (`"34.4s"`: vercel/ai
/// `packages/google/src/__fixtures__/google-429-retry-info.json` at 52173efe).
pub fn retry_info_ms(object: Option<&Value>) -> Option<u64> {
    let delay = google_details(object, "google.rpc.RetryInfo")
        .find_map(|detail| detail.get("retryDelay").and_then(Value::as_str))?;
    duration_ms(delay)
}

/// A protobuf JSON duration (`"30s"`, `"34.4s"`, up to nine fractional digits) in ms,
/// rounded up to the millisecond (never asking for less); read digit by digit, since
/// through a float `"2.007s"` came out 2008.
fn duration_ms(text: &str) -> Option<u64> {
    const FRACTION_DIGITS_MAX: usize = 9;
    let seconds = text.trim().strip_suffix('s')?;
    let (whole, fraction) = seconds.split_once('.').unwrap_or((seconds, ""));
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty()
        || !digits(whole)
        || !digits(fraction)
        || fraction.len() > FRACTION_DIGITS_MAX
    {
        return None;
    }
    let millis = fraction
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(3)
        .fold(0_u64, |ms, digit| ms * 10 + u64::from(digit - b'0'));
    let below_a_milli = fraction.bytes().skip(3).any(|b| b != b'0');
    whole
        .parse::<u64>()
        .ok()?
        .checked_mul(1_000)?
        .checked_add(millis + u64::from(below_a_milli))
}

/// The `reason`s of a Google error's `google.rpc.ErrorInfo` details, lowercased
/// (`api_key_invalid`: continuedev/continue#8516).
fn error_info_reasons(object: Option<&Value>) -> String {
    let reasons: Vec<String> = google_details(object, "google.rpc.ErrorInfo")
        .filter_map(|detail| detail.get("reason").and_then(Value::as_str))
        .map(str::to_lowercase)
        .collect();
    reasons.join(" ")
}

/// The error an error object inside a 200 stream stands for (`data: {"error": ...}`,
/// an `event: error`, llama.cpp's `error:` field, an Ollama error line). A numeric code
/// is read as the status the server would have sent.
pub fn from_stream_error(value: &Value) -> LlmError {
    let read = envelope_of(value);
    let status = read
        .code
        .parse::<u16>()
        .ok()
        .filter(|s| (400..600).contains(s));
    let shown = crate::canonical_json::to_string(value);
    classify(
        status,
        &read,
        &|| retry_info_ms(read.object.as_ref()),
        &shown,
    )
}

/// What an error envelope says, lowercased for matching: its code, its type, its
/// message.
struct Said {
    code: String,
    kind: String,
    lower: String,
    /// Google's `ErrorInfo` reasons, lowercased and joined by spaces.
    reasons: String,
}

impl Said {
    fn of(read: &Envelope) -> Self {
        Self {
            code: read.code.to_lowercase(),
            kind: read.kind.to_lowercase(),
            lower: read.message.to_lowercase(),
            reasons: error_info_reasons(read.object.as_ref()),
        }
    }

    /// Whether the code or the type contains `needle`.
    fn has(&self, needle: &str) -> bool {
        self.code.contains(needle) || self.kind.contains(needle)
    }

    /// Whether the error says the credentials were refused: HTTP 401 or 403, an
    /// authentication or permission kind, or Google's `API_KEY_INVALID` (sent as a 400).
    fn auth_refused(&self, status: Option<u16>) -> bool {
        matches!(status, Some(401 | 403))
            || self.has("authentication")
            || self.has("permission")
            || self.has("invalid_api_key")
            || self.kind == "unauthenticated"
            || self.reasons.contains("api_key_invalid")
    }

    /// Whether the error says the model (or deployment) asked for does not exist.
    fn model_missing(&self, status: Option<u16>) -> bool {
        let lower = &self.lower;
        let names_model = lower.contains("model")
            && (lower.contains("not found") || lower.contains("does not exist"));
        // OpenRouter: 404 "No endpoints found for <model>." (chatboxai/chatbox #2743); Azure:
        // a deployment (its name for a model) that does not exist.
        let no_endpoint = status == Some(404) && lower.starts_with("no endpoints found");
        // Anthropic: `not_found_error` with the message `model: <id>`.
        let anthropic_model = self.has("not_found") && lower.starts_with("model:");
        // Google: `NOT_FOUND`, whose only resource on generateContent is the model.
        let google_model = self.kind == "not_found" && matches!(status, Some(404) | None);
        self.has("model_not_found")
            || google_model
            || self.has("deploymentnotfound")
            || no_endpoint
            || anthropic_model
            || (names_model && matches!(status, Some(400 | 404) | None))
    }
}

/// The classification of the module docs.
fn classify(
    status: Option<u16>,
    read: &Envelope,
    retry_after: &dyn Fn() -> Option<u64>,
    body: &str,
) -> LlmError {
    let said = Said::of(read);
    let message = if read.message.is_empty() {
        status.map_or_else(
            || "an error with no message".to_owned(),
            |s| format!("HTTP {s}"),
        )
    } else {
        read.message.clone()
    };
    if said.has("insufficient_quota")
        || status == Some(402)
        || said.lower.contains("insufficient balance")
    {
        return LlmError::Auth {
            status: status.unwrap_or(402),
            message,
        };
    }
    // GLM's rate-limit codes: 1302 (concurrency), 1303 (frequency), 1305 (overloaded).
    let glm_rate = matches!(said.code.as_str(), "1302" | "1303" | "1305");
    if status == Some(429)
        || said.has("rate_limit")
        || said.kind == "resource_exhausted"
        || glm_rate
    {
        return LlmError::RateLimit {
            retry_after_ms: retry_after(),
        };
    }
    let overflow_possible = !matches!(status, Some(401 | 403 | 404));
    if overflow_possible
        && let Some((prompt_tokens, limit)) = context_overflow(&read.message, read.object.as_ref())
    {
        return LlmError::ContextOverflow {
            prompt_tokens,
            limit,
        };
    }
    if said.auth_refused(status) {
        return LlmError::Auth {
            status: status.unwrap_or(401),
            message,
        };
    }
    if said.model_missing(status) {
        return LlmError::ModelNotFound { status, message };
    }
    if matches!(status, Some(408 | 504)) || said.has("timeout") || said.has("deadline_exceeded") {
        return LlmError::ServerTimeout { status, message };
    }
    // TGI: a failure while generating (HTTP 424) or an overloaded server is the server's.
    if said.has("generation") || said.has("overloaded") {
        return LlmError::ServiceUnavailable { status, message };
    }
    by_status(status, read, &said, body, message)
}

/// An error nothing more specific named: a server fault (5xx, or mid-answer), or the
/// request's fault (4xx, or an `invalid_request` type).
fn by_status(
    status: Option<u16>,
    read: &Envelope,
    said: &Said,
    body: &str,
    message: String,
) -> LlmError {
    match status {
        Some(500..=599) => LlmError::ServiceUnavailable { status, message },
        Some(status) if !read.is_json && !body.trim().is_empty() => LlmError::BadRequest {
            status: Some(status),
            message: format!(
                "HTTP {status} with a body that is not JSON: {}",
                snippet(body)
            ),
        },
        Some(status) => LlmError::BadRequest {
            status: Some(status),
            message,
        },
        // DeepSeek puts `invalid_request_error` in `code` whatever the error: the type,
        // when there is one, says what it is.
        None if said.kind.contains("invalid_request")
            || (said.kind.is_empty() && said.code.contains("invalid_request")) =>
        {
            LlmError::BadRequest {
                status: None,
                message,
            }
        }
        // An error the server reported mid-answer, with nothing more specific: a server
        // fault, which a retry may get past.
        None => LlmError::ServiceUnavailable {
            status: None,
            message,
        },
    }
}

#[cfg(test)]
mod tests;
