//! The agent's own spans on a served scope's page (`dst trace-html TRACE --agent-spans
//! SPANS`, where SPANS is what `GET /umi/spans?scope=S` returned): one time line with a
//! row per served request and per span the agent sent over OTLP (`POST /v1/traces`), and
//! a table of the spans.
//!
//! One clock: when every request carries `clock_us` (the agent's simulated clock when it
//! sent it, SCHEMA section 1), a request starts there and an agent span at its
//! `start_unix_nano` less Umi's simulated epoch (2024-01-01T00:00:00Z), both in
//! microseconds of the run's simulated time. Without `clock_us` (an agent not on Umi's
//! clock, or an older `dst`), the requests are laid end to end from 0 and the spans from
//! their first start, and the page says the two are not aligned.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use umi_dst::constants::SIM_EPOCH_UNIX_MS_DEFAULT;

use super::served::ServedEntry;
use super::timeline::seconds_text;
use super::{escape, json_script};

/// Rows drawn at most (requests and spans together); the rest are counted, not drawn.
pub const AGENT_ROWS_DRAWN_MAX: usize = 2_000;
/// Spans read at most from a saved `/umi/spans` answer (the server keeps 10,000 a scope).
pub const AGENT_SPANS_READ_MAX: usize = 10_000;
/// Room for the row labels, left of the plot.
const LABEL_WIDTH_PX: f64 = 260.0;
/// The plot's width.
const PLOT_WIDTH_PX: f64 = 1_100.0;
/// One row's height.
const ROW_HEIGHT_PX: f64 = 16.0;
/// Characters of a row's label.
const LABEL_CHARS_MAX: usize = 40;
/// Characters of an attribute's value in the spans' table.
const VALUE_CHARS_MAX: usize = 120;

/// One event of an agent span.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct AgentEvent {
    /// Its name.
    pub name: String,
    /// When, nanoseconds since the Unix epoch.
    pub time_unix_nano: u64,
}

/// A span's status.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct AgentStatus {
    /// `unset`, `ok` or `error`.
    pub code: String,
    /// Its message.
    pub message: String,
}

/// One span as `GET /umi/spans` lists it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct AgentSpan {
    /// Hex trace id.
    pub trace_id: String,
    /// Hex span id.
    pub span_id: String,
    /// Hex parent span id, none for a root.
    pub parent_span_id: Option<String>,
    /// Its name.
    pub name: String,
    /// `client`, `internal`, ...
    pub kind: String,
    /// Start, nanoseconds since the Unix epoch.
    pub start_unix_nano: u64,
    /// End, nanoseconds since the Unix epoch.
    pub end_unix_nano: u64,
    /// Its attributes.
    pub attributes: serde_json::Map<String, Value>,
    /// Its events.
    pub events: Vec<AgentEvent>,
    /// Its status.
    pub status: AgentStatus,
    /// The instrumentation scope that made it.
    pub instrumentation_scope: Option<String>,
}

/// A saved `GET /umi/spans` answer.
#[derive(Debug, Deserialize)]
struct SpansAnswer {
    spans: Vec<AgentSpan>,
}

/// Reads a saved `GET /umi/spans` answer; the error says what was wrong.
pub fn parse_spans(text: &str) -> Result<Vec<AgentSpan>, String> {
    let answer: SpansAnswer = serde_json::from_str(text)
        .map_err(|error| format!("not a `GET /umi/spans` answer ({error})"))?;
    if answer.spans.len() > AGENT_SPANS_READ_MAX {
        return Err(format!("more than {AGENT_SPANS_READ_MAX} spans"));
    }
    Ok(answer.spans)
}

/// One row of the time line.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Row {
    /// `request` or `agent`.
    pub source: &'static str,
    /// The request's number in the page's table, or the span's position.
    pub number: usize,
    /// What the row says.
    pub label: String,
    /// Start, microseconds on the page's time line.
    pub start_us: u64,
    /// End, microseconds on the page's time line.
    pub end_us: u64,
    /// Whether it failed (a status other than 2xx, a cut body; a span with status error).
    pub failed: bool,
}

/// Microseconds since Umi's simulated epoch of a Unix-epoch nanosecond time (0 before it).
fn sim_us(unix_nano: u64) -> u64 {
    (unix_nano / 1_000).saturating_sub(SIM_EPOCH_UNIX_MS_DEFAULT * 1_000)
}

/// How long a request took in simulated time: its `timing`'s end, else its last event.
fn request_length_us(entry: &ServedEntry) -> u64 {
    entry.timing.as_ref().map_or_else(
        || entry.events.iter().map(|e| e.at).max().unwrap_or(0),
        |timing| timing.end_us,
    )
}

/// The rows of `entries` and `spans` on one time line, by start (requests first at a
/// tie), and whether the two are on one clock.
pub fn rows(entries: &[ServedEntry], spans: &[AgentSpan]) -> (Vec<Row>, bool) {
    let aligned = !entries.is_empty() && entries.iter().all(|e| e.clock_us.is_some());
    let first_span_us = spans.iter().map(|s| sim_us(s.start_unix_nano)).min();
    let mut out = Vec::new();
    let mut next_us = 0u64;
    for (number, entry) in entries.iter().enumerate() {
        let start_us = if aligned {
            entry.clock_us.unwrap_or(0)
        } else {
            next_us
        };
        let end_us = start_us.saturating_add(request_length_us(entry));
        next_us = end_us;
        let status = entry.status.map_or("-".to_owned(), |s| s.to_string());
        out.push(Row {
            source: "request",
            number,
            label: format!("#{number} {} {status}", entry.path),
            start_us,
            end_us,
            failed: entry.cut || !entry.status.is_some_and(|s| (200..300).contains(&s)),
        });
    }
    for (number, span) in spans.iter().enumerate() {
        let shift = if aligned {
            0
        } else {
            first_span_us.unwrap_or(0)
        };
        let start_us = sim_us(span.start_unix_nano).saturating_sub(shift);
        let end_us = sim_us(span.end_unix_nano)
            .saturating_sub(shift)
            .max(start_us);
        out.push(Row {
            source: "agent",
            number,
            label: span.name.clone(),
            start_us,
            end_us,
            failed: span.status.code == "error",
        });
    }
    out.sort_by_key(|row| (row.start_us, row.source != "request", row.number));
    (out, aligned)
}

/// The section: the time line of requests and agent spans, the spans' table, and the
/// rows as embedded data (`<script id="agent-spans">`).
pub fn section(entries: &[ServedEntry], spans: &[AgentSpan]) -> Result<String, String> {
    let (all, aligned) = rows(entries, spans);
    let drawn = &all[..all.len().min(AGENT_ROWS_DRAWN_MAX)];
    let mut out = String::from("<h2>Agent spans and requests</h2>\n");
    let mut note = if aligned {
        "One clock: each request at the agent's simulated clock when it sent it (clock_us), \
         each agent span at its start on the same clock (Umi's simulated epoch, \
         2024-01-01T00:00:00Z)."
            .to_owned()
    } else {
        "Not on one clock: the requests carry no clock_us (the agent was not on Umi's \
         clock, or this dst does not record it), so they are laid end to end from 0 and the \
         agent's spans from their first start."
            .to_owned()
    };
    let _ = write!(
        note,
        " {} request(s), {} agent span(s).",
        entries.len(),
        spans.len()
    );
    if all.len() > drawn.len() {
        let _ = write!(note, " {} row(s) not drawn.", all.len() - drawn.len());
    }
    let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(&note));
    out.push_str(&gantt(drawn));
    let shift_us = if aligned {
        0
    } else {
        (spans.iter().map(|s| sim_us(s.start_unix_nano)).min()).unwrap_or(0)
    };
    out.push_str(&spans_table(spans, shift_us));
    out.push_str(&json_script("agent-spans", &drawn)?);
    Ok(out)
}

/// The time line: a bar per row.
fn gantt(rows: &[Row]) -> String {
    let span_us = rows.iter().map(|r| r.end_us).max().unwrap_or(0).max(1);
    let x = |at_us: u64| LABEL_WIDTH_PX + at_us as f64 / span_us as f64 * PLOT_WIDTH_PX;
    let height_px = ROW_HEIGHT_PX * (rows.len() as f64 + 2.0);
    let width_px = LABEL_WIDTH_PX + PLOT_WIDTH_PX + 20.0;
    let mut out = format!(
        "<div class=\"timeline-box\">\n<svg class=\"agent-timeline\" width=\"{width_px:.0}\" \
         height=\"{height_px:.0}\" role=\"img\" aria-label=\"requests and agent spans on one time line\">\n"
    );
    for (at, row) in rows.iter().enumerate() {
        let top = ROW_HEIGHT_PX * at as f64;
        let (left, right) = (x(row.start_us), x(row.end_us));
        let label: String = row.label.chars().take(LABEL_CHARS_MAX).collect();
        let class = match (row.source, row.failed) {
            ("request", false) => "lane-model",
            ("request", true) => "lane-faults",
            (_, false) => "lane-tools",
            (_, true) => "lane-faults",
        };
        let title = format!(
            "{} {} {}..{}",
            row.source,
            row.label,
            seconds_text(row.start_us),
            seconds_text(row.end_us)
        );
        let _ = writeln!(
            out,
            "<g data-source=\"{}\" data-number=\"{}\"><text x=\"4\" y=\"{:.1}\" font-size=\"11\">{}</text>\
             <rect class=\"{class}\" x=\"{left:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\">\
             <title>{}</title></rect></g>",
            row.source,
            row.number,
            top + ROW_HEIGHT_PX - 4.0,
            escape(&format!(
                "{} {label}",
                if row.source == "agent" { "◆" } else { "▶" }
            )),
            top + 3.0,
            (right - left).max(2.0),
            ROW_HEIGHT_PX - 6.0,
            escape(&title)
        );
    }
    let axis_y = ROW_HEIGHT_PX * (rows.len() as f64 + 1.0);
    let _ = writeln!(
        out,
        "<text x=\"{LABEL_WIDTH_PX}\" y=\"{axis_y:.1}\" font-size=\"11\">0</text>\
         <text x=\"{:.1}\" y=\"{axis_y:.1}\" font-size=\"11\" text-anchor=\"end\">{}</text>",
        LABEL_WIDTH_PX + PLOT_WIDTH_PX,
        escape(&seconds_text(span_us))
    );
    out.push_str("</svg>\n</div>\n");
    out
}

/// The spans' table: name, kind, times (on the time line: less `shift_us`), status,
/// events, its gen_ai attributes (each value cut to [`VALUE_CHARS_MAX`] characters).
fn spans_table(spans: &[AgentSpan], shift_us: u64) -> String {
    let mut out = String::from(
        "<table id=\"agent-spans-table\">\n<thead><tr><th>#</th><th>name</th><th>kind</th>\
         <th>start</th><th>length</th><th>status</th><th>events</th><th>gen_ai</th></tr></thead>\n<tbody>\n",
    );
    for (at, span) in spans.iter().enumerate().take(AGENT_ROWS_DRAWN_MAX) {
        let length_us = (span.end_unix_nano.saturating_sub(span.start_unix_nano)) / 1_000;
        let events: Vec<&str> = span.events.iter().map(|e| e.name.as_str()).collect();
        let gen_ai: Vec<String> = (span.attributes.iter())
            .filter(|(key, _)| key.starts_with("gen_ai."))
            .map(|(key, value)| {
                let text = value.to_string();
                let mut cut: String = text.chars().take(VALUE_CHARS_MAX).collect();
                if cut.len() < text.len() {
                    cut.push('…');
                }
                format!("{key}={cut}")
            })
            .collect();
        let status = if span.status.message.is_empty() {
            span.status.code.clone()
        } else {
            format!("{}: {}", span.status.code, span.status.message)
        };
        let _ = writeln!(
            out,
            "<tr id=\"agent-span-{at}\"{}><td class=\"mono\">{at}</td><td>{}</td><td>{}</td>\
             <td class=\"mono\">{}</td><td class=\"mono\">{}</td><td>{}</td><td>{}</td><td><pre>{}</pre></td></tr>",
            if span.status.code == "error" {
                " class=\"differs\""
            } else {
                ""
            },
            escape(&span.name),
            escape(&span.kind),
            escape(&seconds_text(
                sim_us(span.start_unix_nano).saturating_sub(shift_us)
            )),
            escape(&seconds_text(length_us)),
            escape(&status),
            escape(&events.join(", ")),
            escape(&gen_ai.join("\n"))
        );
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::super::served::parse;
    use super::*;

    const EPOCH_NS: u64 = SIM_EPOCH_UNIX_MS_DEFAULT * 1_000_000;

    fn entries(clock: bool) -> Vec<ServedEntry> {
        let clock_us = |us: u64| {
            if clock {
                format!(",\"clock_us\":{us}")
            } else {
                String::new()
            }
        };
        let text = format!(
            "{{\"path\":\"/v1/chat/completions\",\"status\":200,\"end\":\"complete\",\"arrival\":0,\
             \"events\":[{{\"index\":0,\"at\":500,\"kind\":\"llm.call\",\"detail\":\"\"}}]{}}}\n\
             {{\"path\":\"/v1/chat/completions\",\"status\":429,\"end\":\"complete\",\"arrival\":1,\
             \"timing\":{{\"head_us\":10,\"first_us\":10,\"last_us\":20,\"end_us\":30,\"ending\":\"complete\"}}{}}}\n\
             {{\"session_trace_hash\":\"h\",\"entries\":2,\"left_out\":0,\"agent_spans\":2}}\n",
            clock_us(1_000),
            clock_us(3_000_000)
        );
        parse(&text).unwrap().entries
    }

    fn spans() -> Vec<AgentSpan> {
        let text = format!(
            "{{\"scope\":\"s\",\"spans\":[\
             {{\"name\":\"agent run\",\"kind\":\"internal\",\"start_unix_nano\":{},\"end_unix_nano\":{},\
               \"status\":{{\"code\":\"error\",\"message\":\"<gave up>\"}},\"events\":[{{\"name\":\"exception\"}}]}},\
             {{\"name\":\"chat umi-sim\",\"kind\":\"client\",\"start_unix_nano\":{},\"end_unix_nano\":{},\
               \"attributes\":{{\"gen_ai.request.model\":\"umi-sim\"}}}}]}}",
            EPOCH_NS,
            EPOCH_NS + 4_000_000_000,
            EPOCH_NS + 900_000,
            EPOCH_NS + 1_600_000
        );
        parse_spans(&text).unwrap()
    }

    #[test]
    fn requests_and_spans_share_the_simulated_clock_when_requests_carry_it() {
        let (rows, aligned) = rows(&entries(true), &spans());
        assert!(aligned);
        let order: Vec<(&str, u64, u64)> = rows
            .iter()
            .map(|r| (r.source, r.start_us, r.end_us))
            .collect();
        assert_eq!(
            order,
            [
                ("agent", 0, 4_000_000),
                ("agent", 900, 1_600),
                ("request", 1_000, 1_500),
                ("request", 3_000_000, 3_000_030),
            ]
        );
        assert!(rows[0].failed && rows[3].failed && !rows[2].failed);
    }

    #[test]
    fn without_clock_us_the_page_says_the_two_are_not_aligned() {
        let (rows, aligned) = rows(&entries(false), &spans());
        assert!(!aligned);
        let requests: Vec<(u64, u64)> = (rows.iter())
            .filter(|r| r.source == "request")
            .map(|r| (r.start_us, r.end_us))
            .collect();
        assert_eq!(requests, [(0, 500), (500, 530)]);
        let html = section(&entries(false), &spans()).unwrap();
        assert!(html.contains("Not on one clock"));
        assert!(html.contains("&lt;gave up&gt;") && !html.contains("<gave up>"));
        assert_eq!(html.matches("data-source=\"agent\"").count(), 2);
        assert_eq!(html.matches("data-source=\"request\"").count(), 2);
        assert!(html.contains("gen_ai.request.model=&quot;umi-sim&quot;"));
    }

    #[test]
    fn a_file_that_is_not_a_spans_answer_is_refused() {
        let error = parse_spans("[1, 2]").unwrap_err();
        assert!(
            error.starts_with("not a `GET /umi/spans` answer"),
            "{error}"
        );
    }
}
