//! Errors in each chat provider's own envelope and words: the status and body a server
//! sends for a refusal, and (through the stream encoder) for an error after the 200.
//!
//! Texts are the providers' (sources in [`crate::network::profile`]); where a provider's
//! body for some error was never captured, its envelope carries OpenAI's words for it,
//! and the comment says so.

use serde_json::json;
use umi_core::llm::LlmError;

use super::draw::Draw;
use crate::network::chat_shapes::Envelope;
use crate::network::ids;
use crate::network::json::Json;
use crate::network::shapes::ShapeMark;

/// What went wrong, as a server sees it.
fn kind(error: &LlmError) -> Kind {
    match error {
        LlmError::RateLimit { .. } => Kind::RateLimit,
        LlmError::ContextOverflow {
            prompt_tokens,
            limit,
        } => Kind::Context {
            prompt: prompt_tokens.unwrap_or(0),
            limit: limit.unwrap_or(0),
        },
        LlmError::Auth { .. } => Kind::Auth,
        LlmError::ModelNotFound { .. } => Kind::ModelNotFound,
        LlmError::BadRequest {
            status: Some(404), ..
        } => Kind::Route,
        LlmError::BadRequest { .. } | LlmError::InvalidPrompt { .. } => Kind::BadRequest,
        LlmError::ServiceUnavailable {
            status: Some(status),
            ..
        } if *status != 503 => Kind::Server,
        LlmError::ServiceUnavailable { .. } => Kind::Overloaded,
        LlmError::Timeout { .. } | LlmError::ServerTimeout { .. } => Kind::Timeout,
        _ => Kind::Server,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    RateLimit,
    Context { prompt: u32, limit: u32 },
    Auth,
    ModelNotFound,
    Route,
    BadRequest,
    Overloaded,
    Server,
    Timeout,
}

/// The text inside an error the model or the server raised (for messages that quote it).
fn detail(error: &LlmError) -> String {
    match error {
        LlmError::BadRequest { message, .. }
        | LlmError::ModelNotFound { message, .. }
        | LlmError::ServiceUnavailable { message, .. }
        | LlmError::ServerTimeout { message, .. }
        | LlmError::Auth { message, .. } => message.clone(),
        LlmError::InvalidPrompt { reason } => reason.clone(),
        other => other.to_string(),
    }
}

fn openai_object(message: String, kind: &str, param: Option<&str>, code: Option<&str>) -> Json {
    Json::object(vec![(
        "error",
        Json::object(vec![
            ("message", message.into()),
            ("type", kind.into()),
            ("param", param.map(str::to_owned).into()),
            ("code", code.map(str::to_owned).into()),
        ]),
    )])
}

/// The status and body for `error` in the drawn envelope.
pub(crate) fn error_body(draw: &mut Draw, error: &LlmError) -> (u16, Json) {
    error_body_with_param(draw, error, None)
}

/// As [`error_body`], naming the request field at fault (`param`) where the provider
/// does.
pub(crate) fn error_body_with_param(
    draw: &mut Draw,
    error: &LlmError,
    param: Option<&str>,
) -> (u16, Json) {
    let kind = kind(error);
    let rate_limits = draw.retry_after.is_some();
    match draw.envelope {
        Envelope::Azure if kind == Kind::Auth => {
            // SciSharp/BotSharp #386.
            (401, json!({"error": {"code": "401", "message": "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}}).into())
        }
        Envelope::Azure if kind == Kind::RateLimit => {
            // vanderschaarlab/climb #1.
            (429, json!({"error": {"code": "429", "message": "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-08-01-preview have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 1 second. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit."}}).into())
        }
        Envelope::Azure if kind == Kind::ModelNotFound => {
            // chatboxai/chatbox #861.
            (404, json!({"error": {"code": "DeploymentNotFound", "message": "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}}).into())
        }
        Envelope::OpenAi | Envelope::Azure => openai_family(draw, kind, error, param),
        Envelope::DeepSeek => deepseek(kind, error, param),
        Envelope::DashScope => dashscope(draw, kind, error),
        Envelope::Glm => glm(kind, error),
        Envelope::OpenRouter => openrouter(kind, error),
        Envelope::VllmFlat | Envelope::VllmNested => vllm(draw, kind, error, param),
        Envelope::LlamaCpp => llama_cpp(draw, kind, error, rate_limits),
        Envelope::OllamaV1 => ollama_v1(kind, error),
        Envelope::FastApi => fastapi(draw, kind, error),
        Envelope::Tgi => tgi(kind, error),
    }
}

/// Xinference: FastAPI's `{"detail": ...}` (XINF restful_api.py `create_chat_completion`,
/// api/utils.py `require_model`). Its context-length text is the engine's (vLLM's).
fn fastapi(draw: &Draw, kind: Kind, error: &LlmError) -> (u16, Json) {
    let (status, detail) = match kind {
        Kind::RateLimit => (429, "Rate limit reached".to_owned()),
        Kind::ModelNotFound => (
            404,
            format!("Model not found in the model list, uid: {}", detail(error)),
        ),
        Kind::Overloaded => (
            503,
            format!("Model is loading, please retry later: {}", draw.model),
        ),
        Kind::Context { prompt, limit } => (
            400,
            format!(
                "This model's maximum context length is {limit} tokens. However, you requested {prompt} tokens in the messages, Please reduce the length of the messages."
            ),
        ),
        Kind::Auth => (401, "Not authenticated".to_owned()),
        Kind::BadRequest | Kind::Route => (400, detail(error)),
        Kind::Server | Kind::Timeout => (500, detail(error)),
    };
    (status, json!({"detail": detail}).into())
}

/// TGI: `{"error": ..., "error_type": ...}` with its status per kind (TGI server.rs
/// `From<InferError>`: overloaded 429, validation 422, generation 424).
fn tgi(kind: Kind, error: &LlmError) -> (u16, Json) {
    let (status, message, kind_name) = match kind {
        Kind::Context { prompt, limit } => (
            422,
            format!(
                "Input validation error: `inputs` tokens + `max_new_tokens` must be <= {limit}. Given: {prompt} `inputs` tokens and 100 `max_new_tokens`"
            ),
            "validation",
        ),
        Kind::RateLimit | Kind::Overloaded => (429, "Model is overloaded".to_owned(), "overloaded"),
        Kind::BadRequest | Kind::Route | Kind::ModelNotFound | Kind::Auth => (
            422,
            format!("Input validation error: {}", detail(error)),
            "validation",
        ),
        Kind::Server | Kind::Timeout => (
            424,
            format!("Request failed during generation: {}", detail(error)),
            "generation",
        ),
    };
    (
        status,
        Json::object(vec![
            ("error", message.into()),
            ("error_type", kind_name.into()),
        ]),
    )
}

/// The mark of the envelope a refusal used.
pub(crate) fn envelope_mark(draw: &Draw) -> &'static str {
    draw.envelope.mark()
}

fn openai_family(
    draw: &mut Draw,
    kind: Kind,
    error: &LlmError,
    param: Option<&str>,
) -> (u16, Json) {
    match kind {
        Kind::RateLimit => openai_rate_limit(draw),
        // chathub-dev/chathub #126.
        Kind::Context { prompt, limit } => (
            400,
            openai_object(
                format!(
                    "This model's maximum context length is {limit} tokens. However, your messages resulted in {prompt} tokens. Please reduce the length of the messages."
                ),
                "invalid_request_error",
                Some("messages"),
                Some("context_length_exceeded"),
            ),
        ),
        // The key shown masked, as OpenAI does (popjane/free_chatgpt_api #3).
        Kind::Auth => (
            401,
            openai_object(
                format!(
                    "Incorrect API key provided: {}. You can find your API key at https://platform.openai.com/account/api-keys.",
                    detail(error)
                ),
                "invalid_request_error",
                None,
                Some("invalid_api_key"),
            ),
        ),
        // ENVOY chat-unknown-model.yaml.
        Kind::ModelNotFound => (
            404,
            openai_object(
                format!(
                    "The model `{}` does not exist or you do not have access to it.",
                    detail(error)
                ),
                "invalid_request_error",
                None,
                Some("model_not_found"),
            ),
        ),
        Kind::Route => (
            404,
            openai_object(
                format!("Invalid URL ({})", detail(error)),
                "invalid_request_error",
                None,
                None,
            ),
        ),
        // ENVOY chat-bad-request.yaml: the parameter named in `param`.
        Kind::BadRequest => (
            400,
            openai_object(detail(error), "invalid_request_error", param, None),
        ),
        Kind::Overloaded => openai_overloaded(draw),
        Kind::Server | Kind::Timeout => openai_server_fault(draw, kind == Kind::Timeout),
    }
}

/// OpenAI's 429, on requests or tokens per minute (message and codes:
/// BuilderIO/micro-agent #86, TheR1D/shell_gpt #653).
fn openai_rate_limit(draw: &mut Draw) -> (u16, Json) {
    let model = draw.model.clone();
    let org = ids::alnum(&mut draw.rng, 24);
    let (unit, used) = if draw.rng.bool_with(0.5) {
        (
            "requests",
            "requests per min (RPM): Limit 500, Used 500, Requested 1",
        )
    } else {
        (
            "tokens",
            "tokens per min (TPM): Limit 30000, Used 29937, Requested 385",
        )
    };
    let message = format!(
        "Rate limit reached for {model} in organization org-{org} on {used}. Please try again in 644ms. Visit https://platform.openai.com/account/rate-limits to learn more."
    );
    (
        429,
        openai_object(message, unit, None, Some("rate_limit_exceeded")),
    )
}

/// OpenAI's 503 for an overloaded model, with a request id to quote
/// (transitive-bullshit/agentic #313).
fn openai_overloaded(draw: &mut Draw) -> (u16, Json) {
    let message = format!(
        "That model is currently overloaded with other requests. You can retry your request, or contact us through our help center at help.openai.com if the error persists. (Please include the request ID {} in your message.)",
        ids::hex(&mut draw.rng, 32)
    );
    (503, openai_object(message, "server_error", None, None))
}

/// OpenAI's failure (500) or timeout (504, `timeout`), with a request id to quote
/// (openai/openai-cua-sample-app #54).
fn openai_server_fault(draw: &mut Draw, timeout: bool) -> (u16, Json) {
    let message = format!(
        "The server had an error processing your request. Sorry about that! You can retry your request, or contact us through our help center at help.openai.com if you keep seeing this error. (Please include the request ID req_{} in your email.)",
        ids::hex(&mut draw.rng, 32)
    );
    let status = if timeout { 504 } else { 500 };
    (status, openai_object(message, "server_error", None, None))
}

fn deepseek_object(message: String, kind: &str) -> Json {
    openai_object(message, kind, None, Some("invalid_request_error"))
}

/// DeepSeek: OpenAI's keys with `code: "invalid_request_error"` (NoFxAiOS/nofx #1278,
/// deepseek-ai/DeepSeek-R1 #82). Its 429 and 5xx bodies were never captured: the
/// messages are the titles on DS-DOCS error_codes.
fn deepseek(kind: Kind, error: &LlmError, param: Option<&str>) -> (u16, Json) {
    match kind {
        Kind::Context { prompt, limit } => (
            400,
            deepseek_object(
                format!(
                    "This model's maximum context length is {limit} tokens. However, you requested {prompt} tokens ({prompt} in the messages, 0 in the completion). Please reduce the length of the messages or completion."
                ),
                "invalid_request_error",
            ),
        ),
        Kind::Auth => (
            401,
            deepseek_object(
                format!(
                    "Authentication Fails, Your api key: {} is invalid",
                    detail(error)
                ),
                "authentication_error",
            ),
        ),
        Kind::RateLimit => (
            429,
            deepseek_object("Rate Limit Reached".into(), "rate_limit_error"),
        ),
        Kind::Overloaded => (
            503,
            deepseek_object("Server Overloaded".into(), "server_error"),
        ),
        Kind::Server | Kind::Timeout => {
            (500, deepseek_object("Server Error".into(), "server_error"))
        }
        Kind::ModelNotFound => (
            400,
            deepseek_object(
                format!("The model `{}` does not exist", detail(error)),
                "invalid_request_error",
            ),
        ),
        Kind::Route => (404, deepseek_object(detail(error), "invalid_request_error")),
        Kind::BadRequest => {
            let mut body = deepseek_object(detail(error), "invalid_request_error");
            if let (Some(param), Json::Object(fields)) = (param, &mut body)
                && let Some((_, Json::Object(inner))) = fields.first_mut()
                && let Some(slot) = inner.iter_mut().find(|(k, _)| *k == "param")
            {
                slot.1 = param.into();
            }
            (400, body)
        }
    }
}

/// DashScope compatible mode: `{"error":{code,message,param,type},"id","request_id"}`
/// (agentscope-ai/QwenPaw #6255, 666ghj/BettaFish #449). 429 and 5xx codes and texts
/// from ALI-DOCS error-code (their compatible-mode bytes were never captured).
fn dashscope(draw: &mut Draw, kind: Kind, error: &LlmError) -> (u16, Json) {
    let request_id = ids::uuid(&mut draw.rng);
    let (status, code, message, kind_name) = match kind {
        Kind::Context { limit, .. } => (
            400,
            "invalid_parameter_error",
            format!(
                "<400> InternalError.Algo.InvalidParameter: Range of input length should be [1, {limit}]"
            ),
            "invalid_request_error",
        ),
        Kind::RateLimit => (
            429,
            "Throttling.RateQuota",
            "Requests rate limit exceeded, please try again later.".to_owned(),
            "Throttling.RateQuota",
        ),
        Kind::Auth => (
            401,
            "invalid_api_key",
            "Incorrect API key provided. ".to_owned(),
            "invalid_request_error",
        ),
        Kind::ModelNotFound => (
            404,
            "model_not_found",
            format!(
                "The model `{}` does not exist or you do not have access to it.",
                detail(error)
            ),
            "invalid_request_error",
        ),
        Kind::BadRequest | Kind::Route => (
            400,
            "invalid_parameter_error",
            detail(error),
            "invalid_request_error",
        ),
        Kind::Overloaded | Kind::Server | Kind::Timeout => (
            500,
            "InternalError",
            "An internal error has occured, please try again later or contact service support."
                .to_owned(),
            "internal_error",
        ),
    };
    let body = Json::object(vec![
        (
            "error",
            Json::object(vec![
                ("code", code.into()),
                ("message", message.into()),
                ("param", Json::null()),
                ("type", kind_name.into()),
            ]),
        ),
        ("id", format!("chatcmpl-{request_id}").into()),
        ("request_id", request_id.into()),
    ]);
    (status, body)
}

/// GLM: `{"error":{"code":"<number as text>","message"}}` (kaitranntt/ccs #402,
/// fuzhengwei/chatglm-sdk-java #8; codes on ZHIPU-DOCS api-code).
fn glm(kind: Kind, error: &LlmError) -> (u16, Json) {
    let (status, code, message) = match kind {
        Kind::RateLimit => (429, "1302", "High concurrency usage of this API, please reduce concurrency or contact customer service to increase limits".to_owned()),
        Kind::Context { .. } => (400, "1261", "Prompt exceeds max length".to_owned()),
        Kind::Auth => (401, "1000", "身份验证失败。".to_owned()),
        Kind::ModelNotFound => (400, "1211", "模型不存在，请检查模型代码。".to_owned()),
        Kind::BadRequest | Kind::Route => (400, "1210", "API 调用参数有误，请检查文档。".to_owned()),
        Kind::Overloaded => (429, "1305", "该 API 已触发流量限制".to_owned()),
        Kind::Server | Kind::Timeout => (500, "500", format!("Internal Error: {}", detail(error))),
    };
    (
        status,
        Json::object(vec![(
            "error",
            Json::object(vec![("code", code.into()), ("message", message.into())]),
        )]),
    )
}

/// OpenRouter: `{"error":{"message","code":<status>,"metadata"}}` (OR-DOCS
/// errors-and-debugging; Aider-AI/aider #3721 for the context text).
fn openrouter(kind: Kind, error: &LlmError) -> (u16, Json) {
    let (status, message, metadata) = match kind {
        Kind::RateLimit => (
            429,
            "Rate limit exceeded".to_owned(),
            json!({"error_type": "rate_limit_exceeded", "provider_code": "rate_limited"}),
        ),
        Kind::Context { prompt, limit } => (
            400,
            format!(
                "This endpoint's maximum context length is {limit} tokens. However, you requested about {prompt} tokens ({prompt} of text input, 0 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically."
            ),
            json!({"provider_name": "Umi"}),
        ),
        Kind::Auth => (
            401,
            "No auth credentials found".to_owned(),
            serde_json::Value::Null,
        ),
        Kind::ModelNotFound => (
            404,
            format!("No endpoints found for {}.", detail(error)),
            serde_json::Value::Null,
        ),
        Kind::BadRequest | Kind::Route => (400, detail(error), serde_json::Value::Null),
        Kind::Overloaded | Kind::Server | Kind::Timeout => (
            502,
            "Provider returned error".to_owned(),
            json!({"provider_name": "Umi", "raw": detail(error)}),
        ),
    };
    let mut inner = Json::object(vec![
        ("message", message.into()),
        ("code", u32::from(status).into()),
    ]);
    if !metadata.is_null() {
        inner.push("metadata", metadata);
    }
    (status, Json::object(vec![("error", inner)]))
}

/// vLLM: numeric `code`, flat up to 0.10.0 and nested after (VLLM serving_engine.py
/// @7ded96b3, protocol.py @0052bed3; vllm-project/vllm #12886). Its context messages
/// changed across versions; one is drawn. No 429 of its own: a refusal it never sends
/// becomes its internal error.
fn vllm(draw: &mut Draw, kind: Kind, error: &LlmError, param: Option<&str>) -> (u16, Json) {
    let (status, type_name, message) = match kind {
        Kind::Context { prompt, limit } => {
            let message = match draw.rng.below(3) {
                0 => format!(
                    "This model's maximum context length is {limit} tokens. However, you requested {prompt} tokens ({prompt} in the messages, 0 in the completion). Please reduce the length of the messages or completion."
                ),
                1 => format!(
                    "This model's maximum context length is {limit} tokens. However, your request has {prompt} input tokens. Please reduce the length of the input messages."
                ),
                _ => format!(
                    "This model's maximum context length is {limit} tokens. However, you requested {prompt} tokens in the messages, Please reduce the length of the messages."
                ),
            };
            (400, "BadRequestError", message)
        }
        Kind::ModelNotFound => (
            404,
            "NotFoundError",
            format!("The model `{}` does not exist.", detail(error)),
        ),
        Kind::Route => (404, "NotFoundError", detail(error)),
        Kind::BadRequest => (400, "BadRequestError", detail(error)),
        Kind::Auth => return (401, json!({"error": "Unauthorized"}).into()),
        Kind::RateLimit | Kind::Overloaded | Kind::Server | Kind::Timeout => (
            500,
            "InternalServerError",
            "Internal server error".to_owned(),
        ),
    };
    let fields = vec![
        ("message", Json::from(message)),
        ("type", type_name.into()),
        ("param", param.map(str::to_owned).into()),
        ("code", u32::from(status).into()),
    ];
    let body = if draw.envelope == Envelope::VllmFlat {
        let mut flat = vec![("object", Json::from("error"))];
        flat.extend(fields);
        Json::object(flat)
    } else {
        Json::object(vec![("error", Json::object(fields))])
    };
    (status, body)
}

/// llama.cpp: `{"error":{"code":<status>,"message","type"}}`, context overflow with its
/// counts (LLAMA server-common.cpp @006639c3, server-task.cpp @00efb3e1). No 429: a busy
/// server queues, and answers 503 only while loading (server-http.cpp @aa6192d3).
fn llama_cpp(draw: &mut Draw, kind: Kind, error: &LlmError, _rate_limits: bool) -> (u16, Json) {
    let (status, type_name, message, counts) = match kind {
        Kind::Context { prompt, limit } => {
            let message = if draw.rng.bool_with(0.5) {
                "the request exceeds the available context size, try increasing it".to_owned()
            } else {
                format!(
                    "request ({prompt} tokens) exceeds the available context size ({limit} tokens), try increasing it"
                )
            };
            (
                400,
                "exceed_context_size_error",
                message,
                Some((prompt, limit)),
            )
        }
        Kind::Auth => (
            401,
            "authentication_error",
            "Invalid API Key".to_owned(),
            None,
        ),
        Kind::Route | Kind::ModelNotFound => {
            (404, "not_found_error", "File Not Found".to_owned(), None)
        }
        // A malformed request is an exception in its handler: HTTP 500 (server.cpp).
        Kind::BadRequest => (500, "server_error", detail(error), None),
        Kind::RateLimit | Kind::Overloaded => {
            (503, "unavailable_error", "Loading model".to_owned(), None)
        }
        Kind::Server | Kind::Timeout => (500, "server_error", detail(error), None),
    };
    let mut inner = Json::object(vec![
        ("code", u32::from(status).into()),
        ("message", message.into()),
        ("type", type_name.into()),
    ]);
    if let Some((prompt, limit)) = counts {
        inner.push("n_prompt_tokens", prompt);
        inner.push("n_ctx", limit);
    }
    (status, Json::object(vec![("error", inner)]))
}

/// Ollama's /v1: OpenAI's keys, `code: null`, `type` by status (OLLAMA openai.go
/// L21-30, L225-237); the texts are the native server's (routes.go, sched.go).
fn ollama_v1(kind: Kind, error: &LlmError) -> (u16, Json) {
    let (status, message) = match kind {
        Kind::ModelNotFound => (404, format!("model '{}' not found", detail(error))),
        Kind::Route => (404, "404 page not found".to_owned()),
        Kind::Context { .. } => (
            400,
            "the input length exceeds the context length".to_owned(),
        ),
        Kind::BadRequest | Kind::Auth => (400, detail(error)),
        Kind::RateLimit | Kind::Overloaded => (
            503,
            "server busy, please try again.  maximum pending requests exceeded".to_owned(),
        ),
        Kind::Server | Kind::Timeout => (
            500,
            format!(
                "an error was encountered while running the model: {}",
                detail(error)
            ),
        ),
    };
    let kind_name = match status {
        400 => "invalid_request_error",
        404 => "not_found_error",
        _ => "api_error",
    };
    (status, openai_object(message, kind_name, None, None))
}
