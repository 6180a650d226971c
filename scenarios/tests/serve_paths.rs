//! Paths over `dst serve` (`x-umi-seed: 7/3:9913`, `/seed/7/3:9913/`): a scope's requests
//! before the branch's arrival are answered exactly as under the bare seed, those from
//! it on differently, and the same path twice gives the same scope trace; and
//! `/umi/marks` names what a scope reached at the arrival it first reached it.

use futures::StreamExt;
use serde_json::{Value, json};
use umi_core::llm::transport::{HttpRequest, ReqwestTransport, Transport};
use umi_dst::fault::aim::parse_rules;
use umi_dst::serve::{RunningServer, ServeConfig, Server};

use crate::support::runtime;

async fn send(
    method: &'static str,
    url: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
) -> (u16, String) {
    let transport = ReqwestTransport::new().unwrap();
    let response = transport
        .send(HttpRequest {
            method,
            url,
            headers,
            body,
        })
        .await
        .unwrap();
    let status = response.status;
    let bytes: Vec<u8> = response
        .body
        .filter_map(|r| async move { r.ok() })
        .concat()
        .await;
    (status, String::from_utf8(bytes).unwrap())
}

/// Five distinct chat requests in `scope`, the seed (or path) in the URL's `/seed/` part
/// (`None`: in the `x-umi-seed` header, `7/...` text as is).
async fn five_chats(server: &RunningServer, scope: &str, seed: &str, in_header: bool) {
    for n in 0..5 {
        let body = json!({"model": "umi-sim", "messages": [{"role": "user", "content": format!("question {n}")}]});
        let (url, headers) = if in_header {
            let url = format!("{}/scope/{scope}/v1/chat/completions", server.base_url());
            (url, vec![("x-umi-seed".to_owned(), seed.to_owned())])
        } else {
            let url = format!(
                "{}/seed/{seed}/scope/{scope}/v1/chat/completions",
                server.base_url()
            );
            (url, Vec::new())
        };
        let mut headers = headers;
        headers.push(("content-type".into(), "application/json".into()));
        send("POST", url, headers, body.to_string().into_bytes()).await;
    }
}

/// A scope's trace: its entries' run seeds by arrival, and its hash.
async fn trace(server: &RunningServer, scope: &str) -> (Vec<u64>, String) {
    let (_, text) = send(
        "GET",
        format!("{}/umi/trace?scope={scope}", server.base_url()),
        Vec::new(),
        Vec::new(),
    )
    .await;
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (summary, entries) = lines.split_last().unwrap();
    let mut by_arrival: Vec<(u64, u64)> = entries
        .iter()
        .map(|e| {
            (
                e["arrival"].as_u64().unwrap(),
                e["run_seed"].as_u64().unwrap(),
            )
        })
        .collect();
    by_arrival.sort();
    let hash = summary["session_trace_hash"].as_str().unwrap().to_owned();
    (by_arrival.into_iter().map(|(_, seed)| seed).collect(), hash)
}

#[test]
fn a_path_replays_the_seed_before_its_branch_and_itself_exactly() {
    runtime().block_on(async {
        let server = Server::start(ServeConfig::default()).await.unwrap();
        five_chats(&server, "bare", "7", false).await;
        five_chats(&server, "path-a", "7/3:9913", false).await;
        five_chats(&server, "path-b", "7/3:9913", true).await;
        five_chats(&server, "other", "7/3:9914", false).await;
        let (bare, bare_hash) = trace(&server, "bare").await;
        let (a, a_hash) = trace(&server, "path-a").await;
        let (b, b_hash) = trace(&server, "path-b").await;
        let (other, other_hash) = trace(&server, "other").await;
        assert_eq!(a[..2], bare[..2], "arrivals 1 and 2 are the seed's");
        assert!(
            (2..5).all(|i| a[i] != bare[i] && a[i] != other[i]),
            "{a:?} {bare:?} {other:?}"
        );
        assert_eq!(
            (&a, &a_hash),
            (&b, &b_hash),
            "a path in the URL or the header replays exactly"
        );
        assert_ne!(a_hash, bare_hash);
        assert_ne!(a_hash, other_hash);
        // A refused path says what was wrong.
        let (status, text) = send(
            "GET",
            format!("{}/seed/7/3:1/2:1/v1/models", server.base_url()),
            Vec::new(),
            Vec::new(),
        )
        .await;
        assert_eq!(status, 400);
        assert!(text.contains("is not after the previous branch"), "{text}");
        server.shutdown().await;
    });
}

#[test]
fn marks_name_what_a_scope_reached_at_its_first_arrival() {
    runtime().block_on(async {
        let mut config = ServeConfig::default();
        config.faults = parse_rules("llm.rate_limit@llm.call#2=1").unwrap();
        let server = Server::start(config).await.unwrap();
        five_chats(&server, "run", "7", false).await;
        let (status, text) = send(
            "GET",
            format!("{}/umi/marks?scope=run", server.base_url()),
            Vec::new(),
            Vec::new(),
        )
        .await;
        assert_eq!(status, 200, "{text}");
        let body: Value = serde_json::from_str(&text).unwrap();
        let marks: Vec<(String, u64, u64)> = body["marks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["name"].as_str().unwrap().to_owned(),
                    m["step"].as_u64().unwrap(),
                    m["count"].as_u64().unwrap(),
                )
            })
            .collect();
        assert!(
            marks.contains(&("fault:llm.rate_limit@llm.call".into(), 2, 1)),
            "{marks:?}"
        );
        assert!(
            marks.contains(&("shape:429/complete".into(), 2, 1)),
            "{marks:?}"
        );
        assert!(
            marks.contains(&("shape:200/complete/text".into(), 1, 4)),
            "{marks:?}"
        );
        assert_eq!(body["entries"], 5);
        // A scope that sent nothing reached nothing.
        let (_, empty) = send(
            "GET",
            format!("{}/umi/marks?scope=none", server.base_url()),
            Vec::new(),
            Vec::new(),
        )
        .await;
        assert_eq!(
            serde_json::from_str::<Value>(&empty).unwrap()["marks"],
            json!([])
        );
        server.shutdown().await;
    });
}
