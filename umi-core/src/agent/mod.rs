//! A tool-using agent loop.
//!
//! [`Agent::run`] sends the conversation and the tool definitions to the model, streams
//! the reply through the [`StreamCollector`], runs the tool calls it asks for (in
//! parallel, at most `parallel_tools_max` at once, results kept in call order), feeds the
//! results back, and repeats until the model answers without calling tools.
//!
//! It ends, one way or another, within `iterations_max` model turns:
//! - a failing tool is a tool result marked unsuccessful (the model can react to it); an
//!   unknown tool or a tool that times out is the same;
//! - the same batch of tool calls `repeat_limit` times in a row is a loop; tool batches
//!   whose results were all seen before, `stagnation_limit` times in a row, are stagnation;
//!   both end the run with [`AgentError::LoopDetected`];
//! - on `ContextOverflow` the oldest turns are trimmed (each tool call with its results;
//!   system messages, the newest user message and the newest turn kept) until the
//!   estimate fits the window the provider reported, and the turn is retried, at most
//!   `overflow_retries_max` times;
//! - a stream cut after it began (a retryable error inside it) is sent again, at most
//!   `stream_cut_retries_max` times per turn (0 by default: opt in); no tool runs for a
//!   cut turn, so a call never runs twice;
//! - any other model error ends the run (the router, if used, already retried).
//!
//! Progress is reported through [`AgentEvent`]s and recorded in the environment's trace.

mod error;
mod run;
mod tools;
mod trim;

use std::time::Duration;

use futures::StreamExt;

pub use error::AgentError;
pub use tools::{ToolHandler, ToolInvocation, ToolRegistry};

use crate::canonical_json::Canonical;
use crate::constants::{
    AGENT_ITERATIONS_DEFAULT, AGENT_ITERATIONS_MAX, AGENT_OVERFLOW_RETRIES_DEFAULT,
    AGENT_OVERFLOW_RETRIES_MAX, AGENT_PARALLEL_TOOLS_DEFAULT, AGENT_PARALLEL_TOOLS_MAX,
    AGENT_STREAM_CUT_RETRIES_MAX, TOOL_RESULT_BYTES_MAX,
};
use crate::env::{Env, EnvironmentExt};
use crate::llm::tokens::estimate_request_tokens;
use crate::llm::{
    CompletionRequest, CompletionResponse, LanguageModel, LlmError, Message, StreamCollector,
    StreamEvent, TokenUsage, ToolCall,
};

/// How an agent run behaves: `AgentConfig::default()`, then the `with_` methods for what
/// differs ([`AgentConfig::validate`] checks the limits).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentConfig {
    /// Model turns before giving up.
    pub iterations_max: u32,
    /// Tool calls run at once.
    pub parallel_tools_max: usize,
    /// Context trims after overflows, per run.
    pub overflow_retries_max: u32,
    /// Longest a tool may run (environment time); `None` for no limit.
    pub tool_timeout: Option<Duration>,
    /// The same tool batch this many times in a row is a loop.
    pub repeat_limit: u32,
    /// This many tool batches in a row that bring nothing new is stagnation.
    pub stagnation_limit: u32,
    /// `max_tokens` for each model turn.
    pub max_tokens: Option<u32>,
    /// The task tag of the model requests.
    pub task: String,
    /// Retries of a turn whose stream was cut after it began (a retryable error inside
    /// the stream): the same request is sent again. 0 (the default) ends the run with
    /// the error, as before; at most `AGENT_STREAM_CUT_RETRIES_MAX`. No tool runs for a
    /// cut turn, so a retried turn never runs a call twice.
    pub stream_cut_retries_max: u32,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            iterations_max: AGENT_ITERATIONS_DEFAULT,
            parallel_tools_max: AGENT_PARALLEL_TOOLS_DEFAULT,
            overflow_retries_max: AGENT_OVERFLOW_RETRIES_DEFAULT,
            tool_timeout: None,
            repeat_limit: 3,
            stagnation_limit: 4,
            max_tokens: None,
            task: "agent.step".into(),
            stream_cut_retries_max: 0,
        }
    }
}

impl AgentConfig {
    /// Sets the model turns before giving up.
    pub const fn with_iterations_max(mut self, iterations_max: u32) -> Self {
        self.iterations_max = iterations_max;
        self
    }

    /// Sets the tool calls run at once.
    pub const fn with_parallel_tools_max(mut self, parallel_tools_max: usize) -> Self {
        self.parallel_tools_max = parallel_tools_max;
        self
    }

    /// Sets the context trims after overflows, per run.
    pub const fn with_overflow_retries_max(mut self, overflow_retries_max: u32) -> Self {
        self.overflow_retries_max = overflow_retries_max;
        self
    }

    /// Sets how many identical tool batches in a row are a loop.
    pub const fn with_repeat_limit(mut self, repeat_limit: u32) -> Self {
        self.repeat_limit = repeat_limit;
        self
    }

    /// Sets how many tool batches in a row that bring nothing new are stagnation.
    pub const fn with_stagnation_limit(mut self, stagnation_limit: u32) -> Self {
        self.stagnation_limit = stagnation_limit;
        self
    }

    /// Sets the retries of a turn whose stream was cut after it began.
    pub const fn with_stream_cut_retries_max(mut self, stream_cut_retries_max: u32) -> Self {
        self.stream_cut_retries_max = stream_cut_retries_max;
        self
    }

    /// Sets the longest a tool may run (environment time).
    pub const fn with_tool_timeout(mut self, tool_timeout: Duration) -> Self {
        self.tool_timeout = Some(tool_timeout);
        self
    }

    /// Sets `max_tokens` for each model turn.
    pub const fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sets the task tag of the model requests.
    pub fn with_task(mut self, task: impl Into<String>) -> Self {
        self.task = task.into();
        self
    }

    /// Checks every limit.
    pub fn validate(&self) -> Result<(), AgentError> {
        let invalid = |reason: String| Err(AgentError::InvalidConfig { reason });
        if !(1..=AGENT_ITERATIONS_MAX).contains(&self.iterations_max) {
            return invalid(format!(
                "iterations_max {} is outside 1..={AGENT_ITERATIONS_MAX}",
                self.iterations_max
            ));
        }
        if !(1..=AGENT_PARALLEL_TOOLS_MAX).contains(&self.parallel_tools_max) {
            return invalid(format!(
                "parallel_tools_max {} is outside 1..={AGENT_PARALLEL_TOOLS_MAX}",
                self.parallel_tools_max
            ));
        }
        if self.overflow_retries_max > AGENT_OVERFLOW_RETRIES_MAX {
            return invalid(format!(
                "overflow_retries_max {} is over {AGENT_OVERFLOW_RETRIES_MAX}",
                self.overflow_retries_max
            ));
        }
        if self.stream_cut_retries_max > AGENT_STREAM_CUT_RETRIES_MAX {
            return invalid(format!(
                "stream_cut_retries_max {} is over {AGENT_STREAM_CUT_RETRIES_MAX}",
                self.stream_cut_retries_max
            ));
        }
        if self.repeat_limit < 2 || self.stagnation_limit < 2 {
            return invalid("repeat_limit and stagnation_limit must be at least 2".into());
        }
        Ok(())
    }
}

/// Progress of a run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AgentEvent {
    /// A model turn starts.
    IterationStarted {
        /// Which (from 1).
        iteration: u32,
    },
    /// The model streamed text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// A tool is about to run.
    ToolCallStarted {
        /// The call.
        call: ToolCall,
    },
    /// A tool finished.
    ToolCallFinished {
        /// The call's id.
        id: String,
        /// The tool.
        name: String,
        /// Whether it succeeded.
        success: bool,
    },
    /// A turn's stream was cut after it began; the turn is sent again (text streamed
    /// for the cut attempt is void). Only with `stream_cut_retries_max` above 0.
    TurnRetried {
        /// The turn (from 1).
        iteration: u32,
        /// Which retry of it (from 1).
        retry: u32,
        /// The kind of error that cut the stream.
        error_kind: crate::llm::LlmErrorKind,
    },
    /// Old turns were dropped after a context overflow.
    ContextTrimmed {
        /// Messages removed.
        removed_messages: usize,
        /// Estimated prompt tokens after trimming.
        prompt_tokens: u32,
    },
    /// The model answered.
    Finished {
        /// Turns taken.
        iterations: u32,
    },
}

/// A finished run.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentOutcome {
    /// The model's final answer.
    pub answer: String,
    /// The whole conversation, ending with the answer.
    pub messages: Vec<Message>,
    /// Model turns taken.
    pub iterations: u32,
    /// Tool calls run.
    pub tool_calls: usize,
    /// Tokens used over all turns.
    pub usage: TokenUsage,
    /// Context trims made.
    pub trims: u32,
}

/// An agent: a model, tools, a config and the environment.
pub struct Agent {
    llm: std::sync::Arc<dyn LanguageModel>,
    tools: ToolRegistry,
    config: AgentConfig,
    env: Env,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("tools", &self.tools)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Whether a turn that failed with `error` is sent again: only a stream cut after it
/// began (`cut`), by an error worth retrying, while retries are left.
fn should_retry_cut_turn(error: &LlmError, cut: bool, retries: u32, retries_max: u32) -> bool {
    cut && error.is_retryable() && retries < retries_max
}

/// The calls of one batch as a comparable signature (arguments with their keys sorted,
/// so the same arguments give the same signature whatever their map order).
fn signature(calls: &[ToolCall]) -> String {
    calls
        .iter()
        .map(|c| format!("{}({})", c.name, Canonical(&c.arguments)))
        .collect::<Vec<_>>()
        .join(";")
}

fn cut_result(mut text: String) -> String {
    if text.len() > TOOL_RESULT_BYTES_MAX {
        let mut end = TOOL_RESULT_BYTES_MAX - 16;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("…[truncated]");
    }
    text
}

impl Agent {
    /// An agent using `llm` in `env`, with no tools and the default config.
    pub fn new(llm: std::sync::Arc<dyn LanguageModel>, env: Env) -> Self {
        Self {
            llm,
            tools: ToolRegistry::new(),
            config: AgentConfig::default(),
            env,
        }
    }

    /// Sets the tools.
    pub fn with_tools(mut self, tools: ToolRegistry) -> Self {
        self.tools = tools;
        self
    }

    /// Sets the config.
    pub fn with_config(mut self, config: AgentConfig) -> Self {
        self.config = config;
        self
    }

    /// Runs the loop on `messages` (see the module docs).
    pub async fn run(&self, messages: Vec<Message>) -> Result<AgentOutcome, AgentError> {
        self.run_with_events(messages, &mut |_| {}).await
    }

    /// Runs the loop, reporting progress to `on_event`.
    pub async fn run_with_events(
        &self,
        messages: Vec<Message>,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<AgentOutcome, AgentError> {
        self.config.validate()?;
        if messages.iter().all(|m| matches!(m, Message::System { .. })) {
            return Err(AgentError::InvalidConfig {
                reason: "the conversation has no user message".into(),
            });
        }
        let mut run = run::Run::new(messages, self.tools.definitions());
        loop {
            if run.iterations == self.config.iterations_max {
                self.env.cover("agent.max_iterations");
                let iterations = run.iterations;
                self.env
                    .record("agent.end", format_args!("max_iterations {iterations}"));
                return Err(AgentError::MaxIterations { iterations });
            }
            run.iterations += 1;
            on_event(AgentEvent::IterationStarted {
                iteration: run.iterations,
            });
            let mut request = CompletionRequest::new(run.messages.clone())
                .with_tools(run.definitions.clone())
                .with_task(self.config.task.clone());
            request.max_tokens = self.config.max_tokens;
            let response = match self
                .turn_retrying_cuts(&request, run.iterations, on_event)
                .await
            {
                Ok(response) => response,
                Err(LlmError::ContextOverflow {
                    prompt_tokens,
                    limit,
                }) => {
                    run.iterations -= 1;
                    self.trim_after_overflow(&mut run, prompt_tokens, limit, on_event)?;
                    continue;
                }
                Err(error) => {
                    self.env
                        .record("agent.end", format_args!("provider {}", error.kind()));
                    return Err(AgentError::Provider(error));
                }
            };
            run.add_usage(response.usage);
            if response.tool_calls.is_empty() {
                return Ok(self.finish(run, response.text, on_event));
            }
            run.check_repeats(&response.tool_calls, self.config.repeat_limit)
                .inspect_err(|_| self.env.cover("agent.loop_detected"))?;
            self.run_tools(&mut run, response, on_event).await?;
        }
    }

    /// After a context overflow: the oldest turns dropped until the request fits (at most
    /// `overflow_retries_max` times a run), or the run ends as `ContextExhausted`.
    fn trim_after_overflow(
        &self,
        run: &mut run::Run,
        prompt_tokens: Option<u32>,
        limit: Option<u32>,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<(), AgentError> {
        let exhausted = |attempts| AgentError::ContextExhausted {
            attempts,
            prompt_tokens,
            limit,
        };
        if run.trims == self.config.overflow_retries_max {
            return Err(exhausted(run.trims));
        }
        let definitions = run.definitions.clone();
        let fits = |candidate: &[Message]| {
            let probe = CompletionRequest::new(candidate.to_vec()).with_tools(definitions.clone());
            limit.is_some_and(|limit| estimate_request_tokens(&probe) <= limit)
        };
        let Some(removed) = trim::trim_oldest(&mut run.messages, fits) else {
            return Err(exhausted(run.trims));
        };
        run.trims += 1;
        self.env.cover("agent.trim");
        let estimate = estimate_request_tokens(
            &CompletionRequest::new(run.messages.clone()).with_tools(run.definitions.clone()),
        );
        self.env.record(
            "agent.trim",
            format_args!("removed={removed} prompt_tokens={estimate}"),
        );
        on_event(AgentEvent::ContextTrimmed {
            removed_messages: removed,
            prompt_tokens: estimate,
        });
        Ok(())
    }

    /// The answer: the run ends with it.
    fn finish(
        &self,
        mut run: run::Run,
        answer: String,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> AgentOutcome {
        run.messages.push(Message::assistant(answer.clone()));
        let iterations = run.iterations;
        self.env.record(
            "agent.end",
            format_args!("answer after {iterations} iteration(s)"),
        );
        on_event(AgentEvent::Finished { iterations });
        AgentOutcome {
            answer,
            messages: run.messages,
            iterations,
            tool_calls: run.tool_calls,
            usage: run.usage,
            trims: run.trims,
        }
    }

    /// The model asked for tools: they run (`parallel_tools_max` at once), their results
    /// join the conversation, and a run whose batches bring nothing new ends as a loop.
    async fn run_tools(
        &self,
        run: &mut run::Run,
        response: CompletionResponse,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<(), AgentError> {
        run.messages.push(Message::assistant_tool_calls(
            response.text.clone(),
            response.tool_calls.clone(),
        ));
        for call in &response.tool_calls {
            on_event(AgentEvent::ToolCallStarted { call: call.clone() });
        }
        if response.tool_calls.len() > 1 {
            self.env.cover("agent.parallel_tools");
        }
        let results: Vec<(String, bool)> =
            futures::stream::iter(response.tool_calls.iter().map(|call| self.call_tool(call)))
                .buffered(self.config.parallel_tools_max)
                .collect()
                .await;
        run.tool_calls += results.len();
        let mut anything_new = false;
        for (call, (content, success)) in response.tool_calls.iter().zip(results) {
            anything_new |= run.seen_results.insert(format!(
                "{}({})={content}",
                call.name,
                Canonical(&call.arguments)
            ));
            on_event(AgentEvent::ToolCallFinished {
                id: call.id.clone(),
                name: call.name.clone(),
                success,
            });
            run.messages
                .push(Message::tool_result(call.id.clone(), content, success));
        }
        run.stagnant = if anything_new { 0 } else { run.stagnant + 1 };
        if run.stagnant >= self.config.stagnation_limit {
            self.env.cover("agent.loop_detected");
            return Err(AgentError::LoopDetected {
                reason: format!(
                    "{} tool batches in a row brought no new results",
                    run.stagnant
                ),
            });
        }
        Ok(())
    }

    /// One model turn, sent again (at most `stream_cut_retries_max` times) when its
    /// stream is cut after it began by a retryable error.
    async fn turn_retrying_cuts(
        &self,
        request: &CompletionRequest,
        iteration: u32,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<CompletionResponse, LlmError> {
        let mut retries = 0u32;
        loop {
            let (error, cut) = match self.turn(request, on_event).await {
                Ok(response) => return Ok(response),
                Err(failure) => failure,
            };
            if !should_retry_cut_turn(&error, cut, retries, self.config.stream_cut_retries_max) {
                return Err(error);
            }
            retries += 1;
            self.env.cover("agent.stream_retry");
            self.env.record(
                "agent.stream_retry",
                format_args!("iteration={iteration} retry={retries} {}", error.kind()),
            );
            on_event(AgentEvent::TurnRetried {
                iteration,
                retry: retries,
                error_kind: error.kind(),
            });
        }
    }

    /// One model turn, streamed through the collector. On failure, the error and whether
    /// it cut a stream that had begun (an `Err` item, rather than a refused call).
    async fn turn(
        &self,
        request: &CompletionRequest,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<CompletionResponse, (LlmError, bool)> {
        let mut stream = self.llm.stream(request).await.map_err(|e| (e, false))?;
        let mut collector = StreamCollector::new(self.llm.model_ref().model.clone());
        while let Some(item) = stream.next().await {
            let event = item.map_err(|e| (e, true))?;
            if let StreamEvent::TextDelta { text } = &event {
                on_event(AgentEvent::TextDelta { text: text.clone() });
            }
            collector.push(event).map_err(|e| (e, false))?;
        }
        collector.finish().map_err(|e| (e, false))
    }

    /// Runs one tool call: its result and whether it succeeded.
    async fn call_tool(&self, call: &ToolCall) -> (String, bool) {
        let Some(handler) = self.tools.handler(&call.name) else {
            self.env
                .record("agent.tool", format_args!("{} unknown", call.name));
            return (
                format!("error: there is no tool named {:?}", call.name),
                false,
            );
        };
        let invocation = ToolInvocation {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        };
        let outcome = match self.config.tool_timeout {
            Some(limit) => match self.env.timeout(limit, handler.invoke(invocation)).await {
                Ok(outcome) => outcome,
                Err(elapsed) => {
                    self.env.cover("agent.tool_timeout");
                    Err(format!("the tool timed out ({elapsed})"))
                }
            },
            None => handler.invoke(invocation).await,
        };
        let (content, success) = match outcome {
            Ok(content) => (content, true),
            Err(error) => {
                self.env.cover("agent.tool_failed");
                (format!("error: {error}"), false)
            }
        };
        self.env.record(
            "agent.tool",
            format_args!("{} success={success}", call.name),
        );
        (cut_result(content), success)
    }
}
