//! Same seed, same trace hash: within a process, and across processes.
//!
//! The cross-process test runs this very test binary twice as child processes, each
//! replaying one seed of `determinism::probe` with `DST_PRINT_HASH=1`, and compares the
//! hashes they print with each other and with the hash computed here. HashMap seeds,
//! addresses and thread ids differ between processes, so a leak of any of them into a
//! run shows up here.
//!
//! And the same bytes whatever serde_json's map type: `wire_bytes_do_not_depend_on_map_order`
//! pins what every profile's server sends for requests whose JSON is out of sorted key
//! order, in the default build and (through `make test`) in the `rig` build, whose
//! rig-core turns on `preserve_order`.

use std::process::Command;
use std::sync::{Arc, Mutex};

use serde_json::json;
use sha2::{Digest, Sha256};
use umi_core::llm::{
    CompletionRequest, Message, ModelRef, StreamCollector, ToolCall, ToolDefinition,
};
use umi_dst::network::{ClientOptions, Profile, base_url_for, client_for};
use umi_dst::simulation::settings::Settings;
use umi_dst::{
    Endpoint, FaultConfig, FaultKind, SimConfig, SimEnvironment, SimLlm, SimLlmConfig, SimNetwork,
    Simulation,
};

use crate::support::busy_workload;

const PROBE_SEED: u64 = 4242;

fn busy_faults() -> [FaultConfig; 3] {
    [
        FaultConfig::chance(FaultKind::LlmRateLimit, 0.1),
        FaultConfig::chance(FaultKind::ClockJump, 0.02),
        FaultConfig::chance(FaultKind::LlmStreamCut, 0.2),
    ]
}

/// The workload the child processes replay; in a normal `cargo test` it runs on the
/// default seeds with the determinism check on.
#[test]
fn probe() {
    Simulation::from_env()
        .with_faults(busy_faults())
        .with_determinism_check(true)
        .run(busy_workload);
}

fn hash_in_child() -> String {
    let exe = std::env::current_exe().expect("test binary path");
    let output = Command::new(exe)
        .args([
            "determinism::probe",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("DST_SEED", PROBE_SEED.to_string())
        .env("DST_PRINT_HASH", "1")
        .env_remove("DST_CHECK_DETERMINISM")
        .env_remove("DST_TRACE")
        .output()
        .expect("spawn the test binary");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "child failed:\n{stderr}");
    let prefix = format!("umi-trace-hash seed={PROBE_SEED} hash=");
    stderr
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no hash line in child output:\n{stderr}"))
        .trim()
        .to_owned()
}

#[test]
fn same_seed_same_hash_across_processes() {
    let here = Simulation::new(SimConfig::new(PROBE_SEED))
        .with_faults(busy_faults())
        .try_run(busy_workload)
        .unwrap();
    let here = here.seeds[0].trace_hash.to_string();
    let first = hash_in_child();
    let second = hash_in_child();
    assert_eq!(first, second, "two processes, one seed, two traces");
    assert_eq!(first, here, "a child process and this one disagree");
}

#[test]
fn different_seeds_give_different_traces() {
    let summary = Simulation::new(SimConfig::new(0))
        .with_faults(busy_faults())
        .with_seeds([1, 2, 3])
        .try_run(busy_workload)
        .unwrap();
    let hashes: std::collections::BTreeSet<_> =
        summary.seeds.iter().map(|s| s.trace_hash).collect();
    assert_eq!(hashes.len(), 3, "two seeds gave the same trace");
    assert!(
        summary.seeds.iter().all(|s| s.events > 100),
        "the workload is busy"
    );
}

#[test]
fn default_seed_set_is_fixed() {
    let settings = Settings::from_lookup(|_| None).unwrap();
    let sim = Simulation::with_settings(settings);
    assert_eq!(sim.seeds(), [1, 2, 3, 4, 5, 6, 7, 8]);
}

/// A seed means the same whatever serde_json's map type: every profile's server, fed by
/// umi-core's real client, streamed and whole, answers with the same bytes (and the run
/// has the same trace, which holds the request bodies' digests) whether or not a
/// dependency turned on `preserve_order` (rig-core does: `make test` runs this binary
/// with `--features rig` too). The request's JSON is written out of sorted key order, so
/// with `preserve_order` on, any seeded path that serializes or iterates a map in its own
/// order instead of through `umi_core::canonical_json` changes a digest here. In the
/// default build the file pins the bytes as they are; after a deliberate change to what
/// the servers send:
///
/// ```sh
/// cargo insta review   # or: INSTA_UPDATE=always cargo test -p umi-dst --test main determinism::wire_bytes_do_not_depend_on_map_order
/// ```
#[test]
fn wire_bytes_do_not_depend_on_map_order() {
    let mut lines = Vec::new();
    for profile in Profile::ALL {
        for (name, request) in order_sensitive_requests() {
            if profile == Profile::Tgi && !request.tools.is_empty() {
                continue; // TGI 2.0 serves tools only as a forced grammar.
            }
            for seed in 1..=2 {
                for stream in [false, true] {
                    let digest = exchange_digest(seed, profile, stream, &request);
                    lines.push(format!(
                        "{profile} {name} seed={seed} stream={stream} {digest}"
                    ));
                }
            }
        }
    }
    // Bedrock's lines (issue 42) have their own file, so the file pinned before it was
    // added stays byte for byte as it was.
    let (bedrock, lines): (Vec<String>, Vec<String>) = lines
        .into_iter()
        .partition(|line| line.starts_with(&format!("{} ", Profile::Bedrock)));
    crate::golden_file::check(
        "wire_bytes_bedrock",
        &(bedrock.join("\n") + "\n"),
        "Bedrock's servers' bytes, as wire_bytes below pins the other formats'.",
    );
    let rendered = lines.join("\n") + "\n";
    crate::golden_file::check(
        "wire_bytes",
        &rendered,
        "If this build turns on serde_json's `preserve_order` (`cargo tree -e features -i \
         serde_json`), a seeded path orders JSON keys its own way: serialize and iterate \
         through umi_core::canonical_json. If the servers' bytes changed on purpose, accept \
         in the default build: cargo insta review (or INSTA_UPDATE=always cargo test -p \
         umi-dst --test main determinism::wire_bytes_do_not_depend_on_map_order)",
    );
}

/// Requests whose JSON (tool schemas, earlier tool calls' arguments, an output schema) is
/// built with its keys out of sorted order.
fn order_sensitive_requests() -> Vec<(&'static str, CompletionRequest)> {
    let schema = json!({
        "type": "object",
        "required": ["zone", "city"],
        "properties": {
            "zone": {"type": "string", "enum": ["utc", "local"]},
            "city": {"type": "string"},
            "days": {"type": "integer", "minimum": 1, "maximum": 7},
            "options": {"type": "object", "properties": {"units": {"type": "string"}, "detail": {"type": "boolean"}}}
        }
    });
    let tool = ToolDefinition::new("get_weather", "Weather for a city.", schema.clone());
    let call = ToolCall::new(
        "call_1",
        "get_weather",
        json!({"zone": "utc", "city": "Oslo"}),
    );
    vec![
        (
            "tools",
            CompletionRequest::new(vec![
                Message::system("Use the tools."),
                Message::user("Weather in Oslo?"),
                Message::assistant_tool_calls("", vec![call]),
                Message::tool_result("call_1", "12 C and rain", false),
                Message::user("And in Bergen, with details?"),
            ])
            .with_tools(vec![tool.clone()]),
        ),
        (
            "first-call",
            CompletionRequest::new(vec![Message::user("Weather in Oslo?")]).with_tools(vec![tool]),
        ),
        (
            "schema",
            CompletionRequest::new(vec![Message::user("The weather query, as JSON.")])
                .with_output_schema("query", schema),
        ),
    ]
}

/// SHA-256 over what one call put on the wire and got back: the run's trace hash (the
/// request body's digest is in it), then every exchange's status, headers and body, then
/// the client's answer.
fn exchange_digest(
    seed: u64,
    profile: Profile,
    stream: bool,
    request: &CompletionRequest,
) -> String {
    let seen = Mutex::new(Vec::<u8>::new());
    let summary = Simulation::new(SimConfig::new(seed))
        .try_run(|sim: SimEnvironment| {
            let seen = &seen;
            async move {
                let model_ref = ModelRef::new("sim", "order-model", 32_768, 2_048);
                let config = SimLlmConfig::default().with_model(model_ref.clone());
                let llm = Arc::new(SimLlm::with_config(&sim, config).unwrap());
                let url = base_url_for(profile, "order.sim");
                let network = Arc::new(
                    SimNetwork::new(&sim)
                        .with_capture()
                        .with_endpoint(Endpoint::openai(&url, llm).with_profile(profile)),
                );
                let options = ClientOptions::default();
                let client = client_for(
                    profile,
                    &url,
                    model_ref,
                    &options,
                    network.clone(),
                    sim.env(),
                );
                let answer = if stream {
                    match client.stream(request).await {
                        Ok(events) => StreamCollector::collect("order-model", events).await,
                        Err(error) => Err(error),
                    }
                } else {
                    client.complete(request).await
                };
                let mut bytes = seen.lock().unwrap();
                for exchange in network.exchanges() {
                    bytes.extend(exchange.status.to_le_bytes());
                    for (name, value) in &exchange.headers {
                        bytes.extend(format!("{name}: {value}\n").into_bytes());
                    }
                    bytes.extend(exchange.body());
                }
                // As JSON with sorted keys: `{:?}` of a `Value` follows the map's order.
                let answer = serde_json::to_value(&answer).unwrap();
                bytes.extend(umi_core::canonical_json::to_vec(&answer));
                Ok(())
            }
        })
        .unwrap_or_else(|e| panic!("{profile} seed {seed}: {e:?}"));
    let mut hasher = Sha256::new();
    hasher.update(summary.seeds[0].trace_hash.0);
    hasher.update(seen.into_inner().unwrap());
    hasher.finalize()[..12]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
