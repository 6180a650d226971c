//! Paths: a seed alone means what the seed means; a path replays exactly; a branch at
//! step S keeps the run up to S and switches every stream after it; the steps a run
//! records for its marks and injections are where a branch keeps them.

use std::time::Duration;

use umi_core::env::EnvironmentExt;
use umi_core::llm::{CompletionRequest, LanguageModel, Message};
use umi_dst::fault::point;
use umi_dst::simulation::SeedRun;
use umi_dst::trace::TraceEvent;
use umi_dst::{FaultConfig, FaultKind, RunPath, SimConfig, SimEnvironment, Simulation, Violation};

/// Rounds of [`streams_workload`].
const ROUNDS: u64 = 40;

/// Each round draws from an environment stream, a fresh `sim.rng` stream and a stream
/// forked before the loop, asks the injector, sleeps, sometimes calls SimLLM, and
/// records what it drew with the steps taken before and after its draws.
async fn streams_workload(sim: SimEnvironment) -> Result<(), Violation> {
    let env = sim.env();
    let mut early = sim.fork_rng("early");
    for round in 0..ROUNDS {
        let from = sim.steps();
        let a = env.random_u64("a");
        let b = sim.rng("work").next_u64();
        let fault = sim.fault(&point::LLM_CALL);
        if fault.is_some() {
            env.cover("paths.fault_seen");
        }
        let wait = env.random_in_range("wait", 1, 100);
        env.sleep(Duration::from_millis(wait)).await;
        let c = early.next_u64();
        let mut answer = String::new();
        if round % 10 == 5 {
            let request = CompletionRequest::new(vec![Message::user(format!("round {round}"))]);
            answer = match sim.llm().complete(&request).await {
                Ok(response) => response.text,
                Err(error) => error.to_string(),
            };
        }
        let to = sim.steps();
        env.record(
            "round",
            format_args!(
                "round={round} from={from} to={to} a={a:x} b={b:x} c={c:x} \
                 fault={fault:?} answer={}",
                answer.len()
            ),
        );
    }
    Ok(())
}

fn config(path: &RunPath) -> SimConfig {
    let mut config = SimConfig::new(0)
        .with_fault(FaultConfig::chance(FaultKind::LlmTimeout, 0.5))
        .for_path(path);
    config.trace_full = true;
    config
}

fn run(path: &str) -> SeedRun {
    let path: RunPath = path.parse().unwrap();
    let run = Simulation::new(config(&path)).run_seed(path.seed, &streams_workload);
    assert!(run.passed(), "{path}: {:?}", run.failure);
    assert_eq!(run.path, path);
    run
}

fn events(run: &SeedRun) -> &[TraceEvent] {
    run.full_trace.as_deref().unwrap()
}

/// The `round` records: (from, to, the values drawn) per round.
fn rounds(run: &SeedRun) -> Vec<(u64, u64, Vec<String>)> {
    events(run)
        .iter()
        .filter(|event| event.kind == "round")
        .map(|event| {
            let detail = event.to_string();
            let field = |name: &str| {
                let start = detail.find(&format!(" {name}=")).unwrap() + name.len() + 2;
                let rest = &detail[start..];
                rest[..rest.find(' ').unwrap_or(rest.len())].to_owned()
            };
            let values = ["a", "b", "c"].map(field).to_vec();
            (
                field("from").parse().unwrap(),
                field("to").parse().unwrap(),
                values,
            )
        })
        .collect()
}

#[test]
fn a_seed_alone_is_exactly_the_seed() {
    let mut plain = SimConfig::new(11).with_fault(FaultConfig::chance(FaultKind::LlmTimeout, 0.5));
    plain.trace_full = true;
    let seed = Simulation::new(plain).run_seed(11, &streams_workload);
    let path = run("11");
    assert_eq!(path.trace_hash, seed.trace_hash);
    assert_eq!(path.steps, seed.steps);
    assert_eq!(events(&path), events(&seed));
    assert_eq!(seed.path, RunPath::from_seed(11));
}

#[test]
fn a_path_replays_exactly() {
    let first = run("11/100:5");
    let second = run("11/100:5");
    assert_eq!(first.trace_hash, second.trace_hash);
    assert_eq!(events(&first), events(&second));
    assert_ne!(first.trace_hash, run("11").trace_hash);
    assert_ne!(first.trace_hash, run("11/100:6").trace_hash);
    assert_ne!(first.trace_hash, run("11/101:5").trace_hash);
}

/// Every round drawn before step 100 is the seed's; every round whose draws all come at
/// or after it draws other numbers on each of its streams (the environment's, a fresh
/// `sim.rng` and one forked before the branch); the trace is the seed's up to there.
#[test]
fn a_branch_keeps_the_prefix_and_switches_every_stream() {
    const STEP: u64 = 100;
    let seed = run("11");
    let branched = run("11/100:5");
    let (seed_rounds, branched_rounds) = (rounds(&seed), rounds(&branched));
    assert_eq!(seed_rounds.len() as u64, ROUNDS);
    let mut kept = 0;
    let mut switched = 0;
    for (seed_round, branched_round) in seed_rounds.iter().zip(&branched_rounds) {
        let (from, to, values) = seed_round;
        if *to < STEP {
            assert_eq!(seed_round, branched_round, "drawn before the branch");
            kept += 1;
        } else if *from + 1 >= STEP {
            for (stream, (seed_value, branched_value)) in ["a", "b", "c"]
                .iter()
                .zip(values.iter().zip(&branched_round.2))
            {
                assert_ne!(
                    seed_value, branched_value,
                    "stream {stream} after the branch"
                );
            }
            switched += 1;
        }
    }
    assert!(
        kept >= 5 && switched >= 20,
        "kept {kept}, switched {switched}"
    );
    let last_kept = events(&seed)
        .iter()
        .rposition(|event| event.kind == "round" && rounds_to(event) < STEP)
        .unwrap();
    assert_eq!(
        events(&seed)[..=last_kept],
        events(&branched)[..=last_kept],
        "the trace up to the branch"
    );
}

fn rounds_to(event: &TraceEvent) -> u64 {
    let detail = event.to_string();
    let start = detail.find(" to=").unwrap() + 4;
    let rest = &detail[start..];
    rest[..rest.find(' ').unwrap()].parse().unwrap()
}

/// A branch at an injection's recorded step keeps it and every injection before it (the
/// same ids at the same steps); a branch one step earlier redraws it, and on some stream
/// it no longer fires. The same holds for a mark's first hit.
#[test]
fn recorded_steps_are_where_a_branch_keeps_them() {
    let seed = run("11");
    assert_eq!(seed.injection_steps.len(), seed.injections.len());
    assert!(seed.injections.len() >= 8, "{}", seed.injections.len());
    let k = 5;
    let step = seed.injection_steps[k];
    for stream in 1..=4 {
        let branched = run(&format!("11/{step}:{stream}"));
        assert_eq!(branched.injections[..=k], seed.injections[..=k]);
        assert_eq!(branched.injection_steps[..=k], seed.injection_steps[..=k]);
    }
    let lost = (1..=8).any(|stream| {
        let earlier = run(&format!("11/{}:{stream}", step - 1));
        earlier.injections.get(k) != seed.injections.get(k)
    });
    assert!(
        lost,
        "a branch before the injection's draw never changed it"
    );

    let mark = seed.mark_steps["paths.fault_seen"];
    let branched = run(&format!("11/{mark}:3"));
    assert_eq!(branched.mark_steps["paths.fault_seen"], mark);
    assert!(seed.mark_steps.keys().all(|m| seed.marks.contains_key(m)));
}

/// A stream forked before the branch point and one forked after it draw the same numbers
/// after it; an environment stream opened before it carries on from its fresh stream as
/// one opened after it starts.
#[test]
fn streams_opened_before_and_after_a_branch_agree() {
    let draws = |open_early: bool| {
        let config = SimConfig::new(3).for_path(&"3/5:42".parse().unwrap());
        Simulation::new(config).run_seed(3, &|sim: SimEnvironment| async move {
            let env = sim.env();
            let early = sim.fork_rng("x");
            if open_early {
                env.random_u64("s");
            }
            while sim.steps() < 6 {
                env.random_u64("spin");
            }
            let mut fork = if open_early { early } else { sim.fork_rng("x") };
            let value = fork.next_u64() ^ env.random_u64("s");
            env.record("value", format_args!("{value:x}"));
            Ok(())
        })
    };
    let (early, late) = (draws(true), draws(false));
    let value = |run: &SeedRun| {
        run.tail
            .iter()
            .find(|event| event.kind == "value")
            .map(ToString::to_string)
            .unwrap()
    };
    assert_eq!(value(&early), value(&late));
}

#[test]
fn bad_branches_are_a_config_error() {
    let config = SimConfig::new(1).with_branches(vec![umi_dst::Branch { step: 0, stream: 1 }]);
    let error = Simulation::new(config)
        .try_run(|_sim| async { Ok(()) })
        .unwrap_err();
    assert!(error.to_string().contains("branch 1: step 0"), "{error}");
}

fn temp_corpus(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("umi-dst-paths-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The paths a simulation ran, in order.
fn paths_run(sim: &Simulation) -> Vec<String> {
    let seen = std::sync::Mutex::new(Vec::new());
    sim.try_run(|sim: umi_dst::SimEnvironment| {
        seen.lock().unwrap().push(sim.path().to_string());
        async { Ok(()) }
    })
    .unwrap();
    seen.into_inner().unwrap()
}

fn settings(pairs: &[(&str, &str)]) -> umi_dst::simulation::settings::Settings {
    umi_dst::simulation::settings::Settings::from_lookup(|name| {
        pairs
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| (*value).to_owned())
    })
    .unwrap()
}

/// `DST_PATH` replays that path alone; corpus lines holding paths run as those paths,
/// and with `DST_PATH` only the lines holding that very path run besides it.
#[test]
fn dst_path_and_corpus_paths_run_as_paths() {
    let corpus = temp_corpus("kept.seeds", "7/5:1  # a path\n7\n9/2:3 swarm\n");
    let chosen = Simulation::with_settings(settings(&[("DST_PATH", "7/5:1")]))
        .with_corpus(&corpus)
        .with_seeds(1..=3);
    assert_eq!(
        paths_run(&chosen),
        ["7/5:1"],
        "the kept 7/5:1 rides on the run"
    );
    let seed = Simulation::with_settings(settings(&[("DST_SEED", "7")])).with_corpus(&corpus);
    assert_eq!(paths_run(&seed), ["7"]);
    let range = Simulation::with_settings(settings(&[]))
        .with_corpus(&corpus)
        .with_seeds(1..=2);
    assert_eq!(paths_run(&range), ["1", "2", "7/5:1", "7", "9/2:3"]);
}

#[test]
fn a_bad_path_line_names_file_line_and_part() {
    let corpus = temp_corpus("bad.seeds", "7\n7/0:1  # step zero\n");
    let error = Simulation::new(SimConfig::new(1))
        .try_with_corpus(&corpus)
        .unwrap_err()
        .to_string();
    assert!(error.contains("bad.seeds:2"), "{error}");
    assert!(error.contains("path branch 1: step 0"), "{error}");
}

/// A failing path's report names the path and replays it with `DST_PATH`.
#[test]
fn a_failing_path_prints_its_path_in_the_replay_line() {
    let sim = Simulation::with_settings(settings(&[("DST_PATH", "4/2:8")]));
    let Err(umi_dst::RunError::Failed(report)) = sim.try_run(async |sim| {
        umi_dst::ensure!(sim.path().is_seed_only(), "ran {}", sim.path());
        Ok(())
    }) else {
        panic!("the path ran without its branch points");
    };
    assert_eq!(report.path.to_string(), "4/2:8");
    assert!(
        report
            .replay_command()
            .starts_with("DST_PATH=4/2:8 cargo test")
    );
    let printed = report.to_string();
    assert!(printed.contains("path:      4/2:8"), "{printed}");
}
