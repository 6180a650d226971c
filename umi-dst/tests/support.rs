//! Workloads the self-tests run.

use std::collections::BTreeMap;
use std::time::Duration;

use sha2::{Digest, Sha256};
use umi_core::env::EnvironmentExt;
use umi_core::llm::{
    CompletionRequest, CompletionResponse, LanguageModel, LlmError, Message, StreamCollector,
    ToolDefinition,
};
use umi_dst::fault::point;
use umi_dst::{FaultKind, SimEnvironment, Violation, ensure};

/// A toy key-value store with a planted bug: when a write fails it still acknowledges
/// the write. A sweep over seeds with `storage.write_fail` on must find it.
pub(crate) struct LossyStore {
    sim: SimEnvironment,
    data: BTreeMap<u64, u64>,
}

impl LossyStore {
    pub(crate) fn new(sim: SimEnvironment) -> Self {
        Self {
            sim,
            data: BTreeMap::new(),
        }
    }

    /// Writes `value` under `key`. The planted bug: a failed write returns `Ok`.
    pub(crate) async fn put(&mut self, key: u64, value: u64) -> Result<(), &'static str> {
        let env = self.sim.env();
        env.sleep(Duration::from_millis(env.random_in_range(
            "store.latency",
            1,
            20,
        )))
        .await;
        if self.sim.fault(&point::STORAGE_WRITE) == Some(FaultKind::StorageWriteFail) {
            env.record("store.write_failed", format_args!("key={key}"));
            return Ok(()); // BUG (planted): the failure is swallowed and the write acknowledged.
        }
        self.data.insert(key, value);
        Ok(())
    }

    pub(crate) fn get(&self, key: u64) -> Option<u64> {
        self.data.get(&key).copied()
    }
}

/// Writes 20 keys and checks every acknowledged write can be read back.
pub(crate) async fn lossy_store_workload(sim: SimEnvironment) -> Result<(), Violation> {
    let mut store = LossyStore::new(sim.clone());
    let mut acknowledged = Vec::new();
    for key in 0..20 {
        let value = sim.env().random_u64("workload.values");
        if store.put(key, value).await.is_ok() {
            acknowledged.push((key, value));
        }
    }
    for (key, value) in acknowledged {
        ensure!(
            store.get(key) == Some(value),
            "acknowledged write of key {key} was lost"
        );
    }
    Ok(())
}

/// A busy run: concurrent tasks sleeping random amounts, drawing from several streams,
/// reading the wall clock, hitting faults and recording events. Its trace hash is what
/// the determinism tests compare.
pub(crate) async fn busy_workload(sim: SimEnvironment) -> Result<(), Violation> {
    let mut tasks = Vec::new();
    for worker in 0..4u64 {
        let sim = sim.clone();
        tasks.push(tokio::spawn(async move {
            let env = sim.env();
            let mut total = 0u64;
            for step in 0..25u64 {
                let wait = env.random_in_range(&format!("worker.{worker}"), 1, 500);
                env.sleep(Duration::from_millis(wait)).await;
                if let Some(kind) = sim.fault(&point::LLM_CALL) {
                    env.record(
                        "worker.fault",
                        format_args!("worker={worker} step={step} {kind}"),
                    );
                }
                total = total.wrapping_add(env.random_u64("shared"));
                if step % 5 == 0 {
                    let prompt =
                        format!("worker {worker} step {step}: what did Alice tell Acme Corp?");
                    let request = CompletionRequest::new(vec![Message::user(prompt)]);
                    let answer = match sim.llm().complete(&request).await {
                        Ok(response) => {
                            format!("{} {}", response.finish_reason.as_str(), response.text)
                        }
                        Err(error) => error.to_string(),
                    };
                    let digest: String = Sha256::digest(answer.as_bytes())[..8]
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect();
                    env.record(
                        "worker.llm",
                        format_args!("worker={worker} step={step} answer={digest}"),
                    );
                }
                env.record(
                    "worker.step",
                    format_args!("worker={worker} step={step} wall={}", env.unix_time_ms()),
                );
            }
            total
        }));
    }
    let mut sum = 0u64;
    for task in tasks {
        sum = sum.wrapping_add(task.await?);
    }
    sim.env().record("workload.done", format_args!("sum={sum}"));
    Ok(())
}

/// The request the format tests ask: a long answer, so a stream has many events.
pub(crate) fn ask_for_a_story() -> CompletionRequest {
    CompletionRequest::new(vec![Message::user(
        "tell me a long story about Alice and Bob",
    )])
}

/// `request` answered by `llm`: whole (`complete`), or streamed and collected.
pub(crate) async fn answer(
    llm: &dyn LanguageModel,
    request: &CompletionRequest,
    stream: bool,
) -> Result<CompletionResponse, LlmError> {
    if !stream {
        return llm.complete(request).await;
    }
    let events = llm.stream(request).await?;
    StreamCollector::collect(llm.model_ref().model.clone(), events).await
}

/// The weather tool the format tests offer.
pub(crate) fn weather_tool() -> ToolDefinition {
    ToolDefinition::new(
        "get_weather",
        "Weather for a city.",
        serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )
}

/// The model the third-party judges read: a SimLLM without latency (`reasoning`: with
/// reasoning, for the formats that stream it).
pub(crate) fn judge_model(
    sim: &SimEnvironment,
    model_ref: umi_core::llm::ModelRef,
    reasoning: bool,
) -> std::sync::Arc<umi_dst::SimLlm> {
    let mut config = umi_dst::SimLlmConfig::default()
        .with_model(model_ref)
        .without_latency();
    if reasoning {
        config = config.with_reasoning();
    }
    std::sync::Arc::new(umi_dst::SimLlm::with_config(sim, config).expect("a valid SimLLM config"))
}

/// Seed `seed` of a third-party judge: a third of the seeds meet model and network faults
/// (errors, cut streams) at one chance in five each.
pub(crate) fn judged_seed_config(seed: u64) -> umi_dst::SimConfig {
    let mut config = umi_dst::SimConfig::new(seed);
    if seed.is_multiple_of(3) {
        for kind in [
            FaultKind::LlmRateLimit,
            FaultKind::LlmStreamCut,
            FaultKind::LlmContextOverflow,
            FaultKind::LlmServiceUnavailable,
            FaultKind::LlmContentFilter,
        ] {
            config = config.with_fault(umi_dst::FaultConfig::chance(kind, 0.2));
        }
    }
    config
}

/// The request of judged seed `seed`: a weather question, offering `tools` on half the
/// seeds.
pub(crate) fn judged_request(seed: u64, tools: Vec<ToolDefinition>) -> CompletionRequest {
    let request = CompletionRequest::new(vec![Message::user(format!(
        "seed {seed}: what is the weather in Oslo?"
    ))]);
    if seed % 4 < 2 {
        request.with_tools(tools)
    } else {
        request
    }
}

/// `http` sent through `network`: the status and the body's reads (a read that failed,
/// as a cut connection's last one does, is left out: the judges see the bytes).
pub(crate) async fn read_exchange(
    network: &umi_dst::SimNetwork,
    http: umi_core::llm::transport::HttpRequest,
) -> Result<(u16, Vec<Vec<u8>>), umi_core::llm::transport::TransportError> {
    use futures::StreamExt;
    use umi_core::llm::transport::Transport;
    let response = network.send(http).await?;
    let reads = response
        .body
        .filter_map(|read| async move { read.ok() })
        .collect()
        .await;
    Ok((response.status, reads))
}

/// What Umi's client makes of an exchange's bytes in `format`: the response, or `None`
/// for an error (a status other than 200, or bytes the client refuses).
pub(crate) fn umi_reading(
    format: umi_dst::network::WireFormat,
    reads: &[Vec<u8>],
    stream: bool,
    status: u16,
    model: &str,
) -> Option<CompletionResponse> {
    use umi_dst::network::WireFormat;
    if status != 200 {
        return None;
    }
    if stream {
        let decoded =
            umi_dst::checkers::wire::decode_as_client(format, reads.iter().map(Vec::as_slice));
        return decoded.collect(model).ok();
    }
    let body = String::from_utf8_lossy(&reads.concat()).into_owned();
    let whole = match format {
        WireFormat::OpenAiChat => umi_core::llm::openai::parse_response(&body, model),
        WireFormat::OpenAiResponses => umi_core::llm::responses::parse_response(&body, model),
        WireFormat::AnthropicMessages => umi_core::llm::anthropic::parse_response(&body, model),
        WireFormat::Ollama => umi_core::llm::ollama::parse_response(&body, model),
        WireFormat::Gemini => umi_core::llm::gemini::parse_response(&body, model),
        other => panic!("umi_reading: no whole-body parser for {other:?}"),
    };
    whole.ok()
}

/// The model refusals the router acts on, each with the HTTP status a whole answer
/// carries: a rate limit (429), the service unavailable (`unavailable_status`: 503 at
/// OpenAI, 529 "overloaded" at Anthropic), a context overflow (400).
pub(crate) fn refusals(
    unavailable_status: u16,
) -> [(FaultKind, umi_core::llm::LlmErrorKind, u16); 3] {
    use umi_core::llm::LlmErrorKind;
    [
        (FaultKind::LlmRateLimit, LlmErrorKind::RateLimit, 429),
        (
            FaultKind::LlmServiceUnavailable,
            LlmErrorKind::ServiceUnavailable,
            unavailable_status,
        ),
        (
            FaultKind::LlmContextOverflow,
            LlmErrorKind::ContextOverflow,
            400,
        ),
    ]
}

/// A simulation of seed `seed` in which fault `kind` fires once, at its first chance.
pub(crate) fn fault_once(seed: u64, kind: FaultKind) -> umi_dst::Simulation {
    let fault = umi_dst::FaultConfig::always(kind).with_max_injections(1);
    umi_dst::Simulation::new(umi_dst::SimConfig::new(seed).with_fault(fault))
}
