//! `dst serve` for an agent on Umi's simulated clock (`x-umi-clock-us`, the pytest
//! plugin's and the TypeScript helper's): the same answer, with the wait a 429 asks for
//! told as the simulation drew it, dates on the agent's clock, `x-umi-timing` saying when
//! each part was sent, and a response that never came told apart from a reset. A request
//! without the header is answered as before.

use futures::StreamExt;
use umi_core::llm::transport::{HttpRequest, HttpResponse, ReqwestTransport, Transport};
use umi_dst::fault::{FaultConfig, FaultKind};
use umi_dst::serve::{EndpointSpec, ServeConfig, Server};

use crate::support::{get_text, runtime};

const CHAT: &str = r#"{"model":"umi-sim","messages":[{"role":"user","content":"hi"}]}"#;
const STREAMED: &str =
    r#"{"model":"umi-sim","stream":true,"messages":[{"role":"user","content":"tell me a story"}]}"#;

/// The agent's clock in these requests: 90.5 s after the simulated epoch.
const CLOCK_US: u64 = 90_500_000;

/// Seeds tried for a 429 whose Retry-After is in whole seconds (the profile draws which
/// retry headers a 429 carries).
const SEEDS_MAX: u64 = 40;

fn config(seed: u64, faults: Vec<FaultConfig>, time_scale: f64) -> ServeConfig {
    let mut config = ServeConfig::default();
    config.seed = seed;
    config.endpoints = vec![EndpointSpec::parse("openai").unwrap()];
    config.faults = faults;
    config.time_scale = time_scale;
    config
}

async fn post(
    transport: &ReqwestTransport,
    url: String,
    body: &str,
    headers: &[(&str, &str)],
) -> Option<(HttpResponse, Vec<u8>)> {
    let mut all = vec![("content-type".to_owned(), "application/json".to_owned())];
    all.extend(
        headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned())),
    );
    let mut response = transport
        .send(HttpRequest {
            method: "POST",
            url,
            headers: all,
            body: body.as_bytes().to_vec(),
        })
        .await
        .ok()?;
    let body = std::mem::replace(&mut response.body, futures::stream::empty().boxed());
    let bytes: Vec<u8> = body.filter_map(|r| async move { r.ok() }).concat().await;
    Some((response, bytes))
}

/// `x-umi-timing`'s five values, parsed.
fn timing(response: &HttpResponse) -> (u64, u64, u64, u64, String) {
    let text = response.header("x-umi-timing").expect("x-umi-timing");
    let values: Vec<&str> = text
        .split(", ")
        .map(|item| item.split_once('=').expect("key=value").1)
        .collect();
    assert_eq!(values.len(), 5, "{text}");
    let us = |i: usize| values[i].parse::<u64>().expect("µs");
    (us(0), us(1), us(2), us(3), values[4].to_owned())
}

fn unix_secs(date: &str) -> u64 {
    httpdate::parse_http_date(date)
        .expect("an HTTP date")
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// On the agent's clock a 429's Retry-After is what the simulation drew (what the same
/// server says at `--time-scale 1`), where an ordinary client at `--time-scale 0` is told
/// 0; the body is the same bytes; `date` moved by the agent's 90 s.
#[test]
fn a_client_on_the_clock_is_told_the_drawn_wait_and_the_same_answer() {
    runtime().block_on(async {
        let transport = ReqwestTransport::new().unwrap();
        let rate_limit = || vec![FaultConfig::chance(FaultKind::LlmRateLimit, 1.0)];
        let mut checked = 0;
        for seed in 1..=SEEDS_MAX {
            let fast = Server::start(config(seed, rate_limit(), 0.0))
                .await
                .unwrap();
            let real = Server::start(config(seed, rate_limit(), 1.0))
                .await
                .unwrap();
            let url =
                |base: String, scope: &str| format!("{base}/scope/{scope}/v1/chat/completions");
            let clock = CLOCK_US.to_string();
            let (plain, plain_body) = post(&transport, url(fast.base_url(), "a"), CHAT, &[])
                .await
                .unwrap();
            let (clocked, clocked_body) = post(
                &transport,
                url(fast.base_url(), "b"),
                CHAT,
                &[("x-umi-clock-us", &clock)],
            )
            .await
            .unwrap();
            let (drawn, _) = post(&transport, url(real.base_url(), "a"), CHAT, &[])
                .await
                .unwrap();
            fast.shutdown().await;
            real.shutdown().await;
            assert_eq!((plain.status, clocked.status), (429, 429));
            assert_eq!(plain_body, clocked_body, "seed {seed}: the same answer");
            assert!(plain.header("x-umi-timing").is_none(), "only on the clock");
            let (head, first, last, end, ending) = timing(&clocked);
            assert!(head <= first && first <= last && last == end, "seed {seed}");
            assert_eq!(ending, "complete");
            let date = |r: &HttpResponse| r.header("date").map(unix_secs);
            if let (Some(before), Some(after)) = (date(&plain), date(&clocked)) {
                assert_eq!(after, before + CLOCK_US / 1_000_000, "seed {seed}");
            }
            let Some(wait) = drawn
                .header("retry-after")
                .filter(|w| w.parse::<u64>().is_ok())
            else {
                continue;
            };
            assert_ne!(wait, "0", "seed {seed}: a drawn wait");
            assert_eq!(
                plain.header("retry-after"),
                Some("0"),
                "seed {seed}: scaled to 0"
            );
            assert_eq!(
                clocked.header("retry-after"),
                Some(wait),
                "seed {seed}: as drawn"
            );
            checked += 1;
        }
        assert!(
            checked > 0,
            "no seed in 1..={SEEDS_MAX} drew a Retry-After in seconds"
        );
    });
}

/// A streamed answer's timing says its head, first and last byte in order, and the log
/// line of the request holds the clock it came with and the same timing; a request
/// without the clock logs no `clock_us`.
#[test]
fn timing_is_told_and_logged_with_the_agent_clock() {
    runtime().block_on(async {
        let transport = ReqwestTransport::new().unwrap();
        let server = Server::start(config(5, Vec::new(), 0.0)).await.unwrap();
        let base = server.base_url();
        let clock = CLOCK_US.to_string();
        let (response, bytes) = post(
            &transport,
            format!("{base}/scope/c/v1/chat/completions"),
            STREAMED,
            &[("x-umi-clock-us", &clock)],
        )
        .await
        .unwrap();
        assert_eq!(response.status, 200);
        assert!(String::from_utf8_lossy(&bytes).contains("[DONE]"));
        let (head, first, last, end, ending) = timing(&response);
        assert!(
            head <= first && first < last && last == end,
            "{head} {first} {last}"
        );
        assert_eq!(ending, "complete");
        post(
            &transport,
            format!("{base}/scope/d/v1/chat/completions"),
            CHAT,
            &[],
        )
        .await
        .unwrap();
        let (logged, _) = trace_line(&base, "c").await;
        assert_eq!(logged["clock_us"], CLOCK_US);
        assert_eq!(logged["timing"]["head_us"], head);
        assert_eq!(logged["timing"]["last_us"], last);
        assert_eq!(logged["timing"]["ending"], "complete");
        let (plain, _) = trace_line(&base, "d").await;
        assert!(plain.get("clock_us").is_none(), "{plain}");
        assert_eq!(
            plain["timing"]["ending"], "complete",
            "timing is always logged"
        );
        server.shutdown().await;
    });
}

/// The first log line of `scope`, and the summary.
async fn trace_line(base: &str, scope: &str) -> (serde_json::Value, serde_json::Value) {
    let text = get_text(&format!("{base}/umi/trace?scope={scope}")).await;
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "one entry and the summary: {lines:?}");
    (lines[0].clone(), lines[1].clone())
}

/// A run with no response at all: an ordinary client sees the connection close; a client
/// on the clock gets a 502 with `x-umi-no-response` saying whether it was refused/reset
/// or hung, and when, so it can play it on its clock.
#[test]
fn no_response_is_told_as_a_reset_or_a_stall_on_the_clock() {
    runtime().block_on(async {
        let transport = ReqwestTransport::new().unwrap();
        let clock = CLOCK_US.to_string();
        let cases = [
            (FaultKind::NetworkConnectionRefused, "reset"),
            (FaultKind::NetworkTimeout, "stall"),
        ];
        for (kind, expected) in cases {
            let mut seen = None;
            for seed in 1..=SEEDS_MAX {
                let faults = vec![FaultConfig::chance(kind, 1.0)];
                let server = Server::start(config(seed, faults, 0.0)).await.unwrap();
                let base = server.base_url();
                let clocked = post(
                    &transport,
                    format!("{base}/scope/a/v1/chat/completions"),
                    CHAT,
                    &[("x-umi-clock-us", &clock)],
                )
                .await
                .expect("a client on the clock always gets a response");
                let plain = post(
                    &transport,
                    format!("{base}/scope/b/v1/chat/completions"),
                    CHAT,
                    &[],
                )
                .await;
                server.shutdown().await;
                let (response, body) = clocked;
                if response.header("x-umi-no-response").is_none() {
                    continue; // this seed's fault came after the headers
                }
                assert!(
                    plain.is_none(),
                    "{kind:?} seed {seed}: an ordinary client sees no response"
                );
                assert_eq!(response.status, 502);
                assert!(body.is_empty());
                assert_eq!(response.header("x-umi-no-response"), Some(expected));
                let (head, first, last, end, ending) = timing(&response);
                assert_eq!((head, first, last), (0, 0, 0));
                assert_eq!(ending, expected);
                if expected == "stall" {
                    assert!(end >= 600_000_000, "the server holds a hang 600 s: {end}");
                }
                seen = Some(seed);
                break;
            }
            assert!(
                seen.is_some(),
                "{kind:?}: no seed in 1..={SEEDS_MAX} failed before the headers"
            );
        }
    });
}

/// A clock that is not a count of microseconds is refused, naming the header.
#[test]
fn a_bad_clock_is_refused_by_name() {
    runtime().block_on(async {
        let transport = ReqwestTransport::new().unwrap();
        let server = Server::start(config(1, Vec::new(), 0.0)).await.unwrap();
        let base = server.base_url();
        for bad in ["soon", "-5", "1.5"] {
            let (response, body) = post(
                &transport,
                format!("{base}/v1/chat/completions"),
                CHAT,
                &[("x-umi-clock-us", bad)],
            )
            .await
            .unwrap();
            assert_eq!(response.status, 400, "{bad}");
            let text = String::from_utf8_lossy(&body);
            assert!(text.contains("x-umi-clock-us"), "{bad}: {text}");
        }
        server.shutdown().await;
    });
}

/// A stream that stalls part-way at `--time-scale 0`: a client on the clock gets the head
/// (200, `ending=stall`) and the bytes sent before the stall, and plays the stall on its
/// own clock; an ordinary client's connection closes with nothing, as before. (hyper
/// dropped the head and the bytes it still held when the stall's error came right after
/// them, so the TypeScript helper's deadline test saw "other side closed" and no stall.)
#[test]
fn a_client_on_the_clock_gets_what_came_before_a_stall() {
    runtime().block_on(async {
        let transport = ReqwestTransport::new().unwrap();
        let clock = CLOCK_US.to_string();
        let stall = FaultConfig::chance(FaultKind::NetworkTimeout, 1.0)
            .on_operation("network.body")
            .unwrap();
        let server = Server::start(config(5, vec![stall], 0.0)).await.unwrap();
        let base = server.base_url();
        let (response, bytes) = post(
            &transport,
            format!("{base}/scope/a/v1/chat/completions"),
            STREAMED,
            &[("x-umi-clock-us", &clock)],
        )
        .await
        .expect("a client on the clock gets the head of a stalled stream");
        assert_eq!(response.status, 200);
        let (head, first, last, end, ending) = timing(&response);
        assert_eq!(ending, "stall");
        assert!(
            head <= first && first <= last && last < end,
            "{head} {first} {last} {end}"
        );
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            text.starts_with("data: "),
            "the bytes before the stall: {text:?}"
        );
        assert!(!text.contains("[DONE]"), "{text:?}");
        let plain = post(
            &transport,
            format!("{base}/scope/b/v1/chat/completions"),
            STREAMED,
            &[],
        )
        .await;
        assert!(
            plain.is_none(),
            "an ordinary client's connection closes as before"
        );
        server.shutdown().await;
    });
}
