//! The cost of one streamed event over the simulated wire, per provider profile, against
//! the simulator as it was before profiles, rebuilt here as the baseline.
//!
//! Each path streams the same SimLLM answer (a 1 KB extraction) through the real
//! OpenAI-compatible client and collects it:
//!
//! - **baseline**: the pre-profile SimNetwork's encoder (one fixed chunk shape built with
//!   `json!`, whole events per read), behind a minimal transport;
//! - **profile**: SimNetwork with the profile, its drawn shapes and read splits on.
//!
//! Per event = the whole call's time divided by the events SimLLM produced. Run with
//! `cargo bench -p umi-dst --bench wire` (part of `make bench`). Target: within 1.25x of
//! the baseline.

#![allow(
    missing_docs,
    clippy::print_stdout,
    reason = "a bench binary prints its figures"
)]

mod support;

use std::hint::black_box;
use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Map, Value, json};
use umi_core::llm::openai::{OpenAiClient, OpenAiConfig};
use umi_core::llm::transport::{HttpRequest, HttpResponse, Transport, TransportError};
use umi_core::llm::{
    CompletionRequest, LanguageModel, ModelRef, StreamCollector, StreamEvent, TokenUsage,
};
use umi_core::memory::tasks::extraction_request;
use umi_dst::network::{ClientOptions, Profile, base_url_for, client_for};
use umi_dst::{Endpoint, SimConfig, SimEnvironment, SimLlm, SimLlmConfig, SimNetwork};

const URL: &str = "https://bench.sim/v1";

/// The host of the profiled endpoints.
const HOST: &str = "bench.sim";

/// The pre-profile encoder, as it was (umi-dst `network/openai.rs` at 335ee3e).
#[derive(Default)]
struct LegacyEncoder {
    started: bool,
    usage: Option<TokenUsage>,
}

fn legacy_chunk(delta: &Value, finish: Option<&str>) -> String {
    let body = json!({"id": "chatcmpl-sim", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {body}\n\n")
}

impl LegacyEncoder {
    fn event(&mut self, event: &StreamEvent) -> Vec<u8> {
        let mut out = String::new();
        if !self.started {
            self.started = true;
            out.push_str(&legacy_chunk(
                &json!({"role": "assistant", "content": ""}),
                None,
            ));
        }
        match event {
            StreamEvent::TextDelta { text } => {
                out.push_str(&legacy_chunk(&json!({"content": text}), None));
            }
            StreamEvent::ReasoningDelta { text } => {
                out.push_str(&legacy_chunk(&json!({"reasoning_content": text}), None));
            }
            StreamEvent::ToolCallDelta {
                index,
                id,
                name,
                arguments_fragment,
            } => {
                let mut call = Map::new();
                call.insert("index".into(), json!(index));
                if let Some(id) = id {
                    call.insert("id".into(), json!(id));
                    call.insert("type".into(), json!("function"));
                }
                let mut function = Map::new();
                if let Some(name) = name {
                    function.insert("name".into(), json!(name));
                }
                function.insert(
                    "arguments".into(),
                    json!(arguments_fragment.clone().unwrap_or_default()),
                );
                call.insert("function".into(), Value::Object(function));
                out.push_str(&legacy_chunk(
                    &json!({"tool_calls": [Value::Object(call)]}),
                    None,
                ));
            }
            StreamEvent::Usage { usage } => self.usage = Some(*usage),
            StreamEvent::Done {
                finish_reason,
                usage,
            } => {
                out.push_str(&legacy_chunk(&json!({}), Some(finish_reason.as_str())));
                if let Some(usage) = usage.or(self.usage) {
                    let body = json!({"id": "chatcmpl-sim", "object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens, "total_tokens": usage.total()}});
                    out.push_str(&format!("data: {body}\n\n"));
                }
                out.push_str("data: [DONE]\n\n");
            }
        }
        out.into_bytes()
    }
}

/// The baseline transport: the model's stream through the legacy encoder, a read per
/// event.
#[derive(Debug)]
struct Legacy(Arc<SimLlm>);

#[async_trait]
impl Transport for Legacy {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let mut completion = CompletionRequest::new(vec![umi_core::llm::Message::user(
            body["messages"][0]["content"].as_str().unwrap_or(""),
        )]);
        completion.model = body["model"].as_str().unwrap_or("").to_owned();
        let events = self.0.stream(&completion).await.unwrap();
        let mut encoder = LegacyEncoder::default();
        let body = events
            .map(move |item| Ok(encoder.event(&item.unwrap())))
            .boxed();
        Ok(HttpResponse {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body,
        })
    }
}

fn main() {
    println!("umi-dst wire (median of {} batches)", support::BATCHES);
    let runtime = support::sim_runtime();
    let _guard = runtime.enter();
    // Every call takes steps (trace events, coverage marks); a bench makes many.
    let config = SimConfig::new(1).with_steps_max(umi_dst::constants::SIM_STEPS_MAX);
    let sim = SimEnvironment::new(&config).unwrap();
    let model_ref = ModelRef::new("bench", "bench-model", 32_768, 2_048);
    let llm = Arc::new(
        SimLlm::with_config(
            &sim,
            SimLlmConfig::default()
                .with_model(model_ref.clone())
                .without_latency(),
        )
        .unwrap(),
    );
    let sentence =
        "Alice met Bob Smith at Acme Corp in Paris to plan the Berlin Summit with Initech. ";
    let request = extraction_request(&sentence.repeat(13)[..1024]);
    let events =
        runtime.block_on(async { llm.stream(&request).await.unwrap().count().await }) as u32;
    println!("  ({events} events per streamed answer)");

    let client = |transport: Arc<dyn Transport>| {
        OpenAiClient::new(
            OpenAiConfig::new(URL, model_ref.clone()),
            transport,
            sim.env(),
        )
    };
    let per_event = |model: &dyn LanguageModel| {
        support::measure_batch(300, |n| {
            runtime.block_on(async {
                for _ in 0..n {
                    let stream = model.stream(&request).await.unwrap();
                    black_box(StreamCollector::collect("m", stream).await.unwrap());
                }
            });
        }) / events
    };
    let baseline = per_event(&client(Arc::new(Legacy(llm.clone()))));
    let collected: Vec<StreamEvent> = runtime.block_on(async {
        llm.stream(&request)
            .await
            .unwrap()
            .map(Result::unwrap)
            .collect()
            .await
    });
    let push = support::measure(20_000, |_| {
        let mut collector = StreamCollector::new("m");
        for event in &collected {
            collector.push(event.clone()).unwrap();
        }
        black_box(collector.finish().unwrap());
    }) / collected.len() as u32;
    support::report(
        "pre-profile wire, per event",
        baseline,
        "StreamCollector::push per event",
        push,
    );
    // Bytes per event of one answer, for reading the ratios: a profile whose chunks
    // carry more (Azure's filter results, OpenAI's padding, Responses' echoed request,
    // Gemini's candidate and usage metadata in every chunk) costs more per event.
    let bytes_per_event = |profile: Profile| -> u64 {
        let network = Arc::new(
            SimNetwork::new(&sim)
                .with_endpoint(
                    Endpoint::openai(&base_url_for(profile, HOST), llm.clone())
                        .with_profile(profile),
                )
                .with_capture(),
        );
        let model = client_for(
            profile,
            &base_url_for(profile, HOST),
            model_ref.clone(),
            &ClientOptions::default(),
            network.clone(),
            sim.env(),
        );
        runtime.block_on(async {
            let stream = model.stream(&request).await.unwrap();
            black_box(StreamCollector::collect("m", stream).await.unwrap());
        });
        let exchanges = network.exchanges();
        exchanges[0].body().len() as u64 / u64::from(events)
    };
    let legacy_bytes = {
        let http = umi_core::llm::client::ClientFormat::http_request(
            &OpenAiConfig::new(URL, model_ref.clone()),
            &request,
            true,
        )
        .unwrap();
        let body: Vec<Vec<u8>> = runtime.block_on(async {
            let response = Legacy(llm.clone()).send(http).await.unwrap();
            response.body.map(Result::unwrap).collect().await
        });
        body.concat().len() as u64 / u64::from(events)
    };
    println!("  pre-profile wire: {legacy_bytes} bytes per event");
    for profile in [
        Profile::OpenAi,
        Profile::AzureOpenAi,
        Profile::DeepSeekChat,
        Profile::DashScope,
        Profile::Glm,
        Profile::OpenRouter,
        Profile::Vllm,
        Profile::LlamaCpp,
        Profile::Xinference,
        Profile::Anthropic,
        Profile::OpenAiResponses,
        Profile::Gemini,
    ] {
        let url = base_url_for(profile, HOST);
        let network = Arc::new(
            SimNetwork::new(&sim)
                .with_endpoint(Endpoint::openai(&url, llm.clone()).with_profile(profile)),
        );
        let model = client_for(
            profile,
            &url,
            model_ref.clone(),
            &ClientOptions::default(),
            network,
            sim.env(),
        );
        // The baseline again, right before, so machine noise hits both alike.
        let baseline = per_event(&client(Arc::new(Legacy(llm.clone()))));
        let measured = per_event(model.as_ref());
        let bytes = bytes_per_event(profile);
        support::report(
            &format!("{profile}, per event ({bytes} B)"),
            measured,
            "pre-profile wire, per event",
            baseline,
        );
    }
}
