//! Scenario `wire_faults`: the real OpenAI-compatible and Ollama clients over a faulty
//! network.
//!
//! Workload: twelve calls, whole answers and streams, some offering tools, through the
//! real clients to SimNetwork, which serves SimLLMs in the real wire formats (SSE,
//! NDJSON, JSON, error bodies, Retry-After headers) while connections are refused,
//! reset or cut short, first bytes come late, servers stall, and models refuse or break
//! their answers.
//!
//! Invariants:
//! 1. The timeouts are exact: the client never waits longer than its request timeout
//!    for the headers or longer than its idle timeout for the next bytes, and a timeout
//!    error comes exactly that long after the request or the last bytes (measured by a
//!    transport wrapper that timestamps what the client reads).
//! 2. A stream ends after its first error.
//! 3. Errors are typed as the fault was: timeouts, connection errors, truncations,
//!    refusals, broken answers; a 429 whose server sent a Retry-After reaches the caller
//!    with at least the wait the server meant, and one that sent none with none. Never
//!    an error that blames the request (bad request, auth, invalid prompt).
//! 4. A call during which no fault fired succeeds, and its answer has the contract's
//!    shape: the configured model, tool calls exactly when the finish reason says so.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use umi_core::env::Env;
use umi_core::llm::ollama::{OllamaClient, OllamaConfig};
use umi_core::llm::openai::{OpenAiClient, OpenAiConfig};
use umi_core::llm::transport::{HttpRequest, HttpResponse, Transport, TransportError};
use umi_core::llm::{
    CompletionRequest, CompletionResponse, Connection, FinishReason, LanguageModel, LlmError,
    LlmErrorKind, ModelRef, StreamCollector,
};
use umi_dst::{Endpoint, FaultConfig, FaultKind, SimEnvironment, SimNetwork, Violation, ensure};

use crate::common::{chat, sim_model, tool_definitions};

/// Calls per seed.
const CALLS_PER_SEED: usize = 12;

/// The clients' request timeout.
const TIMEOUT: Duration = Duration::from_secs(15);

/// The clients' idle timeout between body chunks.
const IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// The error kinds a faulty network or model may cause.
const FAULT_ERRORS: [LlmErrorKind; 8] = [
    LlmErrorKind::Timeout,
    LlmErrorKind::RateLimit,
    LlmErrorKind::Connection,
    LlmErrorKind::StreamTruncated,
    LlmErrorKind::InvalidResponse,
    LlmErrorKind::Json,
    LlmErrorKind::ServiceUnavailable,
    LlmErrorKind::EmptyStream,
];

/// The scenario.
#[umi_dst::scenario(
    goal = "the real clients turn every network fault into a typed error within their timeouts",
    faults = [
        FaultConfig::chance(FaultKind::NetworkConnectionRefused, 0.05),
        FaultConfig::chance(FaultKind::NetworkReset, 0.08),
        FaultConfig::chance(FaultKind::NetworkTimeout, 0.04),
        FaultConfig::chance(FaultKind::NetworkPartialWrite, 0.08),
        FaultConfig::chance(FaultKind::NetworkSlowFirstByte, 0.1),
        FaultConfig::chance(FaultKind::LlmRateLimit, 0.05),
        FaultConfig::chance(FaultKind::LlmStreamCut, 0.05),
        FaultConfig::chance(FaultKind::LlmInvalidResponse, 0.05),
        FaultConfig::chance(FaultKind::LlmTimeout, 0.04),
    ],
    marks = [
        "wire.idle_timeout",
        "wire.stream_truncated",
        "wire.connection_broken",
        "wire.retry_after_header",
    ],
    run = run,
    rank = 90,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct WireFaults;

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let (network, clock, clients) = wire_clients(&sim);
    let env = sim.env();
    let mut workload = sim.task_rng("workload.calls");
    for index in 0..CALLS_PER_SEED {
        let client = &clients[index % 2];
        let mut request = chat(&format!("call {index}: plan my week"), "wire");
        if workload.bool_with(0.4) {
            request = request.with_tools(tool_definitions());
        }
        let stream = workload.bool_with(0.5);
        let faults_before = sim.faults().injected_total();
        let label = format!(
            "call {index} ({} {})",
            client.model_ref().id(),
            if stream { "stream" } else { "complete" }
        );
        clock.reset();
        let result = if stream {
            streamed(client.as_ref(), &request, &label).await?
        } else {
            client.complete(&request).await
        };
        clock.check_timing(&label, env.elapsed(), result.as_ref().err())?;
        let faulted = sim.faults().injected_total() > faults_before;
        check_result(&label, client.model_ref(), &network, faulted, result)?;
    }
    Ok(())
}

/// The simulated network (an OpenAI and an Ollama endpoint, captured), the byte clock
/// in front of it, and the two real clients over that clock.
fn wire_clients(
    sim: &SimEnvironment,
) -> (Arc<SimNetwork>, Arc<ByteClock>, [Arc<dyn LanguageModel>; 2]) {
    let (openai_url, ollama_url) = ("https://api.openai.sim/v1", "http://ollama.sim:11434");
    let openai_ref = ModelRef::new("openai", "gpt-sim", 32_768, 2_048);
    let ollama_ref = ModelRef::new("ollama", "qwen3:8b", 32_768, 2_048);
    let network = SimNetwork::new(sim)
        .with_endpoint(
            Endpoint::openai(
                openai_url,
                sim_model(sim, "openai", "gpt-sim", 32_768, |c| c),
            )
            .with_api_key("sk-sim"),
        )
        .with_endpoint(Endpoint::ollama(
            ollama_url,
            sim_model(sim, "ollama", "qwen3:8b", 32_768, |c| c),
        ))
        .with_capture();
    let network = Arc::new(network);
    let clock = Arc::new(ByteClock {
        inner: network.clone(),
        env: sim.env(),
        reads: Arc::new(Mutex::new(Reads::default())),
    });
    let transport: Arc<dyn Transport> = clock.clone();
    let with_timeouts = |mut connection: Connection| {
        (connection.timeout, connection.idle_timeout) = (TIMEOUT, IDLE_TIMEOUT);
        connection
    };
    let openai = OpenAiConfig::new(
        with_timeouts(Connection::new(openai_url).with_api_key("sk-sim")),
        openai_ref,
    );
    let ollama = OllamaConfig::new(with_timeouts(Connection::new(ollama_url)), ollama_ref);
    let clients: [Arc<dyn LanguageModel>; 2] = [
        Arc::new(OpenAiClient::new(openai, transport.clone(), sim.env())),
        Arc::new(OllamaClient::new(ollama, transport, sim.env())),
    ];
    (network, clock, clients)
}

/// One call's result: a clean call answers well; a faulted one answers as its model or
/// fails with an error the faults explain (a 429's Retry-After carried through).
fn check_result(
    label: &str,
    model: &ModelRef,
    network: &SimNetwork,
    faulted: bool,
    result: Result<CompletionResponse, LlmError>,
) -> Result<(), Violation> {
    match result {
        Ok(response) if !faulted => check_response(label, model, &response)?,
        Ok(response) => ensure!(
            response.model == model.model,
            "{label} answered as model {:?}",
            response.model
        ),
        Err(error) => {
            ensure!(faulted, "{label} failed though no fault fired: {error}");
            ensure!(
                FAULT_ERRORS.contains(&error.kind()),
                "{label} failed with {}: {error}",
                error.kind()
            );
            if let LlmError::RateLimit { retry_after_ms } = &error {
                check_retry_after(label, network, *retry_after_ms)?;
            }
        }
    }
    Ok(())
}

/// The Retry-After the caller got is what the last 429 meant: at least its wait (an
/// HTTP date or whole seconds round up), or none when it sent none.
fn check_retry_after(label: &str, network: &SimNetwork, got: Option<u64>) -> Result<(), Violation> {
    let meant = network.with_exchanges(|all| {
        all.iter()
            .rev()
            .find(|exchange| exchange.status == 429)
            .map(|exchange| exchange.retry_after_meant_ms)
    });
    match (meant, got) {
        (Some(None), None) => Ok(()),
        (Some(Some(meant)), Some(got)) if got >= meant && got <= meant + 2_000 => Ok(()),
        (meant, got) => Err(Violation::new(format!(
            "{label}: the last 429 meant a wait of {meant:?} ms, the caller got {got:?}"
        ))),
    }
}

/// Streams `request` through the real collector; a stream must end after its error.
pub(crate) async fn streamed(
    client: &dyn LanguageModel,
    request: &CompletionRequest,
    label: &str,
) -> Result<Result<CompletionResponse, LlmError>, Violation> {
    let mut events = match client.stream(request).await {
        Ok(events) => events,
        Err(error) => return Ok(Err(error)),
    };
    let mut collector = StreamCollector::new(client.model_ref().model.clone());
    let mut failure = None;
    while let Some(item) = events.next().await {
        if let Some(error) = &failure {
            return Err(Violation::new(format!(
                "{label}: the stream went on after its error {error}: {item:?}"
            )));
        }
        match item {
            Ok(event) => {
                if let Err(error) = collector.push(event) {
                    return Ok(Err(error));
                }
            }
            Err(error) => failure = Some(error),
        }
    }
    Ok(match failure {
        Some(error) => Err(error),
        None => collector.finish(),
    })
}

/// When the client sent its request, got the headers, and read bytes, for one call.
#[derive(Debug, Default)]
struct Reads {
    sent_at: Option<Duration>,
    headers_at: Option<Duration>,
    last_read_at: Option<Duration>,
    longest_wait: Duration,
}

/// A transport that timestamps what the client reads (invariant 1).
#[derive(Debug)]
struct ByteClock {
    inner: Arc<dyn Transport>,
    env: Env,
    reads: Arc<Mutex<Reads>>,
}

impl ByteClock {
    fn reset(&self) {
        *self.reads.lock().unwrap_or_else(PoisonError::into_inner) = Reads::default();
    }

    /// Invariant 1 for the call that just ended at `now` with `error`, if any.
    fn check_timing(
        &self,
        label: &str,
        now: Duration,
        error: Option<&LlmError>,
    ) -> Result<(), Violation> {
        let reads = self.reads.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(sent_at) = reads.sent_at else {
            return Ok(()); // refused before sending (an invalid request): nothing to time
        };
        ensure!(
            reads.longest_wait <= IDLE_TIMEOUT,
            "{label}: the client waited {:?} for bytes, over its idle timeout",
            reads.longest_wait
        );
        match reads.headers_at {
            Some(headers_at) => ensure!(
                headers_at - sent_at <= TIMEOUT,
                "{label}: headers after {:?}, over the request timeout",
                headers_at - sent_at
            ),
            None if matches!(error, Some(LlmError::Timeout { .. })) => {
                ensure!(
                    now - sent_at == TIMEOUT,
                    "{label}: timed out {:?} after sending, not the request timeout {TIMEOUT:?}",
                    now - sent_at
                );
            }
            None => {}
        }
        if let (Some(LlmError::Timeout { .. }), Some(last)) = (error, reads.last_read_at) {
            ensure!(
                now - last == IDLE_TIMEOUT,
                "{label}: timed out {:?} after the last bytes, not the idle timeout {IDLE_TIMEOUT:?}",
                now - last
            );
        }
        Ok(())
    }
}

#[async_trait]
impl Transport for ByteClock {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        self.reads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .sent_at = Some(self.env.elapsed());
        let mut response = self.inner.send(request).await?;
        let now = self.env.elapsed();
        {
            let mut reads = self.reads.lock().unwrap_or_else(PoisonError::into_inner);
            (reads.headers_at, reads.last_read_at) = (Some(now), Some(now));
        }
        let (env, reads) = (self.env.clone(), self.reads.clone());
        response.body = response
            .body
            .inspect(move |_| {
                let now = env.elapsed();
                let mut reads = reads.lock().unwrap_or_else(PoisonError::into_inner);
                let waited = now - reads.last_read_at.unwrap_or(now);
                reads.longest_wait = reads.longest_wait.max(waited);
                reads.last_read_at = Some(now);
            })
            .boxed();
        Ok(response)
    }
}

fn check_response(
    label: &str,
    model: &ModelRef,
    response: &CompletionResponse,
) -> Result<(), Violation> {
    ensure!(
        response.model == model.model,
        "{label} answered as model {:?}, not {:?}",
        response.model,
        model.model
    );
    ensure!(
        response.tool_calls.is_empty() != (response.finish_reason == FinishReason::ToolCalls),
        "{label}: finish reason {:?} with {} tool calls",
        response.finish_reason,
        response.tool_calls.len()
    );
    ensure!(
        !response.text.is_empty()
            || !response.tool_calls.is_empty()
            || response.finish_reason != FinishReason::Stop,
        "{label}: an empty answer that claims to have stopped naturally"
    );
    Ok(())
}
