//! Scenario `deep_canary_resend`: a deep canary in the tools, a payment made twice after
//! four tool faults in order.
//!
//! A payments layer drives SimTools' `pay` (side effects, deduplicated by an idempotency
//! key) and `notify` (a receipt) for each order. A payment that does not answer within
//! `PAY_TIMEOUT` is in doubt: the layer keeps it, with its key, and sends it again when
//! the run ends (the key makes that safe). A receipt that fails while a payment is in
//! doubt leaves a receipt owed; an empty answer to a later payment while a receipt is owed
//! makes the layer distrust its queue and rebuild it from its audit log, which never
//! recorded idempotency keys; a garbled receipt then makes it retry the rebuilt queue at
//! once. The planted bug is that keyless retry: when the stalled payment had paid before
//! it stalled (half of stalls do), the same call pays twice, and the effect ledger's
//! checker says so.
//!
//! The events, each a rule with chance 1/20, in order:
//! 1. payment 2 stalls: in doubt (`deep_resend.in_doubt`);
//! 2. receipt 3 is an error: a receipt is owed (`deep_resend.receipt_owed`);
//! 3. payment 4 answers empty: the queue is rebuilt without keys (`deep_resend.rebuilt`);
//! 4. receipt 5 is garbled: the rebuilt queue is sent, and pays again.
//!
//! A blind seed needs all four and the stall's paying first (half of stalls do): odds
//! 1/320,000. Runs only when named (`--scenario deep_canary_resend`).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use umi_core::agent::{ToolHandler, ToolInvocation};
use umi_core::env::{Env, EnvironmentExt};
use umi_dst::checkers::effects::check_effects;
use umi_dst::tools::{SimTool, SimTools};
use umi_dst::{FaultKind, SimEnvironment, Violation};

use crate::common::{Stages, event};

/// Orders paid per seed (a payment and a receipt each).
const ORDERS: usize = 6;

/// How long a payment may take before it is in doubt.
const PAY_TIMEOUT: Duration = Duration::from_secs(5);

/// The field `pay` reads its idempotency key from.
const KEY_FIELD: &str = "idempotency_key";

/// The stepping stones, in order.
const MARKS: &[&str] = &[
    "deep_resend.in_doubt",
    "deep_resend.receipt_owed",
    "deep_resend.rebuilt",
];

/// The scenario.
#[umi_dst::scenario(
    goal = "a payments layer that pays twice after four tool faults in order (deep planted bug)",
    faults = [
        event(FaultKind::ToolTimeout, "tool.call.pay", 2),
        event(FaultKind::ToolErrorResult, "tool.call.notify", 3),
        event(FaultKind::ToolEmptyResult, "tool.call.pay", 4),
        event(FaultKind::ToolMalformedResult, "tool.call.notify", 5),
    ],
    marks = MARKS,
    canary,
    only_when_named,
    run = run,
    rank = 240,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct DeepCanaryResend;

fn tools(sim: &SimEnvironment) -> SimTools {
    SimTools::new(sim)
        .with(
            SimTool::new(
                "pay",
                "pay an order",
                json!({"type": "object", "properties": {
                    "order": {"type": "integer"},
                    "idempotency_key": {"type": "string"}
                }, "required": ["order"]}),
            )
            .with_output_schema(json!({"type": "object", "properties": {
                "receipt": {"type": "string"}
            }, "required": ["receipt"]}))
            .with_side_effects()
            .with_idempotency_key(KEY_FIELD)
            .with_latency_ms(50, 800),
        )
        .with(
            SimTool::new(
                "notify",
                "send the receipt",
                json!({"type": "object", "properties": {"order": {"type": "integer"}}}),
            )
            .with_output_schema(json!({"type": "object", "properties": {
                "sent": {"type": "boolean"}
            }, "required": ["sent"]})),
        )
}

async fn run(sim: SimEnvironment) -> Result<(), Violation> {
    let tools = tools(&sim);
    let registry = tools.registry();
    let payments = Payments {
        pay: registry.handler("pay").expect("registered"),
        notify: registry.handler("notify").expect("registered"),
        queue: Mutex::new(Queue::default()),
        stages: Stages::new(MARKS, sim.env()),
        env: sim.env(),
    };
    let mut calls = Vec::new();
    for order in 1..=ORDERS {
        calls.push(payments.pay(order).await);
        calls.push(payments.notify(order).await);
    }
    sim.faults().heal();
    payments.send_in_doubt().await;
    check_effects(&tools.ledger(), &calls)
}

/// The payments in doubt.
#[derive(Debug, Default)]
struct Queue {
    /// As sent, keys and all: sent again when the run ends.
    in_doubt: Vec<ToolInvocation>,
    /// Rebuilt from the audit log (no keys): the planted bug's copy.
    rebuilt: Vec<ToolInvocation>,
}

/// The layer with the planted bug.
struct Payments {
    pay: Arc<dyn ToolHandler>,
    notify: Arc<dyn ToolHandler>,
    queue: Mutex<Queue>,
    stages: Stages,
    env: Env,
}

impl Payments {
    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Pays `order` (its call id returned); a stall leaves it in doubt.
    async fn pay(&self, order: usize) -> String {
        let call_id = format!("order-{order}.pay");
        let invocation = ToolInvocation {
            call_id: call_id.clone(),
            name: "pay".into(),
            arguments: json!({"order": order, KEY_FIELD: call_id}),
        };
        let answer = self
            .env
            .timeout(PAY_TIMEOUT, self.pay.invoke(invocation.clone()))
            .await;
        match answer {
            Err(_) => {
                self.queue().in_doubt.push(invocation);
                self.stages.climb(1);
            }
            Ok(Ok(text)) if receipt(&text).is_none() && self.stages.climb(3) => {
                let mut queue = self.queue();
                queue.rebuilt = queue.in_doubt.iter().map(from_audit_log).collect();
            }
            Ok(_) => {}
        }
        call_id
    }

    /// Sends `order`'s receipt (its call id returned).
    async fn notify(&self, order: usize) -> String {
        let call_id = format!("order-{order}.notify");
        let invocation = ToolInvocation {
            call_id: call_id.clone(),
            name: "notify".into(),
            arguments: json!({"order": order}),
        };
        match self.notify.invoke(invocation).await {
            Err(_) if !self.queue().in_doubt.is_empty() => {
                self.stages.climb(2);
            }
            Ok(text) if garbled(&text) && self.stages.climb(4) => self.retry_rebuilt().await,
            _ => {}
        }
        call_id
    }

    /// The planted bug: the rebuilt queue sent at once, without keys.
    async fn retry_rebuilt(&self) {
        let rebuilt = std::mem::take(&mut self.queue().rebuilt);
        for invocation in rebuilt {
            if self.pay.invoke(invocation.clone()).await.is_ok() {
                self.queue()
                    .in_doubt
                    .retain(|doubt| doubt.call_id != invocation.call_id);
            }
        }
    }

    /// What is still in doubt, sent again with its key (faults are healed by then).
    async fn send_in_doubt(&self) {
        let in_doubt = std::mem::take(&mut self.queue().in_doubt);
        for invocation in in_doubt {
            let _ = self.pay.invoke(invocation).await;
        }
    }
}

/// The receipt number in `pay`'s answer, if there is one.
fn receipt(text: &str) -> Option<String> {
    let value: Value = serde_json::from_str(text).ok()?;
    value.get("receipt")?.as_str().map(str::to_owned)
}

/// Whether `notify`'s answer is not what its output schema says (no `sent` flag).
fn garbled(text: &str) -> bool {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|value| value.get("sent")?.as_bool())
        .is_none()
}

/// An in-doubt payment as the audit log has it: the order, not the key.
fn from_audit_log(invocation: &ToolInvocation) -> ToolInvocation {
    ToolInvocation {
        call_id: invocation.call_id.clone(),
        name: invocation.name.clone(),
        arguments: json!({"order": invocation.arguments["order"]}),
    }
}
