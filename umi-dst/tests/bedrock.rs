//! Bedrock's streams cut by the network inside an event-stream frame: `network.body`
//! draws its cut as a byte count, whatever the format, so a cut lands inside a frame's
//! prelude, headers, payload or CRC as often as a real connection drops there, and
//! umi-core's client reports a typed truncation (never a panic or half an event).

use std::sync::{Arc, Mutex};

use umi_core::llm::{
    CompletionRequest, CompletionResponse, LanguageModel, LlmError, Message, ModelRef,
    StreamCollector,
};
use umi_dst::network::{ClientOptions, Profile, base_url_for, client_for};
use umi_dst::{
    Endpoint, FaultConfig, FaultKind, SimConfig, SimLlm, SimLlmConfig, SimNetwork, Simulation,
};

const MODEL: &str = "anthropic.claude-3-5-haiku-20241022-v1:0";

/// The frames' ends in `body`, from each prelude's total length (smithy.io "Amazon
/// Event Stream Specification": the first 4 bytes, big-endian); a partial last frame
/// ends nowhere.
fn frame_ends(body: &[u8]) -> Vec<usize> {
    let mut ends = vec![0];
    let mut at = 0;
    while let Some(prelude) = body.get(at..at + 4) {
        let total = u32::from_be_bytes(prelude.try_into().unwrap()) as usize;
        at += total;
        if at > body.len() || total == 0 {
            break;
        }
        ends.push(at);
    }
    ends
}

/// One streamed request to a simulated Bedrock endpoint under `fault` (injected once)
/// at `seed`: what the client made of the stream, and the bytes the server sent.
fn stream_once(seed: u64, fault: FaultKind) -> (Result<CompletionResponse, LlmError>, Vec<u8>) {
    let got = Mutex::new(None);
    Simulation::new(
        SimConfig::new(seed).with_fault(FaultConfig::always(fault).with_max_injections(1)),
    )
    .try_run(|sim| {
        let got = &got;
        async move {
            let model = ModelRef::new("bedrock", MODEL, 200_000, 4_096);
            let config = SimLlmConfig::default().with_model(model.clone());
            let llm = Arc::new(SimLlm::with_config(&sim, config).unwrap());
            let url = base_url_for(Profile::Bedrock, "bedrock.sim");
            let network = Arc::new(
                SimNetwork::new(&sim)
                    .with_endpoint(Endpoint::openai(&url, llm).with_profile(Profile::Bedrock))
                    .with_capture(),
            );
            let client = client_for(
                Profile::Bedrock,
                &url,
                model,
                &ClientOptions::default(),
                network.clone(),
                sim.env(),
            );
            let request = CompletionRequest::new(vec![Message::user(
                "Tell me what changed in the project this week, in some detail.",
            )]);
            let outcome = match client.stream(&request).await {
                Ok(events) => StreamCollector::collect(MODEL, events).await,
                Err(error) => Err(error),
            };
            let body = network.exchanges().pop().expect("one exchange").body();
            *got.lock().unwrap() = Some((outcome, body));
            Ok(())
        }
    })
    .unwrap();
    got.into_inner().unwrap().unwrap()
}

#[test]
fn a_network_cut_lands_inside_bedrock_frames_and_the_client_types_it() {
    let (mut inside, mut typed) = (0, 0);
    for seed in 0..40 {
        let (outcome, body) = stream_once(seed, FaultKind::NetworkPartialWrite);
        let mid_frame = !frame_ends(&body).contains(&body.len());
        match outcome {
            Err(LlmError::StreamTruncated { .. } | LlmError::EmptyStream) => typed += 1,
            // A cut after the last frame the answer needs leaves it whole.
            Ok(_) => assert!(!mid_frame, "seed {seed}: a whole answer from a cut frame"),
            Err(other) => panic!("seed {seed}: {other:?}"),
        }
        if mid_frame {
            inside += 1;
        }
    }
    assert!(inside > 20, "{inside} of 40 cuts inside a frame");
    assert!(typed >= inside, "{typed} typed, {inside} inside a frame");
}

/// `llm.invalid_response` on a Bedrock stream: the service sends a whole event-stream
/// message (lengths and CRCs right) whose JSON payload is cut, so the client's JSON
/// decode fails (`InvalidResponse`), not its framing. Before the encoder wrote its own
/// broken frame, the text formats' cut fell inside the binary frame and the client saw
/// a truncated stream instead (review of issue 42's second stop).
#[test]
fn an_invalid_response_on_a_bedrock_stream_is_a_whole_frame_with_broken_json() {
    let mut invalid = 0;
    for seed in 0..12 {
        let (outcome, body) = stream_once(seed, FaultKind::LlmInvalidResponse);
        // Every message whole: the break is in a payload, never in the framing.
        assert!(
            frame_ends(&body).contains(&body.len()),
            "seed {seed}: the body ends inside a frame"
        );
        match outcome {
            Err(LlmError::InvalidResponse { .. }) => invalid += 1,
            other => panic!("seed {seed}: {other:?}"),
        }
    }
    assert_eq!(invalid, 12);
}
