//! Bedrock's errors: an HTTP status, `{"message": ...}` as the body and the exception's
//! name in `x-amzn-errortype` (`ThrottlingException:http://internal.amazon.com/coral/
//! com.amazon.bedrock/`, the Coral form botocore's `parsers.py` cuts at the first `:`);
//! in a stream, an event-stream message with `:message-type: exception` and the name,
//! its first letter lowercase, in `:exception-type` (BEDROCK-API `Converse` and
//! `ConverseStream`, "Errors"; `ConverseStreamOutput`).
//!
//! | error | status | exception | message, source |
//! | --- | --- | --- | --- |
//! | rate limit | 429 | `ThrottlingException` | "Too many requests, please wait before trying again. You have sent too many requests.  Wait before trying again." (2FastLabs/agent-squad #47, Converse; aws-samples/aws-genai-llm-chatbot #220, in a stream as `throttlingException`) |
//! | context overflow | 400 | `ValidationException` | "The model returned the following errors: prompt is too long: N tokens > M maximum" (daisuke-awaji/moca #254; strands-agents/harness-sdk #1663, Claude on Bedrock) |
//! | a body Bedrock cannot read | 400 | `ValidationException` | its own words |
//! | no `Authorization` | 403 | `MissingAuthenticationTokenException` | "Missing Authentication Token" (AWS "Common Errors": MissingAuthenticationToken, 403) |
//! | a malformed signature | 400 | `IncompleteSignatureException` | the part at fault (AWS "Common Errors": IncompleteSignature, 400) |
//! | a key it does not know | 403 | `UnrecognizedClientException` | "The security token included in the request is invalid." (AWS "Common Errors") |
//! | a model it does not serve | 400 | `ValidationException` | "The provided model identifier is invalid." (earendil-works/pi #4993, anomalyco/opencode #11037, aws-samples/amazon-bedrock-workshop #340) |
//! | an unknown path | 404 | `UnknownOperationException` | the method and path (no capture read: the name is Coral's for an operation it does not route) |
//! | model timeout | 408 | `ModelTimeoutException` | "Model has timed out in processing the request. Try your request again." |
//! | overloaded | 503 | `ServiceUnavailableException` | "Bedrock is unable to process your request." |
//! | anything else | 500 | `InternalServerException` | "The server encountered an internal error while processing the request." |

use umi_core::llm::LlmError;

use super::request::{MISSING_TOKEN, SIGNATURE_PARAM};

/// The Coral namespace `x-amzn-errortype` ends with.
const ERROR_TYPE_NAMESPACE: &str = "http://internal.amazon.com/coral/com.amazon.bedrock/";

/// The status, the exception's name and its message for `error` (`param` names the
/// field a parse refusal was about).
pub(crate) fn kind_of(error: &LlmError, param: Option<&str>) -> (u16, &'static str, String) {
    match error {
        LlmError::BadRequest { message, .. } if param == Some(SIGNATURE_PARAM) => {
            if message == MISSING_TOKEN {
                (403, "MissingAuthenticationTokenException", message.clone())
            } else {
                (400, "IncompleteSignatureException", message.clone())
            }
        }
        LlmError::RateLimit { .. } => (
            429,
            "ThrottlingException",
            "Too many requests, please wait before trying again. You have sent too many requests.  Wait before trying again.".into(),
        ),
        LlmError::ContextOverflow {
            prompt_tokens,
            limit,
        } => (
            400,
            "ValidationException",
            format!(
                "The model returned the following errors: prompt is too long: {} tokens > {} maximum",
                prompt_tokens.unwrap_or(0),
                limit.unwrap_or(0)
            ),
        ),
        // key_refusal: 403 for no key, 401 for one it does not know.
        LlmError::Auth { status: 403, .. } => {
            (403, "MissingAuthenticationTokenException", MISSING_TOKEN.into())
        }
        LlmError::Auth { .. } => (
            403,
            "UnrecognizedClientException",
            "The security token included in the request is invalid.".into(),
        ),
        LlmError::ModelNotFound { .. } => (
            400,
            "ValidationException",
            "The provided model identifier is invalid.".into(),
        ),
        LlmError::BadRequest {
            status: Some(404),
            message,
        } => (404, "UnknownOperationException", message.clone()),
        LlmError::BadRequest { message, .. } => (400, "ValidationException", message.clone()),
        LlmError::InvalidPrompt { reason } => (400, "ValidationException", reason.clone()),
        LlmError::Timeout { .. } | LlmError::ServerTimeout { .. } => (
            408,
            "ModelTimeoutException",
            "Model has timed out in processing the request. Try your request again.".into(),
        ),
        LlmError::ServiceUnavailable {
            status: Some(503) | None,
            ..
        } => (
            503,
            "ServiceUnavailableException",
            "Bedrock is unable to process your request.".into(),
        ),
        _ => (
            500,
            "InternalServerException",
            "The server encountered an internal error while processing the request.".into(),
        ),
    }
}

/// The `x-amzn-errortype` value for `exception`.
pub(crate) fn error_type(exception: &str) -> String {
    format!("{exception}:{ERROR_TYPE_NAMESPACE}")
}

/// An exception's name as a stream names it (`throttlingException`): the stream's
/// members are the HTTP exceptions' names with a lowercase first letter
/// (`ConverseStreamOutput`); one the stream has no member for is a model stream error
/// (`modelStreamErrorException`).
pub(crate) fn stream_exception(exception: &str) -> &'static str {
    match exception {
        "ThrottlingException" => "throttlingException",
        "ValidationException" => "validationException",
        "ServiceUnavailableException" => "serviceUnavailableException",
        "InternalServerException" => "internalServerException",
        _ => "modelStreamErrorException",
    }
}
