//! The sweep page's sections for an agent's owner: what each scenario's runs spent (a
//! row per counted quantity with p50, p95, p99 and max, drawn as a bar scaled to the
//! max) and, for a `--trials` sweep, pass^j for j = 1..k as a curve with pass@j beside
//! it, per task class, and the flaky tasks with their failing trial seeds.

use std::fmt::Write as _;

use crate::pass_k::TrialsReport;
use crate::report::ScenarioReport;
use crate::usage_report::USAGE_QUANTITIES;

use super::escape;

/// Width of the pass^k curve, in px.
const CURVE_WIDTH_PX: f64 = 320.0;
/// Height of the pass^k curve, in px.
const CURVE_HEIGHT_PX: f64 = 120.0;
/// Points drawn per curve (each estimate costs O(k·j): a large k is sampled).
const CURVE_POINTS_MAX: u64 = 100;

/// Each counted quantity's percentiles, as numbers and as a bar per percentile.
pub fn usage_distributions(scenario: &ScenarioReport) -> String {
    let rows: Vec<String> = USAGE_QUANTITIES
        .iter()
        .filter_map(|name| Some((*name, scenario.usage.get(name)?)))
        .map(|(name, distribution)| {
            let points = [500, 950, 990].map(|p| distribution.percentile(p).unwrap_or(0));
            let width = |value: u64| value as f64 * 100.0 / distribution.max.max(1) as f64;
            format!(
                "<tr data-quantity=\"{name}\"><td>{name}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td><span class=\"bar\" title=\"p50 {}, p95 {}, max {}\"><span style=\"width:{:.1}%\"></span></span></td></tr>",
                points[0],
                points[1],
                points[2],
                distribution.max,
                points[0],
                points[1],
                distribution.max,
                width(points[1]),
            )
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<h3>What a run spent</h3>\n<table class=\"usage\">\n<thead><tr><th>quantity</th><th>p50</th>\
         <th>p95</th><th>p99</th><th>max</th><th>p95 of max</th></tr></thead>\n<tbody>\n",
    );
    for row in rows {
        let _ = writeln!(out, "{row}");
    }
    out.push_str("</tbody>\n</table>\n");
    for (model, runs) in &scenario.usage.unpriced_models {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} is not in the price table: {runs} runs have no cost.</p>",
            escape(model)
        );
    }
    out
}

/// pass^j and pass@j for j = 1..k, per class, and the flaky tasks.
pub fn pass_k(scenario: &ScenarioReport) -> String {
    let Some(trials) = &scenario.trials else {
        return String::new();
    };
    let mut out = format!(
        "<h3>pass^k over {} tasks × {} trials</h3>\n<p>{}</p>\n",
        trials.all.tasks(),
        trials.k,
        escape(&trials.summary())
    );
    out.push_str(&curve(trials));
    if !trials.by_class.is_empty() {
        out.push_str("<table class=\"by-task-class\">\n<thead><tr><th>class</th><th>tasks</th><th>pass@1</th><th>pass^k</th></tr></thead>\n<tbody>\n");
        for (class, counts) in &trials.by_class {
            let show = |value: Option<f64>| value.map_or("-".to_owned(), |v| format!("{v:.3}"));
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(class),
                counts.tasks(),
                show(counts.pass_at_1()),
                show(counts.pass_hat(trials.k))
            );
        }
        out.push_str("</tbody>\n</table>\n");
    }
    out.push_str(&flaky(trials));
    out
}

/// The pass^j (solid) and pass@j (dashed) curves over j = 1..k, as SVG.
fn curve(trials: &TrialsReport) -> String {
    let k = trials.k.max(1);
    let x = |j: u64| 30.0 + (j - 1) as f64 * (CURVE_WIDTH_PX - 40.0) / (k.max(2) - 1) as f64;
    let y = |p: f64| 10.0 + (1.0 - p) * (CURVE_HEIGHT_PX - 30.0);
    let points = |estimate: &dyn Fn(u64) -> Option<f64>| -> String {
        let step = k.div_ceil(CURVE_POINTS_MAX).max(1);
        (1..=k)
            .filter(|j| (j - 1) % step == 0 || *j == k)
            .filter_map(|j| estimate(j).map(|p| format!("{:.1},{:.1}", x(j), y(p))))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let hat = points(&|j| trials.all.pass_hat(j));
    let at = points(&|j| trials.all.pass_at(j));
    format!(
        "<svg class=\"pass-k\" width=\"{CURVE_WIDTH_PX}\" height=\"{CURVE_HEIGHT_PX}\" role=\"img\">\
         <title>pass^j (solid) and pass@j (dashed) for j = 1..{k}</title>\
         <line x1=\"30\" y1=\"{y0:.1}\" x2=\"{xe:.1}\" y2=\"{y0:.1}\" stroke=\"#999\"/>\
         <polyline class=\"pass-hat\" fill=\"none\" stroke=\"#c0392b\" stroke-width=\"2\" points=\"{hat}\"/>\
         <polyline class=\"pass-at\" fill=\"none\" stroke=\"#2c7a3f\" stroke-dasharray=\"4 3\" points=\"{at}\"/>\
         <text x=\"30\" y=\"{yt:.1}\" font-size=\"11\">j = 1</text><text x=\"{xe:.1}\" y=\"{yt:.1}\" font-size=\"11\" text-anchor=\"end\">j = {k}</text></svg>\n",
        y0 = y(0.0),
        xe = x(k),
        yt = CURVE_HEIGHT_PX - 4.0,
    )
}

/// The flaky tasks, smallest first, with the trial seeds that replay their failures.
fn flaky(trials: &TrialsReport) -> String {
    if trials.flaky.is_empty() {
        return "<p class=\"note\">No flaky task: each task passed all its trials or none.</p>\n"
            .to_owned();
    }
    let mut out =
        String::from("<h4>Flaky tasks (passed some trials, not all)</h4>\n<ul class=\"flaky\">\n");
    for task in &trials.flaky {
        let seeds: Vec<String> = task
            .failed_seeds
            .iter()
            .map(|seed| format!("{seed:#x}"))
            .collect();
        let _ = writeln!(
            out,
            "<li data-task=\"{}\">task {}{}: passed {} of {}; failing trial seeds <code>{}</code></li>",
            task.task,
            task.task,
            task.class
                .as_deref()
                .map(|c| format!(" ({})", escape(c)))
                .unwrap_or_default(),
            task.passed,
            trials.k,
            seeds.join(" ")
        );
    }
    if trials.flaky_truncated > 0 {
        let _ = writeln!(out, "<li>and {} more</li>", trials.flaky_truncated);
    }
    out.push_str("</ul>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spend_and_pass_k_sections_show_what_the_report_holds() {
        let mut scenario = ScenarioReport {
            name: "s".into(),
            ..ScenarioReport::default()
        };
        assert_eq!(usage_distributions(&scenario), "");
        assert_eq!(pass_k(&scenario), "");
        let mut run = umi_dst::usage::RunUsage {
            model_calls: 4,
            ..Default::default()
        };
        run.models.insert(
            "<m>".into(),
            umi_dst::usage::TokenCounts {
                input: 90,
                ..Default::default()
            },
        );
        scenario.usage.fold(&run, None);
        let html = usage_distributions(&scenario);
        assert!(
            html.contains("data-quantity=\"model_calls\"><td>model_calls</td><td>4</td>"),
            "{html}"
        );
        let mut trials = TrialsReport::new(3);
        trials.add_task(1, 3, vec![], Some("<b>".into()));
        trials.add_task(2, 1, vec![0x8000_0000_0002_0001], None);
        scenario.trials = Some(trials);
        let html = pass_k(&scenario);
        assert!(
            html.contains("class=\"pass-hat\"") && html.contains("0x8000000000020001"),
            "{html}"
        );
        assert!(
            html.contains("&lt;b&gt;") && !html.contains("<b>"),
            "{html}"
        );
    }
}
