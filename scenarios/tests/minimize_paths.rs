//! `dst minimize` on paths: a failing path keeps only the branch points its failure needs
//! (here one of three), then its faults shrink with the path fixed; a seed alone minimizes
//! exactly as before paths existed; the command takes `--path` beside `--seed` and
//! refuses a bad path by name.

use std::process::{Command, Output};

use futures::future::LocalBoxFuture;
use umi_dst::scenario::run_one;
use umi_dst::{DeterministicRng, RunPath, Scenario, SimEnvironment, Violation, ensure};
use umi_scenarios::canary::Canary;
use umi_scenarios::outbox_drains::OutboxGivesUp;
use umi_sweep::minimize::{minimize, minimize_path};

/// Sleeps (a step each) before the sentinel's draw.
const SLEEPS_BEFORE_DRAW: u64 = 40;

/// Sleeps after it, so that later branch points are passed (and rekey later draws).
const SLEEPS_AFTER_DRAW: u64 = 1_000;

/// A toy whose run fails exactly when a branch point switched its one decisive draw,
/// made after step `SLEEPS_BEFORE_DRAW`: the failure needs a branch before that step and
/// none after it.
struct DrawSentinel;

impl Scenario for DrawSentinel {
    fn name(&self) -> &'static str {
        "draw_sentinel"
    }
    fn goal(&self) -> &'static str {
        "fails when a branch point switched its decisive draw"
    }
    fn run(&self, sim: SimEnvironment) -> LocalBoxFuture<'static, Result<(), Violation>> {
        Box::pin(async move {
            let env = sim.env();
            let pause = std::time::Duration::from_millis(1);
            for _ in 0..SLEEPS_BEFORE_DRAW {
                env.sleep(pause).await;
            }
            let drawn = sim.fork_rng("sentinel").next_u64();
            let seed_alone = DeterministicRng::new(sim.seed())
                .fork("sentinel")
                .next_u64();
            for _ in 0..SLEEPS_AFTER_DRAW {
                env.sleep(pause).await;
            }
            ensure!(drawn == seed_alone, "the sentinel's draw was switched");
            Ok(())
        })
    }
}

fn path(text: &str) -> RunPath {
    text.parse().unwrap()
}

/// Three branch points, all passed by the run; only the first, before the decisive draw,
/// is needed: the path minimizes to that one.
#[test]
fn a_path_whose_failure_needs_one_of_three_branches_minimizes_to_it() {
    let three = path("3/5:17/300:29/700:41");
    assert!(run_one(&DrawSentinel, 3, false, |c| c).failure.is_none());
    let found = minimize_path(&DrawSentinel, &three, false).unwrap();
    assert_eq!(found.original_path, three);
    assert_eq!(found.path, path("3/5:17"), "{found:?}");
    assert!(found.minimal.is_empty() && found.original.is_empty());
    // Each of the other two alone passes: they were not needed.
    for alone in ["3/300:29", "3/700:41"] {
        assert!(
            minimize_path(&DrawSentinel, &path(alone), false).is_err(),
            "{alone} fails"
        );
    }
}

/// A seed alone minimizes as it did before paths: the same result as `minimize`, no
/// branch phase (no extra replays), and the seed alone as the path.
#[test]
fn a_seed_alone_minimizes_as_before() {
    let seed = (1..=100)
        .find(|&seed| run_one(&Canary, seed, false, |c| c).failure.is_some())
        .expect("the canary is found within 100 seeds");
    let by_seed = minimize(&Canary, seed, false).unwrap();
    let by_path = minimize_path(&Canary, &RunPath::from_seed(seed), false).unwrap();
    assert_eq!(by_seed, by_path);
    assert_eq!(by_seed.path, RunPath::from_seed(seed));
    assert!(!by_seed.minimal.is_empty());
}

fn dst(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dst"))
        .args(args)
        .output()
        .unwrap()
}

/// `dst minimize --path`: the fewest branch points, then the smallest fault set, with the
/// failure class's exit code and one replay line naming the path; `--seed` prints no
/// branch line; a bad path or both flags are usage errors naming what was wrong.
#[test]
fn dst_minimize_takes_a_path_beside_a_seed() {
    let seed = (1..=40)
        .find(|&seed| {
            run_one(&OutboxGivesUp, seed, false, |c| c)
                .failure
                .is_some()
        })
        .expect("outbox_gives_up fails within 40 seeds");
    let late = path(&format!("{seed}/100000:7/200000:8"));
    let output = dst(&[
        "minimize",
        "--scenario",
        "outbox_gives_up",
        "--path",
        &late.to_string(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(12), "{stdout}");
    assert!(
        stdout.contains(&format!("path {late} of outbox_gives_up fails (liveness)"))
            && stdout.contains(&format!(
                "branch points: 2; fewest that still fail: 0 ({seed})"
            ))
            && stdout.contains(&format!(
                "replay: dst replay --scenario outbox_gives_up --seed {seed} --only '"
            )),
        "{stdout}"
    );

    let by_seed = dst(&[
        "minimize",
        "--scenario",
        "outbox_gives_up",
        "--seed",
        &seed.to_string(),
    ]);
    let seed_out = String::from_utf8_lossy(&by_seed.stdout);
    assert_eq!(by_seed.status.code(), Some(12), "{seed_out}");
    assert!(!seed_out.contains("branch points"), "{seed_out}");
    assert!(seed_out.starts_with(&format!("seed {seed} of outbox_gives_up fails")));

    for (args, named) in [
        (vec!["--path", "7/0:3"], "step 0"),
        (vec!["--path", "7/x"], "STEP:STREAM"),
        (vec!["--seed", "7", "--path", "7/5:1"], "--path"),
    ] {
        let mut all = vec!["minimize", "--scenario", "outbox_gives_up"];
        all.extend(args.iter().copied());
        let refused = dst(&all);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(named), "{args:?}: {stderr}");
    }
}
