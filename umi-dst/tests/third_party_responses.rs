//! async-openai as the judge of SimNetwork's Responses API: 300 seeds, streamed and
//! whole, with and without tools and reasoning summaries, a third under model faults;
//! each body parsed with eventsource-stream and async-openai's `ResponseStreamEvent` and
//! `Response`, and compared with what Umi's client makes of the same bytes.
//!
//! One known limit: a failure inside a stream is live an `error` event whose fields
//! nest under `error` (vercel/ai `openai-error.1.chunks.txt`, SwiftedMind/SwiftAgent,
//! dyad-sh/dyad #1672), while async-openai types SPEC's flat form and refuses the live
//! one. Its client reports that event as a parse error and goes on to the
//! `response.failed` that follows, which it does parse: the judge does the same, so
//! those streams are still judged (as failures).

use std::collections::BTreeMap;

use crate::support::{
    judge_model, judged_request, judged_seed_config, read_exchange, umi_reading, weather_tool,
};
use async_openai::error::WrappedError;
use async_openai::types::responses::{OutputItem, Response, ResponseStreamEvent, Status};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::Value;
use umi_core::llm::client::ClientFormat;
use umi_core::llm::responses::ResponsesConfig;
use umi_core::llm::{FinishReason, ModelRef};
use umi_dst::network::WireFormat;
use umi_dst::{Endpoint, SimNetwork, Simulation};

const URL: &str = "https://judge.sim/v1";

/// Seeds judged.
const SEEDS: u64 = 300;

/// What a client made of a response.
#[derive(Debug, Default, PartialEq)]
struct Judged {
    text: String,
    /// In order: call id, name, arguments (as JSON text, normalized).
    calls: Vec<(String, String, String)>,
    finish: Option<FinishReason>,
    usage: Option<(u32, u32)>,
    error: bool,
}

fn finish_of(response: &Response) -> Option<FinishReason> {
    let has_calls = response
        .output
        .iter()
        .any(|item| matches!(item, OutputItem::FunctionCall(_)));
    match response.status {
        Status::Completed if has_calls => Some(FinishReason::ToolCalls),
        Status::Completed => Some(FinishReason::Stop),
        Status::Incomplete => match response
            .incomplete_details
            .as_ref()
            .map(|d| d.reason.as_str())
        {
            Some("max_output_tokens") => Some(FinishReason::Length),
            Some("content_filter") => Some(FinishReason::ContentFilter),
            _ => None,
        },
        _ => None,
    }
}

fn ended(judged: &mut Judged, response: &Response) {
    judged.finish = finish_of(response);
    judged.usage = response
        .usage
        .as_ref()
        .map(|u| (u.input_tokens, u.output_tokens));
}

/// The events through eventsource-stream and async-openai; counts the nested error
/// events it refuses.
async fn judge_stream(reads: &[Vec<u8>], nested_errors: &mut u64) -> Judged {
    let body = futures::stream::iter(reads.iter().cloned().map(Ok::<_, std::io::Error>));
    let mut events = body.eventsource();
    let mut judged = Judged::default();
    let mut call_of_item = BTreeMap::new();
    while let Some(event) = events.next().await {
        let event = event.expect("SSE framing");
        let value: Value = serde_json::from_str(&event.data).expect("JSON data");
        let parsed = match serde_json::from_value::<ResponseStreamEvent>(value.clone()) {
            Ok(parsed) => parsed,
            Err(error) => {
                assert!(
                    value["type"] == "error" && value["error"].is_object(),
                    "async-openai cannot parse {}: {error}",
                    event.data
                );
                *nested_errors += 1;
                judged.error = true;
                continue;
            }
        };
        match parsed {
            ResponseStreamEvent::ResponseOutputTextDelta(e) => judged.text.push_str(&e.delta),
            ResponseStreamEvent::ResponseOutputItemAdded(e) => {
                if let OutputItem::FunctionCall(call) = e.item {
                    call_of_item.insert(call.id.clone().unwrap_or_default(), judged.calls.len());
                    judged.calls.push((call.call_id, call.name, call.arguments));
                }
            }
            ResponseStreamEvent::ResponseFunctionCallArgumentsDelta(e) => {
                let index = call_of_item[&e.item_id];
                judged.calls[index].2.push_str(&e.delta);
            }
            ResponseStreamEvent::ResponseCompleted(e) => ended(&mut judged, &e.response),
            ResponseStreamEvent::ResponseIncomplete(e) => ended(&mut judged, &e.response),
            ResponseStreamEvent::ResponseFailed(_) | ResponseStreamEvent::ResponseError(_) => {
                judged.error = true;
            }
            _ => {}
        }
    }
    // A stream that never said how it ended is a failure to its reader.
    judged.error |= judged.finish.is_none();
    judged
}

fn judge_whole(body: &[u8]) -> Judged {
    let value: Value = serde_json::from_slice(body).expect("a JSON body");
    if value.get("object").is_none() {
        serde_json::from_value::<WrappedError>(value).expect("OpenAI's error envelope");
        return Judged {
            error: true,
            ..Judged::default()
        };
    }
    let response: Response = serde_json::from_value(value).unwrap_or_else(|e| {
        panic!(
            "async-openai cannot parse {}: {e}",
            String::from_utf8_lossy(body)
        )
    });
    let mut judged = Judged::default();
    for item in &response.output {
        match item {
            OutputItem::Message(message) => {
                let json = serde_json::to_value(message).unwrap();
                for part in json["content"].as_array().into_iter().flatten() {
                    judged.text.push_str(part["text"].as_str().unwrap_or(""));
                }
            }
            OutputItem::FunctionCall(call) => {
                judged.calls.push((
                    call.call_id.clone(),
                    call.name.clone(),
                    call.arguments.clone(),
                ));
            }
            _ => {}
        }
    }
    ended(&mut judged, &response);
    judged
}

fn umi(reads: &[Vec<u8>], stream: bool, status: u16, model: &str) -> Judged {
    match umi_reading(WireFormat::OpenAiResponses, reads, stream, status, model) {
        None => Judged {
            error: true,
            ..Judged::default()
        },
        Some(response) => Judged {
            text: response.text,
            calls: response
                .tool_calls
                .into_iter()
                .map(|c| (c.id, c.name, c.arguments.to_string()))
                .collect(),
            finish: Some(response.finish_reason),
            usage: response
                .usage
                .map(|u| (u.prompt_tokens, u.completion_tokens)),
            error: false,
        },
    }
}

fn normalized(mut judged: Judged) -> Judged {
    for call in &mut judged.calls {
        if let Ok(value) = serde_json::from_str::<Value>(&call.2) {
            call.2 = value.to_string();
        }
    }
    judged
}

#[test]
fn async_openai_reads_the_responses_api_as_umi_does() {
    let mut nested_errors = 0;
    let mut compared = 0;
    let mut failures = 0;
    for seed in 0..SEEDS {
        let outcome = std::sync::Mutex::new(None);
        Simulation::new(judged_seed_config(seed))
            .try_run(|sim| {
                let outcome = &outcome;
                async move {
                    let model_ref = ModelRef::new("judge", "judge-model", 32_768, 1_024);
                    let llm = judge_model(&sim, model_ref.clone(), true);
                    let network =
                        SimNetwork::new(&sim).with_endpoint(Endpoint::openai_responses(URL, llm));
                    let stream = seed % 2 == 0;
                    let request = judged_request(seed, vec![weather_tool()]);
                    let mut client = ResponsesConfig::new(URL, model_ref);
                    if seed % 5 < 2 {
                        client.reasoning_summary = Some("auto".into());
                    }
                    let http = client.http_request(&request, stream)?;
                    let (status, reads) = read_exchange(&network, http).await?;
                    *outcome.lock().unwrap() = Some((stream, status, reads));
                    Ok(())
                }
            })
            .unwrap_or_else(|e| panic!("seed {seed}: {e:?}"));
        let (stream, status, reads) = outcome.into_inner().unwrap().unwrap();
        let judged = if stream && status == 200 {
            futures::executor::block_on(judge_stream(&reads, &mut nested_errors))
        } else {
            judge_whole(&reads.concat())
        };
        let ours = umi(&reads, stream, status, "judge-model");
        let body = String::from_utf8_lossy(&reads.concat()).into_owned();
        if judged.error || ours.error {
            assert_eq!(
                judged.error, ours.error,
                "seed {seed}: one says error, the other not:\n{body}"
            );
            failures += 1;
        } else {
            assert_eq!(
                normalized(judged),
                normalized(ours),
                "seed {seed}: async-openai and Umi disagree on\n{body}"
            );
        }
        compared += 1;
    }
    #[allow(clippy::print_stderr)] // the test's figures, shown with --nocapture
    {
        eprintln!(
            "judged {compared} seeds ({failures} failures); nested error events async-openai refused: {nested_errors}"
        );
    }
    assert!(failures > 10 && failures < SEEDS / 2, "{failures} failures");
    assert!(nested_errors > 0, "the live error shape never occurred");
}
