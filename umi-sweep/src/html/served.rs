//! A served scope's trace read back for its page (`dst trace-html`): the lines of
//! `GET /umi/trace?scope=S` (umi-dst's `serve::session::Entry`, then a summary line), as
//! the pytest plugin and the TypeScript helper save them on a failure.
//!
//! The entries come in arrival order when the server recorded it (`arrival`), else in
//! the log's key order (an older `dst`), and the page says which. Which earlier response
//! each request's history came from is found from what the server decoded: a request's
//! `history` (the assistant turns and tool results it sent back) against the `carried`
//! of earlier responses (what each response actually delivered), by tool-call id, else
//! by text; an MCP `tools/call` (`tool.call_id`) links to the response that carried the
//! call. Without those fields (an older `dst`) there are no links, and the page says so.
//!
//! Read leniently: fields this reader does not know are ignored, fields it knows but the
//! server did not send default to empty, so a page can be drawn from any `dst`'s trace.

use serde::Deserialize;
use serde_json::Value;

/// Entries read at most (the server's log holds at most 100,000: `LOG_ENTRIES_MAX`).
pub const SERVED_ENTRIES_MAX: usize = 100_000;
/// Earlier entries searched for the origin of one request's history.
pub const LINK_LOOKBACK_MAX: usize = 1_000;
/// Characters two texts must share before a prefix match counts as "came from".
pub const TEXT_MATCH_CHARS_MIN: usize = 8;
/// Characters of a line quoted in an error.
const LINE_QUOTE_CHARS_MAX: usize = 80;

/// What was wrong with a saved trace.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ServedError {
    /// A line is not an entry the server writes.
    #[error("line {line}: not a trace entry of `GET /umi/trace` ({reason}): {quoted}")]
    BadLine {
        /// 1-based.
        line: usize,
        /// serde's words.
        reason: String,
        /// The line's start.
        quoted: String,
    },
    /// No summary line (`session_trace_hash`) at the end: the file was cut short.
    #[error("no summary line (with `session_trace_hash`) at the end: the trace was cut short")]
    NoSummary,
    /// More entries than [`SERVED_ENTRIES_MAX`].
    #[error("more than {SERVED_ENTRIES_MAX} entries")]
    TooLong,
}

/// One event of a served request's simulation (`TraceEvent` as serialized).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ServedEvent {
    /// Position in the request's simulation.
    pub index: u64,
    /// Simulated time since the request's simulation started, microseconds.
    pub at: u64,
    /// Dotted kind.
    pub kind: String,
    /// Text.
    pub detail: String,
}

/// A tool call as the server decoded it (from a response sent, or a request's history).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CallDigest {
    /// The call's id, when the format has one.
    pub id: Option<String>,
    /// The tool's name.
    pub name: Option<String>,
    /// The arguments (text as far as sent, or JSON).
    pub arguments: Option<Value>,
}

/// What a response the client received carried (`carried`, SCHEMA.md).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Carried {
    /// Whether it was sent whole (false when cut).
    pub whole: bool,
    /// Its text as far as sent.
    pub text: String,
    /// Its tool calls as far as sent.
    pub tool_calls: Vec<CallDigest>,
}

/// One assistant turn of a request's conversation.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct AssistantTurn {
    /// Its text.
    pub text: String,
    /// Its tool calls.
    pub tool_calls: Vec<CallDigest>,
}

/// A tool result of a request's conversation.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ToolResult {
    /// The call it answers.
    pub call_id: Option<String>,
}

/// A digest of a request's conversation (`history`, SCHEMA.md).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct History {
    /// The assistant turns it sent back.
    pub assistant: Vec<AssistantTurn>,
    /// The tool results it sent.
    pub tool_results: Vec<ToolResult>,
}

/// An MCP `tools/call` the scope's world ran (`tool`, SCHEMA.md).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ToolRun {
    /// The tool.
    pub name: Option<String>,
    /// Its arguments.
    pub arguments: Option<Value>,
    /// The model's call id it names, if any.
    pub call_id: Option<String>,
    /// Its idempotency key, if any.
    pub idempotency_key: Option<String>,
    /// Whether it ran.
    pub ran: Option<bool>,
    /// Whether it was deduplicated.
    pub deduplicated: Option<bool>,
}

/// One request the server answered in the scope.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ServedEntry {
    /// The seed it named.
    pub seed: u64,
    /// Its scope.
    pub scope: String,
    /// The endpoint (`openai/`, `mcp`, ...).
    pub endpoint: String,
    /// The path under the endpoint.
    pub path: String,
    /// The request's hash, hex.
    pub request_hash: String,
    /// Which time this request was seen in the scope (from 0).
    pub occurrence: u64,
    /// The status sent, if any.
    pub status: Option<u16>,
    /// How the body ended.
    pub end: String,
    /// Whether a 200's body ended short.
    pub cut: bool,
    /// The faults that fired, `kind@operation`.
    pub faults: Vec<String>,
    /// The request's simulation's trace hash.
    pub trace_hash: String,
    /// The request's simulation's events.
    pub events: Vec<ServedEvent>,
    /// Arrival order in the scope, when the server records it.
    pub arrival: Option<u64>,
    /// What the response carried, when the server records it.
    pub carried: Option<Carried>,
    /// The request's conversation digest, when the server records it.
    pub history: Option<History>,
    /// The MCP tool call it ran, when the server records it.
    pub tool: Option<ToolRun>,
    /// The agent's simulated clock when it sent the request (`x-umi-clock-us`), when it
    /// sent one.
    pub clock_us: Option<u64>,
    /// When the response's parts were sent, from the request's arrival, when recorded.
    pub timing: Option<Timing>,
}

/// When a response's parts were sent (`x-umi-timing`, SCHEMA section 1): microseconds
/// from the request's arrival in the run's simulated time.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Timing {
    /// The status line and headers.
    pub head_us: u64,
    /// The first body byte.
    pub first_us: u64,
    /// The last body byte.
    pub last_us: u64,
    /// The end of the response.
    pub end_us: u64,
    /// `complete`, `reset` or `stall`.
    pub ending: String,
}

/// Where part of a request's history came from: an earlier entry, and by what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The earlier entry's position in [`ServedTrace::entries`].
    pub from: usize,
    /// What ties them (`tool call call_1`, `assistant text`, `ran tool call call_1`).
    pub via: String,
}

/// A served scope's trace, ready to draw.
#[derive(Debug, Clone, Default)]
pub struct ServedTrace {
    /// The entries, in arrival order when [`Self::arrival_known`], else in key order.
    pub entries: Vec<ServedEntry>,
    /// Whether every entry had an `arrival`.
    pub arrival_known: bool,
    /// Whether any entry had `history` or `carried` (links can be found at all).
    pub history_known: bool,
    /// Per entry, where its history came from.
    pub links: Vec<Vec<Link>>,
    /// The summary line's `session_trace_hash`.
    pub trace_hash: String,
    /// Entries the server left out of its log.
    pub left_out: u64,
    /// Whether the scope was evicted from the server before the trace was read.
    pub evicted: bool,
}

/// `line` cut to [`LINE_QUOTE_CHARS_MAX`] characters.
fn quote(line: &str) -> String {
    let mut quoted: String = line.chars().take(LINE_QUOTE_CHARS_MAX).collect();
    if quoted.len() < line.len() {
        quoted.push('…');
    }
    quoted
}

/// Reads the saved lines of `GET /umi/trace?scope=S`.
pub fn parse(text: &str) -> Result<ServedTrace, ServedError> {
    let lines: Vec<(usize, &str)> = (text.lines().enumerate())
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(number, line)| (number + 1, line))
        .collect();
    let Some((&(_, summary), entries)) = lines.split_last() else {
        return Err(ServedError::NoSummary);
    };
    let summary: Value = serde_json::from_str(summary).map_err(|_| ServedError::NoSummary)?;
    let Some(trace_hash) = summary.get("session_trace_hash").and_then(Value::as_str) else {
        return Err(ServedError::NoSummary);
    };
    if entries.len() > SERVED_ENTRIES_MAX {
        return Err(ServedError::TooLong);
    }
    let mut read = Vec::with_capacity(entries.len());
    for &(line, raw) in entries {
        let entry: ServedEntry =
            serde_json::from_str(raw).map_err(|error| ServedError::BadLine {
                line,
                reason: error.to_string(),
                quoted: quote(raw),
            })?;
        read.push(entry);
    }
    let arrival_known = read.iter().all(|entry| entry.arrival.is_some());
    if arrival_known {
        read.sort_by_key(|entry| entry.arrival);
    }
    let history_known =
        (read.iter()).any(|entry| entry.history.is_some() || entry.carried.is_some());
    let links = history_links(&read);
    Ok(ServedTrace {
        entries: read,
        arrival_known,
        history_known,
        links,
        trace_hash: trace_hash.to_owned(),
        left_out: summary.get("left_out").and_then(Value::as_u64).unwrap_or(0),
        evicted: summary
            .get("evicted")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// Whether `entry`'s response carried a tool call with id `id`.
fn carried_call(entry: &ServedEntry, id: &str) -> bool {
    entry.carried.as_ref().is_some_and(|carried| {
        (carried.tool_calls.iter()).any(|call| call.id.as_deref() == Some(id))
    })
}

/// Whether an assistant turn's `text` came from `entry`'s response: the same text, or
/// one a prefix of the other (a cut response, or a client that kept what it got) over at
/// least [`TEXT_MATCH_CHARS_MIN`] characters.
fn carried_text(entry: &ServedEntry, text: &str) -> bool {
    let Some(carried) = &entry.carried else {
        return false;
    };
    let (sent, kept) = (carried.text.trim(), text.trim());
    if sent.is_empty() || kept.is_empty() {
        return false;
    }
    let shorter = sent.chars().count().min(kept.chars().count());
    sent == kept
        || (shorter >= TEXT_MATCH_CHARS_MIN && (sent.starts_with(kept) || kept.starts_with(sent)))
}

/// The latest of `entries[..before]` (within [`LINK_LOOKBACK_MAX`]) that `matches`.
fn latest(
    entries: &[ServedEntry],
    before: usize,
    matches: impl Fn(&ServedEntry) -> bool,
) -> Option<usize> {
    let start = before.saturating_sub(LINK_LOOKBACK_MAX);
    (start..before).rev().find(|&at| matches(&entries[at]))
}

/// Adds `from` (when found) by `via` to `links`, once.
fn add_link(links: &mut Vec<Link>, from: Option<usize>, via: String) {
    if let Some(from) = from {
        let link = Link { from, via };
        if !links.contains(&link) {
            links.push(link);
        }
    }
}

/// Where the history of `entries[at]` came from: each assistant turn by its tool-call
/// ids (else its text), each tool result not already linked by its call id, and an MCP
/// tool call by the call id it names.
fn links_of(entries: &[ServedEntry], at: usize) -> Vec<Link> {
    let mut links: Vec<Link> = Vec::new();
    let entry = &entries[at];
    for turn in entry.history.iter().flat_map(|h| &h.assistant) {
        let ids: Vec<&str> = (turn.tool_calls.iter())
            .filter_map(|call| call.id.as_deref())
            .collect();
        for id in &ids {
            let from = latest(entries, at, |e| carried_call(e, id));
            add_link(&mut links, from, format!("tool call {id}"));
        }
        if ids.is_empty() {
            let from = latest(entries, at, |e| carried_text(e, &turn.text));
            add_link(&mut links, from, "assistant text".to_owned());
        }
    }
    for id in (entry.history.iter())
        .flat_map(|h| &h.tool_results)
        .filter_map(|result| result.call_id.as_deref())
    {
        let from = latest(entries, at, |e| carried_call(e, id));
        if !links.iter().any(|link| Some(link.from) == from) {
            add_link(&mut links, from, format!("tool result {id}"));
        }
    }
    if let Some(id) = entry.tool.as_ref().and_then(|tool| tool.call_id.as_deref()) {
        let from = latest(entries, at, |e| carried_call(e, id));
        add_link(&mut links, from, format!("ran tool call {id}"));
    }
    links
}

/// Per entry, the earlier responses its history (or, for an MCP tool call, its call id)
/// came from; each `(from, via)` once.
pub fn history_links(entries: &[ServedEntry]) -> Vec<Vec<Link>> {
    (0..entries.len()).map(|at| links_of(entries, at)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUMMARY: &str =
        r#"{"entries":3,"evicted":false,"left_out":0,"session_trace_hash":"abc"}"#;

    fn line(arrival: Option<u64>, path: &str, extra: &str) -> String {
        let arrival = arrival.map_or(String::new(), |a| format!(",\"arrival\":{a}"));
        format!(
            "{{\"seed\":7,\"scope\":\"s\",\"endpoint\":\"openai/\",\"path\":\"{path}\",\
             \"request_hash\":\"{path}\",\"occurrence\":0,\"run_seed\":1,\"status\":200,\
             \"end\":\"complete\",\"cut\":false,\"faults\":[],\"trace_hash\":\"t\",\
             \"events\":[{{\"index\":0,\"at\":5,\"kind\":\"llm.call\",\"detail\":\"x\"}}]{arrival}{extra}}}"
        )
    }

    #[test]
    fn entries_come_in_arrival_order_when_the_server_recorded_it() {
        let text = [
            line(Some(2), "c", ""),
            line(Some(0), "a", ""),
            line(Some(1), "b", ""),
            SUMMARY.to_owned(),
        ]
        .join("\n");
        let trace = parse(&text).unwrap();
        assert!(trace.arrival_known && !trace.history_known);
        let paths: Vec<&str> = trace.entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["a", "b", "c"]);
        assert_eq!(trace.trace_hash, "abc");
        assert_eq!(trace.entries[0].events[0].at, 5);
        // Without arrival (an older dst): the file's order, and no links.
        let text = [line(None, "c", ""), line(None, "a", ""), SUMMARY.to_owned()].join("\n");
        let trace = parse(&text).unwrap();
        assert!(!trace.arrival_known);
        assert_eq!(trace.entries[0].path, "c");
        assert!(trace.links.iter().all(Vec::is_empty));
    }

    #[test]
    fn bad_input_is_named_by_line() {
        assert!(matches!(parse(""), Err(ServedError::NoSummary)));
        let cut = line(Some(0), "a", "");
        assert!(matches!(parse(&cut), Err(ServedError::NoSummary)));
        let text = format!("{}\n{{\"seed\":\"x\"}}\n{SUMMARY}", line(Some(0), "a", ""));
        let error = parse(&text).unwrap_err().to_string();
        assert!(error.starts_with("line 2: not a trace entry"), "{error}");
    }

    #[test]
    fn a_history_links_to_the_response_it_came_from() {
        let carried_call = r#","carried":{"whole":false,"text":"","tool_calls":[{"id":"call_1","name":"refund","arguments":"{\"amou"}]}"#;
        let carried_text =
            r#","carried":{"whole":true,"text":"The refund is done.","tool_calls":[]}"#;
        let history = r#","history":{"assistant":[{"text":"","tool_calls":[{"id":"call_1","name":"refund","arguments":"{}"}]},{"text":"The refund is done.","tool_calls":[]}],"tool_results":[{"call_id":"call_1"}]}"#;
        let tool = r#","tool":{"name":"refund","arguments":{},"call_id":"call_1","idempotency_key":null,"ran":true,"deduplicated":false}"#;
        let text = [
            line(Some(0), "first", carried_call),
            line(Some(1), "mcp", tool),
            line(Some(2), "second", carried_text),
            line(Some(3), "third", history),
            SUMMARY.to_owned(),
        ]
        .join("\n");
        let trace = parse(&text).unwrap();
        assert!(trace.history_known);
        let via = |at: usize| -> Vec<(usize, String)> {
            trace.links[at]
                .iter()
                .map(|l| (l.from, l.via.clone()))
                .collect()
        };
        assert!(via(0).is_empty());
        assert_eq!(via(1), [(0, "ran tool call call_1".to_owned())]);
        assert_eq!(
            via(3),
            [
                (0, "tool call call_1".to_owned()),
                (2, "assistant text".to_owned())
            ]
        );
    }

    #[test]
    fn short_texts_and_unrelated_ones_do_not_link() {
        let mut entry = ServedEntry {
            carried: Some(Carried {
                whole: false,
                text: "Refund".into(),
                tool_calls: Vec::new(),
            }),
            ..ServedEntry::default()
        };
        assert!(carried_text(&entry, "Refund"), "equal texts link");
        assert!(
            !carried_text(&entry, "Refund issued for order 7"),
            "too short a prefix"
        );
        entry.carried.as_mut().unwrap().text = "Refund issued for".into();
        assert!(carried_text(&entry, "Refund issued for order 7"));
        assert!(!carried_text(&entry, "Something else entirely"));
        assert!(!carried_text(&entry, ""));
    }
}
