//! One run's page (`dst replay --html FILE`): what ran and how it ended, the timeline of
//! its trace on simulated time with the failure where it was seen, the event table, and,
//! for `--check-determinism` runs that parted, the two traces side by side from the
//! first event that differs.
//!
//! The page embeds the events it draws as JSON (`<script type="application/json"
//! id="trace">`: index, `at_us`, lane, kind, detail), so a browser test can hold the
//! drawing against the data. A trace longer than [`HTML_EVENTS_MAX`] is drawn up to
//! that many events and the page says how many were left out.

use std::fmt::Write as _;

use serde::Serialize;
use umi_dst::micros_saturating;
use umi_dst::simulation::SeedRun;
use umi_dst::trace::{TraceEvent, first_divergence};

use super::timeline::{self, Lane, Mark, TimelineInput, at_us, lane_of, seconds_text};
use super::{escape, json_script, page};

/// The most events a page draws and lists (a longer trace is cut, and the page says so).
pub const HTML_EVENTS_MAX: usize = 50_000;
/// Rows of the side-by-side traces after a divergence.
pub const DIVERGENCE_ROWS_MAX: usize = 200;

/// What a run's page shows.
#[derive(Debug, Clone, Copy)]
pub struct RunPage<'a> {
    /// The scenario's name.
    pub scenario: &'a str,
    /// The run (its full trace, when it was kept; otherwise its last events).
    pub run: &'a SeedRun,
    /// The command that replays it.
    pub replay_command: &'a str,
    /// The determinism check's second run of the same seed, if there was one.
    pub second: Option<&'a SeedRun>,
}

/// One event as the page embeds it.
#[derive(Debug, Serialize)]
struct EventData<'a> {
    index: u64,
    at_us: u64,
    lane: Lane,
    kind: &'a str,
    detail: &'a str,
}

/// The page's embedded data.
#[derive(Debug, Serialize)]
struct TraceData<'a> {
    scenario: &'a str,
    seed: u64,
    events_recorded: u64,
    events_drawn: usize,
    failed: bool,
    events: Vec<EventData<'a>>,
}

/// The events the run kept: all of them, or its last ones when no full trace was kept.
fn kept_events(run: &SeedRun) -> &[TraceEvent] {
    run.full_trace.as_deref().unwrap_or(&run.tail)
}

/// The whole page.
pub fn render(page_of: &RunPage<'_>) -> Result<String, String> {
    let run = page_of.run;
    let kept = kept_events(run);
    let drawn = &kept[..kept.len().min(HTML_EVENTS_MAX)];
    let marks: Vec<Mark<'_>> = drawn.iter().map(Mark::from).collect();
    let mut body = header(page_of);
    body.push_str(&timeline_section(run, &marks, kept));
    if let Some(second) = page_of.second {
        body.push_str(&divergence_section(kept, kept_events(second)));
    }
    body.push_str(&events_table(&marks));
    body.push_str(&json_script("trace", &trace_data(page_of, drawn))?);
    let title = format!("{} seed {}", page_of.scenario, run.seed);
    Ok(page(&title, &body))
}

/// The embedded data: the drawn events and what the page's tests need to judge it.
fn trace_data<'a>(page_of: &RunPage<'a>, drawn: &'a [TraceEvent]) -> TraceData<'a> {
    TraceData {
        scenario: page_of.scenario,
        seed: page_of.run.seed,
        events_recorded: page_of.run.events,
        events_drawn: drawn.len(),
        failed: page_of.run.failure.is_some(),
        events: drawn
            .iter()
            .map(|event| EventData {
                index: event.index,
                at_us: at_us(event),
                lane: lane_of(event.kind),
                kind: event.kind,
                detail: &event.detail,
            })
            .collect(),
    }
}

/// A `<dt>`/`<dd>` pair; `value_html` is already HTML.
pub(super) fn header_row(out: &mut String, name: &str, value_html: &str) {
    let _ = writeln!(out, "<dt>{}</dt><dd>{value_html}</dd>", escape(name));
}

/// Scenario, seed, result, faults, injections, trace hash, duration, replay command.
fn header(page_of: &RunPage<'_>) -> String {
    let run = page_of.run;
    let mut out = format!(
        "<h1>{} seed {}</h1>\n<dl class=\"header\">\n",
        escape(page_of.scenario),
        run.seed
    );
    header_row(&mut out, "scenario", &escape(page_of.scenario));
    header_row(
        &mut out,
        "seed",
        &format!("{} (0x{:x})", run.seed, run.seed),
    );
    let result = match &run.failure {
        None => "<span class=\"passed\">passed</span>".to_owned(),
        Some((class, message)) => format!(
            "<span class=\"failed\">FAILED {}</span>: <pre>{}</pre>",
            escape(&class.to_string()),
            escape(message)
        ),
    };
    header_row(&mut out, "result", &result);
    fault_rows(&mut out, run);
    header_row(
        &mut out,
        "trace hash",
        &format!("<code>{}</code>", run.trace_hash),
    );
    header_row(
        &mut out,
        "simulated",
        &format!(
            "{} ({} steps, {} events)",
            escape(&seconds_text(sim_elapsed_us(run))),
            run.steps,
            run.events
        ),
    );
    header_row(&mut out, "spent", &escape(&spent_text(&run.usage)));
    header_row(
        &mut out,
        "replay",
        &format!("<code>{}</code>", escape(page_of.replay_command)),
    );
    out.push_str("</dl>\n");
    out
}

/// What the run spent, in one line: tokens by model, calls, retries, fallbacks, tools.
fn spent_text(usage: &umi_dst::usage::RunUsage) -> String {
    let models: Vec<String> = usage
        .models
        .iter()
        .map(|(model, tokens)| format!("{model} {}+{}", tokens.input, tokens.output))
        .collect();
    format!(
        "{} tokens ({}) over {} model calls ({} retries, {} fallbacks); {} tool calls; last answer at {} ms",
        usage.tokens().total(),
        if models.is_empty() {
            "none".to_owned()
        } else {
            models.join(", ")
        },
        usage.model_calls,
        usage.retries,
        usage.fallbacks,
        usage.tool_calls,
        usage.answer_ms
    )
}

/// The faults in force, what swarm mode drew, and the injections that fired.
fn fault_rows(out: &mut String, run: &SeedRun) {
    let faults = if run.faults.is_empty() {
        "none".to_owned()
    } else {
        run.faults
            .iter()
            .map(|f| escape(f))
            .collect::<Vec<_>>()
            .join("<br>")
    };
    header_row(out, "faults in force", &faults);
    if !run.swarm.is_empty() {
        let drawn: Vec<String> = run.swarm.iter().map(|d| escape(&d.to_string())).collect();
        header_row(out, "swarm", &drawn.join(" "));
    }
    let injections: Vec<String> = run
        .injections
        .iter()
        .map(|i| escape(i.to_string().trim()))
        .collect();
    header_row(
        out,
        "injected",
        &format!(
            "{} fault(s)<br>{}",
            injections.len(),
            injections.join("<br>")
        ),
    );
}

/// The run's simulated duration in microseconds.
fn sim_elapsed_us(run: &SeedRun) -> u64 {
    micros_saturating(run.sim_elapsed)
}

/// The timeline, with a note when events were left out.
fn timeline_section(run: &SeedRun, drawn: &[Mark<'_>], kept: &[TraceEvent]) -> String {
    let failure_at_us = kept.last().map_or(0, at_us);
    let failure_text = (run.failure.as_ref()).map(|(class, message)| format!("{class}: {message}"));
    let svg = timeline::svg(&TimelineInput {
        events: drawn,
        injections: &run.injections,
        failure: failure_text.as_deref().map(|text| (text, failure_at_us)),
        sim_elapsed_us: sim_elapsed_us(run),
    });
    let mut out = String::from("<h2>Timeline (simulated time)</h2>\n");
    let _ = writeln!(
        out,
        "<p class=\"note\">{}</p>",
        escape(&left_out_note(run, drawn, kept))
    );
    let _ = write!(out, "<div class=\"timeline-box\">\n{svg}</div>\n");
    out
}

/// How many events are drawn, and why any are missing.
fn left_out_note(run: &SeedRun, drawn: &[Mark<'_>], kept: &[TraceEvent]) -> String {
    let mut note = format!(
        "{} of {} events drawn; hover a mark for its kind and detail.",
        drawn.len(),
        run.events
    );
    if run.full_trace.is_none() {
        note.push_str(" Only the last events were kept (no full trace).");
    }
    let recorded = usize::try_from(run.events).unwrap_or(usize::MAX);
    let left_out = recorded.saturating_sub(drawn.len());
    if left_out > 0 {
        let _ = write!(
            note,
            " {left_out} event(s) left out (a page draws at most {HTML_EVENTS_MAX}; {} kept).",
            kept.len()
        );
    }
    note
}

/// One table cell per field of an event: index, time, lane, kind, detail.
fn event_cells(event: &Mark<'_>) -> String {
    format!(
        "<td class=\"mono\">{}</td><td class=\"mono\">{}</td><td>{}</td><td class=\"mono\">{}</td><td><pre>{}</pre></td>",
        event.index,
        escape(&seconds_text(event.at_us)),
        lane_of(event.kind).name(),
        escape(event.kind),
        escape(event.detail)
    )
}

/// The drawn events as a table (a run's, or a served scope's: `scope_page`).
pub(super) fn events_table(drawn: &[Mark<'_>]) -> String {
    let mut out = String::with_capacity(drawn.len() * 200 + 256);
    out.push_str("<h2>Events</h2>\n<table id=\"events\">\n<thead><tr><th>#</th><th>time</th><th>lane</th><th>kind</th><th>detail</th></tr></thead>\n<tbody>\n");
    for event in drawn {
        let _ = writeln!(out, "<tr>{}</tr>", event_cells(event));
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

/// One side of a divergence row: the event, or a note that the run had ended.
fn side_cells(event: Option<&TraceEvent>) -> String {
    match event {
        Some(event) => format!(
            "<td class=\"mono\">{}</td><td class=\"mono\">{}</td><td><pre>{}</pre></td>",
            escape(&seconds_text(at_us(event))),
            escape(event.kind),
            escape(&event.detail)
        ),
        None => "<td colspan=\"3\" class=\"note\">(the run had ended)</td>".to_owned(),
    }
}

/// The two runs' traces side by side from the first event that differs, that row
/// `#divergence`; a note when the traces are the same.
fn divergence_section(first: &[TraceEvent], second: &[TraceEvent]) -> String {
    let mut out = String::from("<h2>Determinism check: the two runs side by side</h2>\n");
    let Some(start) = first_divergence(first, second) else {
        out.push_str("<p class=\"note\">The two runs' traces are the same event for event.</p>\n");
        return out;
    };
    let _ = writeln!(
        out,
        "<p>The runs part at event {start} (of {} and {} kept); {} rows from there.</p>",
        first.len(),
        second.len(),
        DIVERGENCE_ROWS_MAX
    );
    out.push_str("<table id=\"side-by-side\">\n<thead><tr><th>#</th><th colspan=\"3\">first run</th><th colspan=\"3\">second run</th></tr></thead>\n<tbody>\n");
    let end = first
        .len()
        .max(second.len())
        .min(start + DIVERGENCE_ROWS_MAX);
    for index in start..end {
        let (left, right) = (first.get(index), second.get(index));
        let attributes = if index == start {
            " id=\"divergence\" class=\"differs\""
        } else if left != right {
            " class=\"differs\""
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "<tr{attributes}><td class=\"mono\">{index}</td>{}{}</tr>",
            side_cells(left),
            side_cells(right)
        );
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use umi_dst::FailureClass;
    use umi_dst::trace::TraceHash;

    use super::*;

    fn event(index: u64, kind: &'static str, detail: &str) -> TraceEvent {
        let detail = detail.to_owned();
        let record = umi_dst::trace::TraceKind::Named { kind, detail };
        TraceEvent::new(index, Duration::from_millis(index * 10), record)
    }

    fn run_of(events: Vec<TraceEvent>, failure: Option<&str>) -> SeedRun {
        SeedRun {
            seed: 42,
            path: umi_dst::RunPath::from_seed(42),
            failure: failure.map(|m| (FailureClass::Correctness, m.to_owned())),
            trace_hash: TraceHash([7; 32]),
            events: events.len() as u64,
            steps: 3,
            sim_elapsed: Duration::from_millis(events.len() as u64 * 10),
            fault_stats: Default::default(),
            injections: Vec::new(),
            faults: vec!["llm.timeout p=0.1 <on> llm.complete".to_owned()],
            swarm: Vec::new(),
            tail: Vec::new(),
            foreign: Vec::new(),
            full_trace: Some(events),
            marks: Default::default(),
            rule_reach: Vec::new(),
            mark_steps: Default::default(),
            watermarks: Default::default(),
            injection_steps: Vec::new(),
            usage: Default::default(),
        }
    }

    fn sample_events() -> Vec<TraceEvent> {
        vec![
            event(0, "sim.start", "seed 42"),
            event(1, "llm.call", "model=m <script>alert('x')</script>"),
            event(2, "fault", "llm.timeout on llm.complete (rule 0:1)"),
            event(3, "llm.answer", "done"),
            event(4, "storage.write", "k=v"),
            event(5, "router.fallback", "a -> b"),
        ]
    }

    fn render_run(run: &SeedRun, second: Option<&SeedRun>) -> String {
        render(&RunPage {
            scenario: "demo",
            run,
            replay_command: "dst replay --scenario demo --seed 42",
            second,
        })
        .unwrap()
    }

    #[test]
    fn one_mark_per_event_in_the_right_lane() {
        let run = run_of(sample_events(), None);
        let html = render_run(&run, None);
        for lane in Lane::ALL {
            let events = sample_events()
                .iter()
                .filter(|e| lane_of(e.kind) == lane)
                .count();
            let marks = html
                .matches(&format!("data-lane=\"{}\"", lane.name()))
                .count();
            assert_eq!(marks, events, "{lane:?}");
        }
        assert!(html.contains("42 (0x2a)"));
        assert!(html.contains("<span class=\"passed\">passed</span>"));
        assert!(html.contains("id=\"trace\""));
    }

    #[test]
    fn details_are_escaped_everywhere_and_nothing_loads_from_the_web() {
        let run = run_of(sample_events(), Some("lost write <script>x</script>"));
        let html = render_run(&run, None);
        assert!(
            !html.contains("<script>alert"),
            "a detail got through unescaped"
        );
        assert!(
            !html.contains("<script>x"),
            "the failure got through unescaped"
        );
        assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)"));
        for attribute in ["src=", "href="] {
            for found in html.match_indices(attribute) {
                let rest = &html[found.0 + attribute.len()..];
                let value = rest.trim_start_matches(['"', '\'']);
                assert!(
                    !value.starts_with("http://") && !value.starts_with("https://"),
                    "{attribute}{}",
                    &rest[..rest.len().min(60)]
                );
            }
        }
        assert!(!html.contains("http://") && !html.contains("https://"));
    }

    #[test]
    fn the_failure_marker_is_there_exactly_when_the_run_failed() {
        let passed = render_run(&run_of(sample_events(), None), None);
        assert_eq!(passed.matches("id=\"failure\"").count(), 0);
        let failed = render_run(&run_of(sample_events(), Some("lost write")), None);
        assert_eq!(failed.matches("id=\"failure\"").count(), 1);
        assert!(
            failed.contains("FAILED at 0.050000s: correctness: lost write"),
            "{failed}"
        );
        assert!(failed.contains("FAILED correctness"));
    }

    #[test]
    fn a_long_trace_is_cut_and_says_so() {
        let events: Vec<TraceEvent> = (0..HTML_EVENTS_MAX as u64 + 7)
            .map(|i| event(i, "cover", "x"))
            .collect();
        let html = render_run(&run_of(events, None), None);
        assert_eq!(html.matches("data-lane=").count(), HTML_EVENTS_MAX);
        assert!(html.contains("7 event(s) left out"), "the note is missing");
    }

    /// A run of 10,000 events over every lane: a mark each, and a page whose size grows
    /// by well under a kilobyte per event.
    #[test]
    fn ten_thousand_events_make_a_page_of_bounded_size() {
        const KINDS: [&str; 8] = [
            "llm.call",
            "net.request",
            "tool.call",
            "mcp.request",
            "storage.write",
            "router.fallback",
            "fault",
            "sleep",
        ];
        let events: Vec<TraceEvent> = (0..10_000u64)
            .map(|i| {
                event(
                    i,
                    KINDS[(i % 8) as usize],
                    "op=write key=k value=v latency_ms=12",
                )
            })
            .collect();
        let html = render_run(&run_of(events, Some("lost write")), None);
        assert_eq!(html.matches("data-lane=").count(), 10_000);
        for lane in Lane::ALL {
            let marks = html
                .matches(&format!("data-lane=\"{}\"", lane.name()))
                .count();
            assert_eq!(marks, 1_250, "{lane:?}");
        }
        assert!(html.len() < 10_000 * 800, "{} bytes", html.len());
    }

    #[test]
    fn a_divergence_is_shown_side_by_side_from_its_first_event() {
        let first = run_of(sample_events(), None);
        let mut events = sample_events();
        events[3].detail = "something else".to_owned();
        let second = run_of(events, None);
        let html = render_run(&first, Some(&second));
        assert_eq!(html.matches("id=\"divergence\"").count(), 1);
        let row = html.split("id=\"divergence\"").nth(1).unwrap();
        let row = &row[..row.find("</tr>").unwrap()];
        assert!(row.contains(">3<") && row.contains("done") && row.contains("something else"));
        let same = render_run(&first, Some(&first));
        assert!(!same.contains("id=\"divergence\""));
        assert!(same.contains("the same event for event"));
    }
}
