//! What counting a run's usage costs, against the SimLLM call it counts.
//!
//! The bar: counting usage and cost takes at most 5% of sweep throughput. A
//! seed does more than call the model (tools, storage, checkers, the runner), so the
//! share of a *model call* that goes to counting is an upper bound on the share of a
//! seed. Measured in the same run:
//!
//! - **baseline**: SimLLM `complete` of a 1 KB extraction request, no latency (the
//!   ledger's work included, as in every run);
//! - **counting**: what SimLLM adds per call for the ledger: the conversation hash, the
//!   ledger's `call` and `answer`, and at the end of a 16-call run the run's usage, its
//!   cost from a price table and a fresh ledger (their cost spread over the calls).
//!
//! Printed: the time of each and their ratio (0.05 or less meets the bar). Run with
//! `cargo bench -p umi-dst --bench usage`.

#![allow(
    missing_docs,
    clippy::print_stdout,
    reason = "a bench binary prints its figures"
)]

mod support;

use std::hint::black_box;
use std::time::Duration;

use umi_core::llm::{LanguageModel, TokenUsage};
use umi_core::memory::tasks::extraction_request;
use umi_dst::llm::conversation_hash;
use umi_dst::usage::{PriceTable, UsageLedger};
use umi_dst::{SimConfig, SimEnvironment, SimLlm, SimLlmConfig};

/// Calls per simulated run in the counting case.
const CALLS_PER_RUN: u64 = 16;

fn text_1kb() -> String {
    let sentence =
        "Alice met Bob Smith at Acme Corp in Paris to plan the Berlin Summit with Initech. ";
    sentence.repeat(1024 / sentence.len() + 1)[..1024].to_owned()
}

fn main() {
    println!(
        "umi-dst usage counting (median of {} batches)",
        support::BATCHES
    );
    let runtime = support::sim_runtime();
    let _guard = runtime.enter();
    let sim = SimEnvironment::new(&SimConfig::new(1)).unwrap();
    let request = extraction_request(&text_1kb());
    let llm = SimLlm::with_config(&sim, SimLlmConfig::default().without_latency()).unwrap();
    let prices = PriceTable::parse(
        "[models.sim-large]\ninput = 2500000\ncached_input = 1250000\noutput = 10000000\nreasoning = 10000000\n",
        "bench",
    )
    .unwrap();
    let usage = TokenUsage::new(300, 120);
    let complete = support::measure_batch(5_000, |n| {
        runtime.block_on(async {
            for _ in 0..n {
                black_box(llm.complete(&request).await.unwrap());
            }
        });
    });
    let mut ledger = UsageLedger::default();
    let counting = support::measure(20_000, |i| {
        let conversation = conversation_hash(&request);
        let call = ledger.call("sim-large", conversation, Duration::from_millis(i));
        ledger.answer(call, "sim-large", &usage, 1, Duration::from_millis(i + 5));
        if i % CALLS_PER_RUN == CALLS_PER_RUN - 1 {
            let run = ledger.usage();
            black_box(run.cost_micros(&prices).unwrap());
            ledger = UsageLedger::default();
        }
    });
    let hashing = support::measure(20_000, |_| {
        black_box(conversation_hash(black_box(&request)));
    });
    support::report(
        "  of which the conversation hash",
        hashing,
        "SimLLM complete, 1 KB (no latency)",
        complete,
    );
    support::report(
        "counting per model call",
        counting,
        "SimLLM complete, 1 KB (no latency)",
        complete,
    );
}
