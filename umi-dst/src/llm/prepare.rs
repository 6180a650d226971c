//! [`SimLlm::prepare`]: one call from its request to the plan of its answer, along the
//! numbered steps of the module docs, one function per step. The order of the steps is
//! the order of the call's random draws and trace events: a seed's meaning depends on it,
//! and the golden file (`umi-dst/tests/golden/simllm.snap`) pins it.

use umi_core::constants::RESPONSE_TEXT_BYTES_MAX;
use umi_core::llm::tokens::{estimate_request_tokens_with, estimate_text_tokens};
use umi_core::llm::{CompletionRequest, LlmError};

use super::config::TimeoutMode;
use super::plan::{self, CallPlan, Cut, Shaped, Timing};
use super::{Builtin, Chosen, SimLlm, generate, near_miss};
use crate::fault::FaultKind;
use crate::fault::LlmKind;
use crate::fault::point::{LLM_CALL, unreachable_kind};
use crate::rng::DeterministicRng;
use crate::rng::streams::llm_call;
use crate::trace::LlmEvent;

/// What steps 2 and 3 settle about a call.
struct Call {
    /// How many times the same request came before in this run (0: the first).
    occurrence: u64,
    /// The call's stream, forked from the request's hash and occurrence.
    rng: DeterministicRng,
    chosen: Chosen,
    route_name: String,
    /// The prompt's size by umi-core's shared estimator.
    prompt_tokens: u32,
    /// The model the request asked for (the config's when it names none).
    model: String,
    /// The call's number in the run's usage ledger.
    ledger_call: u64,
    /// The first bytes of the request's hash, as `llm.call` traced them.
    request: [u8; 4],
}

impl Call {
    /// The call's key as `llm.call` traced it (request and occurrence): what a refusal
    /// names so the OTLP export pairs it with its call.
    fn key(&self) -> Option<([u8; 4], u64)> {
        Some((self.request, self.occurrence))
    }
}

/// A fault that ends the call before anything is generated (step 5), as a decision: the
/// error to return, or the stall to sleep through first for a timeout.
#[derive(Debug, PartialEq)]
enum EarlyFault {
    /// No early refusal: the call goes on (an answer fault, if any, applies later).
    None,
    /// Sleep this long in simulated time, then time out.
    TimeoutAfter(std::time::Duration),
    /// Refuse with this error at once.
    Refuse(LlmError),
}

impl SimLlm {
    /// Steps 1 to 8 of the module docs, up to the plan.
    pub(super) async fn prepare(&self, request: &CompletionRequest) -> Result<CallPlan, LlmError> {
        // 1. The request is valid.
        if let Err(error) = request.validate() {
            return self.refuse(error, None);
        }
        // 2 and 3. The call's stream, route and size, traced.
        let call = self.identify(request);
        // 4. The rate-limit model.
        if let Err(error) = self.admit(call.prompt_tokens) {
            return self.refuse(error, call.key());
        }
        // 5. One fault decision; sub-streams of the call's stream, one per concern, so a
        // change in one (say, chunking) never shifts another (the content).
        let fault = match request.task.as_deref() {
            Some(task) => self.faults.decide_qualified(&LLM_CALL, task),
            None => self.faults.decide(&LLM_CALL),
        };
        let mut fault_rng = call.rng.substream(llm_call::FAULT);
        match self.early_fault(fault, call.prompt_tokens, &mut fault_rng) {
            EarlyFault::None => {}
            EarlyFault::TimeoutAfter(stall) => {
                self.clock.sleep(stall).await;
                let after_ms = u64::try_from(stall.as_millis()).unwrap_or(u64::MAX);
                return self.refuse(LlmError::Timeout { after_ms }, call.key());
            }
            EarlyFault::Refuse(error) => return self.refuse(error, call.key()),
        }
        // 6. The context window.
        let window = self.config.model_ref.context_window_tokens;
        if call.prompt_tokens > window {
            return self.refuse(
                LlmError::ContextOverflow {
                    prompt_tokens: Some(call.prompt_tokens),
                    limit: Some(window),
                },
                call.key(),
            );
        }
        // 7. The answer, shaped by stop sequences and the token budget; answer faults.
        let (mut shaped, structured) = match self.generate(request, &call) {
            Ok(generated) => generated,
            Err(error) => return self.refuse(error, call.key()),
        };
        self.break_answer(&mut shaped, structured, fault, request, &mut fault_rng);
        // 8. Events, chunking and latency.
        let plan = self.plan(shaped, &call, fault, &mut fault_rng);
        self.record_answer(&plan, &call);
        Ok(plan)
    }

    /// Steps 2 and 3: the request's hash and occurrence select the call's stream; a route
    /// is chosen; the call is traced.
    fn identify(&self, request: &CompletionRequest) -> Call {
        let hash = super::request_hash(request);
        let occurrence = {
            let mut occurrences = self
                .occurrences
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let count = occurrences.entry(hash).or_insert(0);
            *count += 1;
            *count - 1
        };
        let rng = self.rng.fork_parts(&[&hash, &occurrence.to_le_bytes()]);
        self.warn_untagged(request);
        let (prompt_tokens, long_words) = prompt_size(request);
        let chosen = self.choose(request, Some(long_words));
        let route_name = match &chosen {
            Chosen::User(index) => self.routes[*index].name().to_owned(),
            Chosen::Builtin(builtin) => builtin.name().to_owned(),
        };
        let operation = match request.task.as_deref() {
            Some(task) => LLM_CALL.with_qualifier(task),
            None => LLM_CALL.name().to_owned(),
        };
        let model = if request.model.is_empty() {
            self.config.model_ref.model.clone()
        } else {
            request.model.clone()
        };
        let conversation = super::canonical::conversation_hash(request);
        let ledger_call = self.usage.call(&model, conversation, self.clock.now());
        self.trace.emit(LlmEvent::Call {
            model: self.config.model_ref.id(),
            route: route_name.clone(),
            operation,
            request: [hash[0], hash[1], hash[2], hash[3]],
            occurrence,
            prompt_tokens,
        });
        Call {
            occurrence,
            rng,
            chosen,
            route_name,
            prompt_tokens,
            model,
            ledger_call,
            request: [hash[0], hash[1], hash[2], hash[3]],
        }
    }

    /// Step 4: the optional rate-limit model refuses with the real remaining wait.
    fn admit(&self, prompt_tokens: u32) -> Result<(), LlmError> {
        let mut rate = self
            .rate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let admitted = rate.as_mut().map_or(Ok(()), |window| {
            window.admit(self.clock.now(), u64::from(prompt_tokens))
        });
        admitted.map_err(|wait| LlmError::RateLimit {
            retry_after_ms: Some(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1)),
        })
    }

    /// Step 5's decision for the faults that refuse before generating.
    fn early_fault(
        &self,
        fault: Option<FaultKind>,
        prompt_tokens: u32,
        fault_rng: &mut DeterministicRng,
    ) -> EarlyFault {
        early_fault(
            fault,
            &self.config.model_ref,
            self.config.timeout_mode,
            prompt_tokens,
            fault_rng,
        )
    }

    /// Step 7: the route generates (a structured answer's schema checked first); the
    /// reasoning, when the model reasons; the size cap; stop sequences and the token
    /// budget. Also returns whether the answer is structured (for answer faults).
    fn generate(
        &self,
        request: &CompletionRequest,
        call: &Call,
    ) -> Result<(Shaped, bool), LlmError> {
        let mut generate_rng = call.rng.substream(llm_call::GENERATE);
        // A structured answer's schema (the tool-calling route answers one too, when it
        // calls no tool) is checked before anything is drawn.
        let answers_schema = matches!(
            call.chosen,
            Chosen::Builtin(Builtin::Structured | Builtin::ToolCalls)
        ) && request.output_schema.is_some();
        if answers_schema
            && let Err(error) = generate::structured(request, &mut generate_rng.clone())
        {
            return Err(LlmError::BadRequest {
                status: Some(400),
                message: format!("SimLLM cannot answer this output schema: {error}"),
            });
        }
        let mut generated = match call.chosen {
            Chosen::User(index) => self.routes[index].generate(request, &mut generate_rng),
            Chosen::Builtin(builtin) => generate::builtin(
                builtin,
                request,
                &mut generate_rng,
                self.config.tool_call_probability,
            ),
        };
        if self.config.reasoning && generated.reasoning.is_none() {
            generated.reasoning = Some(generate::reasoning(
                request,
                &mut call.rng.substream(llm_call::REASONING),
            ));
        }
        let bytes = generated.bytes();
        if bytes > RESPONSE_TEXT_BYTES_MAX {
            return Err(LlmError::ResponseTooLarge {
                what: format!("output of route {:?}", call.route_name),
                bytes,
                limit: RESPONSE_TEXT_BYTES_MAX,
            });
        }
        let structured = generated.structured;
        let shaped = plan::shape(
            generated,
            &request.stop,
            request.max_tokens,
            &self.config.model_ref,
            call.prompt_tokens,
        );
        Ok((shaped, structured))
    }

    /// Step 7's answer faults: `llm.wrong_content` makes the answer plausible but wrong
    /// (a near miss of its schema when it has one, else a corruption);
    /// `llm.invalid_response` is traced here and cuts the stream in step 8 (a body the
    /// client cannot parse); `llm.content_filter` cuts the answer.
    fn break_answer(
        &self,
        shaped: &mut Shaped,
        structured: bool,
        fault: Option<FaultKind>,
        request: &CompletionRequest,
        fault_rng: &mut DeterministicRng,
    ) {
        let schema = request.output_schema.as_ref().map(|s| &s.schema);
        match fault.and_then(FaultKind::llm) {
            Some(LlmKind::WrongContent) => {
                // A near miss of the schema where there is one and a text answer to
                // miss it with; else a corruption.
                let near =
                    schema.filter(|_| shaped.tool_calls.is_empty() && !shaped.text.is_empty());
                if let Some(schema) = near {
                    let (text, miss) = near_miss::near_miss(&shaped.text, schema, fault_rng);
                    shaped.text = text;
                    self.trace.emit(LlmEvent::NearMiss {
                        miss: miss.kind.name(),
                        path: miss.path,
                    });
                } else {
                    let corruption = plan::corrupt(shaped, structured, fault_rng);
                    self.trace.emit(LlmEvent::Corrupt {
                        corruption: corruption.name(),
                    });
                }
            }
            Some(LlmKind::InvalidResponse) => {
                self.trace.emit(LlmEvent::Corrupt {
                    corruption: plan::UNPARSEABLE,
                });
            }
            // The kinds that leave the answer's content as it is here (content_filter
            // cuts it just below; the others act before or after this step).
            Some(
                LlmKind::Timeout
                | LlmKind::RateLimit
                | LlmKind::ContextOverflow
                | LlmKind::ServiceUnavailable
                | LlmKind::StreamCut
                | LlmKind::ContentFilter
                | LlmKind::ModelNotFound
                | LlmKind::EmbeddingWrongDimensions
                | LlmKind::EmbeddingTruncated
                | LlmKind::EmbeddingMissing,
            )
            | None => {}
        }
        if fault == Some(FaultKind::LlmContentFilter) {
            plan::filter(shaped, fault_rng);
            self.trace.emit(LlmEvent::Filter {
                kept_bytes: shaped.text.len(),
            });
        }
    }

    /// Step 8: cached prompt tokens, latency, chunking, and where `llm.stream_cut` cuts
    /// the stream (or `llm.invalid_response` breaks it with a part the client cannot
    /// parse).
    fn plan(
        &self,
        mut shaped: Shaped,
        call: &Call,
        fault: Option<FaultKind>,
        fault_rng: &mut DeterministicRng,
    ) -> CallPlan {
        shaped.usage.cached_prompt_tokens =
            Some(cached_prompt_tokens(call.occurrence, call.prompt_tokens));
        let timing = Timing::draw(
            self.config.latency,
            &mut call.rng.substream(llm_call::TIMING),
        );
        let mut plan = CallPlan {
            model: self.config.model_ref.model.clone(),
            shaped,
            timing,
            cut: None,
            chunk_rng: call.rng.substream(llm_call::CHUNKS),
            chunk_chars_max: self.config.chunk_chars_max,
        };
        if fault == Some(FaultKind::LlmStreamCut) {
            let events = plan.event_count();
            let k = if events > 1 {
                fault_rng.range_inclusive(1, events as u64 - 1) as usize
            } else {
                0
            };
            plan.cut = Some(match fault_rng.below(3) {
                0 => Cut::Error(k),
                1 => Cut::ServerError(k),
                _ => Cut::Silent(k),
            });
        }
        if fault == Some(FaultKind::LlmInvalidResponse) {
            // Any event may be the one that does not parse (Done too); none follows it.
            let events = plan.event_count();
            let k = fault_rng.range_inclusive(0, events.saturating_sub(1) as u64) as usize;
            plan.cut = Some(Cut::Unparseable(k));
        }
        plan
    }

    /// The `llm.answer` trace event.
    fn record_answer(&self, plan: &CallPlan, call: &Call) {
        self.usage.answer(
            call.ledger_call,
            &call.model,
            &plan.shaped.usage,
            plan.shaped.tool_calls.len() as u64,
            self.clock.now() + plan.total_delay(),
        );
        self.tool_calls_made
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(plan.shaped.tool_calls.iter().map(|call| call.id.clone()));
        self.trace.emit(LlmEvent::Answer {
            model: self.config.model_ref.id(),
            finish: plan.shaped.finish_reason.as_str().to_owned(),
            prompt_tokens: plan.shaped.usage.prompt_tokens,
            completion_tokens: plan.shaped.usage.completion_tokens,
            latency: plan.total_delay(),
            cut: match plan.cut {
                Some(Cut::Error(k)) => Some(("error", k)),
                Some(Cut::ServerError(k)) => Some(("server_error", k)),
                Some(Cut::Silent(k)) => Some(("silent", k)),
                Some(Cut::Unparseable(k)) => Some((plan::UNPARSEABLE, k)),
                None => None,
            },
        });
    }
}

/// Step 5's decision: which faults refuse before an answer is generated, and with what.
/// `llm.rate_limit` draws its retry-after from `fault_rng`; the answer faults
/// (`invalid_response`, `wrong_content`, `stream_cut`, `content_filter`) apply later.
fn early_fault(
    fault: Option<FaultKind>,
    model: &umi_core::llm::ModelRef,
    timeout_mode: TimeoutMode,
    prompt_tokens: u32,
    fault_rng: &mut DeterministicRng,
) -> EarlyFault {
    use super::{FAULT_RETRY_AFTER_MS_MAX, FAULT_RETRY_AFTER_MS_MIN};
    let Some(kind) = fault else {
        return EarlyFault::None;
    };
    match kind.llm() {
        Some(
            LlmKind::InvalidResponse
            | LlmKind::WrongContent
            | LlmKind::StreamCut
            | LlmKind::ContentFilter,
        ) => EarlyFault::None,
        Some(LlmKind::Timeout) => match timeout_mode {
            TimeoutMode::Stall(stall) => EarlyFault::TimeoutAfter(stall),
            TimeoutMode::Immediate => EarlyFault::Refuse(LlmError::Timeout { after_ms: 0 }),
        },
        Some(LlmKind::RateLimit) => EarlyFault::Refuse(LlmError::RateLimit {
            retry_after_ms: Some(
                fault_rng.range_inclusive(FAULT_RETRY_AFTER_MS_MIN, FAULT_RETRY_AFTER_MS_MAX),
            ),
        }),
        Some(LlmKind::ContextOverflow) => EarlyFault::Refuse(LlmError::ContextOverflow {
            prompt_tokens: Some(prompt_tokens),
            limit: Some(
                model
                    .context_window_tokens
                    .min(prompt_tokens.saturating_sub(1)),
            ),
        }),
        Some(LlmKind::ServiceUnavailable) => EarlyFault::Refuse(LlmError::ServiceUnavailable {
            status: Some(503),
            message: "the model is overloaded (simulated)".into(),
        }),
        Some(LlmKind::ModelNotFound) => EarlyFault::Refuse(LlmError::ModelNotFound {
            status: Some(404),
            message: model.model.clone(),
        }),
        // The embeddings' kinds, and other domains': not drawn at `llm.call`.
        Some(
            LlmKind::EmbeddingWrongDimensions
            | LlmKind::EmbeddingTruncated
            | LlmKind::EmbeddingMissing,
        )
        | None => unreachable_kind(&LLM_CALL, kind),
    }
}

/// Prompt tokens a provider's prompt cache serves: none the first time a request is
/// made in a run, then the prompt in whole 64-token blocks (DeepSeek's unit).
fn cached_prompt_tokens(occurrence: u64, prompt_tokens: u32) -> u32 {
    if occurrence == 0 {
        0
    } else {
        prompt_tokens - prompt_tokens % 64
    }
}

/// The prompt's size by umi-core's shared estimator, with each long message read once
/// (its token count and routing words from the per-thread memo), and the routing words
/// of the long messages.
fn prompt_size(request: &CompletionRequest) -> (u32, super::memo::Words) {
    let mut long_words = super::memo::Words::default();
    let mut long_texts_read = 0_usize;
    let prompt_tokens = estimate_request_tokens_with(request, &mut |text| {
        if text.len() < super::memo::MEMO_INPUT_BYTES_MIN {
            return estimate_text_tokens(text);
        }
        long_texts_read += 1;
        let facts = super::memo::text_facts(text);
        long_words = long_words.union(facts.words);
        facts.tokens
    });
    // The routing words of long messages come from the estimate's reads, so it must read
    // each message's text once and nothing else that long (its documented contract); a
    // change in umi-core that broke it would route silently otherwise.
    let long_messages = request
        .messages
        .iter()
        .filter(|message| message.text().len() >= super::memo::MEMO_INPUT_BYTES_MIN)
        .count();
    assert_eq!(
        long_texts_read, long_messages,
        "estimate_request_tokens_with reads each message's text once"
    );
    (prompt_tokens, long_words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> umi_core::llm::ModelRef {
        umi_core::llm::ModelRef::new("sim", "m", 1_000, 100)
    }

    /// Which faults refuse before generating, and with what.
    #[test]
    fn early_faults_refuse_before_generating_and_answer_faults_do_not() {
        let stall = std::time::Duration::from_secs(90);
        let mut rng = DeterministicRng::new(1);
        let mut decide = |fault, mode| early_fault(fault, &model(), mode, 1_500, &mut rng);
        let stalled = TimeoutMode::Stall(stall);
        assert_eq!(decide(None, stalled), EarlyFault::None);
        for answer_fault in [
            FaultKind::LlmInvalidResponse,
            FaultKind::LlmWrongContent,
            FaultKind::LlmStreamCut,
            FaultKind::LlmContentFilter,
        ] {
            assert_eq!(decide(Some(answer_fault), stalled), EarlyFault::None);
        }
        assert_eq!(
            decide(Some(FaultKind::LlmTimeout), stalled),
            EarlyFault::TimeoutAfter(stall)
        );
        assert_eq!(
            decide(Some(FaultKind::LlmTimeout), TimeoutMode::Immediate),
            EarlyFault::Refuse(LlmError::Timeout { after_ms: 0 })
        );
        // The overflow's limit is the window, and below the prompt.
        assert_eq!(
            decide(Some(FaultKind::LlmContextOverflow), stalled),
            EarlyFault::Refuse(LlmError::ContextOverflow {
                prompt_tokens: Some(1_500),
                limit: Some(1_000),
            })
        );
        let EarlyFault::Refuse(LlmError::RateLimit {
            retry_after_ms: Some(ms),
        }) = decide(Some(FaultKind::LlmRateLimit), stalled)
        else {
            panic!("a rate limit refuses with a retry-after");
        };
        use crate::llm::{FAULT_RETRY_AFTER_MS_MAX, FAULT_RETRY_AFTER_MS_MIN};
        assert!((FAULT_RETRY_AFTER_MS_MIN..=FAULT_RETRY_AFTER_MS_MAX).contains(&ms));
    }

    #[test]
    fn the_prompt_cache_serves_repeats_in_whole_blocks() {
        let cases = [(0, 1_000, 0), (1, 1_000, 960), (3, 63, 0), (1, 128, 128)];
        for (occurrence, prompt, cached) in cases {
            assert_eq!(
                cached_prompt_tokens(occurrence, prompt),
                cached,
                "{occurrence} {prompt}"
            );
        }
    }
}
