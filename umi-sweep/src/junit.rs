//! The sweep report as JUnit XML, for CI test reporters, written by quick-junit (the
//! writer cargo-nextest uses: escaping, structure, the attributes reporters read).
//!
//! A test suite per scenario whose `tests` count is the seeds run and whose `failures`
//! count is the seeds that failed, whatever the report lists: a failing seed never
//! vanishes from the counts. The test cases are one for the seeds that passed, one per
//! listed failure, and, when the report lists only some failures, one failing case that
//! says how many are not listed and where they all are. A worker process that died in a
//! batch of runs none of which died again alone (`worker_deaths_unexplained`) is a
//! failing case of a `worker processes` suite.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::human::first_line;
use crate::report::{ScenarioReport, SweepReport, truncation_note};

/// The report could not be written as XML.
#[derive(Debug, thiserror::Error)]
#[error("writing the JUnit XML: {0}")]
pub struct JunitError(#[from] quick_junit::SerializeError);

impl SweepReport {
    /// JUnit XML: a test suite per scenario (`tests` = seeds run, `failures` = seeds
    /// failed), a test case per listed failing seed, one for the seeds that passed, and
    /// one for the failing seeds not listed; a `worker processes` suite when a worker
    /// died unexplained.
    pub fn junit(&self) -> Result<String, JunitError> {
        let mut report = Report::new("dst");
        for scenario in &self.scenarios {
            report.add_test_suite(suite(scenario));
        }
        if !self.worker_deaths_unexplained.is_empty() {
            let mut workers = TestSuite::new("worker processes");
            for (number, death) in self.worker_deaths_unexplained.iter().enumerate() {
                workers.add_test_case(failing_case(
                    format!("worker death {}", number + 1),
                    "crash",
                    first_line(death),
                    Some(death.clone()),
                ));
            }
            report.add_test_suite(workers);
        }
        Ok(report.to_string()?)
    }
}

/// A failing test case: `kind` is the failure's `type`, `message` its one-line message.
fn failing_case(name: String, kind: &str, message: &str, description: Option<String>) -> TestCase {
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
    status.set_type(kind).set_message(message);
    if let Some(description) = description {
        status.set_description(description);
    }
    TestCase::new(name, status)
}

/// One scenario's suite, its counts set from the report (not from the cases listed).
fn suite(s: &ScenarioReport) -> TestSuite {
    let mut suite = TestSuite::new(s.name.as_str());
    let missed = s.canary && s.seeds_failed == 0 && s.seeds_run > 0;
    if missed {
        suite.add_test_case(failing_case(
            "canary found".to_owned(),
            "canary",
            &format!("the planted bug was not found in {} seeds", s.seeds_run),
            None,
        ));
    } else {
        let passed = s.seeds_run - s.seeds_failed;
        suite.add_test_case(TestCase::new(
            format!("{passed} seeds passed"),
            TestCaseStatus::success(),
        ));
    }
    for f in &s.failures {
        if s.canary {
            suite.add_test_case(TestCase::new(
                format!("seed {} (canary found)", f.seed),
                TestCaseStatus::success(),
            ));
        } else {
            suite.add_test_case(failing_case(
                format!("seed {}", f.seed),
                &f.class,
                first_line(&f.message),
                Some(format!("{}\nreplay: {}", f.message, f.replay)),
            ));
        }
    }
    if s.failures_truncated > 0 && !s.canary {
        suite.add_test_case(failing_case(
            format!("{} more failing seeds", s.failures_truncated),
            "truncated",
            &truncation_note(s),
            None,
        ));
    }
    // Every seed counts, listed or not (a canary's failures are its success).
    suite.tests = usize::try_from(s.seeds_run).unwrap_or(usize::MAX);
    suite.failures = if s.canary {
        usize::from(missed)
    } else {
        usize::try_from(s.seeds_failed).unwrap_or(usize::MAX)
    };
    suite.set_time(Duration::from_micros(s.wall_us));
    add_usage_properties(&mut suite, s);
    suite
}

/// The scenario's spend as suite properties (`usage.tokens.p95` = `1234`), and its
/// pass^k (`trials.pass_hat_k`) when the sweep ran trials.
fn add_usage_properties(suite: &mut TestSuite, s: &ScenarioReport) {
    for (name, distribution) in &s.usage.quantities {
        let points = [
            ("p50", distribution.percentile(500)),
            ("p95", distribution.percentile(950)),
            ("p99", distribution.percentile(990)),
            ("max", Some(distribution.max)),
        ];
        for (point, value) in points {
            if let Some(value) = value {
                suite.add_property((format!("usage.{name}.{point}"), value.to_string()));
            }
        }
    }
    if let Some(trials) = &s.trials {
        let k = trials.k;
        let estimates = [
            ("pass_at_1", trials.all.pass_at_1()),
            ("pass_at_k", trials.all.pass_at(k)),
            ("pass_hat_k", trials.all.pass_hat(k)),
        ];
        suite.add_property(("trials.k".to_owned(), k.to_string()));
        for (name, value) in estimates {
            if let Some(value) = value {
                suite.add_property((format!("trials.{name}"), format!("{value:.4}")));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::report::{REPORT_FAILURES_KEPT_MAX, ScenarioReport, correctness_failures};

    use super::*;

    fn failing(seeds_run: u64, failed: u64, listed: u64) -> SweepReport {
        SweepReport {
            scenarios: vec![ScenarioReport {
                name: "s".into(),
                seeds_run,
                seeds_failed: failed,
                failures_truncated: failed - listed,
                seeds_file: Some("seeds/s.seeds".into()),
                failures: correctness_failures(listed),
                ..ScenarioReport::default()
            }],
            ..SweepReport::default()
        }
    }

    /// The scenario's `<testsuite ...>` start tag.
    fn suite_line(xml: &str) -> &str {
        let start = xml.find("<testsuite ").expect("a testsuite");
        let end = start + xml[start..].find('>').expect("its end");
        &xml[start..end]
    }

    #[test]
    fn junit_is_escaped_and_counts_failures() {
        let xml = failing(10, 2, 2).junit().unwrap();
        let suite = suite_line(&xml);
        assert!(
            suite.contains("tests=\"10\"") && suite.contains("failures=\"2\""),
            "{xml}"
        );
        assert!(xml.contains("x &lt;y&gt;"), "{xml}");
        assert!(!xml.contains("x <y>"));
    }

    /// A worker death no run explained fails a suite of its own: a CI reporter shows
    /// the crash the exit code says (11), not a green sweep.
    #[test]
    fn an_unexplained_worker_death_is_a_failing_case() {
        let clean = failing(10, 0, 0);
        assert!(!clean.junit().unwrap().contains("worker processes"));
        let mut report = clean;
        report.worker_deaths_unexplained =
            vec!["a worker died in a batch of 2 runs (<...>): signal 9 (SIGKILL)".into()];
        let xml = report.junit().unwrap();
        let read = quick_junit::Report::deserialize_from_str(&xml).unwrap();
        let workers = &read.test_suites[1];
        assert_eq!(workers.name.as_str(), "worker processes");
        assert_eq!((workers.tests, workers.failures), (1, 1), "{xml}");
        assert!(xml.contains("type=\"crash\""), "{xml}");
        assert!(xml.contains("(&lt;...&gt;)"), "{xml}");
    }

    /// 237 failures once showed as 200 and the other 37 left the test count.
    #[test]
    fn every_seed_counts_and_unlisted_failures_are_named() {
        let listed = REPORT_FAILURES_KEPT_MAX as u64;
        let xml = failing(1000, 237, listed).junit().unwrap();
        let suite = suite_line(&xml);
        assert!(
            suite.contains("tests=\"1000\"") && suite.contains("failures=\"237\""),
            "{xml}"
        );
        assert!(xml.contains("name=\"37 more failing seeds\""), "{xml}");
        assert!(
            xml.contains("every failing seed is in seeds/s.seeds"),
            "{xml}"
        );
        assert_eq!(xml.matches("<failure ").count(), 201);
    }

    /// What a CI reporter reads back: the counts of every seed, and no byte that is not
    /// XML (a failure message may carry terminal colours or a NUL from the code under
    /// test).
    #[test]
    fn a_reader_gets_the_counts_and_no_control_characters() {
        let mut report = failing(50, 3, 3);
        report.scenarios[0].failures[0].message = "bad \u{1b}[31mred\u{0} <end>".into();
        let xml = report.junit().unwrap();
        let read = quick_junit::Report::deserialize_from_str(&xml).unwrap();
        let suite = &read.test_suites[0];
        assert_eq!((suite.tests, suite.failures), (50, 3));
        assert_eq!(suite.test_cases.len(), 4, "{xml}");
        assert!(!xml.contains('\u{1b}') && !xml.contains('\u{0}'), "{xml}");
        assert!(xml.contains("&lt;end&gt;"), "{xml}");
    }
}
