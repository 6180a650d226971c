//! The README's "simulation test to copy", compiled and run as a real test. The test at
//! the bottom checks that the README shows exactly this code, so the two cannot drift.

// README-BEGIN
use std::time::Duration;

use umi_core::env::{Env, EnvironmentExt};
use umi_dst::fault::point;
use umi_dst::{FaultConfig, FaultKind, SimEnvironment, Violation, ensure};

/// The code under test takes an `Env`: `SystemEnvironment` in production, the
/// simulation's here. It retries a flaky call with exponential backoff and jitter.
async fn call_with_retries(
    env: &Env,
    mut call: impl FnMut() -> Result<String, &'static str>,
    attempts_max: u32,
) -> Result<String, &'static str> {
    let mut last_error = "no attempt";
    for attempt in 0..attempts_max {
        match call() {
            Ok(answer) => return Ok(answer),
            Err(error) => last_error = error,
        }
        let backoff_ms = 100 * 2u64.pow(attempt) + env.random_in_range("retry.jitter", 0, 50);
        env.sleep(Duration::from_millis(backoff_ms)).await;
    }
    Err(last_error)
}

#[umi_dst::test(faults = [FaultConfig::chance(FaultKind::LlmRateLimit, 0.3)])]
async fn retries_are_bounded_in_time(sim: SimEnvironment) -> Result<(), Violation> {
    let env = sim.env();
    // A model call that fails whenever the injector fires a rate limit.
    let call = || match sim.fault(&point::LLM_CALL) {
        Some(_) => Err("429 rate limited"),
        None => Ok("an answer".to_owned()),
    };
    let outcome = call_with_retries(&env, call, 5).await;
    ensure!(
        env.elapsed() < Duration::from_secs(4),
        "{outcome:?} took {:?}",
        env.elapsed()
    );
    Ok(())
}
// README-END

#[test]
fn the_readme_shows_this_file() {
    let readme = include_str!("../../README.md");
    let this = include_str!("readme.rs");
    let start = this.find("// README-BEGIN\n").unwrap() + "// README-BEGIN\n".len();
    let end = this.find("// README-END").unwrap();
    let code = &this[start..end];
    assert!(
        readme.contains(&format!("```rust\n{code}```")),
        "README.md's example differs from umi-dst/tests/readme.rs"
    );
}
