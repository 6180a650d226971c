//! One call of a simulated tool: its arguments checked against the input schema, one
//! fault decision at `tool.call.<name>`, latency drawn under the seed, the effect
//! recorded, and the result (or the error result) the agent gets.
//!
//! What each fault does is [`outcome_of`], a pure function table tests reach. A call's
//! RNG is forked from the tool's name, the model's call id and how many times that call
//! id was run before (counted in the tools' world, so over `dst serve` across a scope's
//! requests), so a call's latency and result do not depend on which other calls ran
//! first. A call repeating an idempotency key its tool has seen applies nothing and gets
//! the answer the key's first call got.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use umi_core::agent::{ToolHandler, ToolInvocation};

use super::SimTool;
use super::ledger::EffectLedger;
use crate::environment::SimEnvironment;
use crate::fault::FaultKind;
use crate::fault::ToolKind;
use crate::fault::point::{TOOL_CALL, unreachable_kind};
use crate::rng::DeterministicRng;
use crate::trace::ToolEvent;

/// How long a stalled tool holds a call, in simulated ms, before it gives up.
pub const TOOL_STALL_MS: u64 = 600_000;

/// The extra latency of `tool.slow`, in ms (lowest, highest).
pub const TOOL_SLOW_EXTRA_MS: (u64, u64) = (2_000, 30_000);

/// The chance that a stalled call with side effects did them before it stalled.
pub const TOOL_STALL_APPLIED_PROBABILITY: f64 = 0.5;

/// What one call comes to, before its result is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The tool runs and answers.
    Answer,
    /// It runs, late by the extra ms.
    Slow,
    /// It runs and answers nothing useful (a valid empty result).
    Empty,
    /// It runs and answers something its output schema does not allow.
    Malformed,
    /// It runs and fails (an error result).
    ErrorResult,
    /// The call never reaches it.
    TransportError,
    /// It does not answer within `TOOL_STALL_MS`.
    Stall,
}

impl Outcome {
    /// Whether the tool ran (so a tool with side effects did them), given, for a stall,
    /// whether it had run before it stalled.
    pub fn ran(self, stalled_after_running: bool) -> bool {
        match self {
            Self::Answer | Self::Slow | Self::Empty | Self::Malformed => true,
            Self::Stall => stalled_after_running,
            Self::ErrorResult | Self::TransportError => false,
        }
    }
}

/// What a call meets under `fault` (the one decision at `tool.call.<name>`).
pub fn outcome_of(fault: Option<FaultKind>) -> Outcome {
    let Some(kind) = fault else {
        return Outcome::Answer;
    };
    match kind.tool() {
        Some(ToolKind::Timeout) => Outcome::Stall,
        Some(ToolKind::ErrorResult) => Outcome::ErrorResult,
        Some(ToolKind::TransportError) => Outcome::TransportError,
        Some(ToolKind::MalformedResult) => Outcome::Malformed,
        Some(ToolKind::Slow) => Outcome::Slow,
        Some(ToolKind::EmptyResult) => Outcome::Empty,
        // The MCP server's kinds, and other domains': not drawn at `tool.call`.
        Some(
            ToolKind::McpSessionExpired
            | ToolKind::McpStreamCut
            | ToolKind::McpInternalError
            | ToolKind::McpVersionMismatch
            | ToolKind::McpToolsChanged
            | ToolKind::McpNoResponse,
        )
        | None => unreachable_kind(&TOOL_CALL, kind),
    }
}

/// The handler umi-core's registry holds for one simulated tool.
pub(crate) struct SimToolHandler {
    sim: SimEnvironment,
    tool: Arc<SimTool>,
    ledger: Arc<EffectLedger>,
}

impl SimToolHandler {
    pub(crate) fn new(sim: &SimEnvironment, tool: Arc<SimTool>, ledger: Arc<EffectLedger>) -> Self {
        Self {
            sim: sim.clone(),
            tool,
            ledger,
        }
    }

    /// The call's own stream: the tool, the call id, and which run of that id this is.
    fn call_rng(&self, call_id: &str) -> DeterministicRng {
        let run = self.ledger.next_run(&self.tool.definition.name, call_id);
        self.sim
            .fork_rng(crate::rng::streams::seed::TOOL.as_str())
            .fork_parts(&[
                self.tool.definition.name.as_bytes(),
                call_id.as_bytes(),
                &run.to_le_bytes(),
            ])
    }

    /// The tool's answer on success: its function's, or generated from its output
    /// schema, or `{"ok": true}`.
    fn answer(&self, arguments: &Value, rng: &mut DeterministicRng) -> Result<Value, String> {
        if let Some(answer) = &self.tool.answer {
            return answer(arguments, rng);
        }
        match &self.tool.output_schema {
            Some(schema) => crate::llm::schema::generate(schema, rng).map_err(|error| {
                format!("the simulated tool cannot answer its output schema: {error}")
            }),
            None => Ok(json!({"ok": true})),
        }
    }

    /// The result text for `outcome`, from the tool's own answer.
    fn written(&self, outcome: Outcome, answer: &Value, rng: &mut DeterministicRng) -> String {
        match outcome {
            Outcome::Empty => empty_like(self.tool.output_schema.as_ref(), answer),
            Outcome::Malformed => malformed(answer, rng),
            Outcome::Answer
            | Outcome::Slow
            | Outcome::ErrorResult
            | Outcome::TransportError
            | Outcome::Stall => umi_core::canonical_json::to_string(answer),
        }
    }
}

/// A valid result with nothing in it, of the type the tool answers.
fn empty_like(schema: Option<&Value>, answer: &Value) -> String {
    let kind = schema.and_then(|s| s.get("type")).and_then(Value::as_str);
    let empty = match (kind, answer) {
        (Some("array"), _) | (None, Value::Array(_)) => "[]",
        (Some("string"), _) | (None, Value::String(_)) => "\"\"",
        _ => "{}",
    };
    empty.to_owned()
}

/// A result the output schema does not allow: the JSON cut in half, or a value of
/// another type.
fn malformed(answer: &Value, rng: &mut DeterministicRng) -> String {
    let text = umi_core::canonical_json::to_string(answer);
    if rng.bool_with(0.5) && text.len() > 1 {
        let mut cut = text.len() / 2;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        return text[..cut].to_owned();
    }
    match answer {
        Value::String(_) => "{\"unexpected\":true}".to_owned(),
        _ => "\"unexpected\"".to_owned(),
    }
}

/// What one call came to, typed, before a protocol writes it: umi-core's tool result
/// (`ToolHandler`) or an MCP `tools/call` response (`crate::mcp`).
#[derive(Debug, Clone, PartialEq)]
pub enum Called {
    /// The tool answered: the text it wrote, and its value when that text is JSON the
    /// tool meant (not for a malformed result).
    Answered {
        /// The result as written.
        text: String,
        /// The structured result, when the text is the tool's own valid answer.
        value: Option<Value>,
    },
    /// The tool ran, or tried to, and failed (MCP's `isError: true`).
    ErrorResult(String),
    /// The arguments break the input schema (in process: JSON-RPC's invalid params; over
    /// MCP: a tool execution error, `isError`, as 2025-11-25 files input validation).
    InvalidParams {
        /// Where, as a JSON path (`$.amount`).
        path: String,
        /// What is wrong there.
        reason: String,
    },
    /// The call never reached the tool.
    TransportError(String),
    /// The tool does not answer: the caller holds the call for `TOOL_STALL_MS`.
    Stalled,
}

impl SimToolHandler {
    /// The tool's name.
    pub(crate) fn name(&self) -> &str {
        &self.tool.definition.name
    }

    /// The tool's declaration.
    pub(crate) fn tool(&self) -> &SimTool {
        &self.tool
    }

    /// Runs one call: checks its arguments, decides its fault, draws its latency,
    /// records its effect, waits its latency in simulated time, and says what it came to.
    pub(crate) async fn run(&self, invocation: &ToolInvocation) -> Called {
        let name = &self.tool.definition.name;
        let env = self.sim.env();
        if let Some(refused) = self.refused(invocation) {
            return refused;
        }
        let fault = self.sim.fault_qualified(&TOOL_CALL, name);
        let outcome = outcome_of(fault);
        let mut rng = self.call_rng(&invocation.call_id);
        let (low, high) = self.tool.latency_ms;
        let mut latency_ms = rng.range_inclusive(low, high);
        if outcome == Outcome::Slow {
            latency_ms += rng.range_inclusive(TOOL_SLOW_EXTRA_MS.0, TOOL_SLOW_EXTRA_MS.1);
        }
        let stalled_after_running = rng.bool_with(TOOL_STALL_APPLIED_PROBABILITY);
        let mut answer = if outcome.ran(stalled_after_running) {
            Some(self.answer(&invocation.arguments, &mut rng))
        } else {
            None
        };
        let ran_ok = matches!(answer, Some(Ok(_)));
        if let (true, Some(Ok(value))) = (self.tool.side_effects, &answer) {
            // A key seen before: nothing applied, and the key's first answer again.
            if let Some(first) = self
                .ledger
                .apply(&self.tool, invocation, env.elapsed(), value)
            {
                answer = Some(Ok(first));
            }
            env.cover("tool.effect");
            if outcome == Outcome::Stall {
                env.cover("tool.effect_then_stall");
            }
        }
        self.sim.emit(ToolEvent::Call {
            name: name.clone(),
            call_id: invocation.call_id.to_string(),
            outcome: format!("{outcome:?}"),
            latency_ms,
            ran: ran_ok,
        });
        // The interleaving points: calls ready at the same instant may overtake each
        // other here, in seeded orders, when the run seeds interleavings.
        self.sim.interleave("tool.call.start").await;
        if latency_ms > 0 {
            env.sleep(Duration::from_millis(latency_ms)).await;
        }
        self.sim.interleave("tool.call.end").await;
        self.called(outcome, answer, &mut rng)
    }

    /// Arguments the input schema refuses, as JSON-RPC's invalid params (and the trace
    /// naming the JSON path).
    fn refused(&self, invocation: &ToolInvocation) -> Option<Called> {
        let violation = umi_core::llm::structured::validate(
            &self.tool.definition.parameters,
            &invocation.arguments,
        )
        .err()?;
        self.sim.emit(ToolEvent::InvalidParams {
            tool: self.tool.definition.name.clone(),
            call_id: invocation.call_id.to_string(),
            path: violation.path.to_string(),
            reason: violation.reason.to_string(),
        });
        Some(Called::InvalidParams {
            path: violation.path.to_string(),
            reason: violation.reason.to_string(),
        })
    }

    /// What a call came to, from its outcome and the tool's answer (when it ran).
    fn called(
        &self,
        outcome: Outcome,
        answer: Option<Result<Value, String>>,
        rng: &mut DeterministicRng,
    ) -> Called {
        let name = &self.tool.definition.name;
        match (outcome, answer) {
            (Outcome::Stall, _) => Called::Stalled,
            (Outcome::TransportError, _) => Called::TransportError(format!(
                "{name}: connection reset before the call reached the tool"
            )),
            (Outcome::ErrorResult, _) => {
                Called::ErrorResult(format!("{name} failed: internal error"))
            }
            (_, Some(Ok(value))) => {
                let text = self.written(outcome, &value, rng);
                let value =
                    (outcome != Outcome::Malformed && outcome != Outcome::Empty).then_some(value);
                Called::Answered { text, value }
            }
            (_, Some(Err(error))) => Called::ErrorResult(error),
            (_, None) => unreachable!("a call that ran has an answer"),
        }
    }
}

#[async_trait]
impl ToolHandler for SimToolHandler {
    async fn call(&self, arguments: Value) -> Result<String, String> {
        let invocation = ToolInvocation {
            call_id: String::new(),
            name: self.tool.definition.name.clone(),
            arguments,
        };
        self.invoke(invocation).await
    }

    async fn invoke(&self, invocation: ToolInvocation) -> Result<String, String> {
        match self.run(&invocation).await {
            Called::Answered { text, .. } => Ok(text),
            // JSON-RPC's invalid params, as an MCP server answers a call its schema refuses.
            Called::InvalidParams { path, reason } => Err(format!(
                "MCP error -32602: Invalid params: {path}: {reason}"
            )),
            Called::ErrorResult(text) | Called::TransportError(text) => Err(text),
            Called::Stalled => {
                self.sim
                    .env()
                    .sleep(Duration::from_millis(TOOL_STALL_MS))
                    .await;
                Err(format!(
                    "{} did not answer within {TOOL_STALL_MS} ms",
                    self.tool.definition.name
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_fault_has_its_outcome_and_only_running_calls_do_effects() {
        let table = [
            (None, Outcome::Answer, true),
            (Some(FaultKind::ToolSlow), Outcome::Slow, true),
            (Some(FaultKind::ToolEmptyResult), Outcome::Empty, true),
            (
                Some(FaultKind::ToolMalformedResult),
                Outcome::Malformed,
                true,
            ),
            (
                Some(FaultKind::ToolErrorResult),
                Outcome::ErrorResult,
                false,
            ),
            (
                Some(FaultKind::ToolTransportError),
                Outcome::TransportError,
                false,
            ),
        ];
        for (fault, outcome, ran) in table {
            assert_eq!(outcome_of(fault), outcome, "{fault:?}");
            assert_eq!(outcome.ran(false), ran, "{fault:?}");
        }
        assert_eq!(outcome_of(Some(FaultKind::ToolTimeout)), Outcome::Stall);
        assert!(Outcome::Stall.ran(true) && !Outcome::Stall.ran(false));
    }

    #[test]
    fn empty_and_malformed_results_are_what_their_names_say() {
        let object = json!({"c": 3});
        assert_eq!(empty_like(None, &object), "{}");
        assert_eq!(
            empty_like(Some(&json!({"type": "array"})), &json!([1])),
            "[]"
        );
        assert_eq!(empty_like(None, &json!("x")), "\"\"");
        let mut rng = DeterministicRng::new(1);
        for _ in 0..20 {
            let broken = malformed(&object, &mut rng);
            let parsed = serde_json::from_str::<Value>(&broken);
            assert!(parsed.map_or(true, |value| !value.is_object()), "{broken}");
        }
    }
}
