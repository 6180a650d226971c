//! SimLLM: determinism independent of call order, every route's output through the real
//! parsers, schema-valid tool arguments, natural limits, latency, streaming shapes,
//! faults, the rate-limit model, user routes, and the conformance suite.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use umi_core::canonical_json;
use umi_core::env::EnvironmentExt;
use umi_core::llm::tokens::{estimate_request_tokens, estimate_text_tokens};
use umi_core::llm::{
    CompletionRequest, FinishReason, LanguageModel, LlmError, Message, ModelRef, StreamCollector,
    StreamEvent, ToolDefinition,
};
use umi_core::memory::tasks::{
    EvolutionCandidate, EvolutionSubject, evolution_request, extraction_request, parse_evolution,
    parse_extraction, parse_rewrite, rewrite_request,
};
use umi_core::storage::EntityType;
use umi_dst::conformance::Conformance;
use umi_dst::llm::config::{LLM_LATENCY_MS_MAX, LLM_TOKEN_LATENCY_MS_MAX};
use umi_dst::llm::{FnRoute, Generated, RateLimitModel, SimLlmConfig, TimeoutMode, schema};
use umi_dst::{
    DeterministicRng, FailureClass, FaultConfig, FaultKind, RunError, SimConfig, SimEnvironment,
    SimLlm, Simulation, Violation, ensure,
};

fn instant(sim: &SimEnvironment) -> SimLlm {
    SimLlm::with_config(sim, SimLlmConfig::default().without_latency()).unwrap()
}

/// Text to extract from, varied by seed: names, organizations, places, none at all,
/// quotes, accents, CJK.
fn sample_text(seed: u64) -> String {
    let mut rng = DeterministicRng::new(seed);
    let subjects = [
        "Alice",
        "Bob Smith",
        "Maria",
        "the team",
        "we",
        "Yuki",
        "Chen",
    ];
    let verbs = [
        "met",
        "joined",
        "called",
        "wrote to",
        "visited",
        "said \"hi\" to",
    ];
    let objects = [
        "Acme Corp",
        "Initech",
        "Paris",
        "the Berlin Summit",
        "a café in Oslo",
        "東京",
        "Project Atlas",
        "nobody",
    ];
    let sentences = rng.range_inclusive(1, 4);
    (0..sentences)
        .map(|_| {
            format!(
                "{} {} {}.",
                rng.choose(&subjects).unwrap(),
                rng.choose(&verbs).unwrap(),
                rng.choose(&objects).unwrap()
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

// ---- Determinism ------------------------------------------------------------------------

#[umi_dst::test(seeds = 0..20)]
async fn answers_do_not_depend_on_call_order(sim: SimEnvironment) -> Result<(), Violation> {
    let first = extraction_request("Alice met Bob at Acme Corp.");
    let second = rewrite_request("where does Alice work?");
    let other = CompletionRequest::new(vec![Message::user("unrelated")]);
    let a = SimLlm::new(&sim);
    let a1 = a.complete(&first).await;
    let a2 = a.complete(&second).await;
    // A second model of the same run and id, called in another order with an extra
    // call in between, answers the same.
    let b = SimLlm::new(&sim);
    let b2 = b.complete(&second).await;
    let _ = b.complete(&other).await;
    let b1 = b.complete(&first).await;
    ensure!(a1 == b1, "first differs: {a1:?} vs {b1:?}");
    ensure!(a2 == b2, "second differs");
    Ok(())
}

#[test]
fn repeated_requests_get_fresh_answers() {
    let mut differing = 0;
    for seed in 0..40 {
        let texts = std::sync::Mutex::new(Vec::new());
        Simulation::new(SimConfig::new(seed))
            .try_run(|sim| {
                let texts = &texts;
                async move {
                    let llm = instant(&sim);
                    let request = CompletionRequest::new(vec![Message::user("tell me something")]);
                    for _ in 0..2 {
                        let text = llm
                            .complete(&request)
                            .await
                            .map(|r| r.text)
                            .unwrap_or_default();
                        texts.lock().unwrap().push(text);
                    }
                    Ok(())
                }
            })
            .unwrap();
        let texts = texts.into_inner().unwrap();
        differing += usize::from(texts[0] != texts[1]);
    }
    assert!(
        differing > 20,
        "the occurrence count varies answers: {differing}/40 differ"
    );
}

// ---- Generators through the real parsers (1,000 seeds each) -------------------------------

#[umi_dst::test(seeds = 0..1000)]
async fn extraction_answers_parse_for_1000_seeds(sim: SimEnvironment) -> Result<(), Violation> {
    let text = sample_text(sim.seed());
    let response = instant(&sim).complete(&extraction_request(&text)).await?;
    let extraction =
        parse_extraction(&response.text).map_err(|e| Violation::new(format!("{text:?}: {e}")))?;
    for entity in &extraction.entities {
        ensure!(
            entity.entity_type == EntityType::Note || text.contains(&entity.name),
            "{} is not in {text:?}",
            entity.name
        );
    }
    Ok(())
}

#[umi_dst::test(seeds = 0..5)]
async fn extraction_falls_back_to_a_note(sim: SimEnvironment) -> Result<(), Violation> {
    let response = instant(&sim)
        .complete(&extraction_request("nothing to see here"))
        .await
        .unwrap();
    let extraction = parse_extraction(&response.text).unwrap();
    ensure!(extraction.entities.len() == 1, "{extraction:?}");
    let note = &extraction.entities[0];
    ensure!(
        note.entity_type == EntityType::Note
            && note.name.starts_with("Note_")
            && note.name.len() == 13,
        "{note:?}"
    );
    ensure!(note.content == "nothing to see here", "{note:?}");
    Ok(())
}

#[umi_dst::test(seeds = 0..1000)]
async fn rewrite_answers_parse_for_1000_seeds(sim: SimEnvironment) -> Result<(), Violation> {
    let query = format!(
        "where did {}?",
        sample_text(sim.seed()).trim_end_matches('.')
    );
    let response = instant(&sim)
        .complete(&rewrite_request(&query))
        .await
        .unwrap();
    let variants = parse_rewrite(&response.text)?;
    ensure!(
        variants[0] == query.trim(),
        "the first variant is the query itself: {variants:?}"
    );
    Ok(())
}

#[umi_dst::test(seeds = 0..1000)]
async fn evolution_answers_parse_for_1000_seeds(sim: SimEnvironment) -> Result<(), Violation> {
    let mut rng = sim.rng("test.candidates");
    let candidates: Vec<EvolutionCandidate> = (0..rng.below(4))
        .map(|i| EvolutionCandidate {
            id: format!("e{i}-{}", rng.below(1000)),
            name: ["Alice", "Acme Corp", "Paris"][i as usize % 3].into(),
            entity_type: EntityType::Person,
            content: sample_text(sim.seed() + i),
        })
        .collect();
    let subject = EvolutionSubject {
        name: "Alice".into(),
        entity_type: EntityType::Person,
        content: sample_text(sim.seed()),
    };
    let response = instant(&sim)
        .complete(&evolution_request(&subject, &candidates))
        .await
        .unwrap();
    let detection = parse_evolution(&response.text, &candidates)?;
    if let Some(id) = &detection.related_id {
        let related = candidates.iter().find(|c| &c.id == id).unwrap();
        let alices = candidates.iter().any(|c| c.name == "Alice");
        ensure!(
            !alices || related.name == "Alice",
            "prefers the candidate named like the subject"
        );
    }
    Ok(())
}

#[umi_dst::test(seeds = 0..200)]
async fn json_mode_answers_are_json(sim: SimEnvironment) -> Result<(), Violation> {
    let request =
        CompletionRequest::new(vec![Message::user(sample_text(sim.seed()))]).with_json_output();
    let response = instant(&sim).complete(&request).await.unwrap();
    ensure!(
        serde_json::from_str::<Value>(&response.text).is_ok_and(|v| v.is_object()),
        "{:?}",
        response.text
    );
    Ok(())
}

// ---- Tool arguments -----------------------------------------------------------------------

fn tool_schemas() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::new(
            "weather",
            "Weather.",
            json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string", "minLength": 1, "maxLength": 30},
                    "days": {"type": "integer", "minimum": 1, "maximum": 14},
                    "units": {"enum": ["metric", "imperial"]},
                    "detail": {"type": "boolean"}
                },
                "required": ["city"],
                "additionalProperties": false
            }),
        ),
        ToolDefinition::new(
            "schedule",
            "Book a slot.",
            json!({
                "type": "object",
                "properties": {
                    "start": {"type": "string", "format": "date-time"},
                    "attendees": {"type": "array", "items": {"type": "string", "format": "email"}, "minItems": 1, "maxItems": 4, "uniqueItems": true},
                    "room": {"type": ["string", "null"]},
                    "priority": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                    "kind": {"const": "meeting"},
                    "id": {"type": "string", "format": "uuid"}
                },
                "required": ["start", "attendees", "kind"]
            }),
        ),
        ToolDefinition::new(
            "search",
            "Search.",
            json!({
                "type": "object",
                "$defs": {"filter": {"type": "object", "properties": {"field": {"type": "string"}, "value": {"type": "string", "maxLength": 12}}, "required": ["field", "value"]}},
                "properties": {
                    "query": {"type": "string", "minLength": 3},
                    "filters": {"type": "array", "items": {"$ref": "#/$defs/filter"}, "maxItems": 3},
                    "limit": {"type": "integer", "multipleOf": 5, "minimum": 5, "maximum": 50},
                    "target": {"oneOf": [{"type": "string", "format": "uri"}, {"type": "integer", "minimum": 0}]},
                    "mode": {"anyOf": [{"enum": ["fast", "deep"]}, {"type": "null"}]}
                },
                "required": ["query"]
            }),
        ),
        ToolDefinition::new(
            "update",
            "Merge settings.",
            json!({
                "allOf": [
                    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}}, "required": ["name"]},
                    {"properties": {"scale": {"type": "number", "multipleOf": 0.25, "minimum": -2, "maximum": 2}}, "required": ["scale"]}
                ]
            }),
        ),
        ToolDefinition::new(
            "nested",
            "Deep object.",
            json!({
                "type": "object",
                "properties": {"outer": {"type": "object", "properties": {"inner": {"type": "object", "properties": {"ip": {"type": "string", "format": "ipv4"}, "when": {"type": "string", "format": "date"}}, "required": ["ip", "when"]}}, "required": ["inner"]}},
                "required": ["outer"]
            }),
        ),
        ToolDefinition::new(
            "now",
            "No arguments.",
            json!({"type": "object", "properties": {}}),
        ),
    ]
}

fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .unwrap()
}

#[test]
fn schema_generator_output_validates_for_1000_seeds() {
    for tool in tool_schemas() {
        let check = validator(&tool.parameters);
        for seed in 0..1000 {
            let value =
                schema::generate(&tool.parameters, &mut DeterministicRng::new(seed)).unwrap();
            assert!(check.is_valid(&value), "{} seed {seed}: {value}", tool.name);
            assert!(
                schema::conforms(&tool.parameters, &value),
                "our own check agrees"
            );
        }
    }
}

#[test]
fn tool_calls_validate_against_their_schemas_for_1000_seeds() {
    let tools = tool_schemas();
    let validators: Vec<(String, jsonschema::Validator)> = tools
        .iter()
        .map(|t| (t.name.clone(), validator(&t.parameters)))
        .collect();
    let validators = Arc::new(validators);
    let calls_seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (tools, seen) = (tools.clone(), calls_seen.clone());
    Simulation::new(SimConfig::new(0))
        .with_seeds(0..1000)
        .run(move |sim| {
            let (tools, validators, seen) = (tools.clone(), validators.clone(), seen.clone());
            async move {
                let request =
                    CompletionRequest::new(vec![Message::user("plan my week")]).with_tools(tools);
                let response = SimLlm::new(&sim).complete(&request).await?;
                for call in &response.tool_calls {
                    let (_, check) = validators
                        .iter()
                        .find(|(name, _)| name == &call.name)
                        .expect("offered tool");
                    ensure!(
                        check.is_valid(&call.arguments),
                        "{} {}",
                        call.name,
                        call.arguments
                    );
                    seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                ensure!(
                    response.tool_calls.is_empty()
                        == (response.finish_reason != FinishReason::ToolCalls),
                    "finish reason matches"
                );
                Ok(())
            }
        });
    assert!(
        calls_seen.load(std::sync::atomic::Ordering::Relaxed) > 900,
        "most seeds call tools"
    );
}

#[umi_dst::test(seeds = 0..50)]
async fn after_tool_results_the_model_answers_in_text(
    sim: SimEnvironment,
) -> Result<(), Violation> {
    let llm = instant(&sim);
    let mut request =
        CompletionRequest::new(vec![Message::user("weather?")]).with_tools(tool_schemas());
    let first = llm.complete(&request).await.unwrap();
    if first.tool_calls.is_empty() {
        return Ok(());
    }
    request.messages.push(Message::assistant_tool_calls(
        first.text.clone(),
        first.tool_calls.clone(),
    ));
    for call in &first.tool_calls {
        request
            .messages
            .push(Message::tool_result(call.id.clone(), "sunny, 21C", true));
    }
    let second = llm.complete(&request).await.unwrap();
    ensure!(
        second.tool_calls.is_empty() && second.text.contains("sunny"),
        "{second:?}"
    );
    Ok(())
}

// ---- Natural limits -------------------------------------------------------------------------

#[umi_dst::test(seeds = 0..5)]
async fn prompts_over_the_window_overflow_with_the_real_count(
    sim: SimEnvironment,
) -> Result<(), Violation> {
    let small = SimLlmConfig::default().with_model(ModelRef::new("sim", "tiny", 64, 32));
    let llm = SimLlm::with_config(&sim, small).unwrap();
    let request = CompletionRequest::new(vec![Message::user("word ".repeat(80))]);
    let expected = estimate_request_tokens(&request);
    let error = llm.complete(&request).await.unwrap_err();
    ensure!(
        error
            == LlmError::ContextOverflow {
                prompt_tokens: Some(expected),
                limit: Some(64)
            },
        "{error:?}"
    );
    Ok(())
}

#[umi_dst::test(seeds = 0..100)]
async fn max_tokens_stop_sequences_and_usage_follow_the_estimator(
    sim: SimEnvironment,
) -> Result<(), Violation> {
    let llm = instant(&sim);
    let request =
        CompletionRequest::new(vec![Message::user(sample_text(sim.seed()))]).with_max_tokens(3);
    let response = llm.complete(&request).await.unwrap();
    ensure!(
        response.finish_reason == FinishReason::Length,
        "{response:?}"
    );
    ensure!(
        response.usage.unwrap().completion_tokens <= 3 && estimate_text_tokens(&response.text) <= 3,
        "{response:?}"
    );
    ensure!(
        response.usage.unwrap().prompt_tokens == estimate_request_tokens(&request),
        "prompt usage is the estimate"
    );

    let open = CompletionRequest::new(vec![Message::user(sample_text(sim.seed()))]);
    let full = llm.complete(&open).await.unwrap();
    ensure!(
        full.usage.unwrap().completion_tokens == estimate_text_tokens(&full.text),
        "completion usage is the estimate"
    );
    let stopped = llm
        .complete(&open.clone().with_stop(vec![" ".into()]))
        .await
        .unwrap();
    ensure!(
        !stopped.text.contains(' ') && stopped.finish_reason == FinishReason::Stop,
        "{stopped:?}"
    );
    Ok(())
}

#[umi_dst::test(seeds = 0..1)]
async fn empty_prompts_are_invalid(sim: SimEnvironment) -> Result<(), Violation> {
    let llm = SimLlm::new(&sim);
    ensure!(
        matches!(
            llm.complete(&CompletionRequest::new(vec![])).await,
            Err(LlmError::InvalidPrompt { .. })
        ),
        "empty list"
    );
    ensure!(
        matches!(
            llm.stream(&CompletionRequest::new(vec![Message::user("")]))
                .await,
            Err(LlmError::InvalidPrompt { .. })
        ),
        "empty text"
    );
    Ok(())
}

// ---- Latency and streaming ------------------------------------------------------------------

#[umi_dst::test(seeds = 0..100)]
async fn latency_is_simulated_and_bounded(sim: SimEnvironment) -> Result<(), Violation> {
    let env = sim.env();
    let request = CompletionRequest::new(vec![Message::user(sample_text(sim.seed()))]);
    let before = env.elapsed();
    let response = SimLlm::new(&sim).complete(&request).await.unwrap();
    let took = env.elapsed() - before;
    let tokens = u64::from(response.usage.unwrap().completion_tokens) + 2;
    let bound =
        Duration::from_millis(LLM_LATENCY_MS_MAX + (tokens + 64) * LLM_TOKEN_LATENCY_MS_MAX);
    ensure!(
        took >= Duration::from_millis(50) && took <= bound,
        "took {took:?}, bound {bound:?}"
    );
    Ok(())
}

#[test]
fn streams_have_the_shapes_real_providers_send() {
    let (mut interleaved, mut escaped, mut usage_events, mut parallel) = (0, 0, 0, 0);
    for seed in 0..300 {
        let events = std::sync::Mutex::new(Vec::new());
        Simulation::new(SimConfig::new(seed))
            .try_run(|sim| {
                let events = &events;
                async move {
                    let request = CompletionRequest::new(vec![Message::user("book it")])
                        .with_tools(tool_schemas());
                    let stream = instant(&sim).stream(&request).await.unwrap();
                    *events.lock().unwrap() = stream.map(Result::unwrap).collect::<Vec<_>>().await;
                    Ok(())
                }
            })
            .unwrap();
        let events = events.into_inner().unwrap();
        let mut seen_index: Vec<u32> = Vec::new();
        let mut last_index = None;
        let mut calls_started = false;
        for event in &events {
            match event {
                StreamEvent::TextDelta { text } => {
                    assert!(!calls_started, "seed {seed}: text after tool calls");
                    assert!(!text.is_empty());
                }
                StreamEvent::ToolCallDelta {
                    index,
                    id,
                    name,
                    arguments_fragment,
                } => {
                    calls_started = true;
                    let first = !seen_index.contains(index);
                    assert_eq!(
                        id.is_some(),
                        first,
                        "seed {seed}: id only in the first delta"
                    );
                    assert_eq!(
                        name.is_some(),
                        first,
                        "seed {seed}: name only in the first delta"
                    );
                    if first {
                        // Calls open in index order: 0, then 1, ...
                        assert_eq!(*index as usize, seen_index.len(), "seed {seed}");
                        seen_index.push(*index);
                    }
                    if last_index.is_some_and(|last| last != *index) && !first {
                        interleaved += 1;
                    }
                    last_index = Some(*index);
                    escaped += usize::from(
                        arguments_fragment
                            .as_deref()
                            .is_some_and(|f| f.contains("\\u")),
                    );
                }
                StreamEvent::Usage { .. } => usage_events += 1,
                _ => {}
            }
        }
        assert!(events.last().unwrap().is_done());
        parallel += usize::from(seen_index.len() > 1);
    }
    // No provider in the profiles opens a call before the previous one is complete
    // (openai-python's accumulator fails on it); parallel calls still happen.
    assert_eq!(interleaved, 0, "a call resumed after another one opened");
    assert!(parallel > 10, "parallel calls: {parallel}");
    // Only arguments with non-ASCII text can show `\u` escapes, so this is rare by
    // nature (9 of 300 seeds with request hash v2): it must occur, not be common.
    assert!(
        escaped > 4,
        "arguments are sometimes \\u-escaped: {escaped}"
    );
    assert!(
        usage_events > 50,
        "usage sometimes comes as its own event: {usage_events}"
    );
}

#[test]
fn collected_streams_equal_complete() {
    Conformance::new()
        .cases(300)
        .deterministic(true)
        .honours_stop(true)
        .check(SimLlm::new);
}

/// `complete` equals collecting `stream`, outcome and simulated time alike, on the fault
/// paths too (the conformance suite covers the fault-free path).
#[test]
fn complete_equals_collected_stream_under_faults() {
    let faults = vec![
        FaultConfig::chance(FaultKind::LlmInvalidResponse, 0.2),
        FaultConfig::chance(FaultKind::LlmWrongContent, 0.2),
        FaultConfig::chance(FaultKind::LlmStreamCut, 0.2),
    ];
    let outcomes = |streamed: bool| {
        let seen = std::sync::Mutex::new(Vec::new());
        Simulation::new(SimConfig::new(0))
            .with_faults(faults.clone())
            .with_seeds(0..150)
            .run(|sim: umi_dst::SimEnvironment| {
                let seen = &seen;
                async move {
                    let env = sim.env();
                    let request =
                        CompletionRequest::new(vec![Message::user(sample_text(sim.seed()))])
                            .with_tools(if sim.seed().is_multiple_of(2) {
                                tool_schemas()
                            } else {
                                vec![]
                            });
                    let llm = SimLlm::new(&sim);
                    let outcome = if streamed {
                        match llm.stream(&request).await {
                            Err(error) => Err(error),
                            Ok(stream) => StreamCollector::collect("sim-large", stream).await,
                        }
                    } else {
                        llm.complete(&request).await
                    };
                    seen.lock()
                        .unwrap()
                        .push((sim.seed(), outcome, env.elapsed()));
                    Ok(())
                }
            });
        seen.into_inner().unwrap()
    };
    let (streamed, completed) = (outcomes(true), outcomes(false));
    for (a, b) in streamed.iter().zip(&completed) {
        assert_eq!(a, b, "seed {}: stream and complete disagree", a.0);
    }
    assert!(
        streamed
            .iter()
            .filter(|(_, outcome, _)| outcome.is_err())
            .count()
            > 20,
        "the fault paths were exercised"
    );
}

// ---- Faults ---------------------------------------------------------------------------------

fn always(kind: FaultKind) -> Vec<FaultConfig> {
    vec![FaultConfig::always(kind)]
}

#[umi_dst::test(seeds = 0..3, faults = [FaultConfig::always(FaultKind::LlmTimeout)])]
async fn timeouts_stall_past_the_callers_deadline(sim: SimEnvironment) -> Result<(), Violation> {
    let env = sim.env();
    let request = CompletionRequest::new(vec![Message::user("hi")]);
    let llm = SimLlm::new(&sim);
    let outcome = env
        .timeout(Duration::from_secs(30), llm.complete(&request))
        .await;
    ensure!(
        outcome.is_err() && env.elapsed() == Duration::from_secs(30),
        "the caller's timeout fired at 30 s"
    );
    let error = llm.complete(&request).await.unwrap_err();
    ensure!(
        error == LlmError::Timeout { after_ms: 600_000 },
        "{error:?}"
    );
    let immediate = SimLlm::with_config(
        &sim,
        SimLlmConfig::default().with_timeout_mode(TimeoutMode::Immediate),
    )
    .unwrap();
    let before = env.elapsed();
    ensure!(
        matches!(
            immediate.complete(&request).await,
            Err(LlmError::Timeout { after_ms: 0 })
        ),
        "immediate"
    );
    ensure!(env.elapsed() == before, "no stall in immediate mode");
    Ok(())
}

#[test]
fn refusing_faults_map_to_typed_errors() {
    let request = || CompletionRequest::new(vec![Message::user("hi")]);
    Simulation::new(SimConfig::new(0))
        .with_faults(always(FaultKind::LlmRateLimit))
        .with_seeds(0..20)
        .run(async move |sim| {
            match SimLlm::new(&sim).stream(&request()).await {
                Err(LlmError::RateLimit {
                    retry_after_ms: Some(ms),
                }) => ensure!((500..=30_000).contains(&ms), "{ms}"),
                other => return Err(Violation::new(format!("{:?}", other.err()))),
            }
            Ok(())
        });
    Simulation::new(SimConfig::new(0))
        .with_faults(always(FaultKind::LlmServiceUnavailable))
        .with_seeds(0..3)
        .run(async move |sim| {
            let error = SimLlm::new(&sim).stream(&request()).await.err();
            ensure!(
                matches!(
                    error,
                    Some(LlmError::ServiceUnavailable {
                        status: Some(503),
                        ..
                    })
                ),
                "{error:?}"
            );
            Ok(())
        });
    Simulation::new(SimConfig::new(0))
        .with_faults(always(FaultKind::LlmContextOverflow))
        .with_seeds(0..3)
        .run(async move |sim| {
            match SimLlm::new(&sim).stream(&request()).await.err() {
                Some(LlmError::ContextOverflow {
                    prompt_tokens: Some(p),
                    limit: Some(l),
                }) => ensure!(l < p, "{l} < {p}"),
                other => return Err(Violation::new(format!("{other:?}"))),
            }
            Ok(())
        });
}

/// `llm.invalid_response` in process: the error a client returns for a body it cannot
/// parse, on a plain turn, a tool turn and a structured one alike, streamed or not.
#[umi_dst::test(seeds = 0..100, faults = [FaultConfig::always(FaultKind::LlmInvalidResponse)])]
async fn invalid_responses_are_bodies_that_do_not_parse(
    sim: SimEnvironment,
) -> Result<(), Violation> {
    let plain = CompletionRequest::new(vec![Message::user("Plan the week.")]);
    let tools = CompletionRequest::new(vec![Message::user("go")]).with_tools(tool_schemas());
    let structured = extraction_request("Alice joined Acme Corp.");
    for request in [plain, tools, structured] {
        let outcome = instant(&sim).complete(&request).await;
        ensure!(
            matches!(&outcome, Err(LlmError::InvalidResponse { reason, .. }) if reason.contains("could not be parsed")),
            "{outcome:?}"
        );
    }
    let corrupt = sim
        .trace()
        .tail()
        .iter()
        .filter(|e| e.kind == "llm.corrupt")
        .count();
    ensure!(corrupt == 3, "{corrupt} llm.corrupt events");
    Ok(())
}

/// `llm.wrong_content`: a well-formed answer the real parsers refuse, in each of its
/// three forms.
#[test]
fn wrong_content_is_refused_by_the_real_parsers() {
    let kinds = std::sync::Mutex::new(std::collections::BTreeSet::new());
    Simulation::new(SimConfig::new(0))
        .with_faults(always(FaultKind::LlmWrongContent))
        .with_seeds(0..200)
        .run(|sim| {
            let kinds = &kinds;
            async move {
                let response = instant(&sim)
                    .complete(&extraction_request("Alice joined Acme Corp."))
                    .await
                    .unwrap();
                ensure!(
                    parse_extraction(&response.text).is_err(),
                    "a broken answer parsed: {:?}",
                    response.text
                );
                let tail = sim.trace().tail();
                let corruption = tail
                    .iter()
                    .find(|e| e.kind == "llm.corrupt")
                    .map(|e| e.detail.clone())
                    .unwrap();
                kinds.lock().unwrap().insert(corruption);
                Ok(())
            }
        });
    assert_eq!(
        kinds.into_inner().unwrap().len(),
        3,
        "malformed, wrong shape and empty all occur"
    );
}

#[umi_dst::test(seeds = 0..200, faults = [FaultConfig::always(FaultKind::LlmWrongContent)])]
async fn broken_tool_arguments_fail_in_the_collector(sim: SimEnvironment) -> Result<(), Violation> {
    let request = CompletionRequest::new(vec![Message::user("go")]).with_tools(tool_schemas());
    match instant(&sim).complete(&request).await {
        Err(LlmError::Json { what, .. }) => {
            ensure!(what.contains("arguments of tool call"), "{what}");
        }
        Ok(response) => {
            let offered = tool_schemas();
            let unknown = response
                .tool_calls
                .iter()
                .any(|c| !offered.iter().any(|t| t.name == c.name));
            // Wrong shape names a tool never offered; empty drops the calls.
            ensure!(
                unknown || response.tool_calls.is_empty(),
                "a corrupted answer looks valid: {response:?}"
            );
        }
        Err(other) => return Err(Violation::new(other.to_string())),
    }
    Ok(())
}

#[test]
fn stream_cuts_end_streams_early() {
    let (mut errors, mut silent) = (0, 0);
    for seed in 0..100 {
        let outcome = std::sync::Mutex::new(None);
        Simulation::new(
            SimConfig::new(seed).with_fault(FaultConfig::always(FaultKind::LlmStreamCut)),
        )
        .try_run(|sim: umi_dst::SimEnvironment| {
            let outcome = &outcome;
            async move {
                let request = CompletionRequest::new(vec![Message::user(sample_text(sim.seed()))]);
                let items: Vec<_> = instant(&sim)
                    .stream(&request)
                    .await
                    .unwrap()
                    .collect()
                    .await;
                let mut collector = StreamCollector::new("m");
                let mut result = Ok(());
                for item in items {
                    match item {
                        Ok(event) => collector.push(event).unwrap(),
                        Err(error) => {
                            result = Err(error);
                            break;
                        }
                    }
                }
                *outcome.lock().unwrap() =
                    Some(result.and_then(|()| collector.finish().map(|_| ())));
                Ok(())
            }
        })
        .unwrap();
        match outcome.into_inner().unwrap().unwrap() {
            Err(LlmError::Connection { .. } | LlmError::ServiceUnavailable { .. }) => errors += 1,
            Err(LlmError::StreamTruncated { .. } | LlmError::EmptyStream) => silent += 1,
            other => panic!("seed {seed}: a cut stream collected as {other:?}"),
        }
    }
    assert!(
        errors > 20 && silent > 20,
        "both cut modes occur: {errors} errors, {silent} silent"
    );
}

#[umi_dst::test(seeds = 0..3)]
async fn rate_limit_model_returns_the_real_wait(sim: SimEnvironment) -> Result<(), Violation> {
    let env = sim.env();
    let limited = SimLlmConfig::default()
        .without_latency()
        .with_rate_limit(RateLimitModel {
            requests_per_minute: 2,
            tokens_per_minute: 100_000,
        });
    let llm = SimLlm::with_config(&sim, limited).unwrap();
    let request = CompletionRequest::new(vec![Message::user("hi")]);
    llm.complete(&request).await.unwrap();
    env.sleep(Duration::from_secs(15)).await;
    llm.complete(&request).await.unwrap();
    let error = llm.complete(&request).await.unwrap_err();
    ensure!(
        error
            == LlmError::RateLimit {
                retry_after_ms: Some(45_000)
            },
        "{error:?}"
    );
    env.sleep(Duration::from_millis(44_999)).await;
    ensure!(
        llm.complete(&request).await.is_err(),
        "one ms early is still too early"
    );
    env.sleep(Duration::from_millis(1)).await;
    ensure!(
        llm.complete(&request).await.is_ok(),
        "admitted once the wait is over"
    );
    Ok(())
}

// ---- User routes ----------------------------------------------------------------------------

#[umi_dst::test(seeds = 0..3)]
async fn user_routes_come_first_and_are_traced(sim: SimEnvironment) -> Result<(), Violation> {
    let llm = instant(&sim).with_route(FnRoute::for_task("memory.extract_entities", |_, rng| {
        Generated::json(format!("{{\"custom\": {}}}", rng.below(10)))
    }));
    let response = llm.complete(&extraction_request("Alice")).await.unwrap();
    ensure!(
        response.text.starts_with("{\"custom\": "),
        "{}",
        response.text
    );
    let traced = sim
        .trace()
        .tail()
        .iter()
        .any(|e| e.kind == "llm.call" && e.detail.contains("route=memory.extract_entities"));
    ensure!(traced, "the chosen route is in the trace");
    ensure!(
        llm.route_name(&rewrite_request("q")) == "rewrite_query",
        "built-ins still answer the rest"
    );
    Ok(())
}

#[umi_dst::test(seeds = 0..1)]
async fn oversized_route_output_names_the_route(sim: SimEnvironment) -> Result<(), Violation> {
    let llm = instant(&sim).with_route(FnRoute::new(
        "firehose",
        |_| true,
        |_, _| Generated::text("x".repeat(600 * 1024)),
    ));
    let error = llm
        .complete(&CompletionRequest::new(vec![Message::user("q")]))
        .await
        .unwrap_err();
    ensure!(
        error.to_string().contains("output of route \"firehose\""),
        "{error}"
    );
    Ok(())
}

#[test]
fn a_panicking_route_is_a_crash_with_the_seed() {
    let sim = Simulation::new(SimConfig::new(77));
    let error = sim
        .try_run(async |sim| {
            let llm = instant(&sim).with_route(FnRoute::new(
                "broken",
                |_| true,
                |_, _| panic!("generator bug"),
            ));
            let _ = llm
                .complete(&CompletionRequest::new(vec![Message::user("q")]))
                .await;
            Ok(())
        })
        .unwrap_err();
    let RunError::Failed(report) = error else {
        panic!("{error}")
    };
    assert_eq!((report.class, report.seed), (FailureClass::Crash, 77));
    assert!(report.message.contains("generator bug"));
}

// ---- Golden file ----------------------------------------------------------------------------

/// The golden file: SimLLM's output, event by event with simulated timestamps, for a
/// fixed set of (seed, request) pairs, faults included. Any change in generation,
/// chunking, latency or fault mapping shows as a diff of this file. Lines are written
/// with `umi_core::canonical_json`, so the file reads the same whether or not serde_json's
/// `preserve_order` is on; `make test` checks it in both builds (with and without `rig`).
/// Regenerate it after a deliberate change with:
///
/// ```sh
/// cargo insta review   # or: INSTA_UPDATE=always cargo test -p umi-dst --test main sim_llm::golden
/// ```
#[test]
fn golden() {
    let subject = EvolutionSubject {
        name: "Alice".into(),
        entity_type: EntityType::Person,
        content: "Alice moved to Initech.".into(),
    };
    let candidates = vec![EvolutionCandidate {
        id: "e-1".into(),
        name: "Alice".into(),
        entity_type: EntityType::Person,
        content: "Alice works at Acme Corp.".into(),
    }];
    let cases: Vec<(&str, CompletionRequest)> = vec![
        (
            "extraction",
            extraction_request("Alice met Bob Smith at Acme Corp in Paris. They said \"hi\" 😀."),
        ),
        ("rewrite", rewrite_request("where does Alice work now?")),
        ("evolution", evolution_request(&subject, &candidates)),
        (
            "generic",
            CompletionRequest::new(vec![
                Message::system("be brief"),
                Message::user("What is the plan for Monday?"),
            ]),
        ),
        (
            "json",
            CompletionRequest::new(vec![Message::user("summarize")]).with_json_output(),
        ),
        (
            "tools",
            CompletionRequest::new(vec![Message::user("book a meeting")])
                .with_tools(tool_schemas()),
        ),
        (
            "stop",
            CompletionRequest::new(vec![Message::user("go on")]).with_stop(vec!["e".into()]),
        ),
        (
            "max_tokens",
            CompletionRequest::new(vec![Message::user("go on")]).with_max_tokens(4),
        ),
    ];
    // One run per seed, the cases in order, so fault rules see a sequence of calls.
    let mut lines = Vec::new();
    for (seed, faults) in [
        (1u64, false),
        (2, false),
        (3, true),
        (4, true),
        (5, true),
        (6, true),
    ] {
        let config = if faults {
            SimConfig::new(seed)
                .with_fault(FaultConfig::chance(FaultKind::LlmInvalidResponse, 0.2))
                .with_fault(FaultConfig::chance(FaultKind::LlmWrongContent, 0.2))
                .with_fault(FaultConfig::chance(FaultKind::LlmStreamCut, 0.25))
                .with_fault(FaultConfig::chance(FaultKind::LlmRateLimit, 0.15))
        } else {
            SimConfig::new(seed)
        };
        let run_lines = std::sync::Mutex::new(Vec::new());
        Simulation::new(config)
            .try_run(|sim: umi_dst::SimEnvironment| {
                let (run_lines, cases) = (&run_lines, &cases);
                async move {
                    let env = sim.env();
                    let llm = SimLlm::new(&sim);
                    for (name, request) in cases {
                        // One line per event: a change shows as the lines it touches.
                        let mut items = Vec::new();
                        match llm.stream(request).await {
                            Err(error) => items.push(json!({"at_ms": env.elapsed().as_millis() as u64, "refused": error})),
                            Ok(mut stream) => {
                                while let Some(item) = stream.next().await {
                                    let at_ms = env.elapsed().as_millis() as u64;
                                    items.push(match item {
                                        Ok(event) => json!({"at_ms": at_ms, "event": event}),
                                        Err(error) => json!({"at_ms": at_ms, "error": error}),
                                    });
                                }
                            }
                        }
                        if items.is_empty() {
                            items.push(json!({"at_ms": env.elapsed().as_millis() as u64, "ended": "without an item"}));
                        }
                        let mut run_lines = run_lines.lock().unwrap();
                        for (index, mut item) in items.into_iter().enumerate() {
                            item["seed"] = json!(sim.seed());
                            item["faults"] = json!(faults);
                            item["case"] = json!(name);
                            item["index"] = json!(index);
                            run_lines.push(canonical_json::to_string(&item));
                        }
                    }
                    Ok(())
                }
            })
            .unwrap();
        lines.extend(run_lines.into_inner().unwrap());
    }
    let rendered = lines.join("\n") + "\n";
    crate::golden_file::check(
        "simllm",
        &rendered,
        "SimLLM's output, event by event. If the change is deliberate: cargo insta review \
         (or INSTA_UPDATE=always cargo test -p umi-dst --test main sim_llm::golden)",
    );
}

/// Issue 23: a tool result that reached the model twice, or never, went unseen. SimLLM
/// now checks every request it gets, and `check_tool_results` fails the run: a second
/// result for one call, a call left without one, a result for a call never made.
#[test]
fn simllm_keeps_what_is_wrong_with_the_tool_results_it_is_sent() {
    use umi_core::llm::ToolCall;
    use umi_dst::checkers::tool_results::check_tool_results;

    Simulation::new(SimConfig::new(0))
        .with_seeds(0..3)
        .run(async |sim| {
            let llm = instant(&sim);
            let turn = Message::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCall::new("call_1", "pay", json!({}))],
            };
            let well_formed = vec![
                Message::user("pay"),
                turn.clone(),
                Message::tool_result("call_1", "paid", true),
            ];
            llm.complete(&CompletionRequest::new(well_formed))
                .await
                .ok();
            ensure!(
                check_tool_results(&llm).is_ok(),
                "{:?}",
                llm.tool_result_problems()
            );
            let twice = vec![
                Message::user("pay"),
                turn.clone(),
                Message::tool_result("call_1", "paid", true),
                Message::tool_result("call_1", "paid", true),
            ];
            let _ = llm.stream(&CompletionRequest::new(twice)).await;
            let never = vec![Message::user("pay"), turn, Message::user("well?")];
            llm.complete(&CompletionRequest::new(never)).await.ok();
            let problems = llm.tool_result_problems();
            ensure!(problems.len() == 2, "{problems:?}");
            ensure!(
                problems[0].contains("\"call_1\" has 2 results"),
                "{problems:?}"
            );
            ensure!(
                problems[1].contains("\"call_1\" has 0 results"),
                "{problems:?}"
            );
            let violation = check_tool_results(&llm).expect_err("the run fails");
            ensure!(
                violation.to_string().contains("tool results wrong"),
                "{violation}"
            );
            Ok(())
        });
}
