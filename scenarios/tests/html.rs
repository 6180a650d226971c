//! `dst replay --html` and `dst sweep --html` through the built binary: a failing canary
//! seed's page draws one mark per event of its full trace, each in its lane, with the
//! failure marker; the sweep page (and `dst merge --html`'s) lists the command that
//! renders each failure's page;
//! an unwritable path is a usage error naming it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use umi_dst::scenario::run_one;
use umi_scenarios::canary_lost_update::CanaryLostUpdate;
use umi_sweep::html::timeline::{Lane, lane_of};

const SCENARIO: &str = "canary_lost_update";

fn dst(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dst"))
        .args(args)
        .output()
        .unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("umi-html-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The first failing seed of the lost-update canary, and its run (full trace kept).
fn failing_seed() -> (u64, umi_dst::simulation::SeedRun) {
    (1..=100)
        .map(|seed| {
            let run = run_one(&CanaryLostUpdate, seed, false, |mut config| {
                config.trace_full = true;
                config
            });
            (seed, run)
        })
        .find(|(_, run)| run.failure.is_some())
        .expect("the lost-update canary is found within 100 seeds")
}

/// The JSON a page embeds in `<script type="application/json" id="…">`.
fn embedded(html: &str, id: &str) -> serde_json::Value {
    let open = format!("<script type=\"application/json\" id=\"{id}\">");
    let start = html.find(&open).expect("embedded data") + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).unwrap()
}

fn assert_nothing_from_the_web(html: &str) {
    for attribute in ["src=", "href="] {
        for (at, _) in html.match_indices(attribute) {
            let value = html[at + attribute.len()..].trim_start_matches(['"', '\'']);
            assert!(
                !value.starts_with("http:")
                    && !value.starts_with("https:")
                    && !value.starts_with("//"),
                "an external resource: {}",
                &html[at..(at + 80).min(html.len())]
            );
        }
    }
}

#[test]
fn a_failing_seed_renders_its_timeline_with_the_failure() {
    let (seed, run) = failing_seed();
    let dir = scratch("replay");
    let page = dir.join("replay.html");
    let output = dst(&[
        "replay",
        "--scenario",
        SCENARIO,
        "--seed",
        &seed.to_string(),
        "--html",
        page.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let (class, message) = run.failure.clone().unwrap();
    assert_eq!(output.status.code(), Some(class.exit_code()), "{stdout}");
    let html = std::fs::read_to_string(&page).unwrap();
    let trace = run.full_trace.as_ref().unwrap();
    assert_eq!(
        u64::try_from(trace.len()).unwrap(),
        run.events,
        "the whole trace was kept"
    );
    let mut by_lane: BTreeMap<Lane, usize> = BTreeMap::new();
    for event in trace {
        *by_lane.entry(lane_of(event.kind)).or_default() += 1;
    }
    for lane in Lane::ALL {
        let marks = html
            .matches(&format!("data-lane=\"{}\"", lane.name()))
            .count();
        assert_eq!(marks, by_lane.get(&lane).copied().unwrap_or(0), "{lane:?}");
    }
    assert!(
        by_lane.len() >= 3,
        "a canary run touches several lanes: {by_lane:?}"
    );
    let data = embedded(&html, "trace");
    assert_eq!(data["events"].as_array().unwrap().len(), trace.len());
    assert_eq!(data["failed"], serde_json::Value::Bool(true));
    assert_eq!(html.matches("id=\"failure\"").count(), 1);
    let first_line = message.lines().next().unwrap();
    assert!(
        html.contains(&umi_sweep::html::escape(first_line)),
        "{first_line}"
    );
    assert!(html.contains(&format!("{seed} (0x{seed:x})")));
    assert!(html.contains(&run.trace_hash.to_string()));
    assert!(html.contains(&format!("replay --scenario {SCENARIO} --seed {seed}")));
    assert_nothing_from_the_web(&html);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_passing_seed_has_no_failure_marker() {
    let seed = (1..=100)
        .find(|&seed| {
            run_one(&CanaryLostUpdate, seed, false, |c| c)
                .failure
                .is_none()
        })
        .expect("some seed passes");
    let dir = scratch("passing");
    let page = dir.join("passing.html");
    let output = dst(&[
        "replay",
        "--scenario",
        SCENARIO,
        "--seed",
        &seed.to_string(),
        "--check-determinism",
        "--html",
        page.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("id=\"failure\""));
    assert!(
        html.contains("the same event for event"),
        "the check's two runs agree"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_sweep_page_lists_the_command_that_renders_each_failure() {
    let dir = scratch("sweep");
    let page = dir.join("sweep.html");
    let json = dir.join("sweep.json");
    let output = dst(&[
        "sweep",
        "--scenario",
        SCENARIO,
        "--seeds",
        "30",
        "--jobs",
        "2",
        "--no-record",
        "--quiet",
        "--report",
        json.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the canary's failures are expected: {stdout}"
    );
    let merged_page = dir.join("merged.html");
    let output = dst(&[
        "merge",
        json.to_str().unwrap(),
        "--html",
        merged_page.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    let report = embedded(&html, "report");
    let failures = report["scenarios"][0]["failures"].as_array().unwrap();
    assert!(!failures.is_empty(), "the canary is found in 30 seeds");
    for failure in failures {
        let seed = failure["seed"].as_u64().unwrap();
        let command = format!("--seed {seed} --html replay-{SCENARIO}-{seed}.html");
        assert!(html.contains(&command), "{command}");
    }
    assert_eq!(html.matches("class=\"bar canary\"").count(), 1);
    assert_nothing_from_the_web(&html);
    let merged = std::fs::read_to_string(&merged_page).unwrap();
    assert_eq!(
        embedded(&merged, "report")["scenarios"][0]["failures"],
        report["scenarios"][0]["failures"],
        "dst merge --html renders the same failures"
    );
    assert!(merged.contains(&format!("--html replay-{SCENARIO}-")));
    let refused = dst(&[
        "merge",
        json.to_str().unwrap(),
        "--html",
        "/nonexistent-umi-dir/m.html",
    ]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("--html /nonexistent-umi-dir/m.html"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unwritable_html_path_is_a_usage_error_naming_it() {
    let missing = Path::new("/nonexistent-umi-dir/page.html");
    let output = dst(&[
        "replay",
        "--scenario",
        SCENARIO,
        "--seed",
        "1",
        "--html",
        missing.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--html /nonexistent-umi-dir/page.html"),
        "{stderr}"
    );
    let output = dst(&[
        "sweep",
        "--scenario",
        SCENARIO,
        "--seeds",
        "1",
        "--no-record",
        "--quiet",
        "--html",
        missing.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--html /nonexistent-umi-dir/page.html"),
        "{stderr}"
    );
}
