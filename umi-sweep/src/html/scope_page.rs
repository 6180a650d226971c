//! A served scope's page (`dst trace-html TRACE --output PAGE`): the picture of one
//! pytest (or TypeScript) test's seed over `dst serve`, drawn by the same parts as a
//! run's page (`dst replay --html`): the header, the timeline of lanes, the event table
//! and the embedded data, plus a table of the scope's requests in arrival order (model
//! requests, MCP requests and the tools they ran, the faults that fired, whether a body
//! was cut) with, for each, the earlier responses its history came from (links to their
//! rows).
//!
//! Each request over `dst serve` is its own simulation, starting at simulated time 0, so
//! the timeline lays the requests end to end in arrival order, [`REQUEST_GAP_US`] apart:
//! times within a request are simulated, the order between them is the arrival order.
//!
//! The page embeds its data (`<script type="application/json" id="trace">`: the events
//! as on a run's page, each with its `request`, and the `requests`), so a browser test
//! and the plugin's own tests can hold the drawing against it.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde::Serialize;

use super::run_page::{HTML_EVENTS_MAX, events_table, header_row};
use super::served::{ServedEntry, ServedTrace};
use super::timeline::{self, Lane, Mark, TimelineInput, lane_of};
use super::{escape, json_script, page};

/// Simulated time between one request's last event and the next request's first, on
/// the timeline.
pub const REQUEST_GAP_US: u64 = 1_000;
/// Characters of a response's carried text shown in the requests table.
const CARRIED_TEXT_CHARS_MAX: usize = 80;

/// What a scope's page shows.
#[derive(Debug, Clone, Copy)]
pub struct ScopePage<'a> {
    /// What ran: the test's id.
    pub title: &'a str,
    /// The scope's trace.
    pub trace: &'a ServedTrace,
    /// The command that reruns the test on its seed, if known.
    pub rerun: Option<&'a str>,
    /// How the test failed, if it did.
    pub failure: Option<&'a str>,
    /// The spans the agent sent over OTLP (`GET /umi/spans?scope=S`), drawn beside the
    /// requests when there are any (`agent_spans.rs`).
    pub agent_spans: &'a [super::agent_spans::AgentSpan],
}

/// One event as the page embeds it.
#[derive(Debug, Serialize)]
struct EventData<'a> {
    index: u64,
    at_us: u64,
    lane: Lane,
    kind: &'a str,
    detail: &'a str,
    request: usize,
}

/// A link as the page embeds it.
#[derive(Debug, Serialize)]
struct LinkData<'a> {
    request: usize,
    via: &'a str,
}

/// One request as the page embeds it.
#[derive(Debug, Serialize)]
struct RequestData<'a> {
    number: usize,
    arrival: Option<u64>,
    endpoint: &'a str,
    path: &'a str,
    request_hash: &'a str,
    occurrence: u64,
    status: Option<u16>,
    end: &'a str,
    cut: bool,
    faults: &'a [String],
    tool: Option<&'a str>,
    history_from: Vec<LinkData<'a>>,
}

/// The page's embedded data.
#[derive(Debug, Serialize)]
struct PageData<'a> {
    title: &'a str,
    seeds: Vec<u64>,
    scope: &'a str,
    arrival_order: bool,
    history_known: bool,
    events_recorded: usize,
    events_drawn: usize,
    failed: bool,
    trace_hash: &'a str,
    events: Vec<EventData<'a>>,
    requests: Vec<RequestData<'a>>,
}

/// The events of every request, laid end to end in the trace's order: each mark with
/// the position of its request; at most [`HTML_EVENTS_MAX`].
fn laid_out(entries: &[ServedEntry]) -> Vec<(usize, Mark<'_>)> {
    let mut out = Vec::new();
    let mut start_us = 0u64;
    for (request, entry) in entries.iter().enumerate() {
        let span_us = entry.events.iter().map(|e| e.at).max().unwrap_or(0);
        for event in &entry.events {
            if out.len() == HTML_EVENTS_MAX {
                return out;
            }
            let mark = Mark {
                index: out.len() as u64,
                at_us: start_us.saturating_add(event.at),
                kind: &event.kind,
                detail: &event.detail,
            };
            out.push((request, mark));
        }
        start_us = start_us
            .saturating_add(span_us)
            .saturating_add(REQUEST_GAP_US);
    }
    out
}

/// The whole page.
pub fn render(page_of: &ScopePage<'_>) -> Result<String, String> {
    let trace = page_of.trace;
    let laid = laid_out(&trace.entries);
    let marks: Vec<Mark<'_>> = laid.iter().map(|(_, mark)| *mark).collect();
    let recorded: usize = trace.entries.iter().map(|e| e.events.len()).sum();
    let mut body = header(page_of);
    body.push_str(&requests_section(trace, &laid));
    body.push_str(&timeline_section(page_of, &marks, recorded));
    if !page_of.agent_spans.is_empty() {
        body.push_str(&super::agent_spans::section(
            &trace.entries,
            page_of.agent_spans,
        )?);
    }
    body.push_str(&events_table(&marks));
    body.push_str(&json_script("trace", &page_data(page_of, &laid, recorded))?);
    Ok(page(&format!("{} (dst serve)", page_of.title), &body))
}

/// The distinct seeds the scope's requests named.
fn seeds(trace: &ServedTrace) -> Vec<u64> {
    let seeds: BTreeSet<u64> = trace.entries.iter().map(|e| e.seed).collect();
    seeds.into_iter().collect()
}

/// The embedded data.
fn page_data<'a>(
    page_of: &ScopePage<'a>,
    laid: &[(usize, Mark<'a>)],
    recorded: usize,
) -> PageData<'a> {
    let trace = page_of.trace;
    let requests = (trace.entries.iter().zip(&trace.links).enumerate())
        .map(|(at, (entry, links))| RequestData {
            number: at,
            arrival: entry.arrival,
            endpoint: &entry.endpoint,
            path: &entry.path,
            request_hash: &entry.request_hash,
            occurrence: entry.occurrence,
            status: entry.status,
            end: &entry.end,
            cut: entry.cut,
            faults: &entry.faults,
            tool: entry.tool.as_ref().and_then(|tool| tool.name.as_deref()),
            history_from: (links.iter())
                .map(|link| LinkData {
                    request: link.from,
                    via: &link.via,
                })
                .collect(),
        })
        .collect();
    PageData {
        title: page_of.title,
        seeds: seeds(trace),
        scope: trace.entries.first().map_or("", |e| e.scope.as_str()),
        arrival_order: trace.arrival_known,
        history_known: trace.history_known,
        events_recorded: recorded,
        events_drawn: laid.len(),
        failed: page_of.failure.is_some(),
        trace_hash: &trace.trace_hash,
        events: (laid.iter())
            .map(|&(request, mark)| EventData {
                index: mark.index,
                at_us: mark.at_us,
                lane: lane_of(mark.kind),
                kind: mark.kind,
                detail: mark.detail,
                request,
            })
            .collect(),
        requests,
    }
}

/// Test, seed, scope, result, requests, faults, cuts, trace hash, order, rerun.
fn header(page_of: &ScopePage<'_>) -> String {
    let trace = page_of.trace;
    let mut out = format!(
        "<h1>{}</h1>\n<dl class=\"header\">\n",
        escape(page_of.title)
    );
    header_row(&mut out, "test", &escape(page_of.title));
    let seeds: Vec<String> = (seeds(trace).iter())
        .map(|seed| format!("{seed} (0x{seed:x})"))
        .collect();
    header_row(&mut out, "seed", &escape(&seeds.join(", ")));
    let scope = trace.entries.first().map_or("", |e| e.scope.as_str());
    header_row(
        &mut out,
        "scope",
        &format!("<code>{}</code>", escape(scope)),
    );
    let result = match page_of.failure {
        Some(message) => format!(
            "<span class=\"failed\">FAILED</span>: <pre>{}</pre>",
            escape(message)
        ),
        None => "<span class=\"note\">not given</span>".to_owned(),
    };
    header_row(&mut out, "result", &result);
    header_row(&mut out, "requests", &escape(&requests_text(trace)));
    let fired: Vec<String> = (trace.entries.iter().enumerate())
        .flat_map(|(at, e)| e.faults.iter().map(move |f| format!("#{at} {f}")))
        .collect();
    let faults = format!("{} fired<br>{}", fired.len(), escape(&fired.join("\n")));
    header_row(&mut out, "faults", &faults.replace('\n', "<br>"));
    let cut = trace.entries.iter().filter(|e| e.cut).count();
    header_row(&mut out, "cut", &format!("{cut} body(ies) ended short"));
    let hash = format!("<code>{}</code>", escape(&trace.trace_hash));
    header_row(&mut out, "trace hash", &hash);
    if let Some(rerun) = page_of.rerun {
        header_row(
            &mut out,
            "rerun",
            &format!("<code>{}</code>", escape(rerun)),
        );
    }
    out.push_str("</dl>\n");
    out
}

/// How many requests, and what the server no longer held.
fn requests_text(trace: &ServedTrace) -> String {
    let mut text = format!("{}", trace.entries.len());
    if trace.left_out > 0 {
        let _ = write!(text, " ({} left out of the server's log)", trace.left_out);
    }
    if trace.evicted {
        text.push_str(" (the scope was evicted from the server: this is not all of it)");
    }
    text
}

/// What the order and the links rest on.
fn order_note(trace: &ServedTrace) -> String {
    let order = if trace.arrival_known {
        "Requests in the order the server received them."
    } else {
        "Requests in the server's key order (seed, endpoint, request hash, occurrence): \
         this dst records no arrival order."
    };
    let links = if trace.history_known {
        " \"history from\" names the earlier responses a request's conversation (or an MCP \
         tool call's call id) came from."
    } else {
        " This dst records no history or carried content, so which response a request's \
         history came from is not shown."
    };
    format!("{order}{links}")
}

/// The requests table, one row per request (`#request-N`).
fn requests_section(trace: &ServedTrace, laid: &[(usize, Mark<'_>)]) -> String {
    let mut out = String::from("<h2>Requests</h2>\n");
    let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(&order_note(trace)));
    out.push_str(
        "<table id=\"requests\">\n<thead><tr><th>#</th><th>arrival</th><th>endpoint</th>\
         <th>path</th><th>request</th><th>occ.</th><th>status</th><th>end</th><th>faults</th>\
         <th>tool</th><th>carried</th><th>history from</th><th>events</th></tr></thead>\n<tbody>\n",
    );
    for (at, (entry, links)) in trace.entries.iter().zip(&trace.links).enumerate() {
        let events: Vec<u64> = (laid.iter())
            .filter(|(request, _)| *request == at)
            .map(|(_, mark)| mark.index)
            .collect();
        let from: Vec<String> = (links.iter())
            .map(|link| {
                format!(
                    "<a href=\"#request-{0}\">#{0}</a> {1}",
                    link.from,
                    escape(&link.via)
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "<tr id=\"request-{at}\"{}>{}<td>{}</td><td>{}</td></tr>",
            if entry.cut { " class=\"differs\"" } else { "" },
            request_cells(at, entry),
            from.join("<br>"),
            escape(&event_range(&events))
        );
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

/// `first–last` of a request's drawn events.
fn event_range(events: &[u64]) -> String {
    match (events.first(), events.last()) {
        (Some(first), Some(last)) if first == last => format!("{first}"),
        (Some(first), Some(last)) => format!("{first}–{last}"),
        _ => String::new(),
    }
}

/// The cells of a request's row up to "carried".
fn request_cells(at: usize, entry: &ServedEntry) -> String {
    let arrival = entry.arrival.map_or("-".to_owned(), |a| a.to_string());
    let status = entry.status.map_or("-".to_owned(), |s| s.to_string());
    let end = if entry.cut {
        format!("{} (cut)", entry.end)
    } else {
        entry.end.clone()
    };
    let hash: String = entry.request_hash.chars().take(16).collect();
    format!(
        "<td class=\"mono\">{at}</td><td class=\"mono\">{}</td><td>{}</td><td class=\"mono\">{}</td>\
         <td class=\"mono\">{}</td><td class=\"mono\">{}</td><td>{}</td><td>{}</td><td><pre>{}</pre></td>\
         <td><pre>{}</pre></td><td><pre>{}</pre></td>",
        escape(&arrival),
        escape(&entry.endpoint),
        escape(&entry.path),
        escape(&hash),
        entry.occurrence,
        escape(&status),
        escape(&end),
        escape(&entry.faults.join("\n")),
        escape(&tool_text(entry)),
        escape(&carried_text(entry))
    )
}

/// The MCP tool call a request ran: name, arguments, call id, key, ran or deduplicated.
fn tool_text(entry: &ServedEntry) -> String {
    let Some(tool) = &entry.tool else {
        return String::new();
    };
    let mut text = format!(
        "{}({})",
        tool.name.as_deref().unwrap_or("?"),
        tool.arguments
            .as_ref()
            .map_or(String::new(), ToString::to_string)
    );
    if let Some(id) = &tool.call_id {
        let _ = write!(text, " call {id}");
    }
    if let Some(key) = &tool.idempotency_key {
        let _ = write!(text, " key {key}");
    }
    match (tool.ran, tool.deduplicated) {
        (_, Some(true)) => text.push_str(" deduplicated"),
        (Some(false), _) => text.push_str(" not run"),
        _ => {}
    }
    text
}

/// What a response carried: its text's start and its tool calls (with their ids).
fn carried_text(entry: &ServedEntry) -> String {
    let Some(carried) = &entry.carried else {
        return String::new();
    };
    let mut lines = Vec::new();
    if !carried.text.is_empty() {
        let mut text: String = carried.text.chars().take(CARRIED_TEXT_CHARS_MAX).collect();
        if text.len() < carried.text.len() {
            text.push('…');
        }
        lines.push(format!("{text:?}"));
    }
    for call in &carried.tool_calls {
        let arguments = call.arguments.as_ref().map_or(String::new(), |a| match a {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        });
        lines.push(format!(
            "{}({arguments}) {}",
            call.name.as_deref().unwrap_or("?"),
            call.id.as_deref().unwrap_or("")
        ));
    }
    if !carried.whole {
        lines.push("(not whole: cut)".to_owned());
    }
    lines.join("\n")
}

/// The timeline of the scope, requests end to end, the failure at the end.
fn timeline_section(page_of: &ScopePage<'_>, marks: &[Mark<'_>], recorded: usize) -> String {
    let end_us = marks.last().map_or(0, |mark| mark.at_us);
    let svg = timeline::svg(&TimelineInput {
        events: marks,
        injections: &[],
        failure: page_of.failure.map(|text| (text, end_us)),
        sim_elapsed_us: end_us,
    });
    let mut out = String::from("<h2>Timeline (requests end to end)</h2>\n");
    let mut note = format!(
        "{} of {recorded} events drawn; hover a mark for its kind and detail. Each request \
         was its own simulation: its events are at their simulated times, the requests laid \
         end to end in the table's order, {} ms apart.",
        marks.len(),
        REQUEST_GAP_US / 1_000
    );
    if recorded > marks.len() {
        let _ = write!(
            note,
            " {} event(s) left out (a page draws at most {HTML_EVENTS_MAX}).",
            recorded - marks.len()
        );
    }
    let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(&note));
    let _ = write!(out, "<div class=\"timeline-box\">\n{svg}</div>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::super::served::parse;
    use super::*;

    fn trace_text() -> String {
        let entry = |arrival: u64, path: &str, faults: &str, extra: &str| {
            format!(
                "{{\"seed\":9,\"scope\":\"sc\",\"endpoint\":\"openai/\",\"path\":\"{path}\",\
                 \"request_hash\":\"00112233445566778899\",\"occurrence\":0,\"run_seed\":1,\
                 \"status\":200,\"end\":\"complete\",\"cut\":false,\"faults\":[{faults}],\
                 \"trace_hash\":\"t\",\"arrival\":{arrival},\"events\":[\
                 {{\"index\":0,\"at\":0,\"kind\":\"llm.call\",\"detail\":\"<script>x</script>\"}},\
                 {{\"index\":1,\"at\":2000,\"kind\":\"fault\",\"detail\":\"llm.stream_cut\"}}]{extra}}}"
            )
        };
        let carried = r#","carried":{"whole":false,"text":"","tool_calls":[{"id":"call_9","name":"refund","arguments":"{\"a"}]}"#;
        let history = r#","history":{"assistant":[{"text":"","tool_calls":[{"id":"call_9"}]}],"tool_results":[{"call_id":"call_9"}]}"#;
        [
            entry(1, "/v1/second", "", history),
            entry(0, "/v1/first", "\"llm.stream_cut@llm.complete\"", carried),
            r#"{"entries":2,"evicted":false,"left_out":0,"session_trace_hash":"feed"}"#.to_owned(),
        ]
        .join("\n")
    }

    fn embedded(html: &str) -> serde_json::Value {
        let start = html.find("id=\"trace\">").unwrap() + "id=\"trace\">".len();
        let end = start + html[start..].find("</script>").unwrap();
        serde_json::from_str(&html[start..end]).unwrap()
    }

    #[test]
    fn the_page_holds_the_requests_in_arrival_order_with_their_links() {
        let trace = parse(&trace_text()).unwrap();
        let html = render(&ScopePage {
            title: "tests/test_agent.py::test_refund[seed=9]",
            trace: &trace,
            rerun: Some("UMI_SEED=9 pytest -p umi_dst.plugin 'x'"),
            failure: Some("AssertionError: <b>refunded twice</b>"),
            agent_spans: &[],
        })
        .unwrap();
        let data = embedded(&html);
        let paths: Vec<&str> = (data["requests"].as_array().unwrap().iter())
            .map(|r| r["path"].as_str().unwrap())
            .collect();
        assert_eq!(paths, ["/v1/first", "/v1/second"]);
        assert_eq!(
            data["requests"][1]["history_from"][0],
            serde_json::json!({"request": 0, "via": "tool call call_9"})
        );
        assert_eq!(
            data["requests"][0]["faults"][0],
            "llm.stream_cut@llm.complete"
        );
        assert_eq!(data["events"].as_array().unwrap().len(), 4);
        assert_eq!(data["events"][2]["at_us"], 2000 + REQUEST_GAP_US);
        assert_eq!(data["events"][2]["request"], 1);
        assert_eq!(html.matches("data-lane=\"faults\"").count(), 2);
        assert_eq!(html.matches("id=\"failure\"").count(), 1);
        assert!(html.contains("<a href=\"#request-0\">#0</a> tool call call_9"));
        assert!(html.contains("id=\"request-1\""));
        assert!(!html.contains("<script>x") && !html.contains("<b>refunded"));
        assert!(!html.contains("http://") && !html.contains("https://"));
        assert_eq!(data["seeds"], serde_json::json!([9]));
        assert_eq!(data["arrival_order"], true);
    }

    #[test]
    fn an_older_trace_draws_and_says_what_it_lacks() {
        let text = "{\"seed\":1,\"scope\":\"s\",\"endpoint\":\"openai/\",\"path\":\"/v1/x\",\
                    \"request_hash\":\"aa\",\"occurrence\":0,\"status\":429,\"end\":\"complete\",\
                    \"cut\":false,\"faults\":[],\"trace_hash\":\"t\",\"events\":[]}\n\
                    {\"entries\":1,\"left_out\":3,\"session_trace_hash\":\"h\",\"evicted\":false}\n";
        let trace = parse(text).unwrap();
        let html = render(&ScopePage {
            title: "t",
            trace: &trace,
            rerun: None,
            failure: None,
            agent_spans: &[],
        })
        .unwrap();
        assert!(html.contains("this dst records no arrival order"));
        assert!(html.contains("is not shown"));
        assert!(html.contains("1 (3 left out of the server&#39;s log)"));
        assert_eq!(html.matches("id=\"failure\"").count(), 0);
        assert_eq!(embedded(&html)["requests"][0]["status"], 429);
    }
}
