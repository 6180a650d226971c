//! The timeline of a run: one horizontal lane per part of the system (model calls,
//! network, tools, MCP, storage, router, faults, the rest), every trace event a mark in
//! its lane at its simulated time, the run's injections and its failure drawn where they
//! landed. Drawn here as SVG text, so what a page shows is tested in Rust.
//!
//! Which lane an event belongs to is [`lane_of`], a pure function of its kind (the
//! dotted `&'static str` every `Trace::record` call names); a new kind lands by its
//! prefix, and in "other" when nothing matches.
//!
//! Each event's mark carries `data-lane` and `data-index` and a `<title>` tooltip with
//! its kind and detail; only events' marks carry `data-lane` (injections carry
//! `data-injection`, the failure marker is `#failure`), so counting `[data-lane="…"]`
//! counts a lane's events.

use std::fmt::Write as _;

use serde::Serialize;
use umi_dst::fault::Injection;
use umi_dst::micros_saturating;
use umi_dst::trace::TraceEvent;

use super::escape;

/// A part of the system, drawn as one lane of the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Lane {
    /// Model calls: `llm.*`.
    Model,
    /// The wire: `net.*`, `network.*`, `http.*`, `cassette.*`.
    Network,
    /// Tool calls: `tool.*`, `agent.tool*`, `agent.parallel_tools`.
    Tools,
    /// MCP sessions and requests: `mcp.*`.
    Mcp,
    /// Storage and memory: `storage.*`, `sqlite.*`, `memory.*`.
    Storage,
    /// The model router: `router.*`.
    Router,
    /// Injected faults: `fault`, `fault.*`, `clock.jump`.
    Faults,
    /// Everything else: `sim.*`, `sleep`, `schedule.*`, `cover`, `agent.*`, ...
    Other,
}

impl Lane {
    /// Every lane, top to bottom.
    pub const ALL: [Lane; 8] = [
        Lane::Model,
        Lane::Network,
        Lane::Tools,
        Lane::Mcp,
        Lane::Storage,
        Lane::Router,
        Lane::Faults,
        Lane::Other,
    ];

    /// The lane's name in the page (`data-lane`, CSS classes, the embedded data).
    pub fn name(self) -> &'static str {
        match self {
            Lane::Model => "model",
            Lane::Network => "network",
            Lane::Tools => "tools",
            Lane::Mcp => "mcp",
            Lane::Storage => "storage",
            Lane::Router => "router",
            Lane::Faults => "faults",
            Lane::Other => "other",
        }
    }

    /// The lane's label on the timeline.
    pub fn label(self) -> &'static str {
        match self {
            Lane::Model => "model calls",
            Lane::Network => "network",
            Lane::Tools => "tools",
            Lane::Mcp => "MCP",
            Lane::Storage => "storage",
            Lane::Router => "router",
            Lane::Faults => "faults",
            Lane::Other => "other",
        }
    }

    /// The lane's row, from 0 at the top.
    fn row(self) -> usize {
        Lane::ALL.iter().position(|&lane| lane == self).unwrap_or(0)
    }
}

/// Whether `kind` is `family` or `family.<anything>`.
fn in_family(kind: &str, family: &str) -> bool {
    kind.strip_prefix(family)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// The lane of a trace event of `kind`.
pub fn lane_of(kind: &str) -> Lane {
    let any = |families: &[&str]| families.iter().any(|family| in_family(kind, family));
    if any(&["fault", "clock.jump"]) {
        Lane::Faults
    } else if any(&["llm"]) {
        Lane::Model
    } else if any(&["net", "network", "http", "cassette"]) {
        Lane::Network
    } else if any(&["tool", "agent.tool", "agent.parallel_tools"])
        || kind.starts_with("agent.tool_")
    {
        Lane::Tools
    } else if any(&["mcp"]) {
        Lane::Mcp
    } else if any(&["storage", "sqlite", "memory"]) {
        Lane::Storage
    } else if any(&["router"]) {
        Lane::Router
    } else {
        Lane::Other
    }
}

/// Room for the lane labels, left of the plot.
const LABEL_WIDTH_PX: f64 = 110.0;
/// The plot's narrowest width; it grows with the events drawn (see [`plot_width_px`]).
const PLOT_WIDTH_MIN_PX: f64 = 1200.0;
/// The plot's widest width (the page scrolls sideways past the window).
const PLOT_WIDTH_MAX_PX: f64 = 16_000.0;
/// Pixels of plot per event drawn, up to the widest.
const PLOT_PX_PER_EVENT: f64 = 2.0;
/// Room above the lanes for the failure marker's label.
const TOP_PX: f64 = 22.0;
/// One lane's height.
const LANE_HEIGHT_PX: f64 = 26.0;
/// Room below the lanes for the time axis.
const AXIS_HEIGHT_PX: f64 = 26.0;
/// Ticks on the time axis (besides 0).
const AXIS_TICKS: u64 = 8;
/// An event mark's width.
const MARK_WIDTH_PX: f64 = 2.0;

/// Where on the plot a simulated time is drawn.
#[derive(Debug, Clone, Copy)]
struct Scale {
    span_us: u64,
    plot_width_px: f64,
}

impl Scale {
    fn x_px(self, at_us: u64) -> f64 {
        LABEL_WIDTH_PX + at_us.min(self.span_us) as f64 / self.span_us as f64 * self.plot_width_px
    }
}

/// The plot's width for `events` events: wide enough to tell close events apart, within
/// [`PLOT_WIDTH_MIN_PX`] and [`PLOT_WIDTH_MAX_PX`].
fn plot_width_px(events: usize) -> f64 {
    (events as f64 * PLOT_PX_PER_EVENT).clamp(PLOT_WIDTH_MIN_PX, PLOT_WIDTH_MAX_PX)
}

/// An event's simulated time in microseconds.
pub fn at_us(event: &TraceEvent) -> u64 {
    micros_saturating(event.at)
}

/// One event as the timeline and the event table draw it: the fields of a
/// [`TraceEvent`] they read, borrowed, so that a run's events and a served request's
/// events read back from JSON (`dst trace-html`) are drawn by the same code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark<'a> {
    /// Position in what is drawn, from 0.
    pub index: u64,
    /// Simulated time, microseconds.
    pub at_us: u64,
    /// Dotted kind (`llm.call`, `fault`, ...): it picks the lane.
    pub kind: &'a str,
    /// What happened.
    pub detail: &'a str,
}

impl<'a> From<&'a TraceEvent> for Mark<'a> {
    fn from(event: &'a TraceEvent) -> Self {
        Self {
            index: event.index,
            at_us: at_us(event),
            kind: event.kind,
            detail: &event.detail,
        }
    }
}

/// What the timeline draws.
#[derive(Debug, Clone, Copy)]
pub struct TimelineInput<'a> {
    /// The events to draw, each in its lane.
    pub events: &'a [Mark<'a>],
    /// The injections that fired, drawn on the fault lane.
    pub injections: &'a [Injection],
    /// The failure message and when it was seen, drawn as a vertical marker.
    pub failure: Option<(&'a str, u64)>,
    /// The simulated time the run covered, in microseconds (the axis ends there or at
    /// the last event, whichever is later).
    pub sim_elapsed_us: u64,
}

/// The timeline as an `<svg>` element.
pub fn svg(input: &TimelineInput<'_>) -> String {
    let last_us = input.events.last().map_or(0, |mark| mark.at_us);
    let scale = Scale {
        span_us: input.sim_elapsed_us.max(last_us).max(1),
        plot_width_px: plot_width_px(input.events.len()),
    };
    let width_px = LABEL_WIDTH_PX + scale.plot_width_px + 20.0;
    let lanes_height_px = LANE_HEIGHT_PX * Lane::ALL.len() as f64;
    let height_px = TOP_PX + lanes_height_px + AXIS_HEIGHT_PX;
    let mut out = String::with_capacity(input.events.len() * 160 + 4096);
    let _ = writeln!(
        out,
        "<svg class=\"timeline\" width=\"{width_px:.0}\" \
         height=\"{height_px:.0}\" viewBox=\"0 0 {width_px:.0} {height_px:.0}\" role=\"img\" \
         aria-label=\"timeline on simulated time\">"
    );
    lane_bands(&mut out, scale);
    axis(&mut out, scale, TOP_PX + lanes_height_px);
    for event in input.events {
        event_mark(&mut out, event, scale);
    }
    for injection in input.injections {
        injection_mark(&mut out, injection, scale);
    }
    if let Some((message, at)) = input.failure {
        failure_marker(&mut out, message, at, scale, TOP_PX + lanes_height_px);
    }
    out.push_str("</svg>\n");
    out
}

/// The top of a lane's band.
fn lane_top_px(lane: Lane) -> f64 {
    TOP_PX + LANE_HEIGHT_PX * lane.row() as f64
}

/// A band and a label per lane.
fn lane_bands(out: &mut String, scale: Scale) {
    for lane in Lane::ALL {
        let top = lane_top_px(lane);
        let _ = writeln!(
            out,
            "<rect class=\"lane-band\" x=\"{LABEL_WIDTH_PX}\" y=\"{top:.1}\" width=\"{:.1}\" \
             height=\"{LANE_HEIGHT_PX}\"/><text class=\"lane-label\" x=\"4\" y=\"{:.1}\">{}</text>",
            scale.plot_width_px,
            top + LANE_HEIGHT_PX / 2.0 + 4.0,
            escape(lane.label())
        );
    }
}

/// Ticks and their simulated times under the lanes.
fn axis(out: &mut String, scale: Scale, top_px: f64) {
    for tick in 0..=AXIS_TICKS {
        let at_us = scale.span_us.saturating_mul(tick) / AXIS_TICKS;
        let x = scale.x_px(at_us);
        let anchor = match tick {
            0 => "start",
            AXIS_TICKS => "end",
            _ => "middle",
        };
        let _ = writeln!(
            out,
            "<line x1=\"{x:.1}\" y1=\"{TOP_PX}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#d4d4d8\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"{anchor}\">{}</text>",
            top_px + 4.0,
            top_px + 17.0,
            escape(&seconds_text(at_us))
        );
    }
}

/// `1.234567s`: simulated microseconds as seconds, exactly.
pub fn seconds_text(at_us: u64) -> String {
    format!("{}.{:06}s", at_us / 1_000_000, at_us % 1_000_000)
}

/// One event's mark: a bar in its lane (a diamond on the fault lane), with its tooltip.
fn event_mark(out: &mut String, event: &Mark<'_>, scale: Scale) {
    let lane = lane_of(event.kind);
    let x = scale.x_px(event.at_us);
    let top = lane_top_px(lane);
    let title = escape(&format!("{} {}", event.kind, event.detail));
    let attributes = format!(
        "data-lane=\"{}\" data-index=\"{}\"",
        lane.name(),
        event.index
    );
    if lane == Lane::Faults {
        let (mid, half) = (top + LANE_HEIGHT_PX / 2.0, LANE_HEIGHT_PX / 2.0 - 4.0);
        let _ = writeln!(
            out,
            "<polygon class=\"mark fault-mark\" {attributes} points=\"{x:.1},{:.1} {:.1},{mid:.1} \
             {x:.1},{:.1} {:.1},{mid:.1}\"><title>{title}</title></polygon>",
            mid - half,
            x + half / 2.0,
            mid + half,
            x - half / 2.0
        );
    } else {
        let _ = writeln!(
            out,
            "<rect class=\"mark lane-{}\" {attributes} x=\"{:.1}\" y=\"{:.1}\" width=\"{MARK_WIDTH_PX}\" \
             height=\"{:.1}\"><title>{title}</title></rect>",
            lane.name(),
            x - MARK_WIDTH_PX / 2.0,
            top + 4.0,
            LANE_HEIGHT_PX - 8.0
        );
    }
}

/// An injection from the run's list: a triangle at the top of the fault lane.
fn injection_mark(out: &mut String, injection: &Injection, scale: Scale) {
    let x = scale.x_px(injection.at_us);
    let top = lane_top_px(Lane::Faults);
    let _ = writeln!(
        out,
        "<polygon class=\"injection\" data-injection=\"{}\" points=\"{:.1},{top:.1} {:.1},{top:.1} \
         {x:.1},{:.1}\"><title>injected {}</title></polygon>",
        escape(&injection.id.to_string()),
        x - 4.0,
        x + 4.0,
        top + 6.0,
        escape(injection.to_string().trim())
    );
}

/// The failure: a dashed vertical line across the lanes at `at_us`, labelled above them.
fn failure_marker(out: &mut String, message: &str, at_us: u64, scale: Scale, bottom_px: f64) {
    let x = scale.x_px(at_us);
    let first_line = message.lines().next().unwrap_or("");
    let anchor = if x > LABEL_WIDTH_PX + scale.plot_width_px / 2.0 {
        "end"
    } else {
        "start"
    };
    let _ = writeln!(
        out,
        "<g id=\"failure\"><title>{}</title><line x1=\"{x:.1}\" y1=\"4\" x2=\"{x:.1}\" \
         y2=\"{bottom_px:.1}\"/><text x=\"{x:.1}\" y=\"14\" text-anchor=\"{anchor}\">FAILED at {}: {}</text></g>",
        escape(message),
        escape(&seconds_text(at_us)),
        escape(first_line)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind the code records today (`grep -rn 'record(' umi-dst/src umi-core/src
    /// scenarios/src`), a few per family, and where each lands.
    #[test]
    fn lanes_by_kind() {
        let table: &[(&str, Lane)] = &[
            ("llm.call", Lane::Model),
            ("llm.answer", Lane::Model),
            ("llm.corrupt", Lane::Model),
            ("llm.stream_cut", Lane::Model),
            ("net.request", Lane::Network),
            ("net.cut", Lane::Network),
            ("net.proxy", Lane::Network),
            ("cassette.replay", Lane::Network),
            ("cassette.miss", Lane::Network),
            ("http.request", Lane::Network),
            ("tool.call", Lane::Tools),
            ("tool.mcp_stream_cut", Lane::Tools),
            ("agent.tool", Lane::Tools),
            ("agent.tool_failed", Lane::Tools),
            ("agent.parallel_tools", Lane::Tools),
            ("mcp.initialize", Lane::Mcp),
            ("mcp.session_expired", Lane::Mcp),
            ("storage.write", Lane::Storage),
            ("storage.reopen", Lane::Storage),
            ("sqlite.open", Lane::Storage),
            ("memory.recall", Lane::Storage),
            ("router.fallback", Lane::Router),
            ("router.circuit_open", Lane::Router),
            ("fault", Lane::Faults),
            ("fault.heal", Lane::Faults),
            ("clock.jump", Lane::Faults),
            ("sim.start", Lane::Other),
            ("sim.fault", Lane::Other),
            ("sleep", Lane::Other),
            ("schedule.yield", Lane::Other),
            ("cover", Lane::Other),
            ("agent.end", Lane::Other),
            ("agent.trim", Lane::Other),
            ("foreign", Lane::Other),
            ("faulty", Lane::Other),
            ("llmish", Lane::Other),
            ("agent.toolbox", Lane::Other),
            ("", Lane::Other),
        ];
        for (kind, lane) in table {
            assert_eq!(lane_of(kind), *lane, "{kind}");
        }
        for lane in Lane::ALL {
            let json = serde_json::to_string(&lane).unwrap();
            assert_eq!(
                json,
                format!("\"{}\"", lane.name()),
                "the page's data names lanes as its marks do"
            );
        }
    }

    fn event(index: u64, at_ms: u64, kind: &'static str, detail: &'static str) -> Mark<'static> {
        Mark {
            index,
            at_us: at_ms * 1000,
            kind,
            detail,
        }
    }

    #[test]
    fn one_mark_per_event_in_its_lane_with_its_tooltip() {
        let events = [
            event(0, 0, "sim.start", "seed 1"),
            event(1, 5, "llm.call", "<script>alert(1)</script>"),
            event(2, 7, "fault", "llm.timeout on llm.complete"),
            event(3, 9, "llm.answer", "ok"),
        ];
        let svg = svg(&TimelineInput {
            events: &events,
            injections: &[],
            failure: None,
            sim_elapsed_us: 10_000,
        });
        assert_eq!(svg.matches("data-lane=\"model\"").count(), 2);
        assert_eq!(svg.matches("data-lane=\"faults\"").count(), 1);
        assert_eq!(svg.matches("data-lane=\"other\"").count(), 1);
        assert_eq!(svg.matches("data-lane=").count(), events.len());
        assert!(svg.contains("data-index=\"3\""));
        assert!(!svg.contains("<script>"), "{svg}");
        assert!(svg.contains("<title>llm.call &lt;script&gt;alert(1)&lt;/script&gt;</title>"));
        assert!(!svg.contains("id=\"failure\""));
    }

    #[test]
    fn the_failure_marker_is_drawn_at_its_time() {
        let events = [event(0, 0, "sim.start", ""), event(1, 1000, "cover", "x")];
        let svg = svg(&TimelineInput {
            events: &events,
            injections: &[],
            failure: Some(("lost write <w>", 1_000_000)),
            sim_elapsed_us: 1_000_000,
        });
        assert_eq!(svg.matches("id=\"failure\"").count(), 1);
        assert!(
            svg.contains("FAILED at 1.000000s: lost write &lt;w&gt;"),
            "{svg}"
        );
    }

    #[test]
    fn times_print_exactly_and_widths_stay_bounded() {
        assert_eq!(seconds_text(1_234_567), "1.234567s");
        assert_eq!(seconds_text(0), "0.000000s");
        assert!((plot_width_px(0) - PLOT_WIDTH_MIN_PX).abs() < 1e-9);
        assert!((plot_width_px(1_000_000) - PLOT_WIDTH_MAX_PX).abs() < 1e-9);
        let scale = Scale {
            span_us: 100,
            plot_width_px: 1000.0,
        };
        assert!((scale.x_px(50) - (LABEL_WIDTH_PX + 500.0)).abs() < 1e-9);
        assert!((scale.x_px(u64::MAX) - (LABEL_WIDTH_PX + 1000.0)).abs() < 1e-9);
    }
}
