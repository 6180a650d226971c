//! A client nobody here wrote as the judge of SimNetwork's bytes: every OpenAI-format
//! profile over 200 seeds each, streamed and whole, answers and errors, parsed by
//! `eventsource-stream` (the SSE parser async-openai's client uses) and async-openai's
//! own public types, and compared with what Umi's collector makes of the same bytes:
//! the same text, tool calls, finish reason and usage.
//!
//! Where async-openai cannot parse a shape a real provider does send, the shape is a
//! [`Limit`] of async-openai's, named with its source, not a fault of the simulator: the
//! test requires that every failure to parse is one of them.

use std::collections::BTreeMap;

use crate::support::{judge_model, judged_request, judged_seed_config, read_exchange, umi_reading};
use async_openai::error::WrappedError;
use async_openai::types::chat::{
    CreateChatCompletionResponse, CreateChatCompletionStreamResponse, FinishReason as AoFinish,
};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::Value;
use umi_core::llm::client::ClientFormat;
use umi_core::llm::openai::OpenAiConfig;
use umi_core::llm::wire::sse::SseDecoder;
use umi_core::llm::{FinishReason, ModelRef, ToolDefinition};
use umi_dst::network::{Profile, WireFormat};
use umi_dst::{Endpoint, SimNetwork, Simulation};

const URL: &str = "https://judge.sim/v1";

/// Seeds per profile.
const SEEDS_PER_PROFILE: u64 = 200;

/// A shape a real provider sends that async-openai's types refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Limit {
    /// `finish_reason` outside OpenAI's five: GLM's `sensitive` (docs.bigmodel.cn),
    /// OpenRouter's `error` (OpenRouterTeam/docs errors-and-debugging), TGI 2.0's
    /// `eos_token` (TGI `router/src/lib.rs`).
    FinishReason,
    /// A chunk without `object` (GLM 4.6, charmbracelet/fantasy @71f727f0).
    NoObject,
    /// An error whose `code` is a number (OpenRouter, vLLM, llama.cpp).
    NumericCode,
    /// An error body that is not `{"error": {...}}`: TGI's and Ollama's `{"error":
    /// "text"}`, FastAPI's `{"detail": ...}` (Xinference), vLLM's flat
    /// `{"object": "error", ...}` up to 0.10.0, an HTML page from a proxy.
    NotWrapped,
}

/// Which known limit explains why `data` does not parse, if one does.
fn limit_of(data: &Value) -> Option<Limit> {
    const FINISHES: [&str; 5] = [
        "stop",
        "length",
        "tool_calls",
        "content_filter",
        "function_call",
    ];
    let finish_unknown = data
        .get("choices")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("finish_reason").and_then(Value::as_str))
        .any(|f| !FINISHES.contains(&f));
    if finish_unknown {
        return Some(Limit::FinishReason);
    }
    if data.get("error").is_none() && data.get("object").is_none() && data.get("choices").is_some()
    {
        return Some(Limit::NoObject);
    }
    match data.get("error") {
        Some(Value::Object(error)) if error.get("code").is_some_and(Value::is_number) => {
            Some(Limit::NumericCode)
        }
        Some(Value::Object(_)) => None,
        _ if data.get("choices").is_none() => Some(Limit::NotWrapped),
        _ => None,
    }
}

/// What async-openai made of a response.
#[derive(Debug, Default, PartialEq)]
struct Judged {
    text: String,
    /// By index: id, name, arguments (parsed).
    calls: BTreeMap<u32, (String, String, String)>,
    finish: Option<FinishReason>,
    usage: Option<(u32, u32)>,
    /// The response or a chunk was an error object.
    error: bool,
}

fn finish(reason: &AoFinish) -> FinishReason {
    match reason {
        AoFinish::Stop => FinishReason::Stop,
        AoFinish::Length => FinishReason::Length,
        AoFinish::ToolCalls | AoFinish::FunctionCall => FinishReason::ToolCalls,
        AoFinish::ContentFilter => FinishReason::ContentFilter,
    }
}

fn judge_chunk(judged: &mut Judged, chunk: CreateChatCompletionStreamResponse) {
    if let Some(usage) = chunk.usage {
        judged.usage = Some((usage.prompt_tokens, usage.completion_tokens));
    }
    for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
        if let Some(text) = choice.delta.content {
            judged.text.push_str(&text);
        }
        for call in choice.delta.tool_calls.unwrap_or_default() {
            let entry = judged.calls.entry(call.index).or_default();
            if let Some(id) = call.id.filter(|id| !id.is_empty()) {
                entry.0 = id;
            }
            if let Some(function) = call.function {
                if let Some(name) = function.name.filter(|n| !n.is_empty()) {
                    entry.1 = name;
                }
                entry.2.push_str(&function.arguments.unwrap_or_default());
            }
        }
        if let Some(reason) = &choice.finish_reason {
            judged.finish = Some(finish(reason));
        }
    }
}

/// The body's SSE events through eventsource-stream, each `data` through async-openai.
async fn judge_stream(reads: &[Vec<u8>]) -> Result<Judged, (Limit, String)> {
    let body = futures::stream::iter(reads.iter().cloned().map(Ok::<_, std::io::Error>));
    let mut events = body.eventsource();
    let mut judged = Judged::default();
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| (Limit::NotWrapped, e.to_string()))?;
        if event.data == "[DONE]" {
            break;
        }
        let value: Value = serde_json::from_str(&event.data)
            .map_err(|e| (Limit::NotWrapped, format!("{e}: {}", event.data)))?;
        if value.get("error").is_some_and(|e| !e.is_null()) {
            // async-openai's client turns a chunk with `error` into an error.
            if let Some(limit) = limit_of(&value) {
                serde_json::from_value::<WrappedError>(value.clone())
                    .err()
                    .ok_or((limit, "a known limit that parsed".to_owned()))?;
                return Err((limit, event.data));
            }
            serde_json::from_value::<WrappedError>(value)
                .map_err(|e| panic!("an OpenAI-shaped error chunk does not parse: {e}"))?;
            judged.error = true;
            return Ok(judged);
        }
        match serde_json::from_value::<CreateChatCompletionStreamResponse>(value.clone()) {
            Ok(chunk) => judge_chunk(&mut judged, chunk),
            Err(error) => match limit_of(&value) {
                Some(limit) => return Err((limit, event.data)),
                None => panic!("async-openai cannot parse {}: {error}", event.data),
            },
        }
    }
    Ok(judged)
}

fn judge_whole(body: &[u8]) -> Result<Judged, (Limit, String)> {
    let text = String::from_utf8_lossy(body).into_owned();
    let Ok(value) = serde_json::from_str::<Value>(&text) else {
        return Err((Limit::NotWrapped, text));
    };
    match serde_json::from_value::<CreateChatCompletionResponse>(value.clone()) {
        Ok(response) => {
            let mut judged = Judged::default();
            if let Some(usage) = response.usage {
                judged.usage = Some((usage.prompt_tokens, usage.completion_tokens));
            }
            let choice = response.choices.into_iter().next().expect("one choice");
            judged.text = choice.message.content.unwrap_or_default();
            for (index, call) in choice
                .message
                .tool_calls
                .unwrap_or_default()
                .into_iter()
                .enumerate()
            {
                let json = serde_json::to_value(&call).unwrap();
                let function = &json["function"];
                judged.calls.insert(
                    index as u32,
                    (
                        json["id"].as_str().unwrap_or("").to_owned(),
                        function["name"].as_str().unwrap_or("").to_owned(),
                        function["arguments"].as_str().unwrap_or("").to_owned(),
                    ),
                );
            }
            judged.finish = choice.finish_reason.as_ref().map(finish);
            Ok(judged)
        }
        Err(error) => {
            if serde_json::from_value::<WrappedError>(value.clone()).is_ok() {
                return Ok(Judged {
                    error: true,
                    ..Judged::default()
                });
            }
            match limit_of(&value) {
                Some(limit) => Err((limit, text)),
                None => panic!("async-openai cannot parse {text}: {error}"),
            }
        }
    }
}

/// What Umi's collector made of the same bytes, in the judge's terms.
fn umi(reads: &[Vec<u8>], stream: bool, status: u16, model: &str) -> Judged {
    match umi_reading(WireFormat::OpenAiChat, reads, stream, status, model) {
        None => Judged {
            error: true,
            ..Judged::default()
        },
        Some(response) => Judged {
            text: response.text,
            calls: response
                .tool_calls
                .into_iter()
                .enumerate()
                .map(|(i, c)| (i as u32, (c.id, c.name, c.arguments.to_string())))
                .collect(),
            finish: Some(response.finish_reason),
            usage: response
                .usage
                .map(|u| (u.prompt_tokens, u.completion_tokens)),
            error: false,
        },
    }
}

fn tools() -> Vec<ToolDefinition> {
    vec![ToolDefinition::new(
        "get_weather",
        "Weather for a city.",
        serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city"]}),
    )]
}

/// Arguments compared as JSON (whitespace and key order are the encoder's business).
fn normalized(mut judged: Judged) -> Judged {
    for call in judged.calls.values_mut() {
        if let Ok(value) = serde_json::from_str::<Value>(&call.2) {
            call.2 = value.to_string();
        }
    }
    judged
}

#[test]
fn async_openai_reads_every_openai_format_profile_as_umi_does() {
    let mut limits: BTreeMap<(Profile, Limit), u64> = BTreeMap::new();
    let mut compared: BTreeMap<Profile, u64> = BTreeMap::new();
    for profile in Profile::ALL
        .into_iter()
        .filter(|p| p.format() == WireFormat::OpenAiChat)
    {
        for seed in 0..SEEDS_PER_PROFILE {
            let outcome = std::sync::Mutex::new(None);
            Simulation::new(judged_seed_config(seed))
                .try_run(|sim| {
                    let outcome = &outcome;
                    async move {
                        let model_ref = ModelRef::new("judge", "judge-model", 32_768, 1_024);
                        let llm = judge_model(&sim, model_ref.clone(), false);
                        let network = SimNetwork::new(&sim)
                            .with_endpoint(Endpoint::openai(URL, llm).with_profile(profile));
                        let stream = seed % 2 == 0;
                        let request = judged_request(seed, tools());
                        let http =
                            OpenAiConfig::new(URL, model_ref).http_request(&request, stream)?;
                        let (status, reads) = read_exchange(&network, http).await?;
                        let judged = if stream && status == 200 {
                            // async-openai's client ends a stream cut before its finish
                            // reason and `[DONE]` as if it were whole (its own limit, which
                            // its users must check); the judge reads it as the cut it is.
                            judge_stream(&reads).await.map(|mut judged| {
                                judged.error |= judged.finish.is_none();
                                judged
                            })
                        } else {
                            judge_whole(&reads.concat())
                        };
                        let ours = umi(&reads, stream, status, "judge-model");
                        *outcome.lock().unwrap() = Some((judged, ours, reads.concat()));
                        Ok(())
                    }
                })
                .unwrap_or_else(|e| panic!("{profile} seed {seed}: {e:?}"));
            let (judged, ours, body) = outcome.into_inner().unwrap().unwrap();
            match judged {
                Err((limit, _)) => *limits.entry((profile, limit)).or_default() += 1,
                Ok(judged) => {
                    let (judged, ours) = (normalized(judged), normalized(ours));
                    if judged.error || ours.error {
                        assert_eq!(
                            judged.error,
                            ours.error,
                            "{profile} seed {seed}: one says error, the other not:\n{}",
                            String::from_utf8_lossy(&body)
                        );
                    } else {
                        assert_eq!(
                            judged,
                            ours,
                            "{profile} seed {seed}: async-openai and Umi disagree on\n{}",
                            String::from_utf8_lossy(&body)
                        );
                    }
                    *compared.entry(profile).or_default() += 1;
                }
            }
        }
    }
    // Every profile was judged on most of its seeds; what could not be judged is listed.
    // TGI 2.0 ends every answer with a finish reason async-openai refuses (`eos_token`),
    // so only its errors and cut streams can be judged.
    for profile in Profile::ALL
        .into_iter()
        .filter(|p| p.format() == WireFormat::OpenAiChat && *p != Profile::Tgi)
    {
        let count = compared.get(&profile).copied().unwrap_or(0);
        assert!(
            count >= SEEDS_PER_PROFILE / 2,
            "{profile}: only {count} of {SEEDS_PER_PROFILE} seeds judged; limits: {limits:?}"
        );
    }
    #[allow(clippy::print_stderr)] // the test's figures, shown with --nocapture
    {
        eprintln!("judged per profile: {compared:?}; async-openai's limits met: {limits:?}");
    }
    // The known limits are real: the shapes that need them do occur.
    let seen: std::collections::BTreeSet<Limit> = limits.keys().map(|(_, l)| *l).collect();
    for limit in [Limit::FinishReason, Limit::NumericCode, Limit::NotWrapped] {
        assert!(
            seen.contains(&limit),
            "{limit:?} never occurred: {limits:?}"
        );
    }
}

/// What an error after the 200 looks like on the wire, as a client reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum InStreamError {
    /// `data: {"error": {"message": ...}}`.
    Wrapped,
    /// `data: {"error": "<text>"}`.
    Text,
    /// `data: {"error": "<text>", "error_type": "<kind>"}`.
    TypedText,
    /// A chunk with a top-level `error` object and choices (OpenRouter).
    Chunk,
    /// An SSE field `error: {...}` (older llama.cpp).
    Field,
    /// Anything else carrying an error (`{"object": "error", ...}`, `{"detail": ...}`).
    Unsourced,
}

/// The in-stream error shapes each profile's notes source (network/profile.rs): OpenAI
/// and Azure wrap; OpenRouter's error chunk; vLLM's `json.dumps({"error": ...})`
/// (serving_engine.py); llama.cpp's `error:` field (old) and wrapped `data:` (new);
/// TGI's typed text (server.rs); Xinference's `json.dumps({"error": str(ex)})`
/// (restful_api.py). DeepSeek, DashScope and GLM reset; Ollama's /v1 sends a stray
/// chunk: no error payload at all.
fn sourced_in_stream_errors(profile: Profile) -> &'static [InStreamError] {
    use InStreamError::{Chunk, Field, Text, TypedText, Wrapped};
    match profile {
        Profile::OpenAi | Profile::AzureOpenAi | Profile::Vllm => &[Wrapped],
        Profile::OpenRouter => &[Chunk],
        Profile::LlamaCpp => &[Field, Wrapped],
        Profile::Tgi => &[TypedText],
        Profile::Xinference => &[Text],
        _ => &[],
    }
}

/// Every error payload in an SSE body, classified. The body is read with umi-core's SSE
/// decoder (the one the clients use), not a second hand-written one: it keeps
/// llama.cpp's `error:` field, which a spec-only decoder would drop.
fn in_stream_errors(body: &str) -> Vec<(InStreamError, String)> {
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    decoder
        .feed(body.as_bytes(), &mut events)
        .expect("the simulated body decodes");
    events.extend(decoder.finish().expect("the simulated body ends cleanly"));
    let mut found = Vec::new();
    for event in events {
        if let Some(field) = event.error {
            found.push((InStreamError::Field, field.trim().to_owned()));
        }
        let Ok(value) = serde_json::from_str::<Value>(event.data.trim()) else {
            continue;
        };
        if let Some(kind) = in_stream_error_kind(&value) {
            found.push((kind, event.data.trim().to_owned()));
        }
    }
    found
}

/// The kind of error a `data:` payload carries, if it carries one.
fn in_stream_error_kind(value: &Value) -> Option<InStreamError> {
    Some(match (value.get("error"), value.get("choices")) {
        (Some(Value::Object(error)), Some(_)) if error.contains_key("message") => {
            InStreamError::Chunk
        }
        (Some(Value::Object(error)), None) if error.contains_key("message") => {
            InStreamError::Wrapped
        }
        (Some(Value::String(_)), None) if value.get("error_type").is_some_and(Value::is_string) => {
            InStreamError::TypedText
        }
        (Some(Value::String(_)), None) if value.as_object().is_some_and(|o| o.len() == 1) => {
            InStreamError::Text
        }
        (None, None)
            if value.get("object") == Some(&Value::from("error"))
                || value.get("detail").is_some() =>
        {
            InStreamError::Unsourced
        }
        (None, _) => return None,
        _ => InStreamError::Unsourced,
    })
}

/// Issue 29, the third defect: inside a 200 stream the Xinference profile sent FastAPI's
/// `{"detail": ...}` and the older-vLLM profile a bare `{"object": "error", ...}` (their
/// HTTP error bodies reused), shapes neither server streams, on which openai-python
/// raises a TypeError. Every in-stream error a profile sends must be one its notes
/// source, and each sourced shape must occur.
#[test]
fn every_in_stream_error_a_profile_sends_is_one_its_sources_name() {
    const SEEDS: u64 = 240;
    let mut seen: BTreeMap<Profile, std::collections::BTreeSet<InStreamError>> = BTreeMap::new();
    let mut unsourced = Vec::new();
    for profile in Profile::ALL
        .into_iter()
        .filter(|p| p.format() == WireFormat::OpenAiChat)
    {
        for seed in 0..SEEDS {
            let body = std::sync::Mutex::new(String::new());
            let config = umi_dst::SimConfig::new(seed).with_fault(umi_dst::FaultConfig::always(
                umi_dst::FaultKind::LlmStreamCut,
            ));
            Simulation::new(config)
                .try_run(|sim| {
                    let body = &body;
                    async move {
                        let model_ref = ModelRef::new("judge", "judge-model", 32_768, 1_024);
                        let llm = judge_model(&sim, model_ref.clone(), false);
                        let network = SimNetwork::new(&sim)
                            .with_endpoint(Endpoint::openai(URL, llm).with_profile(profile));
                        let request = judged_request(seed, tools());
                        let http =
                            OpenAiConfig::new(URL, model_ref).http_request(&request, true)?;
                        let (_, reads) = read_exchange(&network, http).await?;
                        *body.lock().unwrap() =
                            String::from_utf8_lossy(&reads.concat()).into_owned();
                        Ok(())
                    }
                })
                .unwrap_or_else(|e| panic!("{profile} seed {seed}: {e:?}"));
            for (kind, payload) in in_stream_errors(&body.into_inner().unwrap()) {
                if !sourced_in_stream_errors(profile).contains(&kind) {
                    unsourced.push(format!("{profile} seed {seed}: {kind:?} {payload}"));
                }
                seen.entry(profile).or_default().insert(kind);
            }
        }
    }
    assert!(
        unsourced.is_empty(),
        "{} unsourced:\n{}",
        unsourced.len(),
        unsourced.join("\n")
    );
    for profile in Profile::ALL
        .into_iter()
        .filter(|p| p.format() == WireFormat::OpenAiChat)
    {
        let expected: std::collections::BTreeSet<InStreamError> =
            sourced_in_stream_errors(profile).iter().copied().collect();
        let got = seen.remove(&profile).unwrap_or_default();
        assert_eq!(
            got, expected,
            "{profile}: the sourced shapes that occurred over {SEEDS} seeds"
        );
    }
}
