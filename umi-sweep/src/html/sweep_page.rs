//! A sweep report's page (`dst sweep --html FILE`, `dst merge --html FILE`): the run as a
//! whole, each scenario's pass rate as a bar (the canary's marked: its failures are the
//! point), its failures by class, its pass^k and what its runs spent
//! (`outcome_sections.rs`), its failure groups with their replay commands, and for each
//! listed failure the command that renders that run's own page.
//!
//! Every section is a function of the report (or of one scenario's report) returning
//! HTML, listed in [`REPORT_SECTIONS`] and [`SCENARIO_SECTIONS`]: a new section is a new
//! function added to a list.

use std::fmt::Write as _;

use crate::report::{ScenarioReport, SweepReport, human_ms, truncation_note};

use super::{escape, json_script, page, percent};

/// A section about the whole sweep.
pub type ReportSection = fn(&SweepReport) -> String;
/// A section about one scenario.
pub type ScenarioSection = fn(&ScenarioReport) -> String;

/// The sweep's sections, top of the page first.
pub const REPORT_SECTIONS: &[ReportSection] = &[summary, pass_rates];

/// Each scenario's sections, in order, under its heading.
pub const SCENARIO_SECTIONS: &[ScenarioSection] = &[
    scenario_heading,
    failures_by_class,
    super::outcome_sections::pass_k,
    super::outcome_sections::usage_distributions,
    failure_groups,
    failure_list,
];

/// The whole page; the report is embedded as JSON (`#report`).
pub fn render(report: &SweepReport) -> Result<String, String> {
    let mut body = String::from("<h1>Sweep report</h1>\n");
    for section in REPORT_SECTIONS {
        body.push_str(&section(report));
    }
    for scenario in &report.scenarios {
        let _ = writeln!(
            body,
            "<section class=\"scenario\" id=\"{}\">",
            escape(&scenario_anchor(scenario))
        );
        for section in SCENARIO_SECTIONS {
            body.push_str(&section(scenario));
        }
        body.push_str("</section>\n");
    }
    body.push_str(&json_script("report", report)?);
    Ok(page("Sweep report", &body))
}

/// The id of a scenario's section.
fn scenario_anchor(scenario: &ScenarioReport) -> String {
    format!("scenario-{}", scenario.name)
}

/// The page a failing seed's replay renders: `replay-<scenario>-<seed>.html`.
pub fn replay_page_name(scenario: &str, seed: u64) -> String {
    format!("replay-{scenario}-{seed}.html")
}

/// The command that renders a failure's replay page.
pub fn replay_html_command(replay: &str, scenario: &str, seed: u64) -> String {
    format!("{replay} --html {}", replay_page_name(scenario, seed))
}

/// The run: range, shards, modes, runs done, wall time, how it ended.
pub fn summary(report: &SweepReport) -> String {
    let mut out = String::from("<dl class=\"header\">\n");
    let mut row = |name: &str, value: &str| {
        let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", escape(name), escape(value));
    };
    row("commit", report.commit.as_deref().unwrap_or("unknown"));
    row(
        "seeds",
        &format!(
            "{} from {} (0x{:x})",
            report.seeds, report.seed_start, report.seed_start
        ),
    );
    if !report.shards.is_empty() {
        row("shards", &report.shards.join(", "));
    }
    let mut modes = Vec::new();
    if report.swarm {
        modes.push("swarm");
    }
    if report.check_determinism {
        modes.push("determinism checked");
    }
    row(
        "mode",
        &if modes.is_empty() {
            "plain".to_owned()
        } else {
            modes.join(", ")
        },
    );
    row(
        "runs",
        &format!("{} of {} done", report.runs_done, report.runs_planned),
    );
    row("wall time", &human_ms(report.wall_ms));
    row("completed", if report.completed { "yes" } else { "NO" });
    if let Some(stopped) = &report.stopped {
        row("stopped", stopped);
    }
    if let Some(resume) = &report.resume {
        row("resume", resume);
    }
    row("regressions", &report.regressions().to_string());
    for death in &report.worker_deaths_unexplained {
        row("worker died", death);
    }
    let missed = report.canaries_missed();
    if !missed.is_empty() {
        row("canaries missed", &missed.join(", "));
    }
    row("exit code", &report.exit_code().to_string());
    out.push_str("</dl>\n");
    out
}

/// Each scenario's pass rate as a bar, with its counts; the canary's is marked.
pub fn pass_rates(report: &SweepReport) -> String {
    let mut out = String::from(
        "<h2>Pass rates</h2>\n<table id=\"pass-rates\">\n<thead><tr><th>scenario</th><th>passed</th>\
         <th>seeds run</th><th>failed</th><th></th></tr></thead>\n<tbody>\n",
    );
    for scenario in &report.scenarios {
        let passed = scenario.seeds_run.saturating_sub(scenario.seeds_failed);
        let rate = percent(passed, scenario.seeds_run);
        let (bar_class, note) = if scenario.canary {
            (
                "bar canary",
                "canary: a planted bug, its failures are expected",
            )
        } else {
            ("bar", "")
        };
        let _ = writeln!(
            out,
            "<tr data-scenario=\"{name}\"><td><a href=\"#{anchor}\">{name}</a></td>\
             <td><span class=\"{bar_class}\" title=\"{rate:.1}% passed\"><span style=\"width:{rate:.1}%\"></span></span> {rate:.1}%</td>\
             <td>{}</td><td>{}</td><td class=\"note\">{note}</td></tr>",
            scenario.seeds_run,
            scenario.seeds_failed,
            name = escape(&scenario.name),
            anchor = escape(&scenario_anchor(scenario)),
        );
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

/// The scenario's name, whether it is the canary, and its goal.
pub fn scenario_heading(scenario: &ScenarioReport) -> String {
    format!(
        "<h2>{}{}</h2>\n<p>{}</p>\n",
        escape(&scenario.name),
        if scenario.canary { " (canary)" } else { "" },
        escape(&scenario.goal)
    )
}

/// Failures counted by class.
pub fn failures_by_class(scenario: &ScenarioReport) -> String {
    if scenario.failures_by_class.values().all(|&count| count == 0) {
        return "<p class=\"note\">No failures.</p>\n".to_owned();
    }
    let mut out = String::from("<h3>Failures by class</h3>\n<table class=\"by-class\">\n<tbody>\n");
    for (class, count) in &scenario.failures_by_class {
        let _ = writeln!(out, "<tr><td>{}</td><td>{count}</td></tr>", escape(class));
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

/// Failures that say the same thing, largest group first, each with its replay command.
pub fn failure_groups(scenario: &ScenarioReport) -> String {
    if scenario.failure_groups.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<h3>Failure groups</h3>\n<table class=\"groups\">\n<thead><tr><th>class</th><th>count</th>\
         <th>example</th><th>seeds</th><th>replay</th></tr></thead>\n<tbody>\n",
    );
    for group in crate::groups::by_size(&scenario.failure_groups) {
        let seeds: Vec<String> = group.seeds.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td><pre>{}</pre></td><td>{}</td><td><code>{}</code></td></tr>",
            escape(&group.class),
            group.count,
            escape(&group.example),
            escape(&seeds.join(", ")),
            escape(&group.replay)
        );
    }
    out.push_str("</tbody>\n</table>\n");
    if scenario.failures_ungrouped > 0 {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} failure(s) past the group limit are not grouped.</p>",
            scenario.failures_ungrouped
        );
    }
    out
}

/// Each listed failure: seed, class, first line, the replay command and the command that
/// renders its page.
pub fn failure_list(scenario: &ScenarioReport) -> String {
    if scenario.failures.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<h3>Failing seeds</h3>\n<table class=\"failures\">\n<thead><tr><th>seed</th><th>class</th>\
         <th>message</th><th>replay / its page</th></tr></thead>\n<tbody>\n",
    );
    for failure in &scenario.failures {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td><pre>{}</pre></td><td><code>{}</code><br><code class=\"replay-html\">{}</code></td></tr>",
            failure.seed,
            escape(&failure.class),
            escape(crate::human::first_line(&failure.message)),
            escape(&failure.replay),
            escape(&replay_html_command(
                &failure.replay,
                &scenario.name,
                failure.seed
            ))
        );
    }
    out.push_str("</tbody>\n</table>\n");
    if scenario.failures_truncated > 0 {
        let _ = writeln!(
            out,
            "<p class=\"note\">{}</p>",
            escape(&truncation_note(scenario))
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::groups::single;
    use crate::report::FailureEntry;

    fn report() -> SweepReport {
        let failure = FailureEntry {
            seed: 7,
            class: "correctness".to_owned(),
            message: "lost write <script>alert(1)</script>\nmore".to_owned(),
            replay: "dst replay --scenario canary --seed 7".to_owned(),
        };
        let canary = ScenarioReport {
            name: "canary".to_owned(),
            goal: "finds the planted bug".to_owned(),
            canary: true,
            seeds_run: 10,
            seeds_failed: 4,
            failures_by_class: BTreeMap::from([("correctness".to_owned(), 4)]),
            failure_groups: vec![single("correctness", &failure.message, 7, &failure.replay)],
            failures: vec![failure],
            ..ScenarioReport::default()
        };
        let clean = ScenarioReport {
            name: "clean".to_owned(),
            seeds_run: 10,
            ..ScenarioReport::default()
        };
        SweepReport {
            seeds: 10,
            seed_start: 1,
            runs_planned: 20,
            runs_done: 20,
            completed: true,
            scenarios: vec![canary, clean],
            ..SweepReport::default()
        }
    }

    #[test]
    fn every_scenario_has_its_bar_and_the_canary_is_marked() {
        let html = render(&report()).unwrap();
        assert_eq!(html.matches("<tr data-scenario=").count(), 2);
        assert!(
            html.contains("style=\"width:60.0%\""),
            "canary: 6 of 10 passed"
        );
        assert!(html.contains("style=\"width:100.0%\""));
        assert_eq!(html.matches("class=\"bar canary\"").count(), 1);
        assert!(html.contains("<h2>canary (canary)</h2>"));
    }

    #[test]
    fn failures_carry_their_replay_and_page_commands_escaped() {
        let html = render(&report()).unwrap();
        assert!(html.contains("dst replay --scenario canary --seed 7 --html replay-canary-7.html"));
        assert!(
            !html.contains("<script>alert"),
            "a message got through unescaped"
        );
        assert!(html.contains("lost write &lt;script&gt;"));
        assert_eq!(html.matches("<table class=\"groups\">").count(), 1);
        assert!(html.contains("No failures."), "the clean scenario says so");
        assert!(!html.contains("http://") && !html.contains("https://"));
    }

    /// A worker death no run explained is on the page, escaped, with the crash's exit code.
    #[test]
    fn an_unexplained_worker_death_is_shown() {
        let mut report = report();
        assert!(!summary(&report).contains("worker died"));
        report.worker_deaths_unexplained = vec!["a worker died: <signal 9>".into()];
        let html = summary(&report);
        assert!(html.contains("<dt>worker died</dt><dd>a worker died: &lt;signal 9&gt;</dd>"));
        assert!(html.contains("<dt>exit code</dt><dd>11</dd>"));
    }

    #[test]
    fn sections_are_functions_of_the_report() {
        let report = report();
        for section in REPORT_SECTIONS {
            assert!(!section(&report).is_empty());
        }
        let clean = &report.scenarios[1];
        assert_eq!(failure_groups(clean), "");
        assert_eq!(failure_list(clean), "");
    }
}
