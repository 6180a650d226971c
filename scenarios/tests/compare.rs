//! `dst compare` on reports the `dst` binary wrote: two sweeps of the same seeds are the
//! same (exit 0, no change), a doctored pass rate is a regression naming its scenario
//! (exit 1), and sweeps of other seeds, or a file that is not a report, are refused
//! (exit 2).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A canary (shown, never gated) and a real scenario (gated), both cheap.
const SCENARIOS: [&str; 2] = ["canary_lost_update", "router_fallback_chain"];
/// The scenario the doctored report regresses.
const DOCTORED: &str = "router_fallback_chain";
/// Seeds per sweep.
const SEEDS: u64 = 40;

/// A fresh path in the temp directory, unique to this test process and `name`.
fn temp(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("umi-compare-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

/// `dst sweep` over [`SCENARIOS`] and `seeds` seeds, its JSON report at `report`.
fn sweep(report: &Path, seeds: u64) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dst"));
    command
        .args(["sweep", "--seeds", &seeds.to_string()])
        .args(["--jobs", "1", "--quiet", "--no-record", "--report"])
        .arg(report)
        .stdin(Stdio::null());
    for scenario in SCENARIOS {
        command.args(["--scenario", scenario]);
    }
    let output = command.output().unwrap();
    assert!(
        report.exists(),
        "the sweep wrote no report (exit {:?}): {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn compare(before: &Path, after: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new(env!("CARGO_BIN_EXE_dst"))
        .arg("compare")
        .arg(before)
        .arg(after)
        .args(extra)
        .output()
        .unwrap();
    (
        status.code(),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

/// `report` with [`DOCTORED`] failing 30 of its seeds, written to `to`.
fn doctor(report: &Path, to: &Path) {
    let text = std::fs::read_to_string(report).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let scenarios = json["scenarios"].as_array_mut().unwrap();
    let scenario = scenarios
        .iter_mut()
        .find(|s| s["name"] == DOCTORED)
        .unwrap_or_else(|| panic!("{DOCTORED} in the report"));
    assert_eq!(scenario["seeds_run"], SEEDS, "{scenario}");
    scenario["seeds_failed"] = 30.into();
    scenario["failures_by_class"] = serde_json::json!({ "correctness": 30 });
    std::fs::write(to, serde_json::to_string_pretty(&json).unwrap()).unwrap();
}

#[test]
fn dst_compare_passes_the_same_sweep_fails_a_drop_and_refuses_other_seeds() {
    let (a, b) = (temp("a.json"), temp("b.json"));
    sweep(&a, SEEDS);
    sweep(&b, SEEDS);
    let json = temp("verdicts.json");
    let (code, stdout, stderr) = compare(&a, &b, &["--json", json.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("no change larger than the noise"),
        "{stdout}"
    );
    assert!(stdout.contains("canary (not gated)"), "{stdout}");
    let verdicts: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(verdicts["regression"], false, "{verdicts}");

    let doctored = temp("doctored.json");
    doctor(&b, &doctored);
    let (code, stdout, stderr) = compare(&a, &doctored, &[]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("REGRESSION in {DOCTORED}")),
        "{stdout}"
    );
    assert!(stderr.contains(DOCTORED), "{stderr}");
    // The other way round it is an improvement.
    let (code, stdout, _) = compare(&doctored, &a, &[]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(
        stdout.contains(&format!("improvement in {DOCTORED}")),
        "{stdout}"
    );

    let fewer = temp("fewer.json");
    sweep(&fewer, SEEDS / 2);
    let (code, _, stderr) = compare(&a, &fewer, &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("seeds: 40 in BEFORE, 20 in AFTER"),
        "{stderr}"
    );

    let garbage = temp("garbage.json");
    std::fs::write(&garbage, "{\"schema\": 2,\n  oops").unwrap();
    let (code, _, stderr) = compare(&a, &garbage, &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(garbage.to_str().unwrap()) && stderr.contains("line 2 column"),
        "{stderr}"
    );
    for path in [a, b, json, doctored, fewer, garbage] {
        let _ = std::fs::remove_file(path);
    }
}
