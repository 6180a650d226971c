//! The test doubles: the mock's stop and streaming properties, the scripted and function
//! models' behaviour, and all three through the conformance suite.

use std::time::Duration;

use futures::StreamExt;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use serde_json::json;
use umi_core::llm::stop::find_stop;
use umi_core::llm::{
    CompletionRequest, FinishReason, LanguageModel, LlmError, Message, StreamEvent, TokenUsage,
    ToolCall,
};
use umi_dst::conformance::Conformance;
use umi_dst::doubles::{FnLanguageModel, MockLanguageModel, ScriptedLanguageModel, Turn};
use umi_dst::{SimConfig, Simulation, ensure};

/// `future` to its end on one seed of a simulation (the doubles need no more of it).
fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    Simulation::new(SimConfig::new(1)).block_on(async |_| future.await)
}

fn events_of(model: &impl LanguageModel, request: &CompletionRequest) -> Vec<StreamEvent> {
    block_on(async {
        let stream = model.stream(request).await.expect("the mock never fails");
        stream
            .map(|item| item.expect("the mock never fails"))
            .collect()
            .await
    })
}

fn finish_reason() -> impl Strategy<Value = FinishReason> {
    prop_oneof![
        Just(FinishReason::Stop),
        Just(FinishReason::Length),
        Just(FinishReason::ContentFilter)
    ]
}

proptest! {
    #![proptest_config(Config { cases: 512, rng_seed: RngSeed::Fixed(0x0_000), failure_persistence: None, ..Config::default() })]

    /// The mock contract (seed 000): Done last and exactly once; one delta per char;
    /// the text is the canned text cut at the first stop; the finish reason passes
    /// through unless a stop cut the text.
    #[test]
    fn mock_streams_per_char_and_honours_stops(
        text in "\\PC{0,60}",
        stops in prop::collection::vec("\\PC{0,3}", 0..4),
        finish in finish_reason(),
    ) {
        let mock = MockLanguageModel::new(text.clone()).with_finish_reason(finish.clone()).with_usage(TokenUsage::new(3, 4));
        let request = CompletionRequest::new(vec![Message::user("hi")]).with_stop(stops.clone());
        let events = events_of(&mock, &request);

        let dones: Vec<usize> = events.iter().enumerate().filter(|(_, e)| e.is_done()).map(|(i, _)| i).collect();
        prop_assert_eq!(dones, vec![events.len() - 1]);

        // The expected cut, computed independently: earliest position, first listed on ties.
        let cut = stops.iter().filter(|s| !s.is_empty()).filter_map(|s| text.find(s.as_str()))
            .min();
        let expected_text = &text[..cut.unwrap_or(text.len())];
        let deltas: Vec<&str> = events.iter().filter_map(|e| match e { StreamEvent::TextDelta { text } => Some(text.as_str()), _ => None }).collect();
        prop_assert_eq!(deltas.len(), expected_text.chars().count());
        prop_assert_eq!(deltas.concat(), expected_text);
        let expected_finish = if cut.is_some() { FinishReason::Stop } else { finish };
        prop_assert_eq!(events.last(), Some(&StreamEvent::done(expected_finish, Some(TokenUsage::new(3, 4)))));
    }

    /// On a tie the stop listed first wins. The cut text is the same either way, so
    /// the rule is checked where it is observable: the index `find_stop` reports (the
    /// mock cuts with it). A three-letter alphabet makes ties common.
    #[test]
    fn first_listed_stop_wins_ties(text in "[a-c]{0,20}", stops in prop::collection::vec("[a-c]{1,2}", 1..4)) {
        let found = find_stop(&text, &stops);
        let earliest = stops.iter().filter_map(|s| text.find(s.as_str())).min();
        prop_assert_eq!(found.map(|f| f.position), earliest);
        if let Some(found) = found {
            let first_listed = stops.iter().position(|s| text.find(s.as_str()) == Some(found.position)).unwrap();
            prop_assert_eq!(found.stop_index, first_listed);
        }
    }
}

#[test]
fn mock_sends_done_for_empty_text() {
    let events = events_of(
        &MockLanguageModel::new(""),
        &CompletionRequest::new(vec![Message::user("q")]),
    );
    assert_eq!(
        events,
        vec![StreamEvent::done(
            FinishReason::Stop,
            Some(TokenUsage::default())
        )]
    );
}

#[test]
fn scripted_plays_turns_in_order_and_logs_requests() {
    let model = ScriptedLanguageModel::new([
        Turn::text("Looking it up. ").then_tool_call("c1", "search", json!({"query": "oslo"})),
        Turn::text("It is sunny.").with_usage(TokenUsage::new(20, 4)),
    ]);
    let first = CompletionRequest::new(vec![Message::user("weather in oslo?")]);
    let response = block_on(model.complete(&first)).unwrap();
    assert_eq!(response.text, "Looking it up. ");
    assert_eq!(
        response.tool_calls,
        vec![ToolCall::new("c1", "search", json!({"query": "oslo"}))]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);

    let second = CompletionRequest::new(vec![Message::user("and?")]);
    let response = block_on(model.complete(&second)).unwrap();
    assert_eq!(
        (response.text.as_str(), response.usage),
        ("It is sunny.", Some(TokenUsage::new(20, 4)))
    );
    assert_eq!(model.requests(), vec![first, second]);
    assert_eq!(model.remaining(), 0);
}

#[test]
fn an_exhausted_script_is_a_clear_error() {
    let model = ScriptedLanguageModel::new([Turn::text("only one")]);
    let request = CompletionRequest::new(vec![Message::user("q")]);
    block_on(model.complete(&request)).unwrap();
    let error = block_on(model.complete(&request)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "bad request: scripted model exhausted: call #2 but the script has 1 turn(s)"
    );
    assert_eq!(model.calls(), 2);
}

/// A finished stream may be polled again (a `select!` loop, a `fuse`-less combinator):
/// the scripted double answers `None` again rather than panicking.
#[test]
fn a_scripted_stream_polled_after_its_end_stays_ended() {
    let model = ScriptedLanguageModel::new([
        Turn::text("hi"),
        Turn::text("x").then_error(LlmError::StreamTruncated { events_received: 1 }),
    ]);
    let request = CompletionRequest::new(vec![Message::user("q")]);
    block_on(async {
        for turn in 0..2 {
            let mut stream = model.stream(&request).await.unwrap();
            while stream.next().await.is_some() {}
            for _ in 0..3 {
                assert!(stream.next().await.is_none(), "turn {turn}");
            }
        }
    });
}

#[test]
fn refusals_errors_and_fragments_follow_the_contract() {
    let request = CompletionRequest::new(vec![Message::user("q")]);
    let refused = ScriptedLanguageModel::new([Turn::refuse(LlmError::RateLimit {
        retry_after_ms: Some(2_000),
    })]);
    assert_eq!(
        block_on(refused.stream(&request)).err(),
        Some(LlmError::RateLimit {
            retry_after_ms: Some(2_000)
        })
    );

    let cut = ScriptedLanguageModel::new([Turn::text("partial")
        .then_error(LlmError::StreamTruncated { events_received: 1 })
        .then_text("never sent")]);
    let items: Vec<_> = block_on(async {
        cut.stream(&request)
            .await
            .unwrap()
            .collect::<Vec<_>>()
            .await
    });
    assert_eq!(items.len(), 2, "the error ends the stream: {items:?}");
    assert!(items[1].is_err());

    let fragments = ScriptedLanguageModel::new([Turn::new()
        .then_fragment(0, Some("a"), Some("read"), Some("{\"pa"))
        .then_fragment(1, Some("b"), Some("read"), Some("{}"))
        .then_fragment(0, None, None, Some("th\": \"x\"}"))]);
    let response = block_on(fragments.complete(&request)).unwrap();
    assert_eq!(response.tool_calls[0].arguments, json!({"path": "x"}));
    assert_eq!(response.tool_calls[1].id, "b");

    let invalid = ScriptedLanguageModel::new([Turn::text("x")]);
    let error = block_on(invalid.stream(&CompletionRequest::new(vec![])))
        .err()
        .unwrap();
    assert!(matches!(error, LlmError::InvalidPrompt { .. }), "{error}");
}

#[test]
fn pauses_take_simulated_time() {
    Simulation::new(SimConfig::new(1))
        .try_run(async |sim| {
            let model = ScriptedLanguageModel::repeating(
                Turn::text("slow")
                    .then_pause(Duration::from_secs(30))
                    .then_text(" answer"),
            )
            .with_env(sim.env());
            let response = model
                .complete(&CompletionRequest::new(vec![Message::user("q")]))
                .await;
            ensure!(
                response.map(|r| r.text) == Ok("slow answer".into()),
                "wrong answer"
            );
            ensure!(
                sim.env().elapsed() == Duration::from_secs(30),
                "{:?}",
                sim.env().elapsed()
            );
            Ok(())
        })
        .unwrap();
    let no_env = ScriptedLanguageModel::new([Turn::new().then_pause(Duration::from_secs(1))]);
    let error = block_on(no_env.stream(&CompletionRequest::new(vec![Message::user("q")])))
        .err()
        .unwrap();
    assert!(error.to_string().contains("with_env"), "{error}");
}

#[test]
fn function_model_routes_on_the_request() {
    let model = FnLanguageModel::new(|request, call| match request.task.as_deref() {
        Some("memory.rewrite_query") => Turn::text("[\"a\", \"b\"]"),
        _ => Turn::text(format!(
            "call {call}: {}",
            request.last_user_text().unwrap_or("")
        )),
    });
    let rewrite =
        CompletionRequest::new(vec![Message::user("q")]).with_task("memory.rewrite_query");
    assert_eq!(
        block_on(model.complete(&rewrite)).unwrap().text,
        "[\"a\", \"b\"]"
    );
    let chat = CompletionRequest::new(vec![Message::user("hello")]);
    assert_eq!(
        block_on(model.complete(&chat)).unwrap().text,
        "call 2: hello"
    );
    assert_eq!(model.calls(), 2);
}

#[test]
fn mock_passes_conformance() {
    Conformance::new()
        .cases(256)
        .honours_stop(true)
        .deterministic(true)
        .validates_requests(false)
        .check(|_| {
            MockLanguageModel::new("The answer. It ends here!")
                .with_finish_reason(FinishReason::Length)
        });
}

#[test]
fn scripted_passes_conformance() {
    Conformance::new()
        .cases(256)
        .deterministic(true)
        .check(|_| {
            ScriptedLanguageModel::repeating(
                Turn::text("Checking.")
                    .then_tool_call("c1", "search", json!({"query": "x"}))
                    .then_usage(TokenUsage::new(5, 5)),
            )
        });
    // A turn failing mid-stream still ends the stream correctly.
    Conformance::new()
        .cases(64)
        .expect_success(false)
        .check(|_| {
            ScriptedLanguageModel::repeating(Turn::text("half").then_error(LlmError::Connection {
                reason: "reset".into(),
            }))
        });
}

#[test]
fn function_model_passes_conformance() {
    Conformance::new()
        .cases(256)
        .deterministic(true)
        .check(|env| {
            FnLanguageModel::new(|request, _| {
                Turn::text(format!("{} messages", request.messages.len()))
                    .then_pause(Duration::from_millis(250))
            })
            .with_env(env.env())
        });
}

/// The suite must catch a broken provider: a model whose streams end without Done.
#[test]
fn conformance_catches_a_stream_without_done() {
    struct NoDone(umi_core::llm::ModelRef);
    #[async_trait::async_trait]
    impl LanguageModel for NoDone {
        fn model_ref(&self) -> &umi_core::llm::ModelRef {
            &self.0
        }
        async fn stream(
            &self,
            request: &CompletionRequest,
        ) -> Result<umi_core::llm::EventStream, LlmError> {
            request.validate()?;
            Ok(futures::stream::iter([Ok(StreamEvent::text("no end"))]).boxed())
        }
    }
    let failure = Conformance::new()
        .cases(8)
        .try_check(|_| NoDone(umi_core::llm::ModelRef::new("broken", "broken", 100, 10)))
        .unwrap_err();
    assert!(failure.contains("without Done"), "{failure}");
    assert!(
        failure.contains("request: {"),
        "the failing request is shown: {failure}"
    );
}
