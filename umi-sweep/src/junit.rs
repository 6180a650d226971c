//! The sweep report as JUnit XML, for CI test reporters.
//!
//! A test suite per scenario whose `tests` count is the seeds run and whose `failures`
//! count is the seeds that failed, whatever the report lists: a failing seed never
//! vanishes from the counts. The test cases are one for the seeds that passed, one per
//! listed failure, and, when the report lists only some failures, one failing case that
//! says how many are not listed and where they all are.

use std::fmt::Write as _;

use crate::report::{SweepReport, first_line, truncation_note};

impl SweepReport {
    /// JUnit XML: a test suite per scenario (`tests` = seeds run, `failures` = seeds
    /// failed), a test case per listed failing seed, one for the seeds that passed, and
    /// one for the failing seeds not listed.
    pub fn junit(&self) -> String {
        let mut out =
            String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"dst\">\n");
        for s in &self.scenarios {
            let missed = s.canary && s.seeds_failed == 0 && s.seeds_run > 0;
            let _ = writeln!(
                out,
                "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" time=\"{:.3}\">",
                xml(&s.name),
                s.seeds_run,
                if s.canary {
                    u64::from(missed)
                } else {
                    s.seeds_failed
                },
                s.wall_us as f64 / 1e6
            );
            let passed = s.seeds_run - s.seeds_failed;
            if missed {
                let _ = writeln!(
                    out,
                    "    <testcase name=\"canary found\"><failure type=\"canary\" message=\"the planted bug was not found in {} seeds\"/></testcase>",
                    s.seeds_run
                );
            } else {
                let _ = writeln!(out, "    <testcase name=\"{passed} seeds passed\"/>");
            }
            for f in &s.failures {
                if s.canary {
                    let _ = writeln!(
                        out,
                        "    <testcase name=\"seed {} (canary found)\"/>",
                        f.seed
                    );
                } else {
                    let _ = writeln!(
                        out,
                        "    <testcase name=\"seed {}\"><failure type=\"{}\" message=\"{}\">{}</failure></testcase>",
                        f.seed,
                        xml(&f.class),
                        xml(first_line(&f.message)),
                        xml(&format!("{}\nreplay: {}", f.message, f.replay))
                    );
                }
            }
            if s.failures_truncated > 0 && !s.canary {
                let _ = writeln!(
                    out,
                    "    <testcase name=\"{} more failing seeds\"><failure type=\"truncated\" message=\"{}\"/></testcase>",
                    s.failures_truncated,
                    xml(&truncation_note(s))
                );
            }
            out.push_str("  </testsuite>\n");
        }
        out.push_str("</testsuites>\n");
        out
    }
}

fn xml(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .map(|c| match c {
            '&' => "&amp;".to_owned(),
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            '"' => "&quot;".to_owned(),
            '\'' => "&apos;".to_owned(),
            other => other.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::report::{FailureEntry, REPORT_FAILURES_KEPT_MAX, ScenarioReport};

    use super::*;

    fn failing(seeds_run: u64, failed: u64, listed: u64) -> SweepReport {
        SweepReport {
            scenarios: vec![ScenarioReport {
                name: "s".into(),
                seeds_run,
                seeds_failed: failed,
                failures_truncated: failed - listed,
                seeds_file: Some("seeds/s.seeds".into()),
                failures: (0..listed)
                    .map(|seed| FailureEntry {
                        seed,
                        class: "correctness".into(),
                        message: "x <y>".into(),
                        replay: "dst replay".into(),
                    })
                    .collect(),
                ..ScenarioReport::default()
            }],
            ..SweepReport::default()
        }
    }

    #[test]
    fn junit_is_escaped_and_counts_failures() {
        let xml = failing(10, 2, 2).junit();
        assert!(
            xml.contains("tests=\"10\" failures=\"2\"") && xml.contains("x &lt;y&gt;"),
            "{xml}"
        );
        assert!(!xml.contains("x <y>"));
    }

    /// 237 failures once showed as 200 and the other 37 left the test count.
    #[test]
    fn every_seed_counts_and_unlisted_failures_are_named() {
        let listed = REPORT_FAILURES_KEPT_MAX as u64;
        let xml = failing(1000, 237, listed).junit();
        assert!(xml.contains("tests=\"1000\" failures=\"237\""), "{xml}");
        assert!(xml.contains("name=\"37 more failing seeds\""), "{xml}");
        assert!(
            xml.contains("every failing seed is in seeds/s.seeds"),
            "{xml}"
        );
        assert_eq!(xml.matches("<failure ").count(), 201);
    }
}
