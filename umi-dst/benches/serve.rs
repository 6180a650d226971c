//! `dst serve` under load, at `--time-scale 0`: requests per second and p50/p99 latency
//! with 1, 8 and 64 concurrent clients, whole and streamed, against a floor measured in
//! the same run: a minimal hyper server (the same HTTP stack) answering every request
//! with a fixed body of the same size. Goal: at least half the floor's throughput.
//! Each row also prints the process's CPU time per request with each server (the
//! clients' share is the same in both): on a shared machine that figure holds still
//! where the throughput ratio does not.
//!
//! Run with `cargo bench -p umi-dst --bench serve --features serve` (part of
//! `make bench`). For profiling, `UMI_BENCH_ONLY=whole` (or `streamed`) only loads `dst
//! serve` with 8 clients, 40 measurements' worth of requests, and prints nothing.
//!
//! Before each table, `dst serve`'s own floor: a plain request's hash and simulation
//! alone, on one warm thread with no server around them (`umi_dst::serve::answer_alone`),
//! the least any request costs it (the log entry, the digests and the playback are
//! serving, and not in it). With 8 and 64 clients, where the CPU is the limit, each row
//! then bounds what serving code could reach around today's simulation: were all `dst
//! serve` did beyond the floor server's work (its client's included) that simulation,
//! the machine's cores would serve `cores / (floor's CPU per request + simulation)`
//! requests a second, and over the floor's rate that is the best ratio. The bound is as
//! noisy as the CPU counter under it (10 ms ticks: about 4 µs a request over 2,560).

#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::disallowed_methods,
    reason = "a bench binary times real work and prints it"
)]

use std::convert::Infallible;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use umi_core::llm::transport::{HttpRequest, ReqwestTransport, Transport};
use umi_dst::serve::{ServeConfig, Server, answer_alone};

mod support;

/// The allocator `dst serve` runs with (the `dst` binary's: `scenarios/src/bin/dst.rs`),
/// so the bench measures the server as it ships; the floor shares it. With the system
/// allocator, glibc's malloc and free were about a sixth of the bench's perf samples and
/// the served p50 latencies 10-20% higher (issue 41).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Requests sent per measurement, split evenly among the clients.
const REQUESTS_PER_MEASUREMENT: usize = 2_560;

/// Requests sent to each server before it is measured (threads started, pools warm).
const REQUESTS_WARM_UP: usize = 256;

/// The concurrency levels measured.
const CLIENTS: [usize; 3] = [1, 8, 64];

fn body(stream: bool) -> Vec<u8> {
    format!(r#"{{"model":"umi-sim","stream":{stream},"messages":[{{"role":"user","content":"What changed in the project this week?"}}]}}"#)
        .into_bytes()
}

/// What `served` adds to `floor`, signed: a served percentile under the floor's (the
/// floor's p99 is as noisy as any) shows as negative, not as nothing.
fn added(served: Duration, floor: Duration) -> String {
    if served >= floor {
        format!("{:.2?}", served - floor)
    } else {
        format!("-{:.2?}", floor - served)
    }
}

/// A server that answers everything with `reply`.
async fn floor(reply: Vec<u8>, content_type: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let reply = Bytes::from(reply);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let reply = reply.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |_request| {
                    let reply = reply.clone();
                    async move {
                        let mut response = hyper::Response::new(Full::new(reply));
                        response.headers_mut().insert(
                            "content-type",
                            hyper::header::HeaderValue::from_static(content_type),
                        );
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    format!("http://{addr}")
}

/// The CPU time the whole process (server, floor and clients alike) has used, from
/// `/proc/self/stat` (user and system, in clock ticks of 10 ms): the figure the machine's
/// other load barely moves, where requests per second and latencies move with it. Zero
/// where there is no `/proc`.
fn process_cpu() -> Duration {
    const TICKS_PER_SECOND: u64 = 100;
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return Duration::ZERO;
    };
    // The fields after the command's closing parenthesis: state is the first, utime the
    // 12th and stime the 13th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks = |index: usize| {
        fields
            .get(index)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Duration::from_millis((ticks(11) + ticks(12)) * 1000 / TICKS_PER_SECOND)
}

/// One measurement: requests per second, p50 and p99 latency, and CPU time per request
/// (the process's: the client's share is the same for both servers).
struct Measured {
    rps: f64,
    p50: Duration,
    p99: Duration,
    cpu_per_request: Duration,
}

/// [`load`] with the process's CPU time per request.
async fn measure(
    transport: &ReqwestTransport,
    url: &str,
    stream: bool,
    clients: usize,
) -> Measured {
    let cpu = process_cpu();
    let (rps, p50, p99) = load(transport, url, stream, clients, REQUESTS_PER_MEASUREMENT).await;
    let requests = REQUESTS_PER_MEASUREMENT.div_ceil(clients) * clients;
    Measured {
        rps,
        p50,
        p99,
        cpu_per_request: process_cpu().saturating_sub(cpu) / requests as u32,
    }
}

/// Each of `clients` sends `REQUESTS_PER_CLIENT` requests in turn; the requests per
/// second, and the latencies' p50 and p99.
async fn load(
    transport: &ReqwestTransport,
    url: &str,
    stream: bool,
    clients: usize,
    requests: usize,
) -> (f64, Duration, Duration) {
    let requests_per_client = requests.div_ceil(clients);
    let start = Instant::now();
    let tasks = (0..clients).map(|client| {
        let transport = transport.clone();
        let url = url.to_owned();
        async move {
            let mut latencies = Vec::with_capacity(requests_per_client);
            for index in 0..requests_per_client {
                let began = Instant::now();
                let seed = (client * requests_per_client + index).to_string();
                let request = HttpRequest {
                    method: "POST",
                    url: url.clone(),
                    headers: vec![("x-umi-seed".into(), seed)],
                    body: body(stream),
                };
                let response = transport.send(request).await.expect("the server answers");
                assert_eq!(response.status, 200);
                let bytes: usize = response
                    .body
                    .map(|chunk| chunk.map_or(0, |c| c.len()))
                    .fold(0, |a, b| async move { a + b })
                    .await;
                assert!(bytes > 0);
                latencies.push(began.elapsed());
            }
            latencies
        }
    });
    let mut latencies: Vec<Duration> = futures::future::join_all(tasks)
        .await
        .into_iter()
        .flatten()
        .collect();
    let elapsed = start.elapsed();
    latencies.sort_unstable();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    (
        latencies.len() as f64 / elapsed.as_secs_f64(),
        at(0.5),
        at(0.99),
    )
}

/// A request's hash and simulation alone, per request: the median of
/// `support::BATCHES` batches on this thread, outside any runtime (each simulation
/// builds its own).
fn simulation_alone(stream: bool) -> Duration {
    let config = ServeConfig::default();
    support::measure(2_000, |seed| {
        let request = (Vec::new(), body(stream));
        let bytes = answer_alone(&config, "/v1/chat/completions", request, seed);
        assert!(
            bytes.is_some_and(|b| !b.is_empty()),
            "the request is routed and answered"
        );
    })
}

fn main() {
    // For profiling (the module docs): the load alone, with no floor measured before it.
    let only = match std::env::var("UMI_BENCH_ONLY").ok().as_deref() {
        Some("whole") => Some(false),
        Some("streamed") => Some(true),
        _ => None,
    };
    // Measured outside any runtime: each simulation builds its own.
    let alone = if only.is_some() {
        [Duration::ZERO; 2]
    } else {
        [simulation_alone(false), simulation_alone(true)]
    };
    let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
    // A real runtime: `dst serve` on a real socket, driven by a real HTTP client.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let transport = ReqwestTransport::new().unwrap();
        let mut config = ServeConfig::default();
        config.concurrency_max = 256;
        let server = Server::start(config).await.unwrap();
        let served = format!("{}/v1/chat/completions", server.base_url());
        if let Some(stream) = only {
            load(&transport, &served, stream, 8, 40 * REQUESTS_PER_MEASUREMENT).await;
            server.shutdown().await;
            return;
        }
        for stream in [false, true] {
            // The floor answers with a body of the size the served answer has.
            let sample = transport
                .send(HttpRequest { method: "POST", url: served.clone(), headers: vec![("x-umi-seed".into(), "0".into())], body: body(stream) })
                .await
                .unwrap();
            let sample: Vec<u8> = sample.body.filter_map(|c| async move { c.ok() }).concat().await;
            let content_type = if stream { "text/event-stream" } else { "application/json" };
            let floor_url = floor(vec![b'x'; sample.len()], content_type).await;
            println!("{} ({} B per answer)", if stream { "streamed" } else { "whole" }, sample.len());
            println!("  dst serve's own floor: a request's hash and simulation alone, one warm thread: {}", support::show(alone[usize::from(stream)]));
            load(&transport, &floor_url, stream, 8, REQUESTS_WARM_UP).await;
            load(&transport, &served, stream, 8, REQUESTS_WARM_UP).await;
            for clients in CLIENTS {
                let floor = measure(&transport, &floor_url, stream, clients).await;
                let dst = measure(&transport, &served, stream, clients).await;
                // The best ratio with a free server around the simulation (module docs),
                // where the CPU is the limit.
                let least = floor.cpu_per_request + alone[usize::from(stream)];
                let best = if clients > 1 {
                    format!("{:.2}", cores / least.as_secs_f64().max(1e-12) / floor.rps)
                } else {
                    "-".to_owned()
                };
                println!(
                    "  {clients:>2} clients: dst serve {:>8.0} req/s (p50 {:>9.2?}, p99 {:>9.2?})   floor {:>8.0} req/s (p50 {:>9.2?}, p99 {:>9.2?})   ratio {:.2}   added p50 {:>10}, p99 {:>10}   cpu/request {:>7.2?} vs {:>7.2?}   best with a free server {}",
                    dst.rps,
                    dst.p50,
                    dst.p99,
                    floor.rps,
                    floor.p50,
                    floor.p99,
                    dst.rps / floor.rps,
                    added(dst.p50, floor.p50),
                    added(dst.p99, floor.p99),
                    dst.cpu_per_request,
                    floor.cpu_per_request,
                    best,
                );
            }
        }
        server.shutdown().await;
    });
}
