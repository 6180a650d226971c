//! Issue 29's first defect on real bytes: a key configured with surrounding whitespace,
//! sent by umi-core's real reqwest transport to a real HTTP server (wiremock, on hyper)
//! that refuses it and echoes the key it read, as OpenAI's 401 does, whole and masked.
//! The server reads a header's value trimmed (RFC 9110, section 5.5), so the echo is the
//! trimmed key; it must never reach the error a caller sees.

use std::sync::{Arc, Mutex};

use umi_core::llm::anthropic::{AnthropicClient, AnthropicConfig};
use umi_core::llm::ollama::{OllamaClient, OllamaConfig};
use umi_core::llm::openai::{OpenAiClient, OpenAiConfig};
use umi_core::llm::responses::{ResponsesClient, ResponsesConfig};
use umi_core::llm::transport::{ReqwestTransport, Transport};
use umi_core::llm::{CompletionRequest, Connection, LanguageModel, Message, ModelRef};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const KEY: &str = "sk-proj-T4kq9Wm2Xv7Lp3Rz8Hb6";

/// What the server read, then its 401 echoing it.
fn echo(seen: &Arc<Mutex<Vec<String>>>, request: &Request) -> ResponseTemplate {
    let header = |name: &str| {
        request
            .headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    let key = header("x-api-key")
        .or_else(|| header("authorization").map(|v| v.trim_start_matches("Bearer ").to_owned()))
        .unwrap_or_default();
    seen.lock().unwrap().push(key.clone());
    let masked = format!(
        "{}{}{}",
        &key[..8.min(key.len())],
        "*".repeat(20),
        &key[key.len().saturating_sub(4)..]
    );
    ResponseTemplate::new(401).set_body_json(serde_json::json!({
        "error": {
            "message": format!("Incorrect API key provided: {key}. Also known as {masked}."),
            "type": "invalid_request_error", "param": null, "code": "invalid_api_key",
        }
    }))
}

fn model(format: usize, url: &str, key: &str) -> Arc<dyn LanguageModel> {
    let transport: Arc<dyn Transport> = Arc::new(ReqwestTransport::new().unwrap());
    let env: umi_core::env::Env = Arc::new(umi_core::env::SystemEnvironment::new());
    let connection = Connection::new(url).with_api_key(key);
    let model = ModelRef::new("p", "m", 32_000, 1_000);
    match format {
        0 => Arc::new(OpenAiClient::new(
            OpenAiConfig::new(connection, model),
            transport,
            env,
        )),
        1 => Arc::new(ResponsesClient::new(
            ResponsesConfig::new(connection, model),
            transport,
            env,
        )),
        2 => Arc::new(AnthropicClient::new(
            AnthropicConfig::new(connection, model),
            transport,
            env,
        )),
        _ => Arc::new(OllamaClient::new(
            OllamaConfig::new(connection, model),
            transport,
            env,
        )),
    }
}

#[test]
fn a_key_with_whitespace_echoed_by_a_real_server_never_reaches_an_error() {
    // A real runtime, not a simulation: a real server and a real client over loopback.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = MockServer::start().await;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        Mock::given(wiremock::matchers::method("POST"))
            .respond_with(move |request: &Request| echo(&log, request))
            .mount(&server)
            .await;
        let request = CompletionRequest::new(vec![Message::user("hi")]).with_max_tokens(10);
        for configured in [format!("{KEY} "), format!("\t{KEY}\n"), format!(" {KEY}")] {
            for format in 0..4 {
                let error = model(format, &server.uri(), &configured)
                    .complete(&request)
                    .await
                    .unwrap_err();
                let printed = format!(
                    "{error} {error:?} {}",
                    serde_json::to_string(&error).unwrap()
                );
                assert!(
                    printed.contains("[REDACTED]"),
                    "{configured:?} format {format}: {printed}"
                );
                for window in KEY.as_bytes().windows(8) {
                    let window = std::str::from_utf8(window).unwrap();
                    assert!(
                        !printed.contains(window),
                        "{configured:?} format {format}: {window} in {printed}"
                    );
                }
            }
        }
        // The server read the key trimmed, whatever was configured.
        assert!(
            seen.lock().unwrap().iter().all(|key| key == KEY),
            "{:?}",
            seen.lock().unwrap().len()
        );
    });
}

/// Umi's own simulated 401 masks a presented key as OpenAI's older captures do
/// (`sk-PMafP***E873`: three stars); the redactor once took only four or more stars as a
/// mask, so the key's start and end reached the error. Every format's server, whole and
/// streamed.
#[test]
fn the_simulated_servers_masked_echo_never_reaches_an_error() {
    use umi_dst::network::{ClientOptions, Profile, base_url_for, client_for};
    use umi_dst::{Endpoint, SimConfig, SimLlm, SimNetwork, Simulation};
    for profile in [
        Profile::OpenAi,
        Profile::OpenAiResponses,
        Profile::Anthropic,
        Profile::Ollama,
    ] {
        for stream in [false, true] {
            let printed = std::sync::Mutex::new(String::new());
            Simulation::new(SimConfig::new(3))
                .try_run(|sim| {
                    let printed = &printed;
                    async move {
                        let model_ref = ModelRef::new("p", "m", 32_000, 1_000);
                        let llm = Arc::new(SimLlm::new(&sim));
                        let url = base_url_for(profile, "keyed.sim");
                        let network = Arc::new(
                            SimNetwork::new(&sim).with_endpoint(
                                Endpoint::openai(&url, llm)
                                    .with_profile(profile)
                                    .with_api_key("sk-the-servers-own-key-1"),
                            ),
                        );
                        let mut options = ClientOptions::default();
                        options.api_key = Some(KEY.into());
                        let client =
                            client_for(profile, &url, model_ref, &options, network, sim.env());
                        let request =
                            CompletionRequest::new(vec![Message::user("hi")]).with_max_tokens(10);
                        let error = if stream {
                            match client.stream(&request).await {
                                Ok(events) => umi_core::llm::StreamCollector::collect("m", events)
                                    .await
                                    .unwrap_err(),
                                Err(error) => error,
                            }
                        } else {
                            client.complete(&request).await.unwrap_err()
                        };
                        *printed.lock().unwrap() = format!(
                            "{error} {error:?} {}",
                            serde_json::to_string(&error).unwrap()
                        );
                        Ok(())
                    }
                })
                .unwrap();
            let printed = printed.into_inner().unwrap();
            for window in KEY.as_bytes().windows(8) {
                let window = std::str::from_utf8(window).unwrap();
                assert!(
                    !printed.contains(window),
                    "{profile} stream={stream}: {window} in {printed}"
                );
            }
        }
    }
}
