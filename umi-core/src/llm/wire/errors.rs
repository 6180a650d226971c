//! HTTP errors into [`LlmError`]s, by status, body and headers, never by guesswork about
//! a provider's name.
//!
//! | status | error |
//! | --- | --- |
//! | 429 | `RateLimit` with Retry-After (`retry-after-ms`, seconds, or an HTTP date); `Auth` when the provider says the quota is exhausted (retrying will not help) |
//! | 400 (and 413, 422) mentioning the context length | `ContextOverflow`, with the numbers the message gives |
//! | 401, 403 | `Auth` |
//! | 408, 504 | `Timeout` |
//! | 500, 502, 503, 529 and other 5xx | `ServiceUnavailable` |
//! | other 4xx | `BadRequest` |
//!
//! The context-length messages recognised are those of OpenAI, DeepSeek, vLLM, Qwen
//! (compatible mode), GLM, llama.cpp's server and Anthropic-style gateways.

use std::time::{Duration, UNIX_EPOCH};

use serde_json::Value;

use crate::llm::error::{LlmError, snippet};

/// The wait a 429 asks for, in ms, from `retry-after-ms` or `retry-after` (seconds or
/// an HTTP date, measured against `now_unix_ms`, the environment's wall clock).
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
    let date = httpdate::parse_http_date(value).ok()?;
    let date_ms = date
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis() as u64;
    Some(date_ms.saturating_sub(now_unix_ms))
}

/// The numbers after `marker` in `text`, e.g. "maximum context length is 8192".
fn number_after(text: &str, marker: &str) -> Option<u32> {
    let start = text.find(marker)? + marker.len();
    let digits: String = text[start..]
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// `Some((prompt_tokens, limit))` if `message` says the prompt is longer than the
/// context window.
pub fn context_overflow(
    message: &str,
    error: Option<&Value>,
) -> Option<(Option<u32>, Option<u32>)> {
    let lower = message.to_lowercase();
    let code = error
        .and_then(|e| e.get("code"))
        .map(|c| c.to_string().to_lowercase())
        .unwrap_or_default();
    let kind = error
        .and_then(|e| e.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_lowercase();
    let by_code = code.contains("context_length_exceeded")
        || kind.contains("exceed_context_size")
        || code.contains("1261");
    const MARKERS: [&str; 12] = [
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
        "超长",
    ];
    if !by_code && !MARKERS.iter().any(|m| lower.contains(m)) {
        return None;
    }
    let mut limit = number_after(&lower, "maximum context length is")
        .or_else(|| number_after(&lower, "context window of"))
        .or_else(|| {
            lower
                .find("[1,")
                .and_then(|i| number_after(&lower[i..], "[1,"))
        });
    let mut prompt = number_after(&lower, "resulted in")
        .or_else(|| number_after(&lower, "you requested"))
        .or_else(|| number_after(&lower, "prompt is too long:"));
    if let Some(position) = lower.find("tokens >") {
        // "210000 tokens > 200000 maximum": the limit follows the `>`.
        limit = limit.or_else(|| number_after(&lower[position..], ">"));
    }
    if let Some(error) = error {
        prompt = prompt.or_else(|| {
            error
                .get("n_prompt_tokens")
                .and_then(Value::as_u64)
                .map(|n| n as u32)
        });
        limit = limit.or_else(|| error.get("n_ctx").and_then(Value::as_u64).map(|n| n as u32));
    }
    Some((prompt, limit))
}

/// The error object of a body: `{"error": {...}}`, `{"error": "text"}`, or the body.
fn error_object(body: &Value) -> (String, Option<Value>) {
    match body.get("error") {
        Some(Value::Object(object)) => {
            let message = object
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            (message, Some(Value::Object(object.clone())))
        }
        Some(Value::String(text)) => (text.clone(), None),
        _ => (
            body.get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            Some(body.clone()),
        ),
    }
}

/// The error for an HTTP response with `status` (not 2xx) and `body`.
pub fn from_status(
    status: u16,
    header: impl Fn(&str) -> Option<String>,
    body: &str,
    now_unix_ms: u64,
) -> LlmError {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let (message, object) = match &parsed {
        Some(value) => error_object(value),
        None => (snippet(body), None),
    };
    let message = if message.is_empty() {
        format!("HTTP {status}")
    } else {
        message
    };
    let code = object
        .as_ref()
        .and_then(|o| o.get("code"))
        .map(|c| c.to_string())
        .unwrap_or_default();
    let kind = object
        .as_ref()
        .and_then(|o| o.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    match status {
        429 if code.contains("insufficient_quota") || kind.contains("insufficient_quota") => {
            LlmError::Auth { status, message }
        }
        429 => LlmError::RateLimit {
            retry_after_ms: retry_after_ms(header, now_unix_ms),
        },
        400 | 413 | 422 if context_overflow(&message, object.as_ref()).is_some() => {
            let (prompt_tokens, limit) =
                context_overflow(&message, object.as_ref()).unwrap_or_default();
            LlmError::ContextOverflow {
                prompt_tokens,
                limit,
            }
        }
        401 | 403 => LlmError::Auth { status, message },
        408 | 504 => LlmError::Timeout { after_ms: 0 },
        500..=599 => LlmError::ServiceUnavailable {
            status: Some(status),
            message,
        },
        _ if parsed.is_none() && !body.trim().is_empty() => LlmError::BadRequest {
            status: Some(status),
            message: format!(
                "HTTP {status} with a body that is not JSON: {}",
                snippet(body)
            ),
        },
        _ => LlmError::BadRequest {
            status: Some(status),
            message,
        },
    }
}

/// The error an error object inside a 200 stream stands for.
pub fn from_stream_error(value: &Value) -> LlmError {
    let (message, object) = error_object(value);
    let code = object
        .as_ref()
        .and_then(|o| o.get("code"))
        .map(|c| c.to_string().to_lowercase())
        .unwrap_or_default();
    let kind = object
        .as_ref()
        .and_then(|o| o.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_lowercase();
    if let Some((prompt_tokens, limit)) = context_overflow(&message, object.as_ref()) {
        return LlmError::ContextOverflow {
            prompt_tokens,
            limit,
        };
    }
    if code.contains("rate_limit") || kind.contains("rate_limit") || code.contains("429") {
        return LlmError::RateLimit {
            retry_after_ms: None,
        };
    }
    if kind.contains("server") || kind.contains("overloaded") || code.contains("50") {
        return LlmError::ServiceUnavailable {
            status: None,
            message,
        };
    }
    LlmError::InvalidResponse {
        reason: format!("error inside the stream: {message}"),
        snippet: snippet(&value.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_headers(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn retry_after_in_every_form() {
        let header = |name: &'static str, value: &'static str| {
            move |n: &str| (n == name).then(|| value.to_owned())
        };
        assert_eq!(
            retry_after_ms(header("retry-after-ms", "1500.5"), 0),
            Some(1501)
        );
        assert_eq!(retry_after_ms(header("retry-after", "20"), 0), Some(20_000));
        assert_eq!(retry_after_ms(header("retry-after", "0.25"), 0), Some(250));
        // 2024-01-01T00:00:30Z, thirty seconds after the simulated epoch.
        let now = 1_704_067_200_000;
        assert_eq!(
            retry_after_ms(header("retry-after", "Mon, 01 Jan 2024 00:00:30 GMT"), now),
            Some(30_000)
        );
        assert_eq!(
            retry_after_ms(
                header("retry-after", "Mon, 01 Jan 2024 00:00:00 GMT"),
                now + 5_000
            ),
            Some(0)
        );
        assert_eq!(retry_after_ms(header("retry-after", "soon"), now), None);
        assert_eq!(retry_after_ms(no_headers, now), None);
    }

    #[test]
    fn context_length_messages_of_known_providers() {
        let cases: [(&str, Option<u32>, Option<u32>); 6] = [
            (
                "This model's maximum context length is 8192 tokens. However, your messages resulted in 9013 tokens.",
                Some(9013),
                Some(8192),
            ),
            (
                "This model's maximum context length is 65536 tokens. However, you requested 70000 tokens (69000 in the messages, 1000 in the completion).",
                Some(70000),
                Some(65536),
            ),
            (
                "Range of input length should be [1, 30720]",
                None,
                Some(30720),
            ),
            (
                "the request exceeds the available context size, try increasing it",
                None,
                None,
            ),
            (
                "prompt is too long: 210000 tokens > 200000 maximum",
                Some(210000),
                Some(200000),
            ),
            ("Prompt 超长", None, None),
        ];
        for (message, prompt, limit) in cases {
            assert_eq!(
                context_overflow(message, None),
                Some((prompt, limit)),
                "{message}"
            );
        }
        assert_eq!(context_overflow("invalid model", None), None);
        let llama = serde_json::json!({"type": "exceed_context_size_error", "n_prompt_tokens": 5000, "n_ctx": 4096});
        assert_eq!(
            context_overflow(
                "the request exceeds the available context size",
                Some(&llama)
            ),
            Some((Some(5000), Some(4096)))
        );
    }

    #[test]
    fn statuses_map_to_typed_errors() {
        let body = r#"{"error": {"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}}"#;
        let retry = |n: &str| (n == "retry-after").then(|| "2".to_owned());
        assert_eq!(
            from_status(429, retry, body, 0),
            LlmError::RateLimit {
                retry_after_ms: Some(2000)
            }
        );
        let quota = r#"{"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}}"#;
        assert!(matches!(
            from_status(429, no_headers, quota, 0),
            LlmError::Auth { status: 429, .. }
        ));
        let context = r#"{"error": {"message": "too long", "code": "context_length_exceeded"}}"#;
        assert_eq!(
            from_status(400, no_headers, context, 0),
            LlmError::ContextOverflow {
                prompt_tokens: None,
                limit: None
            }
        );
        assert!(matches!(
            from_status(401, no_headers, "{}", 0),
            LlmError::Auth { status: 401, .. }
        ));
        assert!(matches!(
            from_status(504, no_headers, "", 0),
            LlmError::Timeout { .. }
        ));
        assert!(matches!(
            from_status(503, no_headers, "<html>busy</html>", 0),
            LlmError::ServiceUnavailable {
                status: Some(503),
                ..
            }
        ));
        let bad = from_status(400, no_headers, "<html>nope</html>", 0);
        assert!(
            bad.to_string().contains("not JSON") && bad.to_string().contains("<html>nope"),
            "{bad}"
        );
        assert!(matches!(
            from_status(404, no_headers, r#"{"error": "model 'x' not found"}"#, 0),
            LlmError::BadRequest {
                status: Some(404),
                ..
            }
        ));
    }
}
