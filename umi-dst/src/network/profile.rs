//! Provider profiles: for each provider, the shapes its server really sends, with the
//! public source of each (docs, an SDK's recorded fixtures, the server's own code, a
//! capture quoted in an issue thread). SimNetwork draws among a profile's shapes per
//! response, so a sweep meets every one; it never sends a shape the profile does not
//! list, and a profile never lists a shape without a source.
//!
//! ```
//! use umi_dst::network::Profile;
//! # fn doc(sim: &umi_dst::SimEnvironment) {
//! let endpoint = umi_dst::Endpoint::openai("https://api.deepseek.com/v1", sim.llm())
//!     .with_profile(Profile::DeepSeekReasoner);
//! # }
//! ```
//!
//! Sources, by short name (the commit is the snapshot read):
//!
//! | name | what |
//! | --- | --- |
//! | PY-SNAP | openai-python `.inline-snapshot/external/*.bin`, live SSE recorded Sep 2024 (openai/openai-python@9feadd82) |
//! | ENVOY | envoyproxy/ai-gateway `tests/internal/testopenai/cassettes/*.yaml`, live OpenAI (Aug 2025) and Azure (Oct 2025) sessions (@eca6ce83, @8e4b7ad4) |
//! | GOMODEL | ENTERPILOT/GoModel `tests/contract/testdata/openai/`, live OpenAI Jan 2026 (@14ba385f) |
//! | OPENAI-SPEC | openai/openai-openapi `openapi.yaml` (@f85dbe22) |
//! | AZ-DOC | MicrosoftDocs/azure-ai-docs `articles/ai-services/openai/concepts/content-filter.md` and `provisioned-throughput.md` |
//! | AZ-LOBE | lobehub/lobe-chat `src/libs/agent-runtime/azureai/index.test.ts`, an Azure stream copied from a live response (2025-03) |
//! | VERCEL | vercel/ai `packages/{deepseek,alibaba}/src/**/__fixtures__/*.chunks.txt`, live captures (@4d04f431, @3d37805e) |
//! | FANTASY | charmbracelet/fantasy `providertests/testdata/**.yaml`, live VCR recordings (GLM @caf105e7 and @71f727f0; OpenRouter @76e272f2, @7ebd9b5a, @43a2aa51) |
//! | OR-DOCS | OpenRouterTeam/docs `api_reference/{streaming,errors-and-debugging,limits}.mdx` (@c26125a5) |
//! | DS-DOCS | api-docs.deepseek.com `quick_start/rate_limit`, `quick_start/error_codes` |
//! | ZHIPU-DOCS | docs.bigmodel.cn API reference and `api/api-code` |
//! | ALI-DOCS | alibabacloud.com/help/en/model-studio `stream` and `error-code` |
//! | VLLM | vllm-project/vllm `vllm/entrypoints/openai/{serving_chat,serving_engine,protocol}.py` (@99c5632f, @7ded96b3, @0052bed3) |
//! | LLAMA | ggml-org/llama.cpp `tools/server/{server-task,server-common,server-http}.cpp`, `examples/server/server.cpp` (@00efb3e1, @006639c3, @aa6192d3, @61e588ab) |
//! | OLLAMA | ollama/ollama `openai/openai.go`, `middleware/openai.go`, `server/routes.go`, `api/types.go` (@fb307609; v0.12.0 @9f3a37fd; v0.32.6 @c82ebbd5) |
//! | TGI | huggingface/text-generation-inference `router/src/{lib,server}.rs` at v2.0.0 (@c38a7d7d), v2.0.1 (@2d0a7173) to v2.0.4; axum 0.6.20 `axum/src/response/sse.rs` |
//! | GEMINI-REST | ai.google.dev/api/generate-content, /api/tokens, /api/models (the REST reference: request and response fields, `alt=sse`, `countTokens`, `Model`) |
//! | GEMINI-TROUBLE | ai.google.dev/gemini-api/docs/troubleshooting (status names and codes: INVALID_ARGUMENT 400, PERMISSION_DENIED 403, NOT_FOUND 404, RESOURCE_EXHAUSTED 429, INTERNAL 500, UNAVAILABLE 503, DEADLINE_EXCEEDED 504) |
//! | GEMINI-VERCEL | vercel/ai `packages/google/src/__fixtures__/`, live recordings: `google-text.chunks.txt` @9ce09a36, `google-reasoning.chunks.txt` @310cf86c, `google-tool-call.json` @1d7f3ec2, `google-429-retry-info.json` @52173efe |
//! | GEMINI-CAPTURES | raw bodies quoted in issue threads and tests: continuedev/continue #8516 (API_KEY_INVALID, an array-wrapped stream error), google-gemini/gemini-cli #4118 and #6678 (context overflow), #5191 (503 overloaded), #8437 and browserbase/mcp-server-browserbase #129 (429 details), lobehub/lobehub #9728; SSE events in Google's one-line spacing with `safetyRatings` (gemini-1.5) and with `responseId` and `finishMessage` (gemini-2.5) quoted in client tests |
//! | GEMINI-JSGENAI | googleapis/js-genai and google-gemini/generative-ai-js: `responseLineRE = /^data: (.*)(?:\n\n\|\r\r\|\r\n\r\n)/`, the SDKs' reader for the server's CRLF-framed events |
//! | BEDROCK-API | docs.aws.amazon.com/bedrock/latest/APIReference: `API_runtime_Converse`, `API_runtime_ConverseStream` (request, response, stream events, errors and their statuses), `ListFoundationModels`; AWS docs "Create a signed AWS API request" (SigV4); smithy.io "Amazon Event Stream Specification" |
//! | BEDROCK-CAPTURES | botocore `tests/unit/test_eventstream.py` (encoded event-stream messages); Bedrock's error messages quoted in issue threads: 2FastLabs/agent-squad #47 and aws-samples/aws-genai-llm-chatbot #220 (throttling), daisuke-awaji/moca #254 and strands-agents/harness-sdk #1663 (prompt too long), earendil-works/pi #4993 (invalid model identifier) |
//! | XINF | xorbitsai/inference `xinference/{api/restful_api.py,core/model.py,model/llm/utils.py}` (@7ecec16b); sysid/sse-starlette `sse_starlette/{event,sse}.py` (@d45e4829) |

use crate::network::chat_shapes::{
    ChatShapes, ContentFilterShape, Envelope, Fingerprint, FinishNames, FinishShape, Framing,
    IdStyle, Layout, Opener, ReasoningField, StreamErrorShape, ToolShape, UsageDetails, UsageShape,
};
use crate::network::shapes::{HeaderSet, KeepAlive, RetryAfterForm};

/// The API versions whose paths are served (`v1beta` is what the SDKs call; `v1` the
/// stable surface, GEMINI-REST).
pub(crate) const GEMINI_VERSIONS: [&str; 2] = ["/v1beta/models/", "/v1/models/"];

/// The wire format an endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum WireFormat {
    /// OpenAI chat completions (`/chat/completions`, SSE).
    OpenAiChat,
    /// Ollama's native `/api/chat` (NDJSON).
    Ollama,
    /// Anthropic's Messages API (`/v1/messages`, named SSE events).
    AnthropicMessages,
    /// OpenAI's Responses API (`/responses`, named SSE events with sequence numbers).
    OpenAiResponses,
    /// Google's Gemini API (`/v1beta/models/{model}:generateContent`, a JSON array
    /// streamed, or SSE with `?alt=sse`).
    Gemini,
    /// Amazon Bedrock's Converse API (`/model/{modelId}/converse`, SigV4-signed; a
    /// stream in `application/vnd.amazon.eventstream` binary framing).
    Bedrock,
}

impl WireFormat {
    /// The provider whose own API the format is (OpenAI's for chat completions): the
    /// profile `dst serve` serves the format as when no `--endpoint` is given, and the
    /// one a test reaches for the format alone.
    pub const fn reference_profile(self) -> Profile {
        match self {
            Self::OpenAiChat => Profile::OpenAi,
            Self::Ollama => Profile::Ollama,
            Self::AnthropicMessages => Profile::Anthropic,
            Self::OpenAiResponses => Profile::OpenAiResponses,
            Self::Gemini => Profile::Gemini,
            Self::Bedrock => Profile::Bedrock,
        }
    }
}

/// A provider whose wire shapes SimNetwork reproduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Profile {
    /// OpenAI's own API (the default for `Endpoint::openai`).
    OpenAi,
    /// Azure OpenAI.
    AzureOpenAi,
    /// DeepSeek's `deepseek-chat`.
    DeepSeekChat,
    /// DeepSeek's `deepseek-reasoner` (reasoning in `reasoning_content`).
    DeepSeekReasoner,
    /// Qwen through DashScope's compatible mode.
    DashScope,
    /// GLM (Zhipu, Z.AI).
    Glm,
    /// OpenRouter.
    OpenRouter,
    /// vLLM's OpenAI server.
    Vllm,
    /// llama.cpp's `llama-server`.
    LlamaCpp,
    /// Ollama's OpenAI compatibility (`/v1`).
    OllamaV1,
    /// Ollama's native `/api/chat` (the default for `Endpoint::ollama`).
    Ollama,
    /// HuggingFace text-generation-inference 2.0 (`data:` without a space, no `[DONE]`,
    /// its own finish reasons).
    Tgi,
    /// Xinference (sse-starlette's CRLF framing, `json.dumps` spacing).
    Xinference,
    /// Anthropic's Messages API (Claude).
    Anthropic,
    /// OpenAI's Responses API.
    OpenAiResponses,
    /// Google's Gemini API (AI Studio, generativelanguage.googleapis.com).
    Gemini,
    /// Claude on Amazon Bedrock's Converse API (`bedrock-runtime.us-east-1.amazonaws.com`;
    /// BEDROCK-API, BEDROCK-CAPTURES).
    Bedrock,
}

impl Profile {
    /// Every profile.
    pub const ALL: [Profile; 17] = [
        Profile::OpenAi,
        Profile::AzureOpenAi,
        Profile::DeepSeekChat,
        Profile::DeepSeekReasoner,
        Profile::DashScope,
        Profile::Glm,
        Profile::OpenRouter,
        Profile::Vllm,
        Profile::LlamaCpp,
        Profile::OllamaV1,
        Profile::Ollama,
        Profile::Tgi,
        Profile::Xinference,
        Profile::Anthropic,
        Profile::OpenAiResponses,
        Profile::Gemini,
        Profile::Bedrock,
    ];

    /// The profile's name (`deepseek_reasoner`), as configs and marks spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::AzureOpenAi => "azure_openai",
            Self::DeepSeekChat => "deepseek_chat",
            Self::DeepSeekReasoner => "deepseek_reasoner",
            Self::DashScope => "dashscope",
            Self::Glm => "glm",
            Self::OpenRouter => "openrouter",
            Self::Vllm => "vllm",
            Self::LlamaCpp => "llama_cpp",
            Self::OllamaV1 => "ollama_v1",
            Self::Ollama => "ollama",
            Self::Tgi => "tgi",
            Self::Xinference => "xinference",
            Self::Anthropic => "anthropic",
            Self::OpenAiResponses => "openai_responses",
            Self::Gemini => "gemini",
            Self::Bedrock => "bedrock",
        }
    }

    /// The profile named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The wire format it speaks.
    pub const fn format(self) -> WireFormat {
        match self {
            Self::Ollama => WireFormat::Ollama,
            Self::Anthropic => WireFormat::AnthropicMessages,
            Self::OpenAiResponses => WireFormat::OpenAiResponses,
            Self::Gemini => WireFormat::Gemini,
            Self::Bedrock => WireFormat::Bedrock,
            Self::OpenAi
            | Self::AzureOpenAi
            | Self::DeepSeekChat
            | Self::DeepSeekReasoner
            | Self::DashScope
            | Self::Glm
            | Self::OpenRouter
            | Self::Vllm
            | Self::LlamaCpp
            | Self::OllamaV1
            | Self::Tgi
            | Self::Xinference => WireFormat::OpenAiChat,
        }
    }

    /// Whether the provider has an embeddings API, so its simulated server answers one
    /// (OPENAI-SPEC `/embeddings`; AZ-DOC; ALI-DOCS compatible mode; ZHIPU-DOCS
    /// `/api/paas/v4/embeddings`; VLLM `serving_embedding.py`; LLAMA `/v1/embeddings`,
    /// with `--embeddings`; OLLAMA `/api/embed` and `/v1/embeddings`; XINF
    /// `restful_api.py`; GEMINI-REST `models.embedContent` and `batchEmbedContents`).
    /// DeepSeek's and Anthropic's APIs have none, TGI leaves embeddings to a separate
    /// server (TEI), and OpenRouter's is not among the sources read.
    pub const fn serves_embeddings(self) -> bool {
        match self {
            Self::OpenAi
            | Self::AzureOpenAi
            | Self::DashScope
            | Self::Glm
            | Self::Vllm
            | Self::LlamaCpp
            | Self::OllamaV1
            | Self::Ollama
            | Self::Xinference
            | Self::OpenAiResponses
            | Self::Gemini => true,
            Self::DeepSeekChat
            | Self::DeepSeekReasoner
            | Self::OpenRouter
            | Self::Tgi
            | Self::Anthropic
            | Self::Bedrock => false,
        }
    }

    /// The chat-completions shapes, for the profiles that speak that format.
    pub(crate) const fn chat_shapes(self) -> Option<&'static ChatShapes> {
        match self {
            Self::OpenAi => Some(&OPENAI),
            Self::AzureOpenAi => Some(&AZURE),
            Self::DeepSeekChat => Some(&DEEPSEEK_CHAT),
            Self::DeepSeekReasoner => Some(&DEEPSEEK_REASONER),
            Self::DashScope => Some(&DASHSCOPE),
            Self::Glm => Some(&GLM),
            Self::OpenRouter => Some(&OPENROUTER),
            Self::Vllm => Some(&VLLM),
            Self::LlamaCpp => Some(&LLAMA_CPP),
            Self::OllamaV1 => Some(&OLLAMA_V1),
            Self::Tgi => Some(&TGI),
            Self::Xinference => Some(&XINFERENCE),
            Self::Ollama
            | Self::Anthropic
            | Self::OpenAiResponses
            | Self::Gemini
            | Self::Bedrock => None,
        }
    }
}

impl std::fmt::Display for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// OpenAI. Chunks: PY-SNAP (2024: no `service_tier`, `logprobs: null`), ENVOY and
/// GOMODEL (2025+: `service_tier`, `obfuscation` last; reasoning models without
/// `logprobs` and with a `null` fingerprint). Usage only with `include_usage`, then
/// `"usage": null` on every chunk and a `choices: []` chunk (ENVOY
/// `chat-streaming-detailed-usage.yaml`; OPENAI-SPEC `ChatCompletionStreamOptions`).
/// Tool calls strictly one after another, header with `arguments: ""` (PY-SNAP
/// `f82268f2….bin`). In-stream error as `data: {"error":...}` then `[DONE]` (vercel/ai
/// PR #1835 fixture; openai-python `_streaming.py` raises on a top-level `error`). 429:
/// OPENAI-SPEC (2026-08) documents an optional integer-seconds `Retry-After`; a live 429
/// without one is in openai-node #1477. Headers: ENVOY `chat-streaming.yaml`. Cloudflare
/// in front (`server: cloudflare` in ENVOY).
const OPENAI: ChatShapes = ChatShapes {
    id: IdStyle::OpenAi,
    layouts: &[
        Layout::OpenAi2024,
        Layout::OpenAiTiered,
        Layout::OpenAiTieredNoLogprobs,
    ],
    fingerprints: &[Fingerprint::Fp, Fingerprint::Null],
    openers: &[Opener::RoleContentRefusal],
    finishes: &[FinishShape::EmptyDelta],
    usages: &[UsageShape::SeparateWhenAsked {
        null_on_chunks: true,
    }],
    usage_details: UsageDetails::Details,
    tools: &[ToolShape::Streamed],
    reasoning: &[ReasoningField::None],
    framings: &[Framing::Standard],
    keep_alive: None,
    finish_names: FinishNames::OpenAi,
    tools_need_choice: false,
    refuses_in_stream: false,
    stream_errors: &[StreamErrorShape::DataThenDone],
    envelopes: &[Envelope::OpenAi],
    retry_after: &[RetryAfterForm::Absent, RetryAfterForm::Seconds],
    headers: HeaderSet::OpenAi,
    stream_content_type: "text/event-stream; charset=utf-8",
    json_content_type: "application/json",
    content_filter: ContentFilterShape::FinishReason,
    proxy_pages: true,
    checks_model: true,
    model_not_found_sourced: true,
};

/// Azure OpenAI. Keys sorted, `content_filter_results` per choice, a first chunk with
/// `prompt_filter_results` and empty `id`/`model`/`object` (AZ-LOBE; AZ-DOC async
/// filter sample). `"usage": null` last with `include_usage` (an Azure mock copied from a
/// live response, 2025-02). Errors `{"error":{"code":"429","message":...}}` (SciSharp/
/// BotSharp #386, vanderschaarlab/climb #1). 429 carries `retry-after-ms` and
/// `retry-after` (AZ-DOC provisioned-throughput). Headers: ENVOY `azure-chat-basic.yaml`.
const AZURE: ChatShapes = ChatShapes {
    id: IdStyle::OpenAi,
    layouts: &[Layout::Azure],
    fingerprints: &[Fingerprint::Fp],
    openers: &[Opener::RoleContentRefusal],
    finishes: &[FinishShape::EmptyDelta],
    usages: &[UsageShape::SeparateWhenAsked {
        null_on_chunks: true,
    }],
    usage_details: UsageDetails::Details,
    tools: &[ToolShape::Streamed],
    reasoning: &[ReasoningField::None],
    framings: &[Framing::Standard],
    keep_alive: None,
    finish_names: FinishNames::OpenAi,
    tools_need_choice: false,
    refuses_in_stream: false,
    stream_errors: &[StreamErrorShape::DataThenDone],
    envelopes: &[Envelope::Azure],
    retry_after: &[RetryAfterForm::MsAndSeconds],
    headers: HeaderSet::Azure,
    stream_content_type: "text/event-stream; charset=utf-8",
    json_content_type: "application/json",
    content_filter: ContentFilterShape::FinishReason,
    proxy_pages: false,
    checks_model: true,
    model_not_found_sourced: true,
};

/// DeepSeek chat. UUID ids, `fp_…_prod…` or 32-hex fingerprints, `"usage": null` on
/// chunks and usage on the finish chunk with `"delta":{"content":""}` (VERCEL
/// `deepseek-text.chunks.txt`, `deepseek-system-fingerprint.chunks.txt`; brainlid/
/// langchain PR #288). `: keep-alive` comments while waiting (DS-DOCS rate_limit).
/// Errors in OpenAI's envelope with `code: "invalid_request_error"`; context overflow by
/// message only (NoFxAiOS/nofx #1278); no Retry-After documented (DS-DOCS). Trace header
/// `x-ds-trace-id` (195440/nof1.ai #29). No error inside a stream was ever captured: a
/// failure after the 200 drops the connection.
const DEEPSEEK_CHAT: ChatShapes = ChatShapes {
    id: IdStyle::Uuid,
    layouts: &[Layout::DeepSeek],
    fingerprints: &[Fingerprint::FpDeepSeek, Fingerprint::Hex32],
    openers: &[Opener::RoleContentEmpty],
    finishes: &[FinishShape::EmptyContent],
    usages: &[UsageShape::OnFinishWhenAsked {
        null_on_chunks: true,
    }],
    usage_details: UsageDetails::DeepSeek,
    tools: &[ToolShape::Streamed],
    reasoning: &[ReasoningField::None],
    framings: &[Framing::Standard],
    keep_alive: Some(KeepAlive {
        comment: ": keep-alive",
        every_ms: None,
    }),
    finish_names: FinishNames::OpenAi,
    tools_need_choice: false,
    refuses_in_stream: false,
    stream_errors: &[StreamErrorShape::Reset],
    envelopes: &[Envelope::DeepSeek],
    retry_after: &[RetryAfterForm::Absent],
    headers: HeaderSet::DeepSeek,
    stream_content_type: "text/event-stream; charset=utf-8",
    json_content_type: "application/json",
    content_filter: ContentFilterShape::FinishReason,
    proxy_pages: true,
    checks_model: true,
    model_not_found_sourced: false,
};

/// DeepSeek reasoner: as chat, with `reasoning_content` (the opener says
/// `"content":null,"reasoning_content":""`; VERCEL `deepseek-reasoning.chunks.txt`).
const DEEPSEEK_REASONER: ChatShapes = ChatShapes {
    reasoning: &[ReasoningField::ReasoningContentPaired],
    ..DEEPSEEK_CHAT
};

/// DashScope compatible mode. `choices` first and `id` last, fingerprint `null`,
/// `"usage": null` and a `choices: []` usage chunk only with `include_usage` (VERCEL
/// `alibaba-text.chunks.txt`; ALI-DOCS stream). Tool continuations with `"id":""` and an
/// extra empty fragment in a choice with no `finish_reason` (VERCEL
/// `alibaba-tool-call.chunks.txt`; lofcz/LLMTornado #59). Errors
/// `{"error":{code,message,param,type},"id","request_id"}`, context overflow by message
/// (agentscope-ai/QwenPaw #6255); content moderation is an HTTP 400, not a finish reason
/// (666ghj/BettaFish #449). No Retry-After found.
const DASHSCOPE: ChatShapes = ChatShapes {
    id: IdStyle::ChatcmplUuid,
    layouts: &[Layout::DashScope],
    fingerprints: &[Fingerprint::Null],
    openers: &[Opener::RoleContentEmpty],
    finishes: &[FinishShape::EmptyContent, FinishShape::EmptyDelta],
    usages: &[UsageShape::SeparateWhenAsked {
        null_on_chunks: true,
    }],
    usage_details: UsageDetails::Details,
    tools: &[ToolShape::EmptyIdContinuation],
    reasoning: &[ReasoningField::ReasoningContentPaired],
    framings: &[Framing::Standard],
    keep_alive: None,
    finish_names: FinishNames::OpenAi,
    tools_need_choice: false,
    refuses_in_stream: false,
    stream_errors: &[StreamErrorShape::Reset],
    envelopes: &[Envelope::DashScope],
    retry_after: &[RetryAfterForm::Absent],
    headers: HeaderSet::Bare,
    stream_content_type: "text/event-stream;charset=UTF-8",
    json_content_type: "application/json",
    content_filter: ContentFilterShape::OpenAiSpelling,
    proxy_pages: false,
    checks_model: true,
    model_not_found_sourced: false,
};

/// GLM. Timestamp ids, no fingerprint, `role` on every text chunk, no `finish_reason`
/// key until the finish chunk, usage on it (FANTASY `zai-glm-4-7-flash/*.yaml`; without
/// `object` in `zai-glm-4.6`). Tool calls whole, one index per chunk (FANTASY
/// `multi_tool_streaming.yaml`). `sensitive` finish (ZHIPU-DOCS). Errors
/// `{"error":{"code":"1302","message"}}` (kaitranntt/ccs #402), 1261 for context
/// (ZHIPU-DOCS api-code). No Retry-After found.
const GLM: ChatShapes = ChatShapes {
    id: IdStyle::Timestamp,
    layouts: &[Layout::Glm, Layout::GlmNoObject],
    fingerprints: &[Fingerprint::Absent],
    openers: &[Opener::RoleEveryChunk],
    finishes: &[FinishShape::RoleEmptyContent],
    usages: &[UsageShape::OnFinishWhenAsked {
        null_on_chunks: false,
    }],
    usage_details: UsageDetails::Details,
    tools: &[ToolShape::Whole],
    reasoning: &[ReasoningField::ReasoningContent],
    framings: &[Framing::Standard],
    keep_alive: None,
    finish_names: FinishNames::OpenAi,
    tools_need_choice: false,
    refuses_in_stream: false,
    stream_errors: &[StreamErrorShape::Reset],
    envelopes: &[Envelope::Glm],
    retry_after: &[RetryAfterForm::Absent],
    headers: HeaderSet::Bare,
    stream_content_type: "text/event-stream;charset=UTF-8",
    json_content_type: "application/json; charset=UTF-8",
    content_filter: ContentFilterShape::Sensitive,
    proxy_pages: false,
    checks_model: true,
    model_not_found_sourced: false,
};

/// OpenRouter. `: OPENROUTER PROCESSING` comments (OR-DOCS streaming; FANTASY),
/// `gen-` ids, `provider`, `native_finish_reason`, `role` on every chunk, `reasoning`
/// with `reasoning_details`. Usage always, in three dated forms (FANTASY @76e272f2,
/// @7ebd9b5a, @43a2aa51). Tool calls re-chunked into a header and one argument delta
/// (FANTASY glm upstream). Errors with a numeric `code` and `metadata`; mid-stream an
/// error chunk with `finish_reason: "error"` (OR-DOCS errors-and-debugging). Retry-After
/// seconds on 429/503 (OR-DOCS limits). Cloudflare in front (OpenRouterTeam/
/// ai-sdk-provider #12).
const OPENROUTER: ChatShapes = ChatShapes {
    id: IdStyle::Generation,
    layouts: &[Layout::OpenRouter],
    fingerprints: &[Fingerprint::Absent, Fingerprint::Empty, Fingerprint::Fp],
    openers: &[Opener::RoleEveryChunk],
    finishes: &[FinishShape::RoleEmptyContent],
    usages: &[
        UsageShape::TrailingChoice,
        UsageShape::TrailingBare,
        UsageShape::RepeatedFinish,
    ],
    usage_details: UsageDetails::OpenRouter,
    tools: &[ToolShape::Rechunked, ToolShape::Streamed],
    reasoning: &[ReasoningField::OpenRouter],
    framings: &[Framing::Standard],
    keep_alive: Some(KeepAlive {
        comment: ": OPENROUTER PROCESSING",
        every_ms: None,
    }),
    finish_names: FinishNames::OpenAi,
    tools_need_choice: false,
    refuses_in_stream: false,
    stream_errors: &[StreamErrorShape::ErrorChunk],
    envelopes: &[Envelope::OpenRouter],
    retry_after: &[RetryAfterForm::Seconds, RetryAfterForm::Absent],
    headers: HeaderSet::OpenRouter,
    stream_content_type: "text/event-stream",
    json_content_type: "application/json",
    content_filter: ContentFilterShape::FinishReason,
    proxy_pages: true,
    checks_model: true,
    model_not_found_sourced: true,
};

/// vLLM. `chatcmpl-<32 hex>`, no fingerprint, opener `{"role","content":""}`, `delta:{}`
/// finish with `stop_reason`, usage only with `include_usage` on a `choices: []` chunk
/// and no `"usage": null` (VLLM serving_chat.py @99c5632f; protocol.py @0052bed3).
/// Reasoning in `reasoning_content`, both, or `reasoning` by version (vllm PRs #27752,
/// #33402). Tool header without `arguments` (exclude_none), duplicate same-index entries
/// with speculative decoding (openai/openai-python #3201). Errors flat up to 0.10.0,
/// nested after (vllm PR #22099), numeric `code`; in-stream `data: {"error": ...}` by
/// `json.dumps` then `[DONE]`. No 429 of its own.
const VLLM: ChatShapes = ChatShapes {
    id: IdStyle::ChatcmplHex,
    layouts: &[Layout::Vllm],
    fingerprints: &[Fingerprint::Absent],
    openers: &[Opener::RoleContentEmpty],
    finishes: &[FinishShape::EmptyDelta],
    usages: &[UsageShape::SeparateWhenAsked {
        null_on_chunks: false,
    }],
    usage_details: UsageDetails::Vllm,
    tools: &[ToolShape::StreamedBareHeader, ToolShape::DuplicateIndex],
    reasoning: &[
        ReasoningField::ReasoningContent,
        ReasoningField::Both,
        ReasoningField::Reasoning,
    ],
    framings: &[Framing::Standard],
    keep_alive: None,
    finish_names: FinishNames::OpenAi,
    tools_need_choice: false,
    refuses_in_stream: false,
    stream_errors: &[StreamErrorShape::DataPythonThenDone],
    envelopes: &[Envelope::VllmFlat, Envelope::VllmNested],
    retry_after: &[],
    headers: HeaderSet::Bare,
    stream_content_type: "text/event-stream; charset=utf-8",
    json_content_type: "application/json",
    content_filter: ContentFilterShape::OpenAiSpelling,
    proxy_pages: false,
    checks_model: true,
    model_not_found_sourced: true,
};

/// llama.cpp. `chatcmpl-<32 alnum>`, `b<build>-<commit>` fingerprint, `ordered_json`
/// key order, opener `content: null` (new) or role only (old), usage on a `choices: []`
/// chunk with `include_usage` (new) or always on the finish chunk with `timings` (old)
/// (LLAMA server-task.cpp @00efb3e1, server.cpp @61e588ab). Tool header with the name
/// only. In-stream errors: `error:` field then `[DONE]` (old), `data: {"error":...}`
/// then close (new). Errors `{"error":{"code":400,"message","type"}}` with
/// `n_prompt_tokens`/`n_ctx` on context overflow. No 429; `server: llama.cpp`. It
/// serves its one loaded model whatever the request names (LLAMA: the request's `model`
/// is not checked).
const LLAMA_CPP: ChatShapes = ChatShapes {
    id: IdStyle::ChatcmplAlnum32,
    layouts: &[Layout::LlamaCpp],
    fingerprints: &[Fingerprint::Build],
    openers: &[Opener::RoleContentNull, Opener::RoleOnly],
    finishes: &[FinishShape::EmptyDelta],
    usages: &[
        UsageShape::SeparateWhenAsked {
            null_on_chunks: false,
        },
        UsageShape::AlwaysOnFinish,
    ],
    usage_details: UsageDetails::Plain,
    tools: &[ToolShape::StreamedBareHeader],
    reasoning: &[ReasoningField::ReasoningContent],
    framings: &[Framing::Standard],
    keep_alive: None,
    finish_names: FinishNames::OpenAi,
    tools_need_choice: false,
    refuses_in_stream: false,
    stream_errors: &[
        StreamErrorShape::ErrorField,
        StreamErrorShape::DataThenClose,
    ],
    envelopes: &[Envelope::LlamaCpp],
    retry_after: &[],
    headers: HeaderSet::LlamaCpp,
    stream_content_type: "text/event-stream",
    json_content_type: "application/json; charset=utf-8",
    content_filter: ContentFilterShape::OpenAiSpelling,
    proxy_pages: false,
    checks_model: false,
    model_not_found_sourced: false,
};

/// Ollama's /v1. `chatcmpl-<n>`, `fp_ollama`, role on every chunk (before 0.32.6) or on
/// the first (0.32.6+, OLLAMA commit 8edecb5c), usage only with `include_usage` on a
/// `choices: []` chunk, tool calls whole with `arguments` as a string (openai.go L185,
/// L255), `reasoning` in chunks of its own (L344). Errors in OpenAI's envelope with
/// `code: null`; an error after the 200 leaves one stray empty chunk and the connection
/// closes (middleware ChatWriter.Write, derived from the code). No Retry-After.
const OLLAMA_V1: ChatShapes = ChatShapes {
    id: IdStyle::ChatcmplNumber,
    layouts: &[Layout::OllamaV1],
    fingerprints: &[Fingerprint::Ollama],
    openers: &[Opener::RoleEveryChunk, Opener::RoleOnFirst],
    finishes: &[FinishShape::EmptyDelta],
    usages: &[UsageShape::SeparateWhenAsked {
        null_on_chunks: false,
    }],
    usage_details: UsageDetails::Plain,
    tools: &[ToolShape::Whole],
    reasoning: &[ReasoningField::Separate],
    framings: &[Framing::Standard],
    keep_alive: None,
    finish_names: FinishNames::OpenAi,
    tools_need_choice: false,
    refuses_in_stream: false,
    stream_errors: &[StreamErrorShape::StrayChunk],
    envelopes: &[Envelope::OllamaV1],
    retry_after: &[],
    headers: HeaderSet::Bare,
    stream_content_type: "text/event-stream",
    json_content_type: "application/json",
    content_filter: ContentFilterShape::OpenAiSpelling,
    proxy_pages: false,
    checks_model: true,
    model_not_found_sourced: true,
};

/// TGI 2.0. axum 0.6 writes `data:` with no space and TGI sends no `[DONE]` before 2.2;
/// keep-alive `:` after 15 s idle (axum sse.rs). Chunks: `id: ""`, `object:
/// "text_completion"`, `system_fingerprint: "2.0.1-native"`, `role` on every chunk, no
/// usage; the last chunk carries the EOS text `</s>` (2.0.0-2.0.1), an empty delta
/// (2.0.2-2.0.3) or an empty content (2.0.4); finish reasons `eos_token`, `length`,
/// `stop_sequence` (TGI `router/src/lib.rs`; capture in opea-project/GenAIExamples
/// `ChatQnA/chatqna.py` @0953e1c0). Tools only with `tool_choice`. Errors
/// `{"error":..., "error_type":...}`; with `stream: true` validation and overload errors
/// come inside the 200, then the stream ends (TGI `server.rs`). It serves its one model
/// whatever the request names (TGI `router/src/lib.rs`: `ChatRequest.model` is documented `[UNUSED]`).
const TGI: ChatShapes = ChatShapes {
    id: IdStyle::Empty,
    layouts: &[Layout::Tgi],
    fingerprints: &[Fingerprint::TgiNative],
    openers: &[Opener::RoleEveryChunk],
    finishes: &[
        FinishShape::EosText,
        FinishShape::EmptyDelta,
        FinishShape::RoleEmptyContent,
    ],
    usages: &[UsageShape::Never],
    usage_details: UsageDetails::Plain,
    tools: &[ToolShape::Whole],
    reasoning: &[ReasoningField::None],
    framings: &[Framing::NoSpaceNoDone],
    keep_alive: Some(KeepAlive {
        comment: ":",
        every_ms: Some(15_000),
    }),
    finish_names: FinishNames::Tgi,
    tools_need_choice: true,
    refuses_in_stream: true,
    stream_errors: &[StreamErrorShape::TypedTextThenClose],
    envelopes: &[Envelope::Tgi],
    retry_after: &[],
    headers: HeaderSet::Bare,
    stream_content_type: "text/event-stream",
    json_content_type: "application/json",
    content_filter: ContentFilterShape::OpenAiSpelling,
    proxy_pages: false,
    checks_model: false,
    model_not_found_sourced: false,
};

/// Xinference (vLLM engine). sse-starlette frames with CRLF and pings every 600 s
/// (`: ping - <date>`); chunks are `json.dumps` with spaces: `id: "chat<uuid>"`, `model`
/// (the model's uid), `created`, `object`, `choices[index, delta, logprobs,
/// finish_reason]`, `usage` (`null`, then the counts on the finish chunk always); the
/// first content chunk adds `role` after `content`; tool calls whole. An error after the
/// 200 is `data: {"error": "<text>"}` and the stream ends; HTTP errors are FastAPI's
/// `{"detail": ...}`, a model still loading a 503 with `Retry-After: 30` (XINF).
const XINFERENCE: ChatShapes = ChatShapes {
    id: IdStyle::ChatUuid,
    layouts: &[Layout::Xinference],
    fingerprints: &[Fingerprint::Absent],
    openers: &[Opener::ContentThenRole],
    finishes: &[FinishShape::EmptyContent],
    usages: &[UsageShape::NullsThenOnFinish],
    usage_details: UsageDetails::Plain,
    tools: &[ToolShape::Whole],
    reasoning: &[ReasoningField::ReasoningContent],
    framings: &[Framing::Crlf],
    keep_alive: Some(KeepAlive {
        comment: ": ping - {date}",
        every_ms: Some(600_000),
    }),
    finish_names: FinishNames::OpenAi,
    tools_need_choice: false,
    refuses_in_stream: false,
    stream_errors: &[StreamErrorShape::PlainTextThenClose],
    envelopes: &[Envelope::FastApi],
    retry_after: &[RetryAfterForm::Absent],
    headers: HeaderSet::Bare,
    stream_content_type: "text/event-stream; charset=utf-8",
    json_content_type: "application/json",
    content_filter: ContentFilterShape::OpenAiSpelling,
    proxy_pages: false,
    checks_model: true,
    model_not_found_sourced: true,
};
