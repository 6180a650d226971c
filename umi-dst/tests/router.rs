//! The router, in simulated time, with scripted providers: the seed-004 suite (resolve,
//! fallbacks, exhaustion, retries with exponential backoff on 429 and 503, no retry on
//! 400/401/context length, max retries) and the rest of the policy: Retry-After,
//! context-window fallbacks, the circuit breaker, the deadline, streaming. The router
//! checkers run on every test's events.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use umi_core::llm::router::{CooldownPolicy, LlmRouter, ResolveError, RetryPolicy, RouterEvent};
use umi_core::llm::{
    CompletionRequest, LanguageModel, LlmError, Message, ModelRef, StreamCollector,
};
use umi_dst::checkers::router::{RouterLog, check_router};
use umi_dst::conformance::Conformance;
use umi_dst::doubles::{FnLanguageModel, Turn};
use umi_dst::{SimConfig, SimEnvironment, Simulation, Violation, ensure};

fn policy() -> RetryPolicy {
    RetryPolicy::default().with_jitter(0.0)
}

/// A model that refuses with `errors[i]` on its i-th call, then answers `answer`.
fn model(
    id: &str,
    window: u32,
    errors: Vec<LlmError>,
    answer: &'static str,
) -> Arc<dyn LanguageModel> {
    let (provider, name) = id.split_once('/').unwrap();
    Arc::new(
        FnLanguageModel::new(move |_, call| match errors.get(call - 1) {
            Some(error) => Turn::refuse(error.clone()),
            None => Turn::text(answer),
        })
        .with_model_ref(ModelRef::new(provider, name, window, 1_000)),
    )
}

fn unavailable() -> LlmError {
    LlmError::ServiceUnavailable {
        status: Some(503),
        message: "down".into(),
    }
}

struct Setup {
    router: LlmRouter,
    log: RouterLog,
    windows: BTreeMap<String, u32>,
    retry: RetryPolicy,
}

fn setup(
    sim: &SimEnvironment,
    models: &[(&str, u32, Vec<LlmError>)],
    fallback: &[&str],
    retry: RetryPolicy,
) -> Setup {
    let log = RouterLog::new();
    let mut builder = LlmRouter::builder(sim.env())
        .retry(retry)
        .observer(log.observer());
    let mut windows = BTreeMap::new();
    for (id, window, errors) in models {
        builder = builder.model(id, model(id, *window, errors.clone(), "answer"));
        windows.insert((*id).to_owned(), *window);
    }
    let router = builder
        .default_model(models[0].0)
        .fallback(fallback)
        .build()
        .unwrap();
    Setup {
        router,
        log,
        windows,
        retry,
    }
}

impl Setup {
    fn check(&self) -> Result<(), Violation> {
        check_router(&self.log.events(), &self.retry, &self.windows)
    }

    fn attempts_on(&self, model: &str) -> usize {
        self.log
            .events()
            .iter()
            .filter(|(_, e)| matches!(e, RouterEvent::Attempt { model: m, .. } if m == model))
            .count()
    }

    fn sleeps(&self) -> Vec<u64> {
        self.log
            .events()
            .iter()
            .filter_map(|(_, e)| match e {
                RouterEvent::Backoff { sleep_ms, .. } => Some(*sleep_ms),
                _ => None,
            })
            .collect()
    }
}

fn request() -> CompletionRequest {
    CompletionRequest::new(vec![Message::user("hello")])
}

#[test]
fn resolves_provider_model_ids() {
    Simulation::new(SimConfig::new(4)).run(async |sim| {
        let s = setup(
            &sim,
            &[
                ("glm/glm-4-plus", 128_000, vec![]),
                ("deepseek/deepseek-chat", 64_000, vec![]),
            ],
            &[],
            policy(),
        );
        ensure!(
            s.router
                .resolve("glm/glm-4-plus")
                .map(|m| m.context_window_tokens)
                == Ok(128_000),
            "resolves"
        );
        let unknown_provider = s.router.resolve("openai/gpt-4o");
        ensure!(
            matches!(
                &unknown_provider,
                Err(ResolveError::UnknownProvider { known, .. }) if known == &["deepseek", "glm"]
            ),
            "an unknown provider lists the known ones, sorted, once each: {unknown_provider:?}"
        );
        let unknown = s.router.resolve("glm/glm-9").unwrap_err();
        ensure!(
            matches!(unknown, ResolveError::UnknownModel { .. })
                && unknown.to_string().contains("glm/glm-4-plus"),
            "{unknown}"
        );
        ensure!(
            matches!(s.router.resolve("glm"), Err(ResolveError::Malformed { .. })),
            "malformed"
        );
        // A request naming a model routes to it; an unknown one is a bad request.
        let named = request().with_model("deepseek/deepseek-chat");
        ensure!(
            s.router.complete(&named).await.is_ok() && s.attempts_on("deepseek/deepseek-chat") == 1,
            "named model used"
        );
        let bad = s.router.complete(&request().with_model("nope/x")).await;
        ensure!(matches!(bad, Err(LlmError::BadRequest { .. })), "{bad:?}");
        Ok(())
    });
}

#[test]
fn first_fallback_then_second_then_exhausted() {
    Simulation::new(SimConfig::new(4)).run(async |sim| {
        let down = vec![unavailable(); 10];
        let s = setup(
            &sim,
            &[
                ("a/primary", 8_000, down.clone()),
                ("b/first", 8_000, vec![]),
                ("c/second", 8_000, vec![]),
            ],
            &["b/first", "c/second"],
            policy(),
        );
        ensure!(
            s.router.complete(&request()).await.is_ok(),
            "the first fallback answers"
        );
        ensure!(
            (
                s.attempts_on("a/primary"),
                s.attempts_on("b/first"),
                s.attempts_on("c/second")
            ) == (3, 1, 0),
            "primary tried 1 + 2 retries"
        );
        s.check()?;

        let s = setup(
            &sim,
            &[
                ("a/primary", 8_000, down.clone()),
                ("b/first", 8_000, down.clone()),
                ("c/second", 8_000, vec![]),
            ],
            &["b/first", "c/second"],
            policy(),
        );
        ensure!(
            s.router.complete(&request()).await.is_ok() && s.attempts_on("c/second") == 1,
            "the second fallback answers"
        );
        s.check()?;

        let s = setup(
            &sim,
            &[
                ("a/primary", 8_000, down.clone()),
                ("b/first", 8_000, down.clone()),
            ],
            &["b/first"],
            policy(),
        );
        match s.router.complete(&request()).await {
            Err(LlmError::Exhausted { attempts, .. }) => {
                ensure!(
                    attempts.len() == 6,
                    "every attempt's error is kept: {}",
                    attempts.len()
                );
                ensure!(
                    attempts
                        .iter()
                        .all(|a| a.error.as_deref() == Some(&unavailable())),
                    "{attempts:?}"
                );
                ensure!(
                    attempts[3].model == "b/first" && attempts[3].attempt == 0,
                    "in order"
                );
            }
            other => return Err(Violation::new(format!("expected Exhausted, got {other:?}"))),
        }
        s.check()
    });
}

#[test]
fn retries_429_with_exponential_backoff_and_honours_retry_after() {
    Simulation::new(SimConfig::new(4)).run(async |sim| {
        let limited = vec![
            LlmError::RateLimit {
                retry_after_ms: None
            };
            2
        ];
        let s = setup(&sim, &[("a/m", 8_000, limited)], &[], policy());
        let before = sim.env().elapsed();
        ensure!(
            s.router.complete(&request()).await.is_ok(),
            "answers on the third attempt"
        );
        ensure!(
            s.sleeps() == [1_000, 2_000],
            "backoff 1 s then 2 s: {:?}",
            s.sleeps()
        );
        ensure!(
            sim.env().elapsed() - before == Duration::from_millis(3_000),
            "{:?}",
            sim.env().elapsed() - before
        );
        s.check()?;

        let asked = vec![LlmError::RateLimit {
            retry_after_ms: Some(7_500),
        }];
        let s = setup(&sim, &[("a/m", 8_000, asked)], &[], policy());
        s.router.complete(&request()).await.unwrap();
        ensure!(
            s.sleeps() == [7_500],
            "Retry-After longer than the backoff wins: {:?}",
            s.sleeps()
        );
        s.check()?;

        let too_long = vec![
            LlmError::RateLimit {
                retry_after_ms: Some(120_000)
            };
            3
        ];
        let s = setup(
            &sim,
            &[("a/m", 8_000, too_long), ("b/m", 8_000, vec![])],
            &["b/m"],
            policy(),
        );
        let before = sim.env().elapsed();
        s.router.complete(&request()).await.unwrap();
        ensure!(
            s.sleeps().is_empty() && s.attempts_on("a/m") == 1,
            "a Retry-After over the cap moves on at once"
        );
        ensure!(sim.env().elapsed() == before, "without sleeping");
        s.check()
    });
}

#[test]
fn retries_503_and_stops_after_max_retries() {
    Simulation::new(SimConfig::new(4)).run(async |sim| {
        let s = setup(&sim, &[("a/m", 8_000, vec![unavailable()])], &[], policy());
        ensure!(
            s.router.complete(&request()).await.is_ok() && s.attempts_on("a/m") == 2,
            "one retry after a 503"
        );
        // The breaker would stop this earlier (3 failures open it); this test is about
        // max_retries, so keep it closed by building with a high threshold.
        let log = RouterLog::new();
        let router = LlmRouter::builder(sim.env())
            .retry(policy().with_max_retries(4))
            .cooldown(CooldownPolicy::new(100, 1_000))
            .observer(log.observer())
            .model(
                "a/m",
                model("a/m", 8_000, vec![unavailable(); 10], "answer"),
            )
            .default_model("a/m")
            .build()
            .unwrap();
        let s = Setup {
            router,
            log,
            windows: [("a/m".to_owned(), 8_000)].into_iter().collect(),
            retry: policy().with_max_retries(4),
        };
        ensure!(
            matches!(
                s.router.complete(&request()).await,
                Err(LlmError::Exhausted { .. })
            ),
            "gives up"
        );
        ensure!(
            s.attempts_on("a/m") == 5,
            "1 + max_retries attempts: {}",
            s.attempts_on("a/m")
        );
        ensure!(
            s.sleeps() == [1_000, 2_000, 4_000, 8_000],
            "{:?}",
            s.sleeps()
        );
        s.check()
    });
}

#[test]
fn no_retry_on_400_401_or_context_length() {
    Simulation::new(SimConfig::new(4)).run(async |sim| {
        let bad = vec![LlmError::BadRequest {
            status: Some(400),
            message: "bad".into(),
        }];
        let s = setup(
            &sim,
            &[("a/m", 8_000, bad), ("b/m", 8_000, vec![])],
            &["b/m"],
            policy(),
        );
        ensure!(
            matches!(
                s.router.complete(&request()).await,
                Err(LlmError::BadRequest { .. })
            ),
            "400 ends the call"
        );
        ensure!(
            (s.attempts_on("a/m"), s.attempts_on("b/m")) == (1, 0),
            "no retry, no fallback"
        );

        let auth = vec![LlmError::Auth {
            status: 401,
            message: "key".into(),
        }];
        let s = setup(
            &sim,
            &[("a/m", 8_000, auth), ("b/m", 8_000, vec![])],
            &["b/m"],
            policy(),
        );
        ensure!(
            s.router.complete(&request()).await.is_ok(),
            "401 falls back"
        );
        ensure!(
            (s.attempts_on("a/m"), s.attempts_on("b/m")) == (1, 1),
            "without retrying the bad key"
        );
        s.check()?;

        let overflow = vec![
            LlmError::ContextOverflow {
                prompt_tokens: Some(9_000),
                limit: Some(8_000)
            };
            5
        ];
        let log = RouterLog::new();
        let router = LlmRouter::builder(sim.env())
            .retry(policy())
            .observer(log.observer())
            .model(
                "a/small",
                model("a/small", 8_000, overflow.clone(), "small"),
            )
            .model("b/same", model("b/same", 8_000, vec![], "same"))
            .model("c/smaller", model("c/smaller", 4_000, vec![], "smaller"))
            .model("d/large", model("d/large", 32_000, vec![], "large"))
            .default_model("a/small")
            .fallback(&["b/same"])
            .context_fallback(&["c/smaller", "b/same", "d/large"])
            .build()
            .unwrap();
        let answer = router.complete(&request()).await.unwrap();
        ensure!(
            answer.text == "large",
            "only a larger window takes an overflow: {}",
            answer.text
        );
        let windows: BTreeMap<String, u32> = [
            ("a/small", 8_000),
            ("b/same", 8_000),
            ("c/smaller", 4_000),
            ("d/large", 32_000),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        check_router(&log.events(), &policy(), &windows)?;

        let router = LlmRouter::builder(sim.env())
            .retry(policy())
            .model("a/small", model("a/small", 8_000, overflow, "small"))
            .default_model("a/small")
            .build()
            .unwrap();
        let error = router.complete(&request()).await.unwrap_err();
        ensure!(
            error
                == LlmError::ContextOverflow {
                    prompt_tokens: Some(9_000),
                    limit: Some(8_000)
                },
            "no larger window: the overflow itself, for the caller to trim: {error}"
        );
        Ok(())
    });
}

#[test]
fn the_circuit_opens_skips_and_probes() {
    Simulation::new(SimConfig::new(4)).run(async |sim| {
        let cooldown = CooldownPolicy::new(3, 60_000);
        let log = RouterLog::new();
        let retry = policy().with_max_retries(0);
        let router = LlmRouter::builder(sim.env())
            .retry(retry)
            .cooldown(cooldown)
            .observer(log.observer())
            .model(
                "a/m",
                model("a/m", 8_000, vec![unavailable(); 3], "primary"),
            )
            .model("b/m", model("b/m", 8_000, vec![], "fallback"))
            .default_model("a/m")
            .fallback(&["b/m"])
            .build()
            .unwrap();
        for _ in 0..3 {
            router.complete(&request()).await.unwrap();
        }
        let answer = router.complete(&request()).await.unwrap();
        ensure!(answer.text == "fallback", "the open circuit skips a/m");
        ensure!(
            log.events()
                .iter()
                .any(|(_, e)| matches!(e, RouterEvent::Skipped { model, .. } if model == "a/m")),
            "skip recorded"
        );
        sim.env().sleep(Duration::from_secs(60)).await;
        let answer = router.complete(&request()).await.unwrap();
        ensure!(
            answer.text == "primary",
            "after the cooldown a probe goes through, and a/m has recovered"
        );
        let windows = [("a/m".to_owned(), 8_000), ("b/m".to_owned(), 8_000)]
            .into_iter()
            .collect();
        check_router(&log.events(), &retry, &windows)
    });
}

/// With retries past the breaker's threshold, the attempt that opens the circuit goes
/// to the fallback at once: no backoff is slept on a circuit that will reject the retry.
#[test]
fn the_attempt_that_opens_the_circuit_falls_back_without_a_backoff() {
    Simulation::new(SimConfig::new(4)).run(async |sim| {
        let retry = policy().with_max_retries(5);
        let setup = setup(
            &sim,
            &[
                ("a/m", 8_000, vec![unavailable(); 10]),
                ("b/m", 8_000, vec![]),
            ],
            &["b/m"],
            retry,
        );
        let started = sim.env().elapsed();
        let answer = setup.router.complete(&request()).await.unwrap();
        ensure!(answer.text == "answer", "{answer:?}");
        ensure!(
            setup.attempts_on("a/m") == 3,
            "the default breaker (3 failures) caps the attempts"
        );
        ensure!(
            setup.sleeps() == [1_000, 2_000],
            "two backoffs, none after the opening failure: {:?}",
            setup.sleeps()
        );
        ensure!(
            sim.env().elapsed() - started == Duration::from_millis(3_000),
            "no time lost after the circuit opened: {:?}",
            sim.env().elapsed() - started
        );
        setup.check()
    });
}

/// The fallback names why the router left the model, one reason per rule of the policy
/// (they all read "retries exhausted or not retryable" once).
#[test]
fn a_fallback_names_why_the_model_was_left() {
    Simulation::new(SimConfig::new(4)).run(async |sim| {
        let auth = LlmError::Auth {
            status: 401,
            message: "no".into(),
        };
        let long_wait = LlmError::RateLimit {
            retry_after_ms: Some(600_000),
        };
        let down = vec![unavailable(); 10];
        let cases = [
            (
                down.clone(),
                policy().with_max_retries(1),
                "retries exhausted",
            ),
            (vec![auth], policy(), "not retryable"),
            (
                vec![long_wait],
                policy(),
                "retry-after longer than the policy waits",
            ),
            (
                down.clone(),
                policy().with_max_retries(5),
                "this attempt opened the circuit",
            ),
            (
                down,
                policy().with_deadline_ms(1_500),
                "a retry would end past the deadline",
            ),
        ];
        for (errors, retry, expected) in cases {
            let models = [("a/m", 8_000, errors), ("b/m", 8_000, vec![])];
            let s = setup(&sim, &models, &["b/m"], retry);
            let answer = s.router.complete(&request()).await;
            ensure!(answer.is_ok(), "{expected}: {answer:?}");
            let reasons: Vec<String> = s
                .log
                .events()
                .iter()
                .filter_map(|(_, event)| match event {
                    RouterEvent::Fallback { reason, .. } => Some(reason.to_string()),
                    _ => None,
                })
                .collect();
            ensure!(reasons == [expected], "{expected}: {reasons:?}");
            s.check()?;
        }
        Ok(())
    });
}

#[test]
fn the_deadline_bounds_the_whole_call() {
    Simulation::new(SimConfig::new(4)).run(async |sim| {
        let retry = policy().with_max_retries(10).with_deadline_ms(5_000);
        let s = setup(&sim, &[("a/m", 8_000, vec![unavailable(); 20])], &[], retry);
        let before = sim.env().elapsed();
        let error = s.router.complete(&request()).await.unwrap_err();
        ensure!(matches!(&error, LlmError::Exhausted { .. }), "{error}");
        ensure!(
            sim.env().elapsed() - before <= Duration::from_secs(5),
            "{:?}",
            sim.env().elapsed() - before
        );
        s.check()
    });
}

#[test]
fn attempts_time_out_on_the_environment_clock() {
    Simulation::new(SimConfig::new(4)).run(async |sim| {
        let slow = Arc::new(
            FnLanguageModel::new(|_, call| {
                if call == 1 {
                    Turn::new()
                        .then_pause(Duration::from_secs(600))
                        .then_text("late")
                } else {
                    Turn::text("quick")
                }
            })
            .with_env(sim.env())
            .with_model_ref(ModelRef::new("a", "m", 8_000, 1_000)),
        );
        let retry = policy().with_request_timeout_ms(10_000);
        let router = LlmRouter::builder(sim.env())
            .retry(retry)
            .model("a/m", slow)
            .default_model("a/m")
            .build()
            .unwrap();
        let before = sim.env().elapsed();
        let answer = router.complete(&request()).await.unwrap();
        ensure!(
            answer.text == "quick",
            "the stalled attempt timed out and the retry answered"
        );
        ensure!(
            sim.env().elapsed() - before == Duration::from_secs(11),
            "10 s timeout + 1 s backoff: {:?}",
            sim.env().elapsed() - before
        );
        Ok(())
    });
}

#[test]
fn streams_fall_back_only_before_the_first_event() {
    Simulation::new(SimConfig::new(4)).run(async |sim| {
        // Before the first event: the failure is the router's to handle.
        let s = setup(
            &sim,
            &[
                ("a/m", 8_000, vec![unavailable(); 5]),
                ("b/m", 8_000, vec![]),
            ],
            &["b/m"],
            policy(),
        );
        let events = s.router.stream(&request()).await.unwrap();
        let response = StreamCollector::collect("b", events).await.unwrap();
        ensure!(
            response.text == "answer" && s.attempts_on("b/m") == 1,
            "fell back before any output"
        );
        s.check()?;

        // After the first event: the stream is the caller's; the error passes through.
        let log = RouterLog::new();
        let cut = Arc::new(
            FnLanguageModel::new(|_, _| {
                Turn::text("partial ").then_error(LlmError::Connection {
                    reason: "reset".into(),
                })
            })
            .with_model_ref(ModelRef::new("a", "m", 8_000, 1_000)),
        );
        let router = LlmRouter::builder(sim.env())
            .retry(policy())
            .observer(log.observer())
            .model("a/m", cut)
            .model("b/m", model("b/m", 8_000, vec![], "fallback"))
            .default_model("a/m")
            .fallback(&["b/m"])
            .build()
            .unwrap();
        let items: Vec<_> = router.stream(&request()).await.unwrap().collect().await;
        ensure!(
            items.len() == 2 && items[1].is_err(),
            "the caller sees the output and then the error: {items:?}"
        );
        let texts: Vec<_> = items.iter().filter_map(|i| i.as_ref().ok()).collect();
        ensure!(texts.len() == 1, "no duplicated output");
        ensure!(
            !log.events()
                .iter()
                .any(|(_, e)| matches!(e, RouterEvent::Attempt { model, .. } if model == "b/m")),
            "no fallback after output"
        );
        let windows = [("a/m".to_owned(), 8_000), ("b/m".to_owned(), 8_000)]
            .into_iter()
            .collect();
        check_router(&log.events(), &policy(), &windows)
    });
}

/// The checkers must be able to fail: a hand-made log that retries too early, retries
/// after a 400, and answers twice.
#[test]
fn the_checkers_catch_broken_routers() {
    let attempt = |call, model: &str, attempt| RouterEvent::Attempt {
        call,
        model: model.into(),
        attempt,
    };
    let failed = |call, model: &str, error| RouterEvent::Failed {
        call,
        model: model.into(),
        attempt: 0,
        error,
    };
    let at = Duration::from_millis;
    let windows = BTreeMap::new();
    let early = [
        (at(0), attempt(1, "a/m", 0)),
        (at(0), failed(1, "a/m", unavailable())),
        (at(10), attempt(1, "a/m", 1)),
    ];
    assert!(
        check_router(&early, &policy(), &windows)
            .unwrap_err()
            .to_string()
            .contains("under the backoff floor")
    );
    let asked = [
        (at(0), attempt(1, "a/m", 0)),
        (
            at(0),
            failed(
                1,
                "a/m",
                LlmError::RateLimit {
                    retry_after_ms: Some(9_000),
                },
            ),
        ),
        (at(2_000), attempt(1, "a/m", 1)),
    ];
    assert!(
        check_router(&asked, &policy(), &windows)
            .unwrap_err()
            .to_string()
            .contains("Retry-After asked 9000")
    );
    let after_400 = [
        (at(0), attempt(1, "a/m", 0)),
        (
            at(0),
            failed(
                1,
                "a/m",
                LlmError::BadRequest {
                    status: Some(400),
                    message: String::new(),
                },
            ),
        ),
        (at(5_000), attempt(1, "a/m", 1)),
    ];
    assert!(
        check_router(&after_400, &policy(), &windows)
            .unwrap_err()
            .to_string()
            .contains("non-retryable")
    );
    let twice = [
        (
            at(0),
            RouterEvent::Succeeded {
                call: 1,
                model: "a/m".into(),
                attempt: 0,
            },
        ),
        (
            at(1),
            RouterEvent::Succeeded {
                call: 1,
                model: "b/m".into(),
                attempt: 0,
            },
        ),
    ];
    assert!(
        check_router(&twice, &policy(), &windows)
            .unwrap_err()
            .to_string()
            .contains("answered twice")
    );
    let backoff_on_open = [
        (at(0), attempt(1, "a/m", 0)),
        (at(0), failed(1, "a/m", unavailable())),
        (
            at(0),
            RouterEvent::CircuitOpened {
                provider: "a".into(),
                until_ms: 30_000,
            },
        ),
        (
            at(0),
            RouterEvent::Backoff {
                call: 1,
                model: "a/m".into(),
                sleep_ms: 1_000,
                floor_ms: 1_000,
                retry_after_ms: None,
            },
        ),
    ];
    assert!(
        check_router(&backoff_on_open, &policy(), &windows)
            .unwrap_err()
            .to_string()
            .contains("after its failure opened the circuit")
    );
}

/// A model whose stream ends with usage after its Done (a provider that reports usage
/// last, which the contract allows).
struct UsageAfterDone(ModelRef);

#[async_trait::async_trait]
impl LanguageModel for UsageAfterDone {
    fn model_ref(&self) -> &ModelRef {
        &self.0
    }

    async fn stream(
        &self,
        _request: &CompletionRequest,
    ) -> Result<umi_core::llm::EventStream, LlmError> {
        use umi_core::llm::{FinishReason, StreamEvent, TokenUsage};
        let events = vec![
            Ok(StreamEvent::text("hi")),
            Ok(StreamEvent::done(FinishReason::Stop, None)),
            Ok(StreamEvent::Usage {
                usage: TokenUsage::new(7, 3),
            }),
        ];
        Ok(futures::stream::iter(events).boxed())
    }
}

/// Regression: the router's stream ended at Done and dropped the usage a provider sent
/// after it; the caller saw no usage at all.
#[test]
fn the_router_keeps_usage_that_arrives_after_done() {
    Simulation::new(SimConfig::new(4)).run(async |sim| {
        let model: Arc<dyn LanguageModel> =
            Arc::new(UsageAfterDone(ModelRef::new("p", "m", 1_000, 100)));
        let router = LlmRouter::builder(sim.env())
            .retry(policy())
            .model("p/m", model)
            .default_model("p/m")
            .build()
            .unwrap();
        let stream = router.stream(&request()).await.unwrap();
        let response = StreamCollector::collect("m", stream).await.unwrap();
        ensure!(
            response
                .usage
                .map(|u| (u.prompt_tokens, u.completion_tokens))
                == Some((7, 3)),
            "usage after Done was lost: {:?}",
            response.usage
        );
        Ok(())
    });
}

/// A runaway answer (a tool-call index past the limit) is not retried on the same model
/// (it would run away again) but falls back; a model the provider does not serve falls
/// back the same way.
#[test]
fn runaway_answers_and_missing_models_fall_back_without_retrying() {
    for error in [
        LlmError::TooManyToolCalls {
            calls: 65,
            limit: 64,
        },
        LlmError::ModelNotFound {
            status: Some(404),
            message: "No endpoints found for p/a.".into(),
        },
    ] {
        let error_shown = error.to_string();
        Simulation::new(SimConfig::new(4)).run(async |sim| {
            let setup = setup(
                &sim,
                &[("p/a", 1_000, vec![error.clone()]), ("p/b", 1_000, vec![])],
                &["p/b"],
                policy(),
            );
            let answer = setup.router.complete(&request()).await;
            ensure!(
                answer.as_ref().is_ok_and(|a| a.text == "answer"),
                "{error_shown}: {answer:?}"
            );
            ensure!(
                setup.attempts_on("p/a") == 1 && setup.attempts_on("p/b") == 1,
                "{error_shown}: attempts a={} b={}",
                setup.attempts_on("p/a"),
                setup.attempts_on("p/b")
            );
            setup.check()
        });
    }
}

/// The router is a `LanguageModel` like any other: it passes the contract's suite,
/// retrying and falling back underneath (its streams end, once, and stay ended).
#[test]
fn the_router_passes_conformance() {
    Conformance::new()
        .cases(128)
        .deterministic(true)
        .check(|sim| {
            LlmRouter::builder(sim.env())
                .retry(policy())
                .model(
                    "a/m",
                    model("a/m", 1_000_000, vec![unavailable()], "primary"),
                )
                .model("b/m", model("b/m", 1_000_000, vec![], "fallback"))
                .default_model("a/m")
                .fallback(&["b/m"])
                .build()
                .unwrap()
        });
}
