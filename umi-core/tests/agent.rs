//! The agent loop with scripted models: parallel tool calls, failing and unknown tools,
//! the iteration limit, loops and stagnation, overflow trimming, tool timeouts.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use umi_core::agent::{Agent, AgentConfig, AgentError, AgentEvent, ToolRegistry};
use umi_core::llm::tokens::estimate_request_tokens;
use umi_core::llm::{LlmError, Message};
use umi_dst::doubles::{FnLanguageModel, ScriptedLanguageModel, Turn};
use umi_dst::{SimConfig, SimEnvironment, Simulation, ensure};

/// Tools that sleep a little (environment time) and log when they start and end.
fn tools(sim: &SimEnvironment, log: &Arc<Mutex<Vec<String>>>) -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    for name in ["weather", "calendar"] {
        let (env, log) = (sim.env(), log.clone());
        tools
            .register_fn(
                name,
                "test tool",
                json!({"type": "object"}),
                move |args: Value| {
                    let (env, log) = (env.clone(), log.clone());
                    async move {
                        log.lock().unwrap().push(format!("start {name}"));
                        env.sleep(Duration::from_millis(100)).await;
                        log.lock().unwrap().push(format!("end {name}"));
                        if args.get("fail").is_some() {
                            Err(format!("{name} is down"))
                        } else {
                            Ok(format!("{name}: fine"))
                        }
                    }
                },
            )
            .unwrap();
    }
    tools
}

#[test]
fn parallel_calls_run_together_and_results_keep_call_order() {
    Simulation::new(SimConfig::new(11)).run(async |sim| {
        let log = Arc::new(Mutex::new(Vec::new()));
        let model = ScriptedLanguageModel::new([
            Turn::text("Checking.")
                .then_tool_call("c1", "weather", json!({}))
                .then_tool_call("c2", "calendar", json!({})),
            Turn::text("Sunny, and you are free."),
        ]);
        let model = Arc::new(model);
        let agent = Agent::new(model.clone(), sim.env()).with_tools(tools(&sim, &log));
        let mut events = Vec::new();
        let outcome = agent
            .run_with_events(vec![Message::user("plan my day")], &mut |e| events.push(e))
            .await
            .unwrap();
        ensure!(
            outcome.answer == "Sunny, and you are free."
                && outcome.iterations == 2
                && outcome.tool_calls == 2,
            "{outcome:?}"
        );
        let log = log.lock().unwrap().clone();
        ensure!(
            log[..2] == ["start weather", "start calendar"],
            "both start before either ends: {log:?}"
        );
        ensure!(
            sim.env().elapsed() == Duration::from_millis(100),
            "in parallel: {:?}",
            sim.env().elapsed()
        );
        let second = &model.requests()[1].messages;
        ensure!(
            matches!(&second[2], Message::Tool { tool_call_id, .. } if tool_call_id == "c1"),
            "{second:?}"
        );
        ensure!(
            matches!(&second[3], Message::Tool { tool_call_id, .. } if tool_call_id == "c2"),
            "{second:?}"
        );
        ensure!(
            events
                .iter()
                .any(|e| matches!(e, AgentEvent::TextDelta { text } if text == "Checking.")),
            "text is streamed as events"
        );
        ensure!(
            matches!(events.last(), Some(AgentEvent::Finished { iterations: 2 })),
            "{:?}",
            events.last()
        );
        Ok(())
    });
}

#[test]
fn a_failing_tool_is_an_unsuccessful_result_not_an_error() {
    Simulation::new(SimConfig::new(11)).run(async |sim| {
        let model = Arc::new(ScriptedLanguageModel::new([
            Turn::tool_call("c1", "weather", json!({"fail": true})).then_tool_call(
                "c2",
                "teleport",
                json!({}),
            ),
            Turn::text("Sorry, the weather service is down."),
        ]));
        let agent = Agent::new(model.clone(), sim.env()).with_tools(tools(&sim, &Arc::default()));
        let outcome = agent.run(vec![Message::user("weather?")]).await.unwrap();
        ensure!(outcome.answer.starts_with("Sorry"), "{outcome:?}");
        let results: Vec<(bool, String)> = model.requests()[1]
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::Tool {
                    success, content, ..
                } => Some((*success, content.clone())),
                _ => None,
            })
            .collect();
        ensure!(
            results
                == [
                    (false, "error: weather is down".to_owned()),
                    (
                        false,
                        "error: there is no tool named \"teleport\"".to_owned()
                    )
                ],
            "{results:?}"
        );
        Ok(())
    });
}

#[test]
fn the_iteration_limit_ends_the_run() {
    Simulation::new(SimConfig::new(11)).run(async |sim| {
        let model = FnLanguageModel::new(|_, call| {
            Turn::tool_call(format!("c{call}"), "weather", json!({"day": call}))
        });
        let config = AgentConfig::default().with_iterations_max(4);
        let agent = Agent::new(Arc::new(model), sim.env())
            .with_tools(tools(&sim, &Arc::default()))
            .with_config(config);
        let error = agent.run(vec![Message::user("forever")]).await.unwrap_err();
        ensure!(
            error == AgentError::MaxIterations { iterations: 4 },
            "{error}"
        );
        Ok(())
    });
}

#[test]
fn repeated_calls_are_a_loop() {
    Simulation::new(SimConfig::new(11)).run(async |sim| {
        let model = ScriptedLanguageModel::repeating(Turn::tool_call(
            "c",
            "weather",
            json!({"city": "Oslo"}),
        ));
        let agent = Agent::new(Arc::new(model), sim.env()).with_tools(tools(&sim, &Arc::default()));
        let error = agent
            .run(vec![Message::user("weather?")])
            .await
            .unwrap_err();
        ensure!(
            matches!(&error, AgentError::LoopDetected { reason } if reason.contains("3 times in a row")),
            "{error}"
        );
        Ok(())
    });
}

#[test]
fn alternating_calls_with_nothing_new_are_stagnation() {
    Simulation::new(SimConfig::new(11)).run(async |sim| {
        let model = FnLanguageModel::new(|_, call| {
            Turn::tool_call(
                format!("c{call}"),
                if call % 2 == 0 { "weather" } else { "calendar" },
                json!({}),
            )
        });
        let agent = Agent::new(Arc::new(model), sim.env()).with_tools(tools(&sim, &Arc::default()));
        let error = agent.run(vec![Message::user("hm")]).await.unwrap_err();
        ensure!(
            matches!(&error, AgentError::LoopDetected { reason } if reason.contains("no new results")),
            "{error}"
        );
        Ok(())
    });
}

/// A model with a small context window: it overflows (with the real estimate) until the
/// conversation fits, then answers.
fn small_window(limit: u32) -> FnLanguageModel {
    FnLanguageModel::new(move |request, _| {
        let tokens = estimate_request_tokens(request);
        if tokens > limit {
            return Turn::refuse(LlmError::ContextOverflow {
                prompt_tokens: Some(tokens),
                limit: Some(limit),
            });
        }
        Turn::text(format!("answered with {} messages", request.messages.len()))
    })
}

fn long_history() -> Vec<Message> {
    let mut messages = vec![Message::system("You are terse.")];
    for i in 0..6 {
        messages.push(Message::user(format!(
            "question {i} {}",
            "padding words ".repeat(20)
        )));
        messages.push(Message::assistant_tool_calls(
            "",
            vec![umi_core::llm::ToolCall::new(
                format!("t{i}"),
                "weather",
                json!({}),
            )],
        ));
        messages.push(Message::tool_result(
            format!("t{i}"),
            "fine ".repeat(20),
            true,
        ));
        messages.push(Message::assistant(format!("answer {i}")));
    }
    messages.push(Message::user("and now?"));
    messages
}

#[test]
fn overflow_trims_old_turns_keeping_calls_with_results() {
    Simulation::new(SimConfig::new(11)).run(async |sim| {
        let model = Arc::new(small_window(200));
        let agent = Agent::new(model.clone(), sim.env());
        let mut trims = Vec::new();
        let outcome = agent
            .run_with_events(long_history(), &mut |e| {
                if let AgentEvent::ContextTrimmed {
                    removed_messages,
                    prompt_tokens,
                } = e
                {
                    trims.push((removed_messages, prompt_tokens));
                }
            })
            .await
            .unwrap();
        ensure!(
            outcome.trims == 1 && trims.len() == 1 && trims[0].1 <= 200,
            "{trims:?}"
        );
        let requests = model.requests();
        let sent = &requests.last().unwrap().messages;
        ensure!(
            matches!(sent[0], Message::System { .. }),
            "the system message stays"
        );
        ensure!(
            sent.last() == Some(&Message::user("and now?")),
            "the newest turn stays"
        );
        for (index, message) in sent.iter().enumerate() {
            if let Message::Tool { tool_call_id, .. } = message {
                let called = sent[..index]
                    .iter()
                    .any(|m| m.tool_calls().iter().any(|c| &c.id == tool_call_id));
                ensure!(called, "tool result {tool_call_id} lost its call");
            }
        }
        Ok(())
    });
}

#[test]
fn a_context_too_small_for_the_newest_turn_is_exhausted() {
    Simulation::new(SimConfig::new(11)).run(async |sim| {
        let agent = Agent::new(Arc::new(small_window(5)), sim.env());
        let error = agent.run(long_history()).await.unwrap_err();
        ensure!(
            matches!(error, AgentError::ContextExhausted { limit: Some(5), .. }),
            "{error}"
        );
        Ok(())
    });
}

#[test]
fn slow_tools_time_out() {
    Simulation::new(SimConfig::new(11)).run(async |sim| {
        let mut tools = ToolRegistry::new();
        let env = sim.env();
        tools
            .register_fn("slow", "", json!({"type": "object"}), move |_| {
                let env = env.clone();
                async move {
                    env.sleep(Duration::from_secs(60)).await;
                    Ok("late".to_owned())
                }
            })
            .unwrap();
        let model = Arc::new(ScriptedLanguageModel::new([
            Turn::tool_call("c1", "slow", json!({})),
            Turn::text("gave up"),
        ]));
        let config = AgentConfig::default().with_tool_timeout(Duration::from_secs(5));
        let agent = Agent::new(model.clone(), sim.env())
            .with_tools(tools)
            .with_config(config);
        agent.run(vec![Message::user("go")]).await.unwrap();
        let result = model.requests()[1].messages.iter().find_map(|m| match m {
            Message::Tool {
                content,
                success: false,
                ..
            } => Some(content.clone()),
            _ => None,
        });
        ensure!(
            result.is_some_and(|r| r.contains("timed out after 5000 ms")),
            "{:?}",
            model.requests()[1].messages
        );
        ensure!(
            sim.env().elapsed() == Duration::from_secs(5),
            "{:?}",
            sim.env().elapsed()
        );
        Ok(())
    });
}

#[test]
fn provider_errors_end_the_run_and_bad_config_is_refused() {
    Simulation::new(SimConfig::new(11)).run(async |sim| {
        let model =
            ScriptedLanguageModel::new([Turn::text("half").then_error(LlmError::Connection {
                reason: "reset".into(),
            })]);
        let agent = Agent::new(Arc::new(model), sim.env());
        let error = agent.run(vec![Message::user("hi")]).await.unwrap_err();
        ensure!(
            error
                == AgentError::Provider(LlmError::Connection {
                    reason: "reset".into()
                }),
            "{error}"
        );
        let bad = Agent::new(Arc::new(ScriptedLanguageModel::new([])), sim.env())
            .with_config(AgentConfig::default().with_iterations_max(0));
        ensure!(
            matches!(
                bad.run(vec![Message::user("hi")]).await,
                Err(AgentError::InvalidConfig { .. })
            ),
            "iterations_max 0"
        );
        let empty = Agent::new(Arc::new(ScriptedLanguageModel::new([])), sim.env());
        ensure!(
            matches!(
                empty.run(vec![Message::system("only")]).await,
                Err(AgentError::InvalidConfig { .. })
            ),
            "no user message"
        );
        Ok(())
    });
}

/// A turn whose stream is cut after its first event: off by default (the run ends with
/// the cut); opted in, the turn is sent again, and the tool call it carried runs once.
#[test]
fn a_cut_turn_is_retried_when_opted_in_and_its_call_runs_once() {
    Simulation::new(SimConfig::new(11)).run(async |sim| {
        let cut = || {
            Turn::text("Checking.")
                .then_tool_call("c1", "weather", json!({}))
                .then_error(LlmError::StreamTruncated { events_received: 2 })
        };
        let script = || {
            [
                cut(),
                cut(),
                Turn::text("Checking.").then_tool_call("c1", "weather", json!({})),
                Turn::text("Sunny."),
            ]
        };

        let log = Arc::new(Mutex::new(Vec::new()));
        let agent = Agent::new(Arc::new(ScriptedLanguageModel::new(script())), sim.env())
            .with_tools(tools(&sim, &log));
        let outcome = agent.run(vec![Message::user("Weather?")]).await;
        ensure!(
            matches!(
                outcome,
                Err(AgentError::Provider(LlmError::StreamTruncated { .. }))
            ),
            "off by default: {outcome:?}"
        );
        ensure!(log.lock().unwrap().is_empty(), "a cut turn runs no tool");

        let log = Arc::new(Mutex::new(Vec::new()));
        let model = Arc::new(ScriptedLanguageModel::new(script()));
        let agent = Agent::new(model.clone(), sim.env())
            .with_tools(tools(&sim, &log))
            .with_config(AgentConfig::default().with_stream_cut_retries_max(2));
        let mut retries = Vec::new();
        let outcome = agent
            .run_with_events(vec![Message::user("Weather?")], &mut |event| {
                if let AgentEvent::TurnRetried {
                    iteration, retry, ..
                } = event
                {
                    retries.push((iteration, retry));
                }
            })
            .await?;
        ensure!(outcome.answer == "Sunny.", "{outcome:?}");
        ensure!(retries == [(1, 1), (1, 2)], "{retries:?}");
        ensure!(outcome.iterations == 2, "retries are not iterations");
        ensure!(
            *log.lock().unwrap() == ["start weather", "end weather"],
            "the call ran once: {:?}",
            log.lock().unwrap()
        );
        ensure!(outcome.tool_calls == 1, "{outcome:?}");
        ensure!(model.calls() == 4, "{} calls", model.calls());

        let agent = Agent::new(Arc::new(ScriptedLanguageModel::new(script())), sim.env())
            .with_tools(tools(&sim, &Arc::new(Mutex::new(Vec::new()))))
            .with_config(AgentConfig::default().with_stream_cut_retries_max(1));
        let outcome = agent.run(vec![Message::user("Weather?")]).await;
        ensure!(
            matches!(
                outcome,
                Err(AgentError::Provider(LlmError::StreamTruncated { .. }))
            ),
            "the limit holds: {outcome:?}"
        );
        let invalid = AgentConfig::default().with_stream_cut_retries_max(9);
        ensure!(invalid.validate().is_err(), "over the limit");
        Ok(())
    });
}
