//! What a scope reached, as coverage for an explorer over `dst serve` (the pytest
//! plugin's `--umi-explore`): `GET /umi/marks?scope=S`.
//!
//! A mark is a name the scope's log shows at least once: a fault that fired at a fault
//! point (`fault:llm.stream_cut@llm.call`), a response shape sent
//! (`shape:200/complete/tool_calls`, `shape:429/complete`, `shape:200/reset/cut`, MCP
//! ones as `shape:mcp:...`) and a tool outcome (`tool:issue_refund:ran`,
//! `:deduplicated`, `:not_run`). Each says at which of the scope's arrivals it was first
//! reached (`arrival`, from 0 as in the trace; `step` = `arrival` + 1, the number a
//! path's branch counts: `branch.rs`) and how many requests reached it. An explorer keeps
//! a path that reached a mark no earlier path did, and branches it after that step.
//!
//! Marks are read from the log and nothing else: they add no state, no draw and nothing
//! to any hash.

use std::collections::BTreeMap;

use serde::Serialize;

use super::session::{Entry, Session};

/// What `scope`'s requests (every scope's, when none is named) reached, as one JSON
/// object (`GET /umi/marks`): `marks` by name, with how many entries they were read
/// from, how many were left out of the log and whether the scope was evicted (marks read
/// from a partial log may miss some).
pub(crate) fn marks_json(session: &Session, scope: Option<&str>) -> String {
    session.read_log(scope, |logged, left_out, evicted| {
        let entries = logged.len() as u64;
        let mut body = serde_json::json!({
            "scope": scope,
            "marks": marks(logged),
            "entries": entries,
            "left_out": left_out,
        });
        if let Some(evicted) = evicted {
            body["evicted"] = evicted.into();
        }
        umi_core::canonical_json::to_string(&body)
    })
}

/// One mark a scope reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Mark {
    /// `fault:...`, `shape:...` or `tool:...`.
    pub(crate) name: String,
    /// `fault`, `shape` or `tool`.
    pub(crate) kind: &'static str,
    /// The first arrival (from 0) at which it was reached.
    pub(crate) arrival: u64,
    /// `arrival + 1`: the arrival ordinal a path's branch step counts.
    pub(crate) step: u64,
    /// How many of the scope's requests reached it.
    pub(crate) count: u64,
}

/// The marks of `entries`, by name.
pub(crate) fn marks<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> Vec<Mark> {
    let mut found: BTreeMap<String, Mark> = BTreeMap::new();
    for entry in entries {
        for (kind, name) in entry_marks(entry) {
            let mark = found.entry(name.clone()).or_insert(Mark {
                name,
                kind,
                arrival: entry.arrival,
                step: entry.arrival + 1,
                count: 0,
            });
            mark.count += 1;
            if entry.arrival < mark.arrival {
                (mark.arrival, mark.step) = (entry.arrival, entry.arrival + 1);
            }
        }
    }
    found.into_values().collect()
}

/// The marks one entry reaches, with their kinds.
fn entry_marks(entry: &Entry) -> Vec<(&'static str, String)> {
    let mut out: Vec<(&'static str, String)> = entry
        .faults
        .iter()
        .map(|fault| ("fault", format!("fault:{fault}")))
        .collect();
    out.push(("shape", shape(entry)));
    if let Some(tool) = &entry.tool {
        let outcome = match (tool.ran, tool.deduplicated) {
            (true, true) => "deduplicated",
            (true, false) => "ran",
            (false, _) => "not_run",
        };
        out.push(("tool", format!("tool:{}:{outcome}", tool.name)));
    }
    out
}

/// `shape:[mcp:]STATUS/END[/cut][/tool_calls][/text]` (`STATUS` is `none` when no
/// response came).
fn shape(entry: &Entry) -> String {
    let mcp = if entry.endpoint == super::mcp::MCP_ENDPOINT_KEY {
        "mcp:"
    } else {
        ""
    };
    let status = entry
        .status
        .map_or_else(|| "none".to_owned(), |s| s.to_string());
    let mut name = format!("shape:{mcp}{status}/{}", entry.end);
    if entry.cut {
        name.push_str("/cut");
    }
    if let Some(carried) = &entry.carried {
        if !carried.tool_calls.is_empty() {
            name.push_str("/tool_calls");
        }
        if !carried.text.is_empty() {
            name.push_str("/text");
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::digest::Carried;

    fn entry(arrival: u64, status: Option<u16>, faults: &[&str]) -> Entry {
        Entry {
            seed: 1,
            scope: "s".into(),
            endpoint: "openai".into(),
            path: "/v1/chat/completions".into(),
            request_hash: String::new(),
            occurrence: 0,
            run_seed: 0,
            status,
            end: "complete",
            cut: false,
            faults: faults.iter().map(|f| (*f).to_owned()).collect(),
            trace_hash: "t".into(),
            events: Vec::new(),
            tool: None,
            arrival,
            carried: None,
            history: None,
            clock_us: None,
            timing: crate::serve::clock::Timing::ZERO,
        }
    }

    #[test]
    fn marks_name_faults_shapes_and_tools_at_their_first_arrival() {
        let mut cut = entry(1, Some(200), &["llm.stream_cut@llm.call"]);
        cut.cut = true;
        cut.carried = Some(Carried {
            whole: false,
            text: "par".into(),
            tool_calls: Vec::new(),
        });
        let limited = entry(3, Some(429), &["llm.rate_limit@llm.call"]);
        let again = entry(0, Some(429), &["llm.rate_limit@llm.call"]);
        let found = marks([&cut, &limited, &again]);
        let seen: Vec<(&str, &str, u64, u64, u64)> = found
            .iter()
            .map(|m| (m.name.as_str(), m.kind, m.arrival, m.step, m.count))
            .collect();
        assert_eq!(
            seen,
            vec![
                ("fault:llm.rate_limit@llm.call", "fault", 0, 1, 2),
                ("fault:llm.stream_cut@llm.call", "fault", 1, 2, 1),
                ("shape:200/complete/cut/text", "shape", 1, 2, 1),
                ("shape:429/complete", "shape", 0, 1, 2),
            ]
        );
        assert!(marks([]).is_empty());
    }
}
