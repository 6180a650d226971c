//! Gemini's errors: Google's `{"error": {code, message, status, details}}` envelope
//! with the status name of each code (GEMINI-TROUBLE), the words of each kind from live
//! captures (beside each), and the headers Google's front end adds.

use umi_core::llm::LlmError;

use super::Era;
use crate::network::json::Json;

/// The status name of an HTTP code (GEMINI-TROUBLE's table; `google.rpc.Code`).
pub(crate) fn status_name(status: u16) -> &'static str {
    match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        413 => "INVALID_ARGUMENT",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        501 => "UNIMPLEMENTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ if status >= 500 => "INTERNAL",
        _ => "FAILED_PRECONDITION",
    }
}

/// The envelope of `status` with `message` and `details` (none: no `details` key).
fn envelope(status: u16, message: &str, details: Vec<Json>) -> Json {
    let mut error = Json::object(vec![
        ("code", u32::from(status).into()),
        ("message", message.into()),
        ("status", status_name(status).into()),
    ]);
    if !details.is_empty() {
        error.push("details", Json::Array(details));
    }
    Json::object(vec![("error", error)])
}

/// A rate limit's words and details (GEMINI-CAPTURES: browserbase/mcp-server-browserbase
/// #129 for the message and the `Help`, `QuotaFailure`, `RetryInfo` order;
/// GEMINI-VERCEL `google-429-retry-info.json` for `retryDelay` in seconds with a
/// fraction). A limit with no wait (a daily quota) has no `RetryInfo`
/// (gke-labs/gemini-for-kubernetes-development #1215).
fn rate_limit(era: &Era, retry_after_ms: Option<u64>) -> (String, Vec<Json>) {
    let metric = "generativelanguage.googleapis.com/generate_content_free_tier_requests";
    let mut message = "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current usage, head to: https://ai.dev/usage?tab=rate-limit. ".to_owned();
    message.push_str(&format!(
        "\n* Quota exceeded for metric: {metric}, limit: 10"
    ));
    let help = Json::object(vec![
        ("@type", "type.googleapis.com/google.rpc.Help".into()),
        (
            "links",
            Json::Array(vec![Json::object(vec![
                ("description", "Learn more about Gemini API quotas".into()),
                (
                    "url",
                    "https://ai.google.dev/gemini-api/docs/rate-limits".into(),
                ),
            ])]),
        ),
    ]);
    let dimensions = Json::object(vec![
        ("location", "global".into()),
        ("model", era.model_version.clone().into()),
    ]);
    let violation = Json::object(vec![
        ("quotaMetric", metric.into()),
        (
            "quotaId",
            "GenerateRequestsPerMinutePerProjectPerModel-FreeTier".into(),
        ),
        ("quotaDimensions", dimensions),
        ("quotaValue", "10".into()),
    ]);
    let failure = Json::object(vec![
        (
            "@type",
            "type.googleapis.com/google.rpc.QuotaFailure".into(),
        ),
        ("violations", Json::Array(vec![violation])),
    ]);
    let mut details = vec![help, failure];
    if let Some(wait_ms) = retry_after_ms {
        let delay = duration_text(wait_ms);
        message.push_str(&format!("\nPlease retry in {delay}."));
        details.push(Json::object(vec![
            ("@type", "type.googleapis.com/google.rpc.RetryInfo".into()),
            ("retryDelay", delay.into()),
        ]));
    }
    (message, details)
}

/// A protobuf duration in JSON: seconds, a fraction only when there is one (`38s`,
/// `34.4s`).
pub(crate) fn duration_text(ms: u64) -> String {
    let (seconds, fraction_ms) = (ms / 1_000, ms % 1_000);
    if fraction_ms == 0 {
        return format!("{seconds}s");
    }
    let fraction = format!("{fraction_ms:03}");
    format!("{seconds}.{}s", fraction.trim_end_matches('0'))
}

/// The words of a request that presents no key at all, with no `details` (googleapis/
/// js-genai #898 and PublicAffairs/openai-gemini #92 quote the whole body).
const UNREGISTERED_CALLER: &str = "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.";

/// The `API_KEY_INVALID` details of a wrong key (GEMINI-CAPTURES continuedev/continue
/// #8516: an `ErrorInfo`, then the message again as a `LocalizedMessage`).
fn key_details(message: &str) -> Vec<Json> {
    let metadata = Json::object(vec![(
        "service",
        "generativelanguage.googleapis.com".into(),
    )]);
    vec![
        Json::object(vec![
            ("@type", "type.googleapis.com/google.rpc.ErrorInfo".into()),
            ("reason", "API_KEY_INVALID".into()),
            ("domain", "googleapis.com".into()),
            ("metadata", metadata),
        ]),
        Json::object(vec![
            (
                "@type",
                "type.googleapis.com/google.rpc.LocalizedMessage".into(),
            ),
            ("locale", "en-US".into()),
            ("message", message.into()),
        ]),
    ]
}

/// The status and body of `error`.
///
/// | kind | status | words, source |
/// | --- | --- | --- |
/// | rate limit | 429 RESOURCE_EXHAUSTED | [`rate_limit`] |
/// | context overflow | 400 INVALID_ARGUMENT | `The input token count (N) exceeds the maximum number of tokens allowed (M).` (gemini-cli #4118, #6678) |
/// | wrong key | 400 INVALID_ARGUMENT | `API key not valid. Please pass a valid API key.` (continue #8516) |
/// | no key | 403 PERMISSION_DENIED | [`UNREGISTERED_CALLER`] |
/// | unknown model | 404 NOT_FOUND | `models/X is not found for API version v1beta, or is not supported for generateContent. Call ListModels …` (quoted in many agent logs, e.g. a C# client's test); `… for embedContent` on an embeddings path (feyninc/chonkie #529, google/generative-ai-docs #254) |
/// | overloaded | 503 UNAVAILABLE | `The model is overloaded. Please try again later.` (gemini-cli #5191, lobehub #9728), or the 2026 `high demand` words (continue #10639) |
/// | deadline | 504 DEADLINE_EXCEEDED | GEMINI-TROUBLE's name; Google's standard words |
/// | anything else | 500 INTERNAL | GEMINI-TROUBLE's words |
pub(crate) fn refusal(era: &Era, error: &LlmError) -> (u16, Json) {
    let (status, message, details) = match error {
        LlmError::RateLimit { retry_after_ms } => {
            let (message, details) = rate_limit(era, *retry_after_ms);
            (429, message, details)
        }
        LlmError::ContextOverflow {
            prompt_tokens,
            limit,
        } => (
            400,
            format!(
                "The input token count ({}) exceeds the maximum number of tokens allowed ({}).",
                prompt_tokens.unwrap_or(0),
                limit.unwrap_or(0)
            ),
            Vec::new(),
        ),
        LlmError::Auth { status: 403, .. } => (403, UNREGISTERED_CALLER.to_owned(), Vec::new()),
        LlmError::Auth { .. } => {
            let message = "API key not valid. Please pass a valid API key.";
            (400, message.to_owned(), key_details(message))
        }
        LlmError::ModelNotFound { message, .. } => (
            404,
            format!(
                "models/{message} is not found for API version v1beta, or is not supported for {}. Call ListModels to see the list of available models and their supported methods.",
                if era.route.embed {
                    "embedContent"
                } else {
                    "generateContent"
                }
            ),
            Vec::new(),
        ),
        LlmError::BadRequest {
            status: Some(404), ..
        } => (404, "Requested entity was not found.".to_owned(), Vec::new()),
        LlmError::BadRequest { message, .. } => (400, message.clone(), Vec::new()),
        LlmError::InvalidPrompt { reason } => (400, reason.clone(), Vec::new()),
        LlmError::ServiceUnavailable { .. } => (503, unavailable(era).to_owned(), Vec::new()),
        LlmError::Timeout { .. } | LlmError::ServerTimeout { .. } => (
            504,
            "Deadline expired before operation could complete.".to_owned(),
            Vec::new(),
        ),
        _ => (
            500,
            "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting".to_owned(),
            Vec::new(),
        ),
    };
    (status, envelope(status, &message, details))
}

fn unavailable(era: &Era) -> &'static str {
    if era.high_demand {
        "This model is currently experiencing high demand. Spikes in demand are usually temporary. Please try again later."
    } else {
        "The model is overloaded. Please try again later."
    }
}

/// The headers of Google's front end on every response (GEMINI-CAPTURES: an SDK test
/// quoting a live response's headers).
pub(crate) fn headers() -> Vec<(String, String)> {
    [
        ("vary", "Origin, X-Origin, Referer"),
        ("server", "scaffolding on HTTPServer2"),
        ("x-xss-protection", "0"),
        ("x-frame-options", "SAMEORIGIN"),
        ("x-content-type-options", "nosniff"),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value.to_owned()))
    .collect()
}
