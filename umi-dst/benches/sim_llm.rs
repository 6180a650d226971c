//! SimLLM's per-call and per-event cost.
//!
//! Run with `make bench` or `cargo bench -p umi-dst --bench sim_llm`. The floor, measured
//! in the same run: SHA-256 of the prompt plus serializing the same response with
//! serde_json, the least any simulated model that hashes its input and produces this
//! answer must do. The goal (issue 41): `complete` within 2x of it.

#![allow(
    missing_docs,
    clippy::print_stdout,
    reason = "a bench binary prints its figures"
)]

mod support;

use std::hint::black_box;

use futures::StreamExt;
use sha2::{Digest, Sha256};
use umi_core::llm::{LanguageModel, StreamCollector};
use umi_core::memory::tasks::extraction_request;
use umi_dst::{SimConfig, SimEnvironment, SimLlm, SimLlmConfig};

/// About 1 KB of text with names to extract.
fn text_1kb() -> String {
    let sentence =
        "Alice met Bob Smith at Acme Corp in Paris to plan the Berlin Summit with Initech. ";
    sentence.repeat(1024 / sentence.len() + 1)[..1024].to_owned()
}

fn main() {
    println!("umi-dst SimLLM (median of {} batches)", support::BATCHES);
    let runtime = support::sim_runtime();
    let _guard = runtime.enter();
    let sim = SimEnvironment::new(&SimConfig::new(1)).unwrap();
    let request = extraction_request(&text_1kb());
    let prompt_bytes = request.prompt_text().into_bytes();

    let instant = SimLlm::with_config(&sim, SimLlmConfig::default().without_latency()).unwrap();
    // For profiling: UMI_BENCH_ONLY=complete runs only the no-latency `complete` loop.
    if std::env::var("UMI_BENCH_ONLY").as_deref() == Ok("complete") {
        runtime.block_on(async {
            for _ in 0..200_000 {
                black_box(instant.complete(&request).await.unwrap());
            }
        });
        return;
    }
    let response = runtime.block_on(instant.complete(&request)).unwrap();
    let floor = support::measure(20_000, |_| {
        black_box(Sha256::digest(&prompt_bytes));
        black_box(serde_json::to_string(&response).unwrap());
    });
    let complete_instant = support::measure_batch(5_000, |n| {
        runtime.block_on(async {
            for _ in 0..n {
                black_box(instant.complete(&request).await.unwrap());
            }
        });
    });
    support::report(
        "complete, 1 KB extraction (no latency)",
        complete_instant,
        "SHA-256(prompt) + serialize response",
        floor,
    );

    let timed = SimLlm::new(&sim);
    let complete_timed = support::measure_batch(5_000, |n| {
        runtime.block_on(async {
            for _ in 0..n {
                black_box(timed.complete(&request).await.unwrap());
            }
        });
    });
    support::report(
        "complete, 1 KB extraction (latency on)",
        complete_timed,
        "SHA-256(prompt) + serialize response",
        floor,
    );

    // Per streamed event: stream() and drain, divided by the events sent.
    let events_per_call =
        runtime.block_on(async { timed.stream(&request).await.unwrap().count().await }) as u32;
    let streamed = support::measure_batch(2_000, |n| {
        runtime.block_on(async {
            for _ in 0..n {
                let mut stream = timed.stream(&request).await.unwrap();
                while let Some(item) = stream.next().await {
                    black_box(item.unwrap());
                }
            }
        });
    }) / events_per_call;
    let events: Vec<_> = runtime.block_on(async {
        instant
            .stream(&request)
            .await
            .unwrap()
            .map(Result::unwrap)
            .collect::<Vec<_>>()
            .await
    });
    let collect = support::measure(20_000, |_| {
        let mut collector = StreamCollector::new("m");
        for event in &events {
            collector.push(event.clone()).unwrap();
        }
        black_box(collector.finish().unwrap());
    }) / events.len() as u32;
    println!("  ({events_per_call} events per streamed answer)");
    support::report(
        "per streamed event (latency on)",
        streamed,
        "StreamCollector::push per event",
        collect,
    );
}
