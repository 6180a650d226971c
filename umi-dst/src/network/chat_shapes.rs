//! The shapes an OpenAI-compatible chat-completions server can give a response, one enum
//! per thing that varies, and [`ChatShapes`]: the ones a provider really sends.
//!
//! Each variant has a coverage-mark name (`wire.shape.<knob>.<variant>`): a sweep that
//! hits every mark has produced, and the clients have handled, every shape. The tables
//! that pick variants per provider, with the public source of each, are in
//! [`super::profile`]. Shapes every format shares are in
//! [`crate::network::shapes`].

use crate::network::shapes::{HeaderSet, KeepAlive, RetryAfterForm, ShapeMark, marks};

/// How the completion id looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdStyle {
    /// `chatcmpl-` and 29 letters or digits (OpenAI, Azure).
    OpenAi,
    /// A bare UUID (DeepSeek).
    Uuid,
    /// `chatcmpl-` and a UUID (DashScope).
    ChatcmplUuid,
    /// A timestamp and hex (`20260313050247` + 16 hex: GLM).
    Timestamp,
    /// `gen-<unix seconds>-<20 letters>` (OpenRouter).
    Generation,
    /// `chatcmpl-` and 32 hex (vLLM).
    ChatcmplHex,
    /// `chatcmpl-` and 32 letters or digits (llama.cpp).
    ChatcmplAlnum32,
    /// `chatcmpl-` and a number below 999 (Ollama's /v1).
    ChatcmplNumber,
    /// `""` (TGI 2.0).
    Empty,
    /// `chat` and a UUID (Xinference).
    ChatUuid,
}

/// How events are framed on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// `data: <json>\n\n`, then `data: [DONE]\n\n`.
    Standard,
    /// `data: <json>\r\n\r\n`, then `data: [DONE]\r\n\r\n` (sse-starlette's default
    /// separator: Xinference, llama-cpp-python up to 0.2.43, text-generation-webui).
    Crlf,
    /// `data:<json>\n\n` with no space, and no `[DONE]` (axum 0.6: TGI 1.4 to 2.0).
    NoSpaceNoDone,
}

/// How finish reasons are spelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FinishNames {
    /// OpenAI's names.
    OpenAi,
    /// TGI's own: `eos_token`, `length`, `stop_sequence` (TGI 2.0; `FinishReason`'s
    /// `Display`).
    Tgi,
}

/// Which top-level fields a chunk carries, in which order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// `id, object, created, model, system_fingerprint, choices[index, delta, logprobs,
    /// finish_reason]` (OpenAI in 2024).
    OpenAi2024,
    /// As 2024, plus `service_tier` after `model` and `obfuscation` last (OpenAI 2025+).
    OpenAiTiered,
    /// As tiered, without `logprobs` in the choice (OpenAI's reasoning models).
    OpenAiTieredNoLogprobs,
    /// Every key sorted, `content_filter_results` in each choice, and a first chunk with
    /// `prompt_filter_results` and empty `id`/`model`/`object` (Azure).
    Azure,
    /// `id, object, created, model, system_fingerprint, choices[..]` (DeepSeek).
    DeepSeek,
    /// `choices` first, `id` last (DashScope compatible mode).
    DashScope,
    /// `id, created, object, model, choices[index, (finish_reason), delta]`, no finish
    /// key until the end (GLM).
    Glm,
    /// As GLM without `object` (GLM 4.6 in 2025).
    GlmNoObject,
    /// `id, object, created, model, provider, choices[index, delta, finish_reason,
    /// native_finish_reason]` (OpenRouter).
    OpenRouter,
    /// `id, object, created, model, choices[index, delta, logprobs, finish_reason]`
    /// (vLLM; `stop_reason` on the finish chunk).
    Vllm,
    /// `choices[finish_reason, index, delta], created, id, model, system_fingerprint,
    /// object` (llama.cpp's `ordered_json`).
    LlamaCpp,
    /// `id, object, created, model, system_fingerprint, choices[index, delta,
    /// finish_reason]` (Ollama's /v1).
    OllamaV1,
    /// `id: "", object: "text_completion", created, model, system_fingerprint,
    /// choices[index, delta, logprobs, finish_reason]` (TGI 2.0).
    Tgi,
    /// `id: "chat…", model, created, object, choices[index, delta, logprobs,
    /// finish_reason], usage` (Xinference).
    Xinference,
}

/// The `system_fingerprint` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fingerprint {
    /// No key.
    Absent,
    /// `null`.
    Null,
    /// `fp_` and 10 hex.
    Fp,
    /// `fp_`, 10 hex, `_prod0820_fp8_kvcache` (DeepSeek).
    FpDeepSeek,
    /// 32 hex (DeepSeek v4).
    Hex32,
    /// `""` (OpenRouter, passing through an upstream's empty one).
    Empty,
    /// `b<build>-<commit>` (llama.cpp).
    Build,
    /// `fp_ollama`.
    Ollama,
    /// `<version>-native` (TGI built from source).
    TgiNative,
}

/// The first chunk of an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opener {
    /// `{"role":"assistant","content":"","refusal":null}` (OpenAI).
    RoleContentRefusal,
    /// `{"role":"assistant","content":""}` (DeepSeek, DashScope, vLLM).
    RoleContentEmpty,
    /// `{"role":"assistant","content":null}` (llama.cpp).
    RoleContentNull,
    /// `{"role":"assistant"}` (older llama.cpp).
    RoleOnly,
    /// No opener: `role` on every text chunk (GLM, OpenRouter, Ollama before 0.32.6).
    RoleEveryChunk,
    /// No opener: `role` on the first content chunk only (Ollama 0.32.6+).
    RoleOnFirst,
    /// No opener: the first content chunk says `{"content": ..., "role": "assistant"}`,
    /// role after content (Xinference's `ensure_role`).
    ContentThenRole,
}

/// The chunk that carries the finish reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FinishShape {
    /// `"delta":{}` (OpenAI, vLLM, llama.cpp, Ollama 0.32.6+).
    EmptyDelta,
    /// `"delta":{"content":""}` (DeepSeek, DashScope).
    EmptyContent,
    /// `"delta":{"role":"assistant","content":""}` (GLM, OpenRouter, Ollama before 0.32.6).
    RoleEmptyContent,
    /// The end-of-sequence token's text as content, `"</s>"` (TGI 2.0.0 and 2.0.1).
    EosText,
}

/// Where usage goes in a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UsageShape {
    /// Only when `stream_options.include_usage` was asked: a last chunk with `choices: []`;
    /// `null_on_chunks`: every other chunk then says `"usage": null`.
    SeparateWhenAsked {
        /// Whether ordinary chunks carry `"usage": null`.
        null_on_chunks: bool,
    },
    /// Only when asked, on the finish chunk itself (DeepSeek, GLM).
    OnFinishWhenAsked {
        /// Whether ordinary chunks carry `"usage": null`.
        null_on_chunks: bool,
    },
    /// Always; a chunk after the finish with one empty choice, finish `null` (OpenRouter,
    /// Oct 2025).
    TrailingChoice,
    /// Always; a chunk after the finish with `choices: []` (OpenRouter, Mar 2026).
    TrailingBare,
    /// Always; the finish chunk repeated with usage (OpenRouter, Apr 2026).
    RepeatedFinish,
    /// Always, on the finish chunk, with `timings` (older llama.cpp).
    AlwaysOnFinish,
    /// `"usage": null` on every chunk, usage on the finish chunk always, and a
    /// `choices: []` chunk too when asked (Xinference).
    NullsThenOnFinish,
    /// Never (TGI 2.0).
    Never,
}

/// The fields of a usage object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UsageDetails {
    /// `prompt_tokens, completion_tokens, total_tokens`.
    Plain,
    /// vLLM's order: `prompt_tokens, total_tokens, completion_tokens`.
    Vllm,
    /// Plus `prompt_tokens_details.cached_tokens` and
    /// `completion_tokens_details.reasoning_tokens` (OpenAI since late 2024, GLM, DashScope).
    Details,
    /// Plus DeepSeek's `prompt_cache_hit_tokens` / `prompt_cache_miss_tokens`.
    DeepSeek,
    /// Plus OpenRouter's `cost`, `is_byok` and `cost_details`.
    OpenRouter,
}

/// How tool calls stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolShape {
    /// A header delta (`index, id, type, function{name, arguments:""}`), then argument
    /// fragments with only `index` and `function.arguments` (OpenAI, DeepSeek).
    Streamed,
    /// As `Streamed`, with no `arguments` key in the header (vLLM, llama.cpp).
    StreamedBareHeader,
    /// Continuations carry `"id":""` and `"type":"function"`, and one more empty
    /// fragment comes in a choice with no `finish_reason` (DashScope).
    EmptyIdContinuation,
    /// Each call whole in one chunk (GLM, Ollama's /v1).
    Whole,
    /// A header delta, then all the arguments in one delta (OpenRouter re-chunking a
    /// whole-call upstream).
    Rechunked,
    /// Some deltas carry two entries for the same index (vLLM with speculative
    /// decoding).
    DuplicateIndex,
}

/// Where reasoning text goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReasoningField {
    /// The provider streams none.
    None,
    /// `reasoning_content` (GLM, llama.cpp, older vLLM).
    ReasoningContent,
    /// `reasoning_content`, with `"content": null` beside reasoning and
    /// `"reasoning_content": null` beside the answer (DeepSeek, DashScope).
    ReasoningContentPaired,
    /// `reasoning` (newer vLLM).
    Reasoning,
    /// Both, with the same text (vLLM between Nov 2025 and Jan 2026).
    Both,
    /// `reasoning` and `reasoning_details` (OpenRouter).
    OpenRouter,
    /// `reasoning`, in chunks of its own (Ollama's /v1).
    Separate,
}

/// How an error that happens after the 200 goes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamErrorShape {
    /// `data: {"error": {...}}` in the error envelope, then `data: [DONE]`.
    DataThenDone,
    /// As `DataThenDone`, written by Python's `json.dumps` (`{"error": {...}}`: vLLM).
    DataPythonThenDone,
    /// `data: {"error":{...}}`, then the connection closes (llama.cpp).
    DataThenClose,
    /// An SSE field named `error` (`error: {...}`), then `data: [DONE]` (older
    /// llama.cpp).
    ErrorField,
    /// A chunk with a top-level `error` and `finish_reason: "error"` (OpenRouter).
    ErrorChunk,
    /// One stray empty chunk, then the connection closes (Ollama's /v1).
    StrayChunk,
    /// `data: {"error": "<text>"}` by `json.dumps`, then the connection closes
    /// (Xinference).
    PlainTextThenClose,
    /// `data:{"error":"<text>","error_type":"<kind>"}`, then the connection closes (TGI).
    TypedTextThenClose,
    /// The connection drops: for providers whose in-stream error was never captured
    /// (DeepSeek, DashScope, GLM), the one failure every server can have.
    Reset,
}

/// The error envelope of HTTP errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Envelope {
    /// `{"error":{"message","type","param","code"}}`, codes as strings.
    OpenAi,
    /// `{"error":{"code":"429","message"}}`.
    Azure,
    /// OpenAI's keys, `code` usually `"invalid_request_error"`.
    DeepSeek,
    /// `{"error":{"code","message","param","type"},"id","request_id"}`.
    DashScope,
    /// `{"error":{"code":"1302","message"}}`.
    Glm,
    /// `{"error":{"message","code":429,"metadata"}}`, code a number.
    OpenRouter,
    /// `{"object":"error","message","type","param","code":400}` (vLLM up to 0.10.0).
    VllmFlat,
    /// `{"error":{"message","type","param","code":400}}` (vLLM 0.10.1+).
    VllmNested,
    /// `{"error":{"code":400,"message","type"}}` (llama.cpp).
    LlamaCpp,
    /// `{"error":{"message","type","param":null,"code":null}}` (Ollama's /v1).
    OllamaV1,
    /// `{"detail": "<text>"}` (FastAPI's `HTTPException`: Xinference).
    FastApi,
    /// `{"error":"<text>","error_type":"<kind>"}` (TGI).
    Tgi,
}

/// What a provider does when its content filter stops an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ContentFilterShape {
    /// `finish_reason: "content_filter"`.
    FinishReason,
    /// `finish_reason: "sensitive"` (GLM).
    Sensitive,
    /// No filter of its own: reported in OpenAI's spelling.
    OpenAiSpelling,
}

/// Everything one provider may send, each with its allowed variants (one is drawn per
/// response where there are several).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChatShapes {
    /// Completion ids.
    pub id: IdStyle,
    /// Chunk layouts.
    pub layouts: &'static [Layout],
    /// Fingerprints.
    pub fingerprints: &'static [Fingerprint],
    /// First chunks of a text answer.
    pub openers: &'static [Opener],
    /// Finish chunks.
    pub finishes: &'static [FinishShape],
    /// Usage placement.
    pub usages: &'static [UsageShape],
    /// Usage fields.
    pub usage_details: UsageDetails,
    /// Tool-call streaming.
    pub tools: &'static [ToolShape],
    /// Reasoning fields (for reasoning models).
    pub reasoning: &'static [ReasoningField],
    /// Framings (one per server version).
    pub framings: &'static [Framing],
    /// The comment the server sends while the model thinks, if any.
    pub keep_alive: Option<KeepAlive>,
    /// How finish reasons are spelled.
    pub finish_names: FinishNames,
    /// Whether the server ignores `tools` unless `tool_choice` is given (TGI 2.0).
    pub tools_need_choice: bool,
    /// Whether a streamed request's refusals come inside a 200 stream (TGI 2.0 sends
    /// validation and overload errors so).
    pub refuses_in_stream: bool,
    /// In-stream errors.
    pub stream_errors: &'static [StreamErrorShape],
    /// HTTP error envelopes.
    pub envelopes: &'static [Envelope],
    /// Retry-After on 429 (empty: the server never sends 429).
    pub retry_after: &'static [RetryAfterForm],
    /// Headers.
    pub headers: HeaderSet,
    /// The streaming content type.
    pub stream_content_type: &'static str,
    /// The JSON content type.
    pub json_content_type: &'static str,
    /// The content filter.
    pub content_filter: ContentFilterShape,
    /// Whether a CDN or proxy in front of it answers some failures with an HTML page.
    pub proxy_pages: bool,
    /// Whether the server refuses a request naming a model it does not serve (`false`:
    /// it serves its one loaded model whatever the request names).
    pub checks_model: bool,
    /// Whether the body of its 404 for a model it does not serve has a public source (a
    /// sweep asks for a retired model only there).
    pub model_not_found_sourced: bool,
}

marks!(Layout {
    Layout::OpenAi2024 => "layout.openai_2024",
    Layout::OpenAiTiered => "layout.openai_tiered",
    Layout::OpenAiTieredNoLogprobs => "layout.openai_tiered_no_logprobs",
    Layout::Azure => "layout.azure",
    Layout::DeepSeek => "layout.deepseek",
    Layout::DashScope => "layout.dashscope",
    Layout::Glm => "layout.glm",
    Layout::GlmNoObject => "layout.glm_no_object",
    Layout::OpenRouter => "layout.openrouter",
    Layout::Vllm => "layout.vllm",
    Layout::LlamaCpp => "layout.llama_cpp",
    Layout::OllamaV1 => "layout.ollama_v1",
    Layout::Tgi => "layout.tgi",
    Layout::Xinference => "layout.xinference",
});

marks!(Framing {
    Framing::Standard => "framing.standard",
    Framing::Crlf => "framing.crlf",
    Framing::NoSpaceNoDone => "framing.no_space_no_done",
});

marks!(Fingerprint {
    Fingerprint::Absent => "fingerprint.absent",
    Fingerprint::Null => "fingerprint.null",
    Fingerprint::Fp => "fingerprint.fp",
    Fingerprint::FpDeepSeek => "fingerprint.fp_deepseek",
    Fingerprint::Hex32 => "fingerprint.hex32",
    Fingerprint::Empty => "fingerprint.empty",
    Fingerprint::Build => "fingerprint.build",
    Fingerprint::Ollama => "fingerprint.ollama",
    Fingerprint::TgiNative => "fingerprint.tgi_native",
});

marks!(Opener {
    Opener::RoleContentRefusal => "opener.role_content_refusal",
    Opener::RoleContentEmpty => "opener.role_content_empty",
    Opener::RoleContentNull => "opener.role_content_null",
    Opener::RoleOnly => "opener.role_only",
    Opener::RoleEveryChunk => "opener.role_every_chunk",
    Opener::RoleOnFirst => "opener.role_on_first",
    Opener::ContentThenRole => "opener.content_then_role",
});

marks!(FinishShape {
    FinishShape::EmptyDelta => "finish.empty_delta",
    FinishShape::EmptyContent => "finish.empty_content",
    FinishShape::RoleEmptyContent => "finish.role_empty_content",
    FinishShape::EosText => "finish.eos_text",
});

marks!(UsageShape {
    UsageShape::SeparateWhenAsked { null_on_chunks: true } => "usage.separate_nulls",
    UsageShape::SeparateWhenAsked { null_on_chunks: false } => "usage.separate",
    UsageShape::OnFinishWhenAsked { null_on_chunks: true } => "usage.on_finish_nulls",
    UsageShape::OnFinishWhenAsked { null_on_chunks: false } => "usage.on_finish",
    UsageShape::TrailingChoice => "usage.trailing_choice",
    UsageShape::TrailingBare => "usage.trailing_bare",
    UsageShape::RepeatedFinish => "usage.repeated_finish",
    UsageShape::AlwaysOnFinish => "usage.always_on_finish",
    UsageShape::NullsThenOnFinish => "usage.nulls_then_on_finish",
    UsageShape::Never => "usage.never",
});

marks!(ToolShape {
    ToolShape::Streamed => "tools.streamed",
    ToolShape::StreamedBareHeader => "tools.streamed_bare_header",
    ToolShape::EmptyIdContinuation => "tools.empty_id_continuation",
    ToolShape::Whole => "tools.whole",
    ToolShape::Rechunked => "tools.rechunked",
    ToolShape::DuplicateIndex => "tools.duplicate_index",
});

marks!(ReasoningField {
    ReasoningField::None => "reasoning.none",
    ReasoningField::ReasoningContent => "reasoning.reasoning_content",
    ReasoningField::ReasoningContentPaired => "reasoning.reasoning_content_paired",
    ReasoningField::Reasoning => "reasoning.reasoning",
    ReasoningField::Both => "reasoning.both",
    ReasoningField::OpenRouter => "reasoning.openrouter",
    ReasoningField::Separate => "reasoning.separate",
});

marks!(StreamErrorShape {
    StreamErrorShape::DataThenDone => "stream_error.data_then_done",
    StreamErrorShape::DataPythonThenDone => "stream_error.data_python_then_done",
    StreamErrorShape::DataThenClose => "stream_error.data_then_close",
    StreamErrorShape::ErrorField => "stream_error.error_field",
    StreamErrorShape::ErrorChunk => "stream_error.error_chunk",
    StreamErrorShape::StrayChunk => "stream_error.stray_chunk",
    StreamErrorShape::PlainTextThenClose => "stream_error.plain_text_then_close",
    StreamErrorShape::TypedTextThenClose => "stream_error.typed_text_then_close",
    StreamErrorShape::Reset => "stream_error.reset",
});

marks!(Envelope {
    Envelope::OpenAi => "envelope.openai",
    Envelope::Azure => "envelope.azure",
    Envelope::DeepSeek => "envelope.deepseek",
    Envelope::DashScope => "envelope.dashscope",
    Envelope::Glm => "envelope.glm",
    Envelope::OpenRouter => "envelope.openrouter",
    Envelope::VllmFlat => "envelope.vllm_flat",
    Envelope::VllmNested => "envelope.vllm_nested",
    Envelope::LlamaCpp => "envelope.llama_cpp",
    Envelope::OllamaV1 => "envelope.ollama_v1",
    Envelope::FastApi => "envelope.fastapi",
    Envelope::Tgi => "envelope.tgi",
});

impl ChatShapes {
    /// Every mark this provider's shapes can hit when the knob is exercised: layouts,
    /// fingerprints, openers, finishes, usages (when usage is asked), tool shapes,
    /// reasoning fields, in-stream errors, envelopes and Retry-After forms.
    pub(crate) fn marks(&self) -> Vec<&'static str> {
        let mut marks: Vec<&'static str> = Vec::new();
        marks.extend(self.layouts.iter().map(|s| s.mark()));
        marks.extend(self.framings.iter().map(|s| s.mark()));
        marks.extend(self.fingerprints.iter().map(|s| s.mark()));
        marks.extend(self.openers.iter().map(|s| s.mark()));
        marks.extend(self.finishes.iter().map(|s| s.mark()));
        marks.extend(self.usages.iter().map(|s| s.mark()));
        marks.extend(self.tools.iter().map(|s| s.mark()));
        marks.extend(
            self.reasoning
                .iter()
                .filter(|s| **s != ReasoningField::None)
                .map(|s| s.mark()),
        );
        marks.extend(self.stream_errors.iter().map(|s| s.mark()));
        marks.extend(self.envelopes.iter().map(|s| s.mark()));
        marks.extend(self.retry_after.iter().map(|s| s.mark()));
        marks.sort_unstable();
        marks.dedup();
        marks
    }
}
