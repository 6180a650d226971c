//! `dst record` and `dst cassette` as a user runs them: the `dst` binary recording real
//! HTTP between umi-core's reqwest transport and a `dst serve` (or a key-echoing server
//! of the test's own), then `import-har`, `check` and `diff` on the files it wrote.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use futures::StreamExt;
use umi_core::cassette::Cassette;
use umi_core::llm::transport::{HttpRequest, ReqwestTransport, Transport};
use umi_dst::serve::{RunningServer, ServeConfig, Server};

use crate::support::runtime;

const CLIENT_KEY: &str = "sk-client-PLANTEDa0123456789abcdef";
const PROXY_KEY: &str = "sk-proxy-PLANTEDb9876543210fedcba";

fn temp(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("umi-cassette-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

fn dst(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dst"))
        .args(args)
        .output()
        .unwrap()
}

/// A running `dst record`.
struct Recorder {
    child: Child,
    base: String,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Recorder {
    fn start(upstream: &str, cassette: &Path, extra: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_dst"))
            .args(["record", "--upstream", upstream, "--bind", "127.0.0.1:0"])
            .arg("--cassette")
            .arg(cassette)
            .args(extra)
            .env("UMI_TEST_PROXY_KEY", PROXY_KEY)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let base = line
            .trim()
            .strip_prefix("dst record: listening on ")
            .unwrap_or_else(|| panic!("the address first: {line:?}"))
            .to_owned();
        Self {
            child,
            base,
            stdout,
        }
    }

    /// SIGTERM, then its whole stdout and stderr.
    fn stop(mut self) -> (String, String) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let mut stdout = String::new();
        self.stdout.read_to_string(&mut stdout).unwrap();
        let mut stderr = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}: {stdout} {stderr}");
        (stdout, stderr)
    }
}

/// Status, headers and every body byte a client got.
type Got = (u16, Vec<(String, String)>, Vec<u8>);

async fn send(url: String, headers: &[(&str, &str)], body: &str) -> Got {
    let transport = ReqwestTransport::new().unwrap();
    let mut all = vec![("content-type".to_owned(), "application/json".to_owned())];
    all.extend(
        headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned())),
    );
    let response = transport
        .send(HttpRequest {
            method: "POST",
            url,
            headers: all,
            body: body.as_bytes().to_vec(),
        })
        .await
        .expect("the proxy answers");
    let bytes: Vec<u8> = response
        .body
        .filter_map(|r| async move { r.ok() })
        .concat()
        .await;
    (response.status, response.headers, bytes)
}

fn chat(stream: bool, text: &str) -> String {
    serde_json::json!({"model": "gpt-4o", "stream": stream,
        "messages": [{"role": "user", "content": text}]})
    .to_string()
}

/// OpenAI chat streamed and whole, and Anthropic streamed, through `dst record` in front
/// of a `dst serve` with `seed`; the cassette and what the client got.
fn record_three(seed: u64, cassette: &Path, extra: &[&str]) -> (Cassette, Vec<Got>, String) {
    let runtime = runtime();
    let server: RunningServer = runtime.block_on(async {
        let mut config = ServeConfig::default();
        config.seed = seed;
        Server::start(config).await.unwrap()
    });
    let mut args = vec!["--endpoint", "openai"];
    args.extend_from_slice(extra);
    let recorder = Recorder::start(&server.base_url(), cassette, &args);
    let base = recorder.base.clone();
    let got = runtime.block_on(async {
        let anthropic = serde_json::json!({"model": "claude", "max_tokens": 100, "stream": true,
            "messages": [{"role": "user", "content": "name a colour"}]})
        .to_string();
        vec![
            send(
                format!("{base}/v1/chat/completions"),
                &[],
                &chat(true, "hello"),
            )
            .await,
            send(
                format!("{base}/v1/chat/completions"),
                &[],
                &chat(false, "hi"),
            )
            .await,
            send(
                format!("{base}/v1/messages"),
                &[("anthropic-version", "2023-06-01")],
                &anthropic,
            )
            .await,
        ]
    });
    let (stdout, _) = recorder.stop();
    runtime.block_on(server.shutdown());
    (Cassette::load(cassette).unwrap(), got, stdout)
}

/// (a) the cassette holds each exchange with the bytes the client received; (e) `check`
/// reads them all, and names the line of a body it cannot read; (f) `diff` sees no shape
/// change between two seeds' answers, and a renamed field in an edited copy.
#[test]
fn dst_record_writes_what_the_client_got_and_check_and_diff_read_it() {
    let a = temp("a.jsonl");
    let (cassette, got, stdout) = record_three(7, &a, &[]);
    assert!(
        stdout.contains("3 exchanges written, 0 abandoned"),
        "{stdout}"
    );
    assert_eq!(cassette.exchanges.len(), 3);
    for (exchange, (status, _, body)) in cassette.exchanges.iter().zip(&got) {
        assert_eq!(*status, 200);
        assert_eq!(exchange.response.status, 200);
        assert_eq!(
            &exchange.response.body_bytes(),
            body,
            "{}",
            exchange.request.path
        );
    }
    assert!(String::from_utf8_lossy(&got[0].2).contains("data: "));
    assert!(cassette.header.recorded_by.starts_with("dst record "));
    let refused = dst(&[
        "record",
        "--upstream",
        "http://127.0.0.1:9",
        "--cassette",
        a.to_str().unwrap(),
    ]);
    assert_eq!(
        refused.status.code(),
        Some(2),
        "an existing cassette needs --append"
    );
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--append"));

    let checked = dst(&["cassette", "check", a.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&checked.stdout);
    assert!(checked.status.success(), "{text}");
    assert!(
        text.contains("3 read, 0 errors classified, 0 skipped, 0 not readable"),
        "{text}"
    );

    let corrupt = temp("corrupt.jsonl");
    let mut broken = cassette.clone();
    broken.exchanges[1].response.body = Some("{\"choices\": [{\"message\":".into());
    broken.exchanges[1].response.pieces.clear();
    broken.save(&corrupt).unwrap();
    let checked = dst(&["cassette", "check", corrupt.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&checked.stdout);
    assert_eq!(checked.status.code(), Some(1), "{text}");
    assert!(
        text.contains("corrupt.jsonl:3: POST /v1/chat/completions: NOT READABLE"),
        "{text}"
    );
    assert!(text.contains("1 not readable"), "{text}");

    // A second recording of the same requests, its values (ids, times, counts) changed:
    // no shape differs.
    let b = temp("b.jsonl");
    let (mut other, _, _) = record_three(7, &b, &[]);
    for (one, two) in other.exchanges.iter().zip(&cassette.exchanges) {
        assert_eq!(
            one.response.body, two.response.body,
            "dst serve answers alike"
        );
    }
    for exchange in &mut other.exchanges {
        let body = exchange.response.body.take().unwrap();
        exchange.response.body = Some(body.chars().map(other_digit).collect());
    }
    other.save(&b).unwrap();
    assert_ne!(
        other.exchanges[1].response.body,
        cassette.exchanges[1].response.body
    );
    let same = dst(&["cassette", "diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&same.stdout);
    assert!(same.status.success(), "{text}");
    assert!(text.contains("no shape differences"), "{text}");

    let renamed = temp("renamed.jsonl");
    let edited = std::fs::read_to_string(&a)
        .unwrap()
        .replace("finish_reason", "finish_reazon");
    std::fs::write(&renamed, edited).unwrap();
    let changed = dst(&[
        "cassette",
        "diff",
        a.to_str().unwrap(),
        renamed.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&changed.stdout);
    assert_eq!(changed.status.code(), Some(1), "{text}");
    assert!(text.contains("+ $.choices[*].finish_reazon"), "{text}");
    assert!(text.contains("- $.choices[*].finish_reason"), "{text}");
    // --append adds to a cassette of this version, and refuses another by its version.
    let (appended, _, stdout) = record_three(7, &b, &["--append"]);
    assert!(stdout.contains("3 exchanges written"), "{stdout}");
    assert_eq!(appended.exchanges.len(), 6);
    std::fs::write(
        &renamed,
        "{\"recorded_by\":\"future\",\"umi_cassette\":7}\n",
    )
    .unwrap();
    let refused = dst(&[
        "record",
        "--upstream",
        "http://127.0.0.1:9",
        "--append",
        "--cassette",
        renamed.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("renamed.jsonl: format version 7"),
        "{stderr}"
    );
    for path in [a, b, corrupt, renamed] {
        let _ = std::fs::remove_file(path);
    }
}

/// Another digit, never 0 (so no number gains a leading zero): a value changed, its
/// JSON type kept.
fn other_digit(c: char) -> char {
    match c.to_digit(10) {
        Some(d) => char::from_digit(d % 9 + 1, 10).unwrap_or(c),
        None => c,
    }
}

/// A body of one read; with `cut`, the connection breaks after it.
fn echo_body(
    text: String,
    cut: bool,
) -> futures::stream::BoxStream<'static, Result<hyper::body::Frame<bytes::Bytes>, std::io::Error>> {
    let first =
        futures::stream::once(
            async move { Ok(hyper::body::Frame::data(bytes::Bytes::from(text))) },
        );
    if !cut {
        return first.boxed();
    }
    let broken = futures::stream::once(async {
        // A real server's pause in a test, outside any simulation: the read goes out first.
        #[allow(clippy::disallowed_methods)]
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        Err(std::io::Error::other("cut mid-stream"))
    });
    first.chain(broken).boxed()
}

/// A server that echoes every planted key it was sent: in a header, a cookie, a 401's
/// JSON error and an SSE event.
async fn echo_server() -> (String, tokio::task::JoinHandle<()>) {
    use http_body_util::{BodyExt, StreamBody};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let service = hyper::service::service_fn(
                |request: hyper::Request<hyper::body::Incoming>| async move {
                    let mut seen = format!("{}", request.uri());
                    for value in request.headers().values() {
                        seen.push_str(value.to_str().unwrap_or_default());
                    }
                    let path = request.uri().path().to_owned();
                    let body = request.into_body().collect().await.unwrap().to_bytes();
                    seen.push_str(&String::from_utf8_lossy(&body));
                    let keys: Vec<&str> = [CLIENT_KEY, PROXY_KEY]
                        .into_iter()
                        .filter(|k| seen.contains(k))
                        .collect();
                    let keys = keys.join(" ");
                    let (status, content_type, text) = if path.ends_with("/401") {
                        (401, "application/json", serde_json::json!({"error": {"message": format!("Incorrect API key provided: {keys}")}}).to_string())
                    } else if String::from_utf8_lossy(&body).contains("\"stream\":true") {
                        let event = serde_json::json!({"choices": [{"delta": {"content": format!("your key is {keys}")}}]});
                        let done = if path.ends_with("/reset") {
                            ""
                        } else {
                            "data: [DONE]\n\n"
                        };
                        (200, "text/event-stream", format!("data: {event}\n\n{done}"))
                    } else {
                        (
                            200,
                            "application/json",
                            serde_json::json!({"echo": keys}).to_string(),
                        )
                    };
                    let response = hyper::Response::builder()
                        .status(status)
                        .header("content-type", content_type)
                        .header("x-echo-key", keys.clone())
                        .header("set-cookie", format!("session={keys}"))
                        .body(StreamBody::new(echo_body(text, path.ends_with("/reset"))))
                        .unwrap();
                    Ok::<_, std::convert::Infallible>(response)
                },
            );
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (base, task)
}

/// (b) keys planted by the client (Authorization, x-api-key, `?key=`, the body, a
/// prompt) and by the proxy (`--key-env`) come back in headers, cookies, a 401 and an
/// SSE event, and the cassette's text holds none of them.
#[test]
fn no_planted_key_reaches_the_cassette() {
    let runtime = runtime();
    let (upstream, task) = runtime.block_on(echo_server());
    let file = temp("keys.jsonl");
    let recorder = Recorder::start(
        &upstream,
        &file,
        &[
            "--endpoint",
            "openai",
            "--key-env",
            "UMI_TEST_PROXY_KEY",
            "--redact-field",
            "user",
        ],
    );
    let base = recorder.base.clone();
    let bearer = format!("Bearer {CLIENT_KEY}");
    let in_body = serde_json::json!({"api_key": CLIENT_KEY, "stream": true, "user": "ann",
        "messages": [{"role": "user", "content": format!("my key is {CLIENT_KEY}")}]})
    .to_string();
    let got = runtime.block_on(async {
        vec![
            send(
                format!("{base}/v1/chat/completions"),
                &[("authorization", &bearer)],
                &chat(true, "hi"),
            )
            .await,
            send(
                format!("{base}/v1/chat/completions"),
                &[("x-api-key", CLIENT_KEY)],
                &chat(false, "hi"),
            )
            .await,
            send(
                format!("{base}/v1/401?key={CLIENT_KEY}"),
                &[],
                &chat(false, "hi"),
            )
            .await,
            send(
                format!("{base}/v1/chat/completions"),
                &[("authorization", &bearer)],
                &in_body,
            )
            .await,
            send(
                format!("{base}/v1/reset"),
                &[("authorization", &bearer)],
                &chat(true, "hi"),
            )
            .await,
        ]
    });
    let (stdout, _) = recorder.stop();
    runtime.block_on(async { task.abort() });
    let echoed: Vec<String> = got
        .iter()
        .map(|(_, headers, body)| format!("{headers:?}{}", String::from_utf8_lossy(body)))
        .collect();
    assert!(
        echoed[0].contains(CLIENT_KEY),
        "the upstream echoes: {}",
        echoed[0]
    );
    assert!(
        echoed[2].contains(PROXY_KEY),
        "the proxy added its key: {}",
        echoed[2]
    );
    assert_eq!(got[2].0, 401);
    assert!(
        stdout.contains("5 exchanges written, 0 abandoned"),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let recorded = Cassette::load(&file).unwrap();
    assert_eq!(recorded.exchanges.len(), 5);
    let cut = &recorded.exchanges[4].response;
    assert_eq!(
        cut.end,
        umi_core::cassette::BodyEnd::Reset,
        "recorded as it happened"
    );
    assert!(
        cut.body.as_deref().unwrap().starts_with("data: "),
        "{cut:?}"
    );
    assert!(String::from_utf8_lossy(&got[4].2).starts_with("data: "));
    assert!(!text.contains("PLANTED"), "a key in the cassette:\n{text}");
    assert!(
        !text.contains("\"ann\""),
        "a --redact-field value in the cassette:\n{text}"
    );
    let checked = dst(&[
        "cassette",
        "check",
        file.to_str().unwrap(),
        "--endpoint",
        "openai",
    ]);
    let said = String::from_utf8_lossy(&checked.stdout);
    assert!(
        said.contains("keys.jsonl:4: POST /v1/401?key=[REDACTED]: status 401 → auth"),
        "an error status is classified: {said}"
    );
    assert!(
        said.contains("keys.jsonl:6: POST /v1/reset: status 200 → connection"),
        "a body cut mid-stream is classified: {said}"
    );
    let _ = std::fs::remove_file(file);
}

/// (c) an upstream that is down: the client gets a 502 naming it, stderr a line, and the
/// cassette nothing but its header.
#[test]
fn an_upstream_that_is_down_gets_a_502_and_nothing_is_written() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let file = temp("down.jsonl");
    let recorder = Recorder::start(&format!("http://127.0.0.1:{port}"), &file, &[]);
    let base = recorder.base.clone();
    let (status, _, body) = runtime().block_on(send(
        format!("{base}/v1/chat/completions"),
        &[],
        &chat(false, "hi"),
    ));
    let (stdout, stderr) = recorder.stop();
    assert_eq!(status, 502);
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["error"]["type"], "upstream_unreachable", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("connect"),
        "{body}"
    );
    assert!(
        stderr.contains("not recorded: POST /v1/chat/completions"),
        "{stderr}"
    );
    assert!(stdout.contains("0 exchanges written"), "{stdout}");
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 1);
    let _ = std::fs::remove_file(file);
}

/// (d) a HAR capture with a base64 body and an Authorization header becomes a cassette
/// without the key, that `check` reads; a HAR that is not one is refused naming the file
/// and the JSON path.
#[test]
fn import_har_writes_a_redacted_cassette_and_names_bad_paths() {
    use base64::Engine;
    let answer = serde_json::json!({"id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Blue."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}})
    .to_string();
    let har = serde_json::json!({"log": {"entries": [{
        "request": {"method": "POST", "url": "https://api.openai.com/v1/chat/completions",
            "headers": [{"name": "Authorization", "value": format!("Bearer {CLIENT_KEY}")},
                        {"name": "content-type", "value": "application/json"}],
            "postData": {"text": chat(false, "name a colour")}},
        "response": {"status": 200, "headers": [{"name": "content-type", "value": "application/json"}],
            "content": {"text": base64::engine::general_purpose::STANDARD.encode(&answer), "encoding": "base64"}},
        "timings": {"send": 1.0, "wait": 20.0}
    }]}})
    .to_string();
    let har_file = temp("capture.har");
    std::fs::write(&har_file, har).unwrap();
    let out = temp("har.jsonl");
    let imported = dst(&[
        "cassette",
        "import-har",
        har_file.to_str().unwrap(),
        "--cassette",
        out.to_str().unwrap(),
        "--root",
        "https://api.openai.com/v1",
    ]);
    assert!(
        imported.status.success(),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );
    let cassette = Cassette::load(&out).unwrap();
    assert_eq!(cassette.exchanges.len(), 1);
    assert_eq!(cassette.exchanges[0].request.path, "/chat/completions");
    assert_eq!(
        cassette.exchanges[0].response.body_bytes(),
        answer.as_bytes()
    );
    assert!(
        cassette
            .header
            .recorded_by
            .starts_with("dst cassette import-har ")
    );
    assert!(!std::fs::read_to_string(&out).unwrap().contains("PLANTED"));
    let checked = dst(&["cassette", "check", out.to_str().unwrap()]);
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stdout)
    );

    std::fs::write(&har_file, r#"{"log": {"entries": [{"request": 5}]}}"#).unwrap();
    let again = temp("har-bad.jsonl");
    let refused = dst(&[
        "cassette",
        "import-har",
        har_file.to_str().unwrap(),
        "--cassette",
        again.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("capture.har") && stderr.contains("log.entries[0].request"),
        "{stderr}"
    );
    assert!(!again.exists());
    for path in [har_file, out] {
        let _ = std::fs::remove_file(path);
    }
}
