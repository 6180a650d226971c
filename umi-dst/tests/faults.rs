//! Fault injection over many operations: rates within statistical bounds, scoping by
//! domain and operation, and swarm mode.

use umi_dst::fault::OperationFilter;
use umi_dst::fault::point;
use umi_dst::{FaultConfig, FaultKind, RunError, SimConfig, Simulation, ensure};

/// Runs `operations` storage writes with `config` on seed `seed` and returns how many
/// faults fired.
fn count_injections(seed: u64, config: FaultConfig, operations: u64) -> u64 {
    let injected = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = injected.clone();
    Simulation::new(SimConfig::new(seed).with_fault(config))
        .try_run(move |sim: umi_dst::SimEnvironment| {
            let counter = counter.clone();
            async move {
                let fired = (0..operations)
                    .filter(|_| sim.fault(&point::STORAGE_WRITE).is_some())
                    .count() as u64;
                counter.store(fired, std::sync::atomic::Ordering::Relaxed);
                ensure!(
                    sim.faults().stats().injected_total() == fired,
                    "stats disagree"
                );
                Ok(())
            }
        })
        .unwrap();
    injected.load(std::sync::atomic::Ordering::Relaxed)
}

/// A fault at probability p fires within five standard deviations of p·n, on every
/// seed tried (Binomial(n, p); a false alarm has odds below one in a million per seed).
#[test]
fn fault_rate_matches_probability() {
    let n = 10_000u64;
    for (p, seeds) in [(0.1, 1..=5u64), (0.01, 6..=10)] {
        let mean = p * n as f64;
        let bound = 5.0 * (n as f64 * p * (1.0 - p)).sqrt();
        for seed in seeds {
            let fault = FaultConfig::new(FaultKind::StorageWriteFail, p).unwrap();
            let fired = count_injections(seed, fault, n) as f64;
            assert!(
                (fired - mean).abs() <= bound,
                "p={p} seed={seed}: {fired} fired, expected {mean}±{bound}"
            );
        }
    }
}

#[test]
fn zero_and_one_are_exact() {
    assert_eq!(
        count_injections(
            1,
            FaultConfig::chance(FaultKind::StorageWriteFail, 0.0),
            1_000
        ),
        0
    );
    assert_eq!(
        count_injections(1, FaultConfig::always(FaultKind::StorageWriteFail), 1_000),
        1_000
    );
}

#[test]
fn caps_and_filters_hold_over_a_run() {
    let capped = FaultConfig::always(FaultKind::StorageWriteFail).with_max_injections(3);
    assert_eq!(count_injections(2, capped, 500), 3);
    let warmed = FaultConfig::always(FaultKind::StorageWriteFail)
        .with_filter(OperationFilter::Prefix("storage.wr".into()))
        .unwrap()
        .with_after_operations(400);
    assert_eq!(count_injections(2, warmed, 500), 100);
}

/// A rule that can never fire is refused before any seed runs: here a write fault
/// filtered to deletes (where only `storage.delete_fail` can fire), and a typo.
#[test]
fn rules_that_cannot_fire_are_refused_at_configuration() {
    for (kind, filter) in [
        (FaultKind::StorageWriteFail, "storage.delete*"),
        (FaultKind::StorageReadFail, "storage.serch"),
        (FaultKind::LlmTimeout, "llm.complete"),
    ] {
        let rule = FaultConfig::always(kind)
            .with_filter(OperationFilter::parse(filter))
            .unwrap();
        let error = Simulation::new(SimConfig::new(1).with_fault(rule))
            .try_run(|_sim| async { Ok(()) })
            .unwrap_err();
        assert!(
            matches!(error, RunError::Config(_)),
            "{kind} on {filter}: {error}"
        );
        assert!(
            error.to_string().contains(filter.trim_end_matches('*')),
            "{error}"
        );
    }
}

/// A rule that reaches no operation over a whole run fails the test after it, naming the
/// rule: the code under test never did what the filter names.
#[test]
fn a_rule_that_reached_nothing_fails_the_run() {
    let rule = FaultConfig::always(FaultKind::StorageDeleteFail);
    let error = Simulation::new(SimConfig::new(1).with_fault(rule))
        .with_seeds(1..=3)
        .try_run(async |sim| {
            sim.fault(&point::STORAGE_WRITE);
            Ok(())
        })
        .unwrap_err();
    let RunError::Unreached(unreached) = error else {
        panic!("expected unreached rules, got {error}");
    };
    assert_eq!(unreached.seeds, 3);
    assert_eq!(unreached.rules.len(), 1);
    assert!(
        unreached.rules[0].contains("storage.delete_fail"),
        "{unreached}"
    );

    // The same rule, reached once in one seed of three: fine.
    let reached = FaultConfig::chance(FaultKind::StorageDeleteFail, 0.0);
    Simulation::new(SimConfig::new(1).with_fault(reached))
        .with_seeds(1..=3)
        .try_run(async |sim| {
            if sim.seed() == 2 {
                sim.fault(&point::STORAGE_DELETE);
            }
            Ok(())
        })
        .unwrap();
}

/// Swarm mode keeps a scenario's scoping: a rule filtered to searches never fires on a
/// plain read, whatever the seed draws (swarm once re-created rules unscoped).
#[test]
fn swarm_keeps_filters() {
    let searches = FaultConfig::chance(FaultKind::StorageReadFail, 0.2)
        .on_operation("storage.search")
        .unwrap();
    let mut fired_on_search = 0;
    for seed in 0..32 {
        let sim = Simulation::new(
            SimConfig::new(seed)
                .with_fault(searches.clone())
                .with_swarm(),
        );
        let run = sim.run_seed(seed, &|sim: umi_dst::SimEnvironment| async move {
            for _ in 0..200 {
                ensure!(sim.fault(&point::STORAGE_READ).is_none(), "a read faulted");
                sim.fault(&point::STORAGE_SEARCH);
            }
            Ok(())
        });
        assert!(run.passed(), "seed {seed}: {:?}", run.failure);
        fired_on_search += run.fault_stats.injected_total();
    }
    assert!(
        fired_on_search > 0,
        "swarm switched the rule on in some seed"
    );
}

/// The original harness's scoping bug, pinned: a storage fault at probability 1 never
/// fires on LLM calls.
#[test]
fn storage_faults_never_touch_llm_calls() {
    Simulation::new(SimConfig::new(1).with_fault(FaultConfig::always(FaultKind::StorageDiskFull)))
        .try_run(async |sim| {
            for _ in 0..1_000 {
                ensure!(
                    sim.fault(&point::LLM_CALL).is_none(),
                    "storage fault on an LLM call"
                );
            }
            ensure!(sim.fault(&point::STORAGE_WRITE).is_some(), "fault inactive");
            Ok(())
        })
        .unwrap();
}

/// Swarm mode draws per seed, logs what it drew, and the draws decide what fires.
#[test]
fn swarm_mode_varies_kinds_by_seed() {
    let kinds = [
        FaultKind::StorageWriteFail,
        FaultKind::StorageReadFail,
        FaultKind::StorageLatency,
    ];
    let mut patterns = std::collections::BTreeSet::new();
    for seed in 0..32 {
        let sim = Simulation::new(SimConfig::new(seed).with_swarm_over(&kinds));
        let run = sim.run_seed(seed, &|sim: umi_dst::SimEnvironment| async move {
            for _ in 0..2_000 {
                sim.fault(&point::STORAGE_WRITE);
            }
            Ok(())
        });
        assert!(run.passed());
        assert_eq!(run.swarm.len(), 3);
        let enabled: Vec<bool> = run.swarm.iter().map(|d| d.enabled).collect();
        let write_on = run.swarm[0].enabled;
        let fired = run
            .fault_stats
            .injected_by_kind
            .get(&FaultKind::StorageWriteFail)
            .copied()
            .unwrap_or(0);
        assert_eq!(
            write_on,
            fired > 0,
            "seed {seed}: write_fail on={write_on} fired={fired}"
        );
        patterns.insert(enabled);
    }
    assert!(
        patterns.len() >= 6,
        "32 seeds should cover most of the 8 on/off patterns: {patterns:?}"
    );
}
