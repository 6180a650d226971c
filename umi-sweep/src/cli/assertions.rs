//! Whether this `dst` may run seeds as built. The simulators' invariant checks and the
//! assertion pairs at their seams are `debug_assert!`s: on in the `sim` profile (release
//! plus debug assertions and overflow checks), off in plain `release`. A `dst` built
//! without them passes seeds that should fail, so the commands that run seeds (`sweep`,
//! `replay`, `minimize`) refuse to, as TigerBeetle's simulator does, unless told
//! otherwise with [`ALLOW_FLAG`] (to measure what the assertions cost:
//! `scripts/bench-sim-profile.sh`), and then they warn.
#![allow(clippy::print_stderr, reason = "a command-line front end warns")]

/// The flag that runs seeds without debug assertions anyway.
pub(crate) const ALLOW_FLAG: &str = "--allow-no-debug-assertions";

/// What a seed-running command does, given how `dst` was built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Debug assertions are on: run.
    Run,
    /// They are off but the user allowed it: run, with a warning.
    RunWarned,
    /// They are off and nobody allowed it: refuse.
    Refuse,
}

/// The decision: `debug_assertions` is whether this build has them, `allowed` whether
/// [`ALLOW_FLAG`] was given.
pub(crate) fn gate(debug_assertions: bool, allowed: bool) -> Gate {
    match (debug_assertions, allowed) {
        (true, _) => Gate::Run,
        (false, true) => Gate::RunWarned,
        (false, false) => Gate::Refuse,
    }
}

/// What a refusal (or, with the flag, the warning) says.
pub(crate) fn without_assertions_text() -> String {
    "this dst was built without debug assertions (plain `--release`?), so the invariant \
     checks inside the simulators are off and a seed can pass that should fail; build it \
     with the sim profile (`cargo build --profile sim -p umi-scenarios --bin dst`, then \
     `target/sim/dst`)"
        .to_owned()
}

/// Applies [`gate`] to this build: `Err` with the message to print when refused; a
/// warning on stderr when allowed without assertions.
pub(crate) fn check(allowed: bool) -> Result<(), String> {
    match gate(cfg!(debug_assertions), allowed) {
        Gate::Run => Ok(()),
        Gate::RunWarned => {
            eprintln!(
                "warning: {} ({ALLOW_FLAG} given: running anyway)",
                without_assertions_text()
            );
            Ok(())
        }
        Gate::Refuse => Err(format!(
            "{}, or pass {ALLOW_FLAG} to run anyway",
            without_assertions_text()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_run_without_debug_assertions_only_when_allowed() {
        let table = [
            (true, false, Gate::Run),
            (true, true, Gate::Run),
            (false, true, Gate::RunWarned),
            (false, false, Gate::Refuse),
        ];
        for (debug_assertions, allowed, expected) in table {
            assert_eq!(
                gate(debug_assertions, allowed),
                expected,
                "debug_assertions {debug_assertions}, allowed {allowed}"
            );
        }
    }

    #[test]
    fn the_refusal_names_the_profile_and_the_flag() {
        let text = without_assertions_text();
        assert!(text.contains("--profile sim"), "{text}");
        if !cfg!(debug_assertions) {
            let refusal = check(false).unwrap_err();
            assert!(refusal.contains(ALLOW_FLAG), "{refusal}");
        } else {
            assert_eq!(check(false), Ok(()));
        }
    }
}
