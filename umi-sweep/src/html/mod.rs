//! Self-contained HTML pages of a run (`dst replay --html`) and of a sweep (`dst sweep
//! --html`, `dst merge --html`): "look instead of read".
//!
//! One file each, opened from disk with no network: inline CSS, server-side SVG (so the
//! drawing is testable here, in Rust), a few lines of inline script for zoom, no external
//! resources of any kind. Every piece of text from a run or a report goes through
//! [`escape`], the one escaping function; data the page embeds for scripts and tests goes
//! through [`json_script`] (serde_json, with `</` written `<\/`).
//!
//! - [`timeline`]: the lanes of the system, [`timeline::lane_of`] a trace event's kind,
//!   and the SVG timeline on simulated time;
//! - [`run_page`]: one run's page (header, timeline, failure marker, event table, and a
//!   determinism check's two traces side by side);
//! - [`sweep_page`]: a sweep report's page, one function per section;
//! - [`served`] and [`scope_page`]: a `dst serve` scope's saved trace read back, and its
//!   page (`dst trace-html`, what the pytest plugin writes on a failure);
//!   [`agent_spans`]: the agent's own OpenTelemetry spans beside its requests on that page.

pub mod agent_spans;
pub mod outcome_sections;
pub mod run_page;
pub mod scope_page;
pub mod served;
pub mod sweep_page;
pub mod timeline;

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

/// The page's styles, shared by both pages (inline: the page loads nothing).
const STYLE_CSS: &str = "
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1d1d1f; }
h1 { font-size: 1.4em; margin: 0 0 .5em; }
h2 { font-size: 1.15em; margin: 1.5em 0 .5em; }
code, pre, td.mono { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; }
pre { white-space: pre-wrap; word-break: break-word; margin: 0; }
table { border-collapse: collapse; }
th, td { text-align: left; padding: 2px 8px; border-bottom: 1px solid #e4e4e7; vertical-align: top; }
th { background: #f4f4f5; position: sticky; top: 0; }
dl.header { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; }
dl.header dt { font-weight: 600; }
dl.header dd { margin: 0; }
.failed { color: #b91c1c; font-weight: 600; }
.passed { color: #15803d; font-weight: 600; }
.note { color: #6b7280; }
.timeline-box { overflow-x: auto; border: 1px solid #e4e4e7; }
svg.timeline { display: block; }
svg .lane-label { font-size: 12px; fill: #374151; }
svg .lane-band { fill: #fafafa; stroke: #e4e4e7; }
svg .mark { opacity: .75; }
svg .mark:hover { opacity: 1; stroke: #000; }
svg .fault-mark { fill: #dc2626; stroke: #7f1d1d; }
svg .injection { fill: #f59e0b; stroke: #78350f; }
svg #failure line { stroke: #b91c1c; stroke-width: 2; stroke-dasharray: 4 3; }
svg #failure text { fill: #b91c1c; font-size: 12px; font-weight: 600; }
tr#divergence td { background: #fee2e2; }
tr.differs td { background: #fef3c7; }
.bar { background: #fee2e2; width: 240px; height: 14px; display: inline-block; vertical-align: middle; }
.bar span { background: #22c55e; height: 100%; display: block; }
.bar.canary { background: #e5e7eb; }
.bar.canary span { background: #f59e0b; }
.lane-model { fill: #2563eb; } .lane-network { fill: #0891b2; } .lane-tools { fill: #7c3aed; }
.lane-mcp { fill: #db2777; } .lane-storage { fill: #65a30d; } .lane-router { fill: #ea580c; }
.lane-faults { fill: #dc2626; } .lane-other { fill: #6b7280; }
";

/// Text made safe for HTML element content and attribute values (double- or
/// single-quoted): `& < > " '` become entities. The one escaping function of the pages.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// `value` as a `<script type="application/json" id="…">` element, for scripts and tests
/// to read the page's data: serde_json's text with `<`, `>` and `&` written as `\u003c`,
/// `\u003e` and `\u0026` (the same JSON: they only occur inside strings), so neither
/// `</script>` nor `<!--` nor any markup can appear in it (stricter than writing `</` as
/// `<\/`).
pub fn json_script(id: &str, value: &impl Serialize) -> Result<String, String> {
    let json = serde_json::to_string(value).map_err(|error| error.to_string())?;
    let safe = json
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026");
    Ok(format!(
        "<script type=\"application/json\" id=\"{}\">{safe}</script>\n",
        escape(id)
    ))
}

/// A whole page: doctype, title, the shared styles and `body` (already HTML).
pub fn page(title: &str, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + STYLE_CSS.len() + 256);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(out, "<title>{}</title>", escape(title));
    let _ = writeln!(out, "<style>{STYLE_CSS}</style>\n</head>\n<body>");
    out.push_str(body);
    out.push_str("</body>\n</html>\n");
    out
}

/// Writes a page to `path`; the error names the path.
pub fn write_page(path: &Path, html: &str) -> Result<(), String> {
    std::fs::write(path, html).map_err(|error| format!("{}: {error}", path.display()))
}

/// `part` of `whole` as a percentage with one decimal (`0.0` when `whole` is zero).
pub(crate) fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    (part as f64 * 1000.0 / whole as f64).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_leaves_no_markup() {
        assert_eq!(
            escape("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;"
        );
        assert_eq!(escape("plain ✓"), "plain ✓");
    }

    #[test]
    fn embedded_json_cannot_close_its_script() {
        let script = json_script(
            "data",
            &vec!["</script><script>alert(1)</script>", "<!-- &"],
        )
        .unwrap();
        let inner = script
            .strip_prefix("<script type=\"application/json\" id=\"data\">")
            .and_then(|s| s.strip_suffix("</script>\n"))
            .unwrap();
        assert!(!inner.contains('<') && !inner.contains('>'), "{inner}");
        let back: Vec<String> = serde_json::from_str(inner).unwrap();
        assert_eq!(back, ["</script><script>alert(1)</script>", "<!-- &"]);
    }

    #[test]
    fn a_page_loads_nothing_from_elsewhere() {
        let html = page("t <b>", "<p>x</p>");
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<title>t &lt;b&gt;</title>"));
        assert!(!html.contains("http://") && !html.contains("https://"));
    }

    #[test]
    fn percentages_round_to_a_tenth() {
        assert!((percent(1, 3) - 33.3).abs() < 1e-9);
        assert!((percent(0, 0)).abs() < 1e-9);
        assert!((percent(5, 5) - 100.0).abs() < 1e-9);
    }
}
