//! Fault injection over many operations: rates within statistical bounds, scoping by
//! domain and operation, and swarm mode.

use umi_dst::fault::OperationFilter;
use umi_dst::{FaultConfig, FaultDomain, FaultKind, SimConfig, Simulation, Violation, ensure};

/// Runs `operations` storage writes with `config` on seed `seed` and returns how many
/// faults fired.
fn count_injections(seed: u64, config: FaultConfig, operations: u64) -> u64 {
    let injected = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = injected.clone();
    Simulation::new(SimConfig::new(seed).with_fault(config))
        .try_run(move |sim| {
            let counter = counter.clone();
            async move {
                let fired = (0..operations)
                    .filter(|_| sim.fault(FaultDomain::Storage, "storage.write").is_some())
                    .count() as u64;
                counter.store(fired, std::sync::atomic::Ordering::Relaxed);
                ensure!(
                    sim.faults().stats().injected_total() == fired,
                    "stats disagree"
                );
                Ok::<(), Violation>(())
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
            FaultConfig::new(FaultKind::StorageWriteFail, 0.0).unwrap(),
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
    let elsewhere = FaultConfig::always(FaultKind::StorageWriteFail)
        .with_filter(OperationFilter::Prefix("storage.delete".into()))
        .unwrap();
    assert_eq!(count_injections(2, elsewhere, 500), 0);
}

/// The original harness's scoping bug, pinned: a storage fault at probability 1 never
/// fires on LLM calls.
#[test]
fn storage_faults_never_touch_llm_calls() {
    Simulation::new(SimConfig::new(1).with_fault(FaultConfig::always(FaultKind::StorageDiskFull)))
        .try_run(|sim| async move {
            for _ in 0..1_000 {
                ensure!(
                    sim.fault(FaultDomain::Llm, "llm.complete").is_none(),
                    "storage fault on an LLM call"
                );
            }
            ensure!(
                sim.fault(FaultDomain::Storage, "storage.write").is_some(),
                "fault inactive"
            );
            Ok::<(), Violation>(())
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
        let sim = Simulation::new(SimConfig::new(seed).with_swarm(&kinds));
        let run = sim.run_seed(seed, &|sim: umi_dst::SimEnvironment| async move {
            for _ in 0..2_000 {
                sim.fault(FaultDomain::Storage, "storage.write");
            }
            Ok::<(), Violation>(())
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
