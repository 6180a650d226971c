//! Anthropic's errors and headers: the `{"type": "error", "error": {type, message},
//! "request_id"}` envelope with the status and words of each kind (DOC-ERR and the
//! captures below), and the headers every response carries (DOC-OVERVIEW, DOC-RL).

use umi_core::llm::LlmError;

use super::{Era, Layout};
use crate::network::json::Json;
use crate::network::stamps;
use crate::rng::DeterministicRng;

/// An error as the API answers it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refusal {
    pub(crate) status: u16,
    pub(crate) body: Json,
}

/// The status, `error.type` and message for `error`.
///
/// | status | type | message, source |
/// | --- | --- | --- |
/// | 400 | `invalid_request_error` | the request's fault; `prompt is too long: N tokens > M maximum` (RipperTs/claude-code-relay #23, boldsoftware/exe.dev #62) |
/// | 401 | `authentication_error` | `invalid x-api-key` (Good-player/free-claude-api-and-anthropic #14) |
/// | 404 | `not_found_error` | `model: <id>` (continuedev/continue #12161) |
/// | 429 | `rate_limit_error` | bhouston/mycoder #62 (2025), anthropics/claude-code #55132 (2026) |
/// | 500 | `api_error` | `Internal server error` (anthropics/claude-code #91800) |
/// | 504 | `timeout_error` | DOC-ERR lists the type; no captured message, so its docs' words |
/// | 529 | `overloaded_error` | `Overloaded` (anthropics/claude-code #35769) |
pub(crate) fn kind_of(
    era: &Era,
    error: &LlmError,
    organization_id: &str,
) -> (u16, &'static str, String) {
    match error {
        LlmError::RateLimit { .. } => (
            429,
            "rate_limit_error",
            rate_limit_message(era, organization_id),
        ),
        LlmError::ContextOverflow {
            prompt_tokens,
            limit,
        } => (
            400,
            "invalid_request_error",
            format!(
                "prompt is too long: {} tokens > {} maximum",
                prompt_tokens.unwrap_or(0),
                limit.unwrap_or(0)
            ),
        ),
        LlmError::Auth { .. } => (401, "authentication_error", "invalid x-api-key".into()),
        LlmError::ModelNotFound { message, .. } => {
            (404, "not_found_error", format!("model: {message}"))
        }
        LlmError::BadRequest {
            status: Some(404), ..
        } => (404, "not_found_error", "Not Found".into()),
        LlmError::BadRequest { message, .. } => (400, "invalid_request_error", message.clone()),
        LlmError::InvalidPrompt { reason } => (400, "invalid_request_error", reason.clone()),
        LlmError::ServiceUnavailable {
            status: Some(503) | None,
            ..
        } => (529, "overloaded_error", "Overloaded".into()),
        LlmError::Timeout { .. } | LlmError::ServerTimeout { .. } => (
            504,
            "timeout_error",
            "The request timed out while processing.".into(),
        ),
        _ => (500, "api_error", "Internal server error".into()),
    }
}

fn rate_limit_message(era: &Era, organization_id: &str) -> String {
    match era.layout {
        Layout::Y2026 => format!(
            "This request would exceed your organization's rate limit of 30,000 input tokens per minute (org: {organization_id}, model: {}). For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase.",
            era.model
        ),
        Layout::Y2024 | Layout::Y2025 => format!(
            "This request would exceed the rate limit for your organization ({organization_id}) of 40,000 input tokens per minute. For details, refer to: https://docs.anthropic.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase."
        ),
    }
}

/// The body of a refusal: `request_id` since 2025 (absent in a 2024 529,
/// anthropic-sdk-typescript #616).
pub(crate) fn refusal(era: &Era, error: &LlmError, organization_id: &str) -> Refusal {
    if let LlmError::BadRequest { message, .. } = error
        && message == super::request::TOO_LARGE
    {
        // Cloudflare answers before the API: no top-level `type`, no `request_id`
        // (anthropics/claude-code #14567, #3335; anthropic-sdk-python #938).
        let error = Json::object(vec![
            ("type", "request_too_large".into()),
            ("message", message.as_str().into()),
        ]);
        return Refusal {
            status: 413,
            body: Json::object(vec![("error", error)]),
        };
    }
    let (status, kind, message) = kind_of(era, error, organization_id);
    let mut body = Json::object(vec![
        ("type", "error".into()),
        (
            "error",
            Json::object(vec![("type", kind.into()), ("message", message.into())]),
        ),
    ]);
    if era.layout != Layout::Y2024 {
        body.push("request_id", era.request_id.clone());
    }
    Refusal { status, body }
}

/// An `error` event's data after the 200: `details: null` since 2025 (claude-code #309,
/// anthropic-sdk-go #200), `request_id` in 2026 (karthink/gptel #1512); DOC-STREAM's
/// example has neither.
pub(crate) fn event(era: &Era, error: &LlmError, organization_id: &str) -> Json {
    let (_, kind, message) = kind_of(era, error, organization_id);
    let mut inner = Json::object(Vec::new());
    if era.layout != Layout::Y2024 {
        inner.push("details", Json::null());
    }
    inner.push("type", kind);
    inner.push("message", message);
    let mut data = Json::object(vec![("type", "error".into()), ("error", inner)]);
    if era.layout == Layout::Y2026 {
        data.push("request_id", era.request_id.clone());
    }
    data
}

/// `2025-06-02T15:15:48Z`: DOC-RL's reset form (RFC 3339, whole seconds).
fn reset_at(unix_ms: u64) -> String {
    format!("{}Z", &stamps::rfc3339(unix_ms)[..19])
}

/// The headers of a response with `status`.
///
/// - `request-id` on every response (DOC-OVERVIEW), the body's `request_id`;
///   `anthropic-organization-id` since 2025-02 (release notes).
/// - `x-should-retry` on errors: `true` on a 529 (anthropic-sdk-typescript #616), `false`
///   on a 400 (home-assistant/core #140005); the SDKs obey it before the status.
/// - `anthropic-ratelimit-*` with RFC 3339 resets and `retry-after` seconds on a 429
///   (DOC-RL; the values of whoz-oss/coday #110).
/// - `server: cloudflare` and `via: 1.1 google` (both captures above).
pub(crate) fn headers(
    era: &Era,
    organization_id: &str,
    status: u16,
    server_now_ms: u64,
    rng: &mut DeterministicRng,
) -> Vec<(String, String)> {
    let pair = |name: &str, value: String| (name.to_owned(), value);
    let mut out = vec![pair("request-id", era.request_id.clone())];
    if era.layout != Layout::Y2024 {
        out.push(pair(
            "anthropic-organization-id",
            organization_id.to_owned(),
        ));
    }
    if status >= 400 {
        let retry = matches!(status, 408 | 409 | 429) || status >= 500;
        out.push(pair("x-should-retry", retry.to_string()));
    }
    if matches!(status, 200 | 429) {
        out.extend(rate_limit_headers(status == 429, server_now_ms, rng));
    }
    out.extend([
        pair("server", "cloudflare".into()),
        pair("via", "1.1 google".into()),
    ]);
    out
}

/// The `anthropic-ratelimit-*` headers of a 200 or a 429 (`limited`: input tokens at
/// zero), with remaining counts drawn below their limits and resets within the minute.
fn rate_limit_headers(
    limited: bool,
    server_now_ms: u64,
    rng: &mut DeterministicRng,
) -> Vec<(String, String)> {
    let pair = |name: &str, value: String| (name.to_owned(), value);
    let minute_ms = server_now_ms + 60_000;
    let soon_ms = server_now_ms + 1_000 + rng.below(59_000);
    let thousands = |limit: u64, rng: &mut DeterministicRng| {
        ((limit - rng.below(limit / 4)) / 1_000 * 1_000).to_string()
    };
    let input_remaining = if limited {
        "0".to_owned()
    } else {
        thousands(200_000, rng)
    };
    vec![
        pair("anthropic-ratelimit-input-tokens-limit", "200000".into()),
        pair(
            "anthropic-ratelimit-input-tokens-remaining",
            input_remaining,
        ),
        pair("anthropic-ratelimit-input-tokens-reset", reset_at(soon_ms)),
        pair("anthropic-ratelimit-output-tokens-limit", "80000".into()),
        pair(
            "anthropic-ratelimit-output-tokens-remaining",
            thousands(80_000, rng),
        ),
        pair(
            "anthropic-ratelimit-output-tokens-reset",
            reset_at(minute_ms),
        ),
        pair("anthropic-ratelimit-requests-limit", "4000".into()),
        pair(
            "anthropic-ratelimit-requests-remaining",
            (3_999 - rng.below(100)).to_string(),
        ),
        pair("anthropic-ratelimit-requests-reset", reset_at(minute_ms)),
        pair("anthropic-ratelimit-tokens-limit", "280000".into()),
        pair(
            "anthropic-ratelimit-tokens-remaining",
            thousands(80_000, rng),
        ),
        pair("anthropic-ratelimit-tokens-reset", reset_at(minute_ms)),
    ]
}
