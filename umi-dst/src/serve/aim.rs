//! Aimed fault rules over `dst serve` and `dst mcp`: the operations the server asks (so a
//! rule that reaches none is refused by name), the operations one request will be asked
//! at, and the rules as that request's simulation sees them.
//!
//! Each request is a simulation of its own, so an injector alone would count a rule's
//! operations from 1 in every request, and `llm.rate_limit@llm.call#2=1` would never
//! fire. A scope is one run: for a rule with an ordinal (`#n`, `#n..`), the scope counts
//! the operations its requests are asked at, in the order the requests arrive, and each
//! request's rule starts where the earlier ones left it ([`FaultConfig::after_earlier`]).
//! This, and only this, depends on arrival order (docs/adr/0020-aimed-faults-over-serve.md);
//! with no rule aimed by an ordinal nothing is counted and nothing changes.
//!
//! What a request is asked at is read from the request itself: a model request is one
//! `llm.call` (`llm.embed` at an embeddings path), an MCP request one
//! `tool.mcp.initialize` or `tool.mcp.request.<method>`, and a `tools/call` also its
//! `tool.call.<name>`. A request an earlier fault keeps from the model still counts.

use std::collections::BTreeMap;

use serde_json::Value;
use umi_core::llm::transport::HttpRequest;

use crate::fault::aim::{aim_text, close_names, earlier_matches, fires_at, is_ordinal};
use crate::fault::{FaultConfig, OperationFilter};
use crate::network::Profile;

/// The MCP methods the simulated server answers (past `initialize`), each asked as
/// `tool.mcp.request.<method>`.
pub const MCP_METHODS: [&str; 3] = ["ping", "tools/list", "tools/call"];

/// Operation names one scope counts at most; past it a new name goes uncounted (a rule
/// aimed by a prefix at clients that invent names).
pub(crate) const AIM_OPERATIONS_MAX: usize = 1_024;

/// Every operation a request to a server serving the MCP tools `tools` can be asked at.
pub fn served_operations(tools: &[&str]) -> Vec<String> {
    let mut operations: Vec<String> = [
        "llm.call",
        "llm.embed",
        "network.connect",
        "network.body",
        "tool.mcp.initialize",
    ]
    .map(str::to_owned)
    .to_vec();
    operations.extend(MCP_METHODS.map(|m| format!("tool.mcp.request.{m}")));
    operations.extend(tools.iter().map(|tool| format!("tool.call.{tool}")));
    operations
}

/// Checks every aimed rule of `rules` (one with an operation or an ordinal) on a server
/// serving the MCP tools `tools`: it must reach an operation the server asks where its
/// kind can fire, and an ordinal must count operations a scope can count. Returns the
/// rule's text and what is wrong.
pub(crate) fn check(rules: &[FaultConfig], tools: &[&str]) -> Result<(), (String, String)> {
    let operations = served_operations(tools);
    for rule in rules {
        if rule.filter() == &OperationFilter::Any && !is_ordinal(rule) {
            continue;
        }
        check_rule(rule, tools, &operations).map_err(|reason| (aim_text(rule), reason))?;
    }
    Ok(())
}

fn check_rule(rule: &FaultConfig, tools: &[&str], operations: &[String]) -> Result<(), String> {
    let kind = rule.kind();
    let reached: Vec<&String> = operations.iter().filter(|op| fires_at(rule, op)).collect();
    if reached.is_empty() {
        let filter = rule.filter().to_string();
        let unserved = filter
            .strip_prefix("tool.call.")
            .filter(|t| !t.contains('*') && !tools.contains(t));
        if let Some(tool) = unserved {
            let names: Vec<String> = tools.iter().map(|t| (*t).to_owned()).collect();
            let close = close_names(tool, &names);
            let mean = if close.is_empty() {
                String::new()
            } else {
                format!("; did you mean {}?", close.join(" or "))
            };
            return Err(format!(
                "no tool {tool:?} is served{mean} (the tools: {}; --mcp-tools FILE declares others)",
                tools.join(", ")
            ));
        }
        let at: Vec<&str> = operations
            .iter()
            .filter(|op| fires_at(&FaultConfig::always(kind), op))
            .map(String::as_str)
            .collect();
        let at = if at.is_empty() {
            "none here".to_owned()
        } else {
            at.join(", ")
        };
        if operations.contains(&filter) {
            return Err(format!(
                "{kind} cannot fire at {filter} (it can fire at: {at})"
            ));
        }
        let close = close_names(&filter, operations);
        let mean = if close.is_empty() {
            String::new()
        } else {
            format!("; did you mean {}?", close.join(" or "))
        };
        return Err(format!(
            "{filter} names no operation this server asks where {kind} can fire{mean} \
             ({kind} can fire at: {at})"
        ));
    }
    let network = reached.iter().find(|op| op.starts_with("network."));
    match network {
        Some(op) if is_ordinal(rule) => Err(format!(
            "an ordinal over dst serve counts a scope's model and MCP requests; \
             {op} is asked afresh in every request (aim the rule at llm.call or an MCP operation)"
        )),
        _ => Ok(()),
    }
}

/// What a model request to `profile`'s server (its path `rest`, below the prefix, under
/// `api_root`) is asked at.
pub(crate) fn model_operations(profile: Profile, api_root: &str, rest: &str) -> Vec<String> {
    let embeds = crate::network::registry::serves(profile, api_root, rest);
    vec![if embeds { "llm.embed" } else { "llm.call" }.to_owned()]
}

/// What an MCP request is asked at, read from its JSON-RPC message (nothing for a
/// notification, a response, a DELETE or a body that is not one message).
pub(crate) fn mcp_operations(request: &HttpRequest) -> Vec<String> {
    if request.method != "POST" {
        return Vec::new();
    }
    let Ok(message) = serde_json::from_slice::<Value>(&request.body) else {
        return Vec::new();
    };
    let (Some(method), Some(_)) = (
        message.get("method").and_then(Value::as_str),
        message.get("id"),
    ) else {
        return Vec::new();
    };
    if method == "initialize" {
        return vec!["tool.mcp.initialize".to_owned()];
    }
    let mut operations = vec![format!("tool.mcp.request.{method}")];
    if method == "tools/call" {
        let name = message.pointer("/params/name").and_then(Value::as_str);
        operations.extend(name.map(|name| format!("tool.call.{name}")));
    }
    operations
}

/// Whether any of `rules` counts operations across a scope.
pub(crate) fn counts(rules: &[FaultConfig]) -> bool {
    rules.iter().any(is_ordinal)
}

/// Of `asked`, the operations some ordinal rule of `rules` fires at: the only ones a
/// scope needs to count.
pub(crate) fn counted(rules: &[FaultConfig], asked: Vec<String>) -> Vec<String> {
    asked
        .into_iter()
        .filter(|op| {
            rules
                .iter()
                .any(|rule| is_ordinal(rule) && fires_at(rule, op))
        })
        .collect()
}

/// Adds `asked` to a scope's `counts` (up to [`AIM_OPERATIONS_MAX`] names) and returns
/// the counts from before it.
pub(crate) fn count_arrival(
    counts: &mut BTreeMap<String, u64>,
    asked: Vec<String>,
) -> BTreeMap<String, u64> {
    let before = counts.clone();
    for op in asked {
        if let Some(count) = counts.get_mut(&op) {
            *count += 1;
        } else if counts.len() < AIM_OPERATIONS_MAX {
            counts.insert(op, 1);
        }
    }
    before
}

/// `rules` as a request sees them when its scope was asked `earlier` operations before
/// it: each ordinal rule moved past what it matched there. `None` when nothing changes
/// (no ordinal rule, or nothing earlier it counts).
pub(crate) fn rules_after(
    rules: &[FaultConfig],
    earlier: &BTreeMap<String, u64>,
) -> Option<Vec<FaultConfig>> {
    let moved: Vec<FaultConfig> = rules
        .iter()
        .map(|rule| {
            if is_ordinal(rule) {
                rule.clone().after_earlier(earlier_matches(rule, earlier))
            } else {
                rule.clone()
            }
        })
        .collect();
    (moved != rules).then_some(moved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::aim::parse_rules;

    const TOOLS: [&str; 3] = ["get_weather", "search_docs", "send_payment"];

    fn rules(faults: &str) -> Vec<FaultConfig> {
        parse_rules(faults).unwrap()
    }

    #[test]
    fn aimed_rules_reach_served_operations_or_are_refused_by_name() {
        for good in [
            "llm.rate_limit=0.2,storage.write_fail=0.1",
            "tool.timeout@tool.call.send_payment=0.5",
            "tool.mcp_stream_cut@tool.mcp.request.tools/call=1",
            "tool.mcp_stream_cut@tool.mcp.request.*#2..=1",
            "llm.rate_limit@llm.call#2=1",
            "network.reset@network.body=0.5",
        ] {
            assert_eq!(check(&rules(good), &TOOLS), Ok(()), "{good}");
        }
        let table: &[(&str, &str)] = &[
            (
                "tool.timeout@tool.call.issue_refund=0.5",
                "no tool \"issue_refund\" is served (the tools: get_weather, search_docs, send_payment; --mcp-tools FILE",
            ),
            (
                "llm.rate_limit@llm.complete=1",
                "llm.complete names no operation this server asks where llm.rate_limit can fire (llm.rate_limit can fire at: llm.call, llm.embed)",
            ),
            (
                "tool.mcp_stream_cut@tool.mcp.request.tools/cal=1",
                "did you mean tool.mcp.request.tools/call",
            ),
            (
                "tool.mcp_session_expired@tool.mcp.initialize=1",
                "tool.mcp_session_expired cannot fire at tool.mcp.initialize (it can fire at: tool.mcp.request.ping, tool.mcp.request.tools/list, tool.mcp.request.tools/call",
            ),
            (
                "storage.write_fail@storage.write=1",
                "(storage.write_fail can fire at: none here)",
            ),
            (
                "network.reset#2=1",
                "network.body is asked afresh in every request",
            ),
            (
                "tool.timeout@tool.call.send_paymnt=1",
                "no tool \"send_paymnt\" is served; did you mean send_payment?",
            ),
            (
                "tool.mcp_stream_cut@tool.call.send_payment=1",
                "tool.mcp_stream_cut cannot fire at tool.call.send_payment (it can fire at: tool.mcp.initialize,",
            ),
        ];
        for (bad, wanted) in table {
            let (rule, reason) = check(&rules(bad), &TOOLS).unwrap_err();
            assert_eq!(&rule, bad);
            assert!(reason.contains(wanted), "{bad}: {reason}");
        }
    }

    #[test]
    fn requests_say_what_they_are_asked_at() {
        let post = |body: &str| HttpRequest {
            method: "POST",
            url: String::new(),
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
        };
        let call = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"pay"}}"#;
        assert_eq!(
            mcp_operations(&post(call)),
            ["tool.mcp.request.tools/call", "tool.call.pay"]
        );
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
        assert_eq!(mcp_operations(&post(init)), ["tool.mcp.initialize"]);
        let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert!(mcp_operations(&post(note)).is_empty());
        assert!(mcp_operations(&post("not json")).is_empty());
        let openai = |rest| model_operations(Profile::OpenAi, "/v1", rest);
        assert_eq!(openai("/v1/chat/completions"), ["llm.call"]);
        assert_eq!(openai("/v1/embeddings"), ["llm.embed"]);
    }

    #[test]
    fn a_scope_counts_in_arrival_order_and_moves_ordinal_rules_along() {
        let aimed = rules("llm.rate_limit@llm.call#2=1,llm.timeout=0.1");
        assert!(counts(&aimed) && !counts(&rules("llm.timeout=0.1")));
        let mut scope = BTreeMap::new();
        let asked = || counted(&aimed, vec!["llm.call".to_owned()]);
        let first = count_arrival(&mut scope, asked());
        assert!(
            rules_after(&aimed, &first).is_none(),
            "the first call is #1"
        );
        let second = count_arrival(&mut scope, asked());
        let moved = rules_after(&aimed, &second).unwrap();
        assert_eq!(moved[0].at_operation(), Some(1));
        assert_eq!(moved[1], aimed[1], "unaimed rules never move");
        let third = count_arrival(&mut scope, asked());
        assert!(!rules_after(&aimed, &third).unwrap()[0].enabled());
        assert!(counted(&aimed, vec!["tool.call.pay".to_owned()]).is_empty());
    }
}
