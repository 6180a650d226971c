//! The liveness phase in a scenario, both ways: `outbox_gives_up` (a drainer that stops
//! for good after two failures in a row) is found within `LIVENESS_SEEDS_MAX` seeds as a
//! liveness failure naming "the outbox drains" and its bound, and `dst replay` exits with
//! the liveness code and prints it; `outbox_drains`, the correct drainer, passes the same
//! seed (its default range is in the `scenarios` module's tests).

use std::process::Command;

use umi_dst::scenario::run_one;
use umi_dst::{FailureClass, Scenario};
use umi_scenarios::outbox_drains::{OutboxDrains, OutboxGivesUp};

/// Seeds within which the planted drainer must be caught.
const LIVENESS_SEEDS_MAX: u64 = 40;

/// The first seed (from 1) at which `outbox_gives_up` fails, with its failure.
fn first_failure() -> (u64, FailureClass, String) {
    (1..=LIVENESS_SEEDS_MAX)
        .find_map(|seed| {
            run_one(&OutboxGivesUp, seed, false, |config| config)
                .failure
                .map(|(class, message)| (seed, class, message))
        })
        .unwrap_or_else(|| {
            panic!("outbox_gives_up passed seeds 1..={LIVENESS_SEEDS_MAX}: the liveness phase missed it")
        })
}

#[test]
fn a_drainer_that_gives_up_fails_as_liveness_and_the_correct_one_passes() {
    let (seed, class, message) = first_failure();
    assert_eq!(class, FailureClass::Liveness, "seed {seed}: {message}");
    for expected in [
        "`the outbox drains` did not hold within 120.000s",
        "after the faults healed at",
        "facts still queued",
    ] {
        assert!(
            message.contains(expected),
            "seed {seed}: {expected:?} not in {message}"
        );
    }
    let correct = run_one(&OutboxDrains, seed, false, |config| config);
    assert_eq!(correct.failure, None, "seed {seed}");
    assert_eq!(OutboxGivesUp.faults(), OutboxDrains.faults());

    let output = Command::new(env!("CARGO_BIN_EXE_dst"))
        .args(["replay", "--scenario", "outbox_gives_up", "--seed"])
        .arg(seed.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(FailureClass::Liveness.exit_code()),
        "{stdout}"
    );
    assert!(
        stdout.contains("liveness") && stdout.contains("`the outbox drains`"),
        "{stdout}"
    );
}
