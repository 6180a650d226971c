//! The default sweep (every scenario, seeds 1 to `SWEEP_SEEDS_DEFAULT`) is clean, finds
//! the canary, and reaches every coverage mark each scenario names: a scenario whose
//! faults stopped reaching a rare path fails here, not silently in the nightly sweep.

use umi_sweep::ProgressStyle;
use umi_sweep::options::SWEEP_SEEDS_DEFAULT;
use umi_sweep::{SweepOptions, run};

#[test]
fn the_default_sweep_is_clean_and_hits_every_mark() {
    let options = SweepOptions::default()
        .with_seeds(SWEEP_SEEDS_DEFAULT)
        .with_jobs(2)
        .with_progress(ProgressStyle::Quiet);
    let report = run(&umi_scenarios::all(), &options).expect("the default options are valid");
    assert!(report.completed, "{}", report.table());
    assert_eq!(report.regressions(), 0, "{}", report.table());
    assert!(report.canaries_missed().is_empty(), "{}", report.table());
    for scenario in &report.scenarios {
        assert_eq!(scenario.seeds_run, SWEEP_SEEDS_DEFAULT, "{}", scenario.name);
        assert!(
            !scenario.marks_required.is_empty(),
            "{} names no coverage marks",
            scenario.name
        );
        assert!(
            scenario.marks_missing().is_empty(),
            "{} missed marks {:?}\n{}",
            scenario.name,
            scenario.marks_missing(),
            report.table()
        );
        assert!(
            scenario.canary || scenario.faults_injected.values().sum::<u64>() > 0,
            "{} injected no faults",
            scenario.name
        );
    }
    assert_eq!(report.exit_code(), 0);
}
