//! A planted support agent that refunds the same order twice after a whole-run retry
//! (issue 39, item 3), and its correct twin; not in [`crate::all`]: the test
//! `planted_refund` in `tests/planted.rs` runs both over the same seeds.
//!
//! The agent is a small loop of its own over SimLLM (in process): the user names the
//! order and the amount; the model is offered `issue_refund(order_id, amount)`, a
//! [`SimTool`] with side effects that refuses an amount that is not positive (nothing is
//! refunded then). One call at a time (`parallel_tool_calls: false`), so a second refund
//! can only come from a second run. The planted bug: when any model call fails
//! (`llm.service_unavailable`), the agent runs the whole conversation again from the
//! user's message, even when the failure came after the refund ran. The correct agent
//! does the same, but its refund tool is idempotent per order (it remembers which
//! orders it refunded and does not refund one again).
//!
//! Invariant: never refund the same order twice (two applied `issue_refund` effects with
//! a positive amount for one `order_id`). It can only fail when SimLLM's arguments come
//! from the conversation (the order id the user named) and amounts can be positive: on
//! the SimLLM before issue 39 (amounts in [-1000, 0], ids drawn from words) it passed on
//! every seed, vacuously.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::LocalBoxFuture;
use serde_json::{Value, json};
use umi_core::agent::{ToolHandler, ToolInvocation};
use umi_core::llm::{CompletionRequest, LanguageModel, Message, ToolDefinition};
use umi_dst::tools::{SimTool, SimTools};
use umi_dst::{FaultConfig, FaultKind, Scenario, SimEnvironment, Violation};

/// Whole runs one task gets at most (the first and the retries).
const RUNS_MAX: u32 = 3;

/// Model turns one run gets at most.
const TURNS_MAX: u32 = 4;

/// What the user asks.
pub const USER_MESSAGE: &str =
    "Hi, I was charged twice for order ORD-1234. Please refund the $25.00 extra charge.";

/// The order the user names.
pub const ORDER_ID: &str = "ORD-1234";

/// Mark: some order was refunded (a positive amount).
pub const MARK_REFUNDED: &str = "refund.issued";

/// Mark: the order the user named was refunded.
pub const MARK_NAMED_ORDER: &str = "refund.named_order";

/// The agent under test: planted (retries the whole run, refunds again) or correct.
#[derive(Debug, Clone, Copy)]
pub struct RefundAgent {
    /// Whether the refund tool remembers the orders it refunded (the correct agent).
    pub idempotent: bool,
}

impl Scenario for RefundAgent {
    fn name(&self) -> &'static str {
        if self.idempotent {
            "correct_refund_agent"
        } else {
            "planted_refund_twice"
        }
    }

    fn goal(&self) -> &'static str {
        "a support agent that retries the whole run never refunds one order twice"
    }

    fn faults(&self) -> Vec<FaultConfig> {
        vec![FaultConfig::chance(FaultKind::LlmServiceUnavailable, 0.3)]
    }

    fn marks(&self) -> &'static [&'static str] {
        &[MARK_REFUNDED, MARK_NAMED_ORDER]
    }

    fn only_when_named(&self) -> bool {
        true
    }

    fn run(&self, sim: SimEnvironment) -> LocalBoxFuture<'static, Result<(), Violation>> {
        Box::pin(run(sim, self.idempotent))
    }
}

/// The refund tool: a refund needs a positive amount.
pub fn refund_tool() -> SimTool {
    SimTool::new(
        "issue_refund",
        "Refund an amount of an order to the customer.",
        json!({"type": "object", "properties": {
            "order_id": {"type": "string"},
            "amount": {"type": "number"}
        }, "required": ["order_id", "amount"]}),
    )
    .with_side_effects()
    .with_fn(|arguments, _rng| match arguments["amount"].as_f64() {
        Some(amount) if amount > 0.0 => Ok(json!({"refunded": arguments["amount"]})),
        _ => Err("amount must be positive".to_owned()),
    })
}

/// What the refund tool did, by order: (positive refunds, calls).
pub fn refunds_by_order(tools: &SimTools) -> BTreeMap<String, (u32, u32)> {
    let mut by_order: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    for effect in tools.ledger().effects() {
        if effect.tool != "issue_refund" || !effect.applied {
            continue;
        }
        let arguments: Value = serde_json::from_str(&effect.arguments).unwrap_or(Value::Null);
        let order = arguments["order_id"].as_str().unwrap_or("").to_owned();
        let positive = arguments["amount"].as_f64().is_some_and(|a| a > 0.0);
        let entry = by_order.entry(order).or_default();
        entry.0 += u32::from(positive);
        entry.1 += 1;
    }
    by_order
}

/// Runs one task (the whole run again after any model failure, `RUNS_MAX` at most), then
/// checks that no order was refunded twice.
async fn run(sim: SimEnvironment, idempotent: bool) -> Result<(), Violation> {
    let tools = SimTools::new(&sim).with(refund_tool());
    let registry = tools.registry();
    let handler = registry
        .handler("issue_refund")
        .expect("the refund tool is registered");
    let refund = Refund {
        inner: handler,
        refunded: Mutex::new(Vec::new()),
        idempotent,
    };
    let llm = sim.llm();
    for _ in 0..RUNS_MAX {
        if one_run(llm.as_ref(), &registry.definitions(), &refund)
            .await
            .is_ok()
        {
            break;
        }
    }
    sim.faults().heal();
    let env = sim.env();
    for (order, (positive, _)) in refunds_by_order(&tools) {
        if positive > 0 {
            env.cover(MARK_REFUNDED);
        }
        if positive > 0 && order == ORDER_ID {
            env.cover(MARK_NAMED_ORDER);
        }
    }
    for (order, (positive, _)) in refunds_by_order(&tools) {
        if positive > 1 {
            return Err(Violation::new(format!(
                "order {order:?} was refunded {positive} times"
            )));
        }
    }
    Ok(())
}

/// One run of the conversation from the user's message; `Err` when a model call failed.
async fn one_run(
    llm: &dyn LanguageModel,
    definitions: &[ToolDefinition],
    refund: &Refund,
) -> Result<String, umi_core::llm::LlmError> {
    let mut messages = vec![
        Message::system("You are a support agent. Use the tools."),
        Message::user(USER_MESSAGE),
    ];
    for _ in 0..TURNS_MAX {
        let request = CompletionRequest::new(messages.clone())
            .with_tools(definitions.to_vec())
            .with_parallel_tool_calls(false);
        let response = llm.complete(&request).await?;
        if response.tool_calls.is_empty() {
            return Ok(response.text);
        }
        messages.push(Message::assistant_tool_calls(
            response.text.clone(),
            response.tool_calls.clone(),
        ));
        for call in response.tool_calls {
            let outcome = refund
                .invoke(ToolInvocation {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                })
                .await;
            let (content, success) = match outcome {
                Ok(text) => (text, true),
                Err(text) => (text, false),
            };
            messages.push(Message::tool_result(call.id, content, success));
        }
    }
    Ok(String::new())
}

/// The refund tool as the agent holds it: as it is (planted), or remembering the orders
/// it refunded (correct).
struct Refund {
    inner: Arc<dyn ToolHandler>,
    refunded: Mutex<Vec<String>>,
    idempotent: bool,
}

impl Refund {
    async fn invoke(&self, invocation: ToolInvocation) -> Result<String, String> {
        let order = invocation.arguments["order_id"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        if self.idempotent
            && self
                .refunded
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(&order)
        {
            return Ok(format!("order {order} was already refunded"));
        }
        let outcome = self.inner.invoke(invocation).await;
        if outcome.is_ok() {
            self.refunded
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(order);
        }
        outcome
    }
}
