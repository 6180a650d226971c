//! The classifier over the error bodies providers really send (each case names whose
//! shape it is; the bytes are in umi-core/tests/fixtures and the simulator's profiles).

use serde_json::json;

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
fn an_http_date_is_measured_against_the_response_date() {
    // The server's clock says 00:00:10 while ours says 00:00:00: a Retry-After of
    // 00:00:30 means twenty seconds, as the server meant it.
    let headers = |n: &str| match n {
        "retry-after" => Some("Mon, 01 Jan 2024 00:00:30 GMT".to_owned()),
        "date" => Some("Mon, 01 Jan 2024 00:00:10 GMT".to_owned()),
        _ => None,
    };
    let ours = 1_704_067_200_000;
    let now = response_now_ms(headers, ours);
    assert_eq!(now, ours + 10_000);
    assert_eq!(retry_after_ms(headers, now), Some(20_000));
    assert_eq!(
        from_status(429, headers, "{}", now),
        LlmError::RateLimit {
            retry_after_ms: Some(20_000)
        }
    );
    // A broken Date is ignored, not trusted.
    let broken = |n: &str| (n == "date").then(|| "yesterday".to_owned());
    assert_eq!(response_now_ms(broken, ours), ours);
}

#[test]
fn context_length_messages_of_known_providers() {
    let cases: [(&str, Option<u32>, Option<u32>); 7] = [
        // OpenAI and vLLM.
        (
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9013 tokens.",
            Some(9013),
            Some(8192),
        ),
        // DeepSeek.
        (
            "This model's maximum context length is 65536 tokens. However, you requested 70000 tokens (69000 in the messages, 1000 in the completion).",
            Some(70000),
            Some(65536),
        ),
        // DashScope (Qwen).
        (
            "Range of input length should be [1, 30720]",
            None,
            Some(30720),
        ),
        // llama.cpp's server.
        (
            "the request exceeds the available context size, try increasing it",
            None,
            None,
        ),
        // Anthropic-style gateways.
        (
            "prompt is too long: 210000 tokens > 200000 maximum",
            Some(210000),
            Some(200000),
        ),
        // GLM.
        ("Prompt 超长", None, None),
        // A count past u32 saturates instead of wrapping.
        (
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 4294967301 tokens.",
            Some(u32::MAX),
            Some(8192),
        ),
    ];
    for (message, prompt, limit) in cases {
        assert_eq!(
            context_overflow(message, None),
            Some((prompt, limit)),
            "{message}"
        );
    }
    assert_eq!(context_overflow("invalid model", None), None);
    let llama =
        json!({"type": "exceed_context_size_error", "n_prompt_tokens": 5000, "n_ctx": 4096});
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
    let body =
        r#"{"error": {"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}}"#;
    let retry = |n: &str| (n == "retry-after").then(|| "2".to_owned());
    assert_eq!(
        from_status(429, retry, body, 0),
        LlmError::RateLimit {
            retry_after_ms: Some(2000)
        }
    );
    // A 429 without Retry-After is still a rate limit, with no wait named.
    assert_eq!(
        from_status(429, no_headers, body, 0),
        LlmError::RateLimit {
            retry_after_ms: None
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
}

#[test]
fn a_server_timeout_keeps_the_servers_message() {
    let body = r#"{"error": {"message": "Request timed out waiting for the model", "type": "server_error"}}"#;
    assert_eq!(
        from_status(408, no_headers, body, 0),
        LlmError::ServerTimeout {
            status: Some(408),
            message: "Request timed out waiting for the model".into()
        }
    );
    let gateway = from_status(504, no_headers, "<html>504 Gateway Time-out</html>", 0);
    assert!(
        matches!(&gateway, LlmError::ServerTimeout { status: Some(504), message } if message.contains("Gateway Time-out")),
        "{gateway:?}"
    );
    assert!(gateway.is_retryable());
}

#[test]
fn model_not_found_in_every_envelope() {
    let cases = [
        // OpenAI.
        (
            404,
            r#"{"error": {"message": "The model `gpt-9` does not exist or you do not have access to it.", "type": "invalid_request_error", "param": null, "code": "model_not_found"}}"#,
        ),
        // vLLM.
        (
            404,
            r#"{"object": "error", "message": "The model `llama` does not exist.", "type": "NotFoundError", "param": null, "code": 404}"#,
        ),
        // Ollama's native API.
        (
            404,
            r#"{"error": "model \"qwen9\" not found, try pulling it first"}"#,
        ),
        // OpenRouter (chatboxai/chatbox #2743).
        (
            404,
            r#"{"error":{"message":"No endpoints found for deepseek/deepseek-chat-v3.1:free.","code":404}}"#,
        ),
        // Azure (chatboxai/chatbox #861).
        (
            404,
            r#"{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}}"#,
        ),
    ];
    for (status, body) in cases {
        let error = from_status(status, no_headers, body, 0);
        assert!(
            matches!(error, LlmError::ModelNotFound { .. }),
            "{body}: {error:?}"
        );
        assert!(!error.is_retryable() && error.is_fallback_eligible());
    }
    // A 404 that is not about a model stays a bad request.
    assert!(matches!(
        from_status(404, no_headers, r#"{"error": "no such route"}"#, 0),
        LlmError::BadRequest {
            status: Some(404),
            ..
        }
    ));
}

#[test]
fn numeric_codes_and_other_envelopes() {
    // OpenRouter: a numeric code.
    let openrouter = r#"{"error": {"code": 429, "message": "Rate limit exceeded", "metadata": {"provider_name": "x"}}}"#;
    assert!(matches!(
        from_status(429, no_headers, openrouter, 0),
        LlmError::RateLimit { .. }
    ));
    // GLM: a rate-limit code with HTTP 429, and the context code with HTTP 400.
    let glm_rate = r#"{"error": {"code": "1302", "message": "您当前使用该API的并发数过高"}}"#;
    assert!(matches!(
        from_status(429, no_headers, glm_rate, 0),
        LlmError::RateLimit { .. }
    ));
    let glm_context = r#"{"error": {"code": "1261", "message": "Prompt 超长"}}"#;
    assert!(matches!(
        from_status(400, no_headers, glm_context, 0),
        LlmError::ContextOverflow { .. }
    ));
    // DashScope's native envelope.
    let dashscope = r#"{"code": "InvalidParameter", "message": "Range of input length should be [1, 30720]", "request_id": "r-1"}"#;
    assert_eq!(
        from_status(400, no_headers, dashscope, 0),
        LlmError::ContextOverflow {
            prompt_tokens: None,
            limit: Some(30720)
        }
    );
    // DeepSeek: 402 insufficient balance is not worth retrying.
    let balance = r#"{"error": {"message": "Insufficient Balance", "type": "unknown_error", "param": null, "code": "invalid_request_error"}}"#;
    assert!(matches!(
        from_status(402, no_headers, balance, 0),
        LlmError::Auth { status: 402, .. }
    ));
}

#[test]
fn tgi_and_fastapi_envelopes() {
    // TGI 2.0: validation (context) errors are 422, generation failures 424.
    let context = r#"{"error":"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 200 `max_new_tokens`","error_type":"validation"}"#;
    assert_eq!(
        from_status(422, no_headers, context, 0),
        LlmError::ContextOverflow {
            prompt_tokens: Some(4000),
            limit: Some(4096)
        }
    );
    let generation = r#"{"error":"Request failed during generation: CUDA out of memory","error_type":"generation"}"#;
    let error = from_status(424, no_headers, generation, 0);
    assert!(
        matches!(
            error,
            LlmError::ServiceUnavailable {
                status: Some(424),
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.is_retryable());
    // Xinference: FastAPI's `detail`.
    let missing = r#"{"detail":"Model not found in the model list, uid: qwen-x"}"#;
    assert!(matches!(
        from_status(404, no_headers, missing, 0),
        LlmError::ModelNotFound { .. }
    ));
}

#[test]
fn errors_inside_a_stream_map_to_their_kind() {
    let cases = [
        // OpenRouter's mid-stream error chunk: numeric code in `code`.
        (
            json!({"error": {"code": 502, "message": "Provider returned error"}}),
            "service_unavailable",
        ),
        (
            json!({"error": {"code": 429, "message": "Rate limit exceeded"}}),
            "rate_limit",
        ),
        // llama.cpp's `error:` field carries its own envelope.
        (
            json!({"code": 500, "message": "slot unavailable", "type": "server_error"}),
            "service_unavailable",
        ),
        (
            json!({"code": 400, "message": "the request exceeds the available context size", "type": "exceed_context_size_error", "n_prompt_tokens": 9000, "n_ctx": 8192}),
            "context_overflow",
        ),
        // The kind in `type` instead of `code`.
        (
            json!({"error": {"message": "Overloaded", "type": "overloaded_error"}}),
            "service_unavailable",
        ),
        (
            json!({"error": {"message": "slow down", "type": "rate_limit_error"}}),
            "rate_limit",
        ),
        (
            json!({"error": {"message": "timed out", "type": "timeout_error"}}),
            "server_timeout",
        ),
        // Ollama's error line: a bare string.
        (
            json!({"error": "an error was encountered while running the model: unexpected EOF"}),
            "service_unavailable",
        ),
        // Nothing specific: a transient server fault, never a malformed response.
        (
            json!({"error": {"message": "Internal server error"}}),
            "service_unavailable",
        ),
    ];
    for (value, kind) in &cases {
        let error = from_stream_error(value);
        assert_eq!(error.kind().as_str(), *kind, "{value}: {error:?}");
    }
    let overflow = from_stream_error(&cases[3].0);
    assert_eq!(
        overflow,
        LlmError::ContextOverflow {
            prompt_tokens: Some(9000),
            limit: Some(8192)
        }
    );
}

/// Google's envelope (`{"error": {code, message, status, details}}`) by HTTP status
/// and `status`, each body as quoted in the source named.
#[test]
fn google_envelopes_classify_by_status() {
    // vercel/ai `packages/google/src/__fixtures__/google-429-retry-info.json` (52173efe).
    let quota = r#"{"error":{"code":429,"message":"You exceeded your current quota, please check your plan.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"34.4s"}]}}"#;
    assert_eq!(
        from_status(429, no_headers, quota, 0),
        LlmError::RateLimit {
            retry_after_ms: Some(34_400)
        }
    );
    // A Retry-After header wins over the body's delay.
    let header = |n: &str| (n == "retry-after").then(|| "2".to_owned());
    assert_eq!(
        from_status(429, header, quota, 0),
        LlmError::RateLimit {
            retry_after_ms: Some(2_000)
        }
    );
    // google-gemini/gemini-cli#4118.
    let overflow = r#"{"error":{"code":400,"message":"The input token count (132478) exceeds the maximum number of tokens allowed (131072).","status":"INVALID_ARGUMENT"}}"#;
    assert_eq!(
        from_status(400, no_headers, overflow, 0),
        LlmError::ContextOverflow {
            prompt_tokens: Some(132_478),
            limit: Some(131_072)
        }
    );
    // continuedev/continue#8516: a bad key is a 400 with the reason API_KEY_INVALID.
    let bad_key = r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}]}}"#;
    assert!(matches!(
        from_status(400, no_headers, bad_key, 0),
        LlmError::Auth { status: 400, .. }
    ));
}

/// Google's envelopes captured live (the rest of `google_envelopes_classify_by_status`).
#[test]
fn google_live_envelopes_classify_by_status() {
    // vercel/ai `packages/google/src/__fixtures__/issue-22372-live-errors.json` (7e719f0f).
    let invalid = r#"{"error":{"code":400,"message":"Thinking level MINIMAL is not supported for this model. Please retry with other thinking level.","status":"INVALID_ARGUMENT"}}"#;
    assert!(matches!(
        from_status(400, no_headers, invalid, 0),
        LlmError::BadRequest {
            status: Some(400),
            ..
        }
    ));
}

/// Each Google `status`, whole and inside a stream, by the words Google sends with it.
#[test]
fn google_statuses_classify_the_same_in_a_stream() {
    let envelope = |code: u16, status: &str, message: &str| {
        json!({"error": {"code": code, "message": message, "status": status}}).to_string()
    };
    let cases = [
        (
            400,
            "FAILED_PRECONDITION",
            "User location is not supported for the API use.",
            "bad_request",
        ),
        (
            404,
            "NOT_FOUND",
            "models/gemini-9 is not found for API version v1beta, or is not supported for generateContent.",
            "model_not_found",
        ),
        (
            404,
            "NOT_FOUND",
            "Requested entity was not found.",
            "model_not_found",
        ),
        (
            401,
            "UNAUTHENTICATED",
            "Request had invalid authentication credentials.",
            "auth",
        ),
        (
            403,
            "PERMISSION_DENIED",
            "The caller does not have permission",
            "auth",
        ),
        (
            500,
            "INTERNAL",
            "An internal error has occurred.",
            "service_unavailable",
        ),
        (
            503,
            "UNAVAILABLE",
            "The model is overloaded. Please try again later.",
            "service_unavailable",
        ),
        (
            504,
            "DEADLINE_EXCEEDED",
            "Deadline expired before operation could complete.",
            "server_timeout",
        ),
    ];
    for (code, status, message, kind) in cases {
        let error = from_status(code, no_headers, &envelope(code, status, message), 0);
        assert_eq!(error.kind().as_str(), kind, "{status}: {error:?}");
        // The same object inside a stream classifies the same.
        let value: Value = serde_json::from_str(&envelope(code, status, message)).unwrap();
        assert_eq!(
            from_stream_error(&value).kind().as_str(),
            kind,
            "in stream: {status}"
        );
    }
}

/// `retryDelay` is read digit by digit, rounded up to the ms: through a float, 731 of
/// the 100,000 ms values below 100 s came out a millisecond long (`"2.007s"` as 2008).
#[test]
fn google_retry_delays_are_exact_to_the_millisecond() {
    let cases: [(&str, Option<u64>); 10] = [
        ("30s", Some(30_000)),
        ("34.4s", Some(34_400)),
        ("1.5s", Some(1_500)),
        ("2.007s", Some(2_007)),
        ("0.000000001s", Some(1)),
        ("0.5000s", Some(500)),
        ("-1s", None),
        ("1.5", None),
        (".5s", None),
        ("1.0000000001s", None),
    ];
    for (text, expected) in cases {
        assert_eq!(duration_ms(text), expected, "{text}");
    }
}
