//! Serving a recorded exchange against SimLLM answering the same request.
//!
//! The bar: replaying a cassette is at least as fast as SimLLM answering. Each
//! case sends the same 1 KB extraction request through umi-core's client for the
//! profile (`client_for`) to a SimNetwork endpoint, twice over, in the same run:
//!
//! - **SimLLM**: the endpoint's SimLLM (no latency) answers, SimNetwork encodes it;
//! - **replay**: the endpoint replays a cassette recorded from the SimLLM case (through
//!   umi-core's `RecordingTransport`), so the recorded bytes answer instead.
//!
//! Both run with the same read splits, network and client; the difference is where the
//! bytes come from. Printed: requests/s of each and the throughput ratio replay/SimLLM
//! (1.00 or more: replay is at least as fast). Run with
//! `cargo bench -p umi-dst --bench cassette`.

#![allow(
    missing_docs,
    clippy::print_stdout,
    reason = "a bench binary prints its figures"
)]

mod support;

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use umi_core::cassette::{Cassette, CassetteWriter, Header, RecordingTransport};
use umi_core::llm::{CompletionRequest, LanguageModel, ModelRef, StreamCollector};
use umi_core::memory::tasks::extraction_request;
use umi_dst::network::{ClientOptions, Profile, ReplayOptions, base_url_for, client_for};
use umi_dst::{Endpoint, SimConfig, SimEnvironment, SimLlm, SimLlmConfig, SimNetwork};

/// The endpoints' host.
const HOST: &str = "bench.sim";

/// Requests per batch.
const ITERATIONS: u64 = 300;

/// What every case shares: the runtime, the simulation, SimLLM and the request.
struct Bench {
    runtime: tokio::runtime::Runtime,
    sim: SimEnvironment,
    model_ref: ModelRef,
    llm: Arc<SimLlm>,
    request: CompletionRequest,
}

impl Bench {
    fn new() -> Self {
        let runtime = support::sim_runtime();
        let sim = {
            let _guard = runtime.enter();
            // Every call takes steps (trace events, coverage marks); a bench makes many.
            let config = SimConfig::new(1).with_steps_max(umi_dst::constants::SIM_STEPS_MAX);
            SimEnvironment::new(&config).unwrap()
        };
        let model_ref = ModelRef::new("bench", "bench-model", 32_768, 2_048);
        let config = SimLlmConfig::default()
            .with_model(model_ref.clone())
            .without_latency();
        let llm = Arc::new(SimLlm::with_config(&sim, config).unwrap());
        let sentence =
            "Alice met Bob Smith at Acme Corp in Paris to plan the Berlin Summit with Initech. ";
        let request = extraction_request(&sentence.repeat(13)[..1024]);
        Self {
            runtime,
            sim,
            model_ref,
            llm,
            request,
        }
    }

    /// umi-core's client for `profile` over `network`.
    fn client(&self, profile: Profile, network: Arc<SimNetwork>) -> Arc<dyn LanguageModel> {
        client_for(
            profile,
            &base_url_for(profile, HOST),
            self.model_ref.clone(),
            &ClientOptions::default(),
            network,
            self.sim.env(),
        )
    }

    /// One request through `client`, answered in full.
    async fn ask(&self, client: &dyn LanguageModel, stream: bool) {
        let response = if stream {
            let events = client.stream(&self.request).await.unwrap();
            StreamCollector::collect("m", events).await.unwrap()
        } else {
            client.complete(&self.request).await.unwrap()
        };
        black_box(response);
    }

    /// A SimNetwork whose endpoint for `profile` is SimLLM, or replays `cassette`.
    fn network(&self, profile: Profile, cassette: Option<Arc<Cassette>>) -> Arc<SimNetwork> {
        let endpoint =
            Endpoint::openai(&base_url_for(profile, HOST), self.llm.clone()).with_profile(profile);
        let endpoint = match cassette {
            Some(cassette) => endpoint.with_cassette(cassette, ReplayOptions::default()),
            None => endpoint,
        };
        Arc::new(SimNetwork::new(&self.sim).with_endpoint(endpoint))
    }

    /// SimLLM's answer to the request, recorded through umi-core's recording transport.
    fn record(&self, profile: Profile, stream: bool) -> Arc<Cassette> {
        let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("bench-cassette-{profile}-{stream}.jsonl"));
        let url = base_url_for(profile, HOST);
        {
            let writer =
                CassetteWriter::create(&path, &Header::new("cassette bench", Some(&url))).unwrap();
            let network = self.network(profile, None);
            let recorder = RecordingTransport::new(network, writer, self.sim.env(), &url);
            let client = client_for(
                profile,
                &url,
                self.model_ref.clone(),
                &ClientOptions::default(),
                Arc::new(recorder),
                self.sim.env(),
            );
            self.runtime.block_on(self.ask(client.as_ref(), stream));
        }
        let cassette = Cassette::load(&path).unwrap();
        assert_eq!(cassette.exchanges.len(), 1, "{profile} stream={stream}");
        Arc::new(cassette)
    }

    /// Time per request through `client`.
    fn per_request(&self, client: &dyn LanguageModel, stream: bool) -> Duration {
        support::measure_batch(ITERATIONS, |n| {
            self.runtime.block_on(async {
                for _ in 0..n {
                    self.ask(client, stream).await;
                }
            });
        })
    }

    /// Measures one case and prints it.
    fn case(&self, name: &str, profile: Profile, stream: bool) {
        let _guard = self.runtime.enter();
        let cassette = self.record(profile, stream);
        let simulated = self.client(profile, self.network(profile, None));
        let replayed = self.client(profile, self.network(profile, Some(cassette)));
        // For profiling: UMI_BENCH_ONLY=replay runs only the replay loops.
        if std::env::var("UMI_BENCH_ONLY").as_deref() == Ok("replay") {
            self.runtime.block_on(async {
                for _ in 0..20_000 {
                    self.ask(replayed.as_ref(), stream).await;
                }
            });
            return;
        }
        let sim_llm = self.per_request(simulated.as_ref(), stream);
        let replay = self.per_request(replayed.as_ref(), stream);
        let per_second = |d: Duration| 1.0 / d.as_secs_f64().max(1e-12);
        println!(
            "{name:<28} SimLLM {:>9.0} req/s ({:>9})   replay {:>9.0} req/s ({:>9})   replay/SimLLM {:>5.2}x",
            per_second(sim_llm),
            support::show(sim_llm),
            per_second(replay),
            support::show(replay),
            per_second(replay) / per_second(sim_llm),
        );
    }
}

fn main() {
    println!(
        "umi-dst cassette replay vs SimLLM, 1 KB extraction (median of {} batches of {ITERATIONS})",
        support::BATCHES
    );
    let bench = Bench::new();
    bench.case("OpenAI chat, whole", Profile::OpenAi, false);
    bench.case("OpenAI chat, streamed", Profile::OpenAi, true);
    bench.case("Anthropic, streamed", Profile::Anthropic, true);
}
