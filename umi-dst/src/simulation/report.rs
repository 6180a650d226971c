//! The failure report: printed once, readable, and ending with the command that replays
//! the failing run exactly.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;
use umi_core::llm::secrets::redact_patterns;

use crate::fault::Injection;
use crate::fault::swarm::SwarmDraw;
use crate::trace::{TraceEvent, TraceHash};

use crate::failure_class::FailureClass;

/// Where two runs of the same seed parted ways.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Divergence {
    /// The first run's event at the divergence point (`None`: that run had ended).
    pub first: Option<TraceEvent>,
    /// The second run's event at the divergence point.
    pub second: Option<TraceEvent>,
    /// What the two events suggest went wrong, with the hazards of the third-party
    /// clients noted in the run (see [`crate::adapters::foreign::explain`]).
    pub cause: Option<String>,
}

impl fmt::Display for Divergence {
    /// `diverged:`, then each run's event at the divergence (secrets redacted) and the
    /// cause if one is known, one line each (no newline after the last).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "diverged:")?;
        writeln!(
            f,
            "  first run:  {}",
            redact_patterns(&show(self.first.as_ref()))
        )?;
        write!(
            f,
            "  second run: {}",
            redact_patterns(&show(self.second.as_ref()))
        )?;
        if let Some(cause) = &self.cause {
            write!(f, "\n  cause:      {cause}")?;
        }
        Ok(())
    }
}

/// How to run one test again: package, test target, test name, build profile and
/// whether ignored tests were run, detected from the running test process (cargo sets
/// `CARGO_PKG_NAME` and `CARGO_MANIFEST_DIR`; libtest names the thread after the test;
/// the binary's path names the profile).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct ReplayTarget {
    /// The cargo package.
    pub package: Option<String>,
    /// `--test <name>` for an integration-test binary, `--lib` for unit tests.
    pub target: Option<String>,
    /// The test's full name.
    pub test: Option<String>,
    /// `--release` or `--profile <name>` when the test binary was not built in `dev`.
    #[serde(default)]
    pub profile: Option<String>,
    /// The test process ran ignored tests (`--ignored` or `--include-ignored`): the replay
    /// must too, or an `#[ignore]` test is skipped and the replay "passes".
    #[serde(default)]
    pub include_ignored: bool,
    /// A Makefile with a `dst` target sits at the root of the test's workspace, so the
    /// `make dst` form may be offered.
    #[serde(default)]
    pub make_dst: bool,
}

impl ReplayTarget {
    /// Detects the target of the test running on this thread.
    pub fn detect() -> Self {
        let package = std::env::var("CARGO_PKG_NAME").ok();
        let target = std::env::current_exe().ok().and_then(|path| {
            let stem = path.file_stem()?.to_str()?.to_owned();
            // Test binaries are named `<target>-<16 hex digits>`.
            let (name, hash) = stem.rsplit_once('-')?;
            if hash.len() != 16 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            let lib_name = package.as_ref().map(|p| p.replace('-', "_"));
            Some(if Some(name) == lib_name.as_deref() {
                "--lib".to_owned()
            } else {
                format!("--test {name}")
            })
        });
        let test = std::thread::current()
            .name()
            .filter(|name| *name != "main")
            .map(str::to_owned);
        let profile = std::env::current_exe()
            .ok()
            .and_then(|path| profile_flag(&path));
        let include_ignored =
            std::env::args().any(|a| a == "--ignored" || a == "--include-ignored");
        let make_dst = std::env::var_os("CARGO_MANIFEST_DIR")
            .is_some_and(|dir| workspace_makefile_has_dst(Path::new(&dir)));
        Self {
            package,
            target,
            test,
            profile,
            include_ignored,
            make_dst,
        }
    }

    /// The command that replays `seed` of this test, failed with `class` (a
    /// nondeterminism failure only shows with the determinism check on).
    pub fn command(&self, seed: u64, class: FailureClass) -> String {
        self.command_for_path(&crate::path::RunPath::from_seed(seed), class)
    }

    /// The command that replays `path` of this test: `DST_PATH=7/412:9913 cargo test ...`
    /// for a path with branch points, the seed's command otherwise.
    pub fn command_for_path(&self, path: &crate::path::RunPath, class: FailureClass) -> String {
        let mut command = if path.is_seed_only() {
            format!("DST_SEED={}", path.seed)
        } else {
            format!("DST_PATH={path}")
        };
        if class == FailureClass::Nondeterminism {
            command.push_str(" DST_CHECK_DETERMINISM=1");
        }
        command.push_str(" cargo test");
        if let Some(profile) = &self.profile {
            command.push(' ');
            command.push_str(profile);
        }
        if let Some(package) = &self.package {
            command.push_str(&format!(" -p {package}"));
        }
        if let Some(target) = &self.target {
            command.push(' ');
            command.push_str(target);
        }
        if let Some(test) = &self.test {
            command.push_str(&format!(" -- {test} --exact --nocapture"));
            if self.include_ignored {
                command.push_str(" --include-ignored");
            }
        }
        command
    }

    /// The same through the Makefile, where the workspace has one with a `dst` target
    /// and nothing the target cannot pass (a profile, ignored tests, the determinism
    /// check) is needed.
    pub fn make_command(&self, seed: u64, class: FailureClass) -> Option<String> {
        if !self.make_dst
            || self.profile.is_some()
            || self.include_ignored
            || class == FailureClass::Nondeterminism
        {
            return None;
        }
        let package = self.package.as_ref()?;
        let test = self.test.as_ref()?;
        let bin = match self
            .target
            .as_deref()
            .and_then(|t| t.strip_prefix("--test "))
        {
            Some(bin) => format!(" BIN={bin}"),
            None => String::new(),
        };
        Some(format!(
            "make dst PKG={package}{bin} TEST={test} SEED={seed}"
        ))
    }
}

/// Everything needed to understand and replay a failed run.
#[derive(Debug, Clone, Serialize)]
pub struct FailureReport {
    /// The failing seed.
    pub seed: u64,
    /// The failing path (the seed alone unless the run had branch points).
    pub path: crate::path::RunPath,
    /// Why it failed.
    pub class: FailureClass,
    /// The violation, panic message or bound that was hit.
    pub message: String,
    /// The fault configs in force (including swarm's).
    pub faults: Vec<String>,
    /// What swarm mode drew, if it was on.
    pub swarm: Vec<SwarmDraw>,
    /// The injections that fired, most recent last (up to the last 20).
    pub injections: Vec<Injection>,
    /// Total injections.
    pub injections_total: usize,
    /// Simulated time when the run ended.
    #[serde(serialize_with = "serialize_ms")]
    pub sim_elapsed: Duration,
    /// Steps taken.
    pub steps: u64,
    /// Trace events recorded.
    pub events: u64,
    /// The trace hash at the end of the run.
    pub trace_hash: TraceHash,
    /// The last trace events.
    pub tail: Vec<TraceEvent>,
    /// For nondeterminism: where the two runs diverged.
    pub divergence: Option<Divergence>,
    /// The test to replay.
    pub replay: ReplayTarget,
}

fn serialize_ms<S: serde::Serializer>(at: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(at.as_millis()).unwrap_or(u64::MAX))
}

impl FailureReport {
    /// The command that replays this failure.
    pub fn replay_command(&self) -> String {
        self.replay.command_for_path(&self.path, self.class)
    }
}

impl fmt::Display for FailureReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rule = "─".repeat(72);
        writeln!(f, "{rule}")?;
        writeln!(
            f,
            "umi: simulation failed ({}) on seed {}",
            self.class, self.seed
        )?;
        writeln!(f, "{rule}")?;
        if let Some(test) = &self.replay.test {
            writeln!(f, "test:      {test}")?;
        }
        writeln!(f, "seed:      {} (0x{:x})", self.seed, self.seed)?;
        if !self.path.is_seed_only() {
            writeln!(f, "path:      {}", self.path)?;
        }
        writeln!(f, "class:     {}", self.class)?;
        // Defense in depth (clients redact their own secrets): nothing that looks like a
        // credential is printed, in the message or the trace's last events.
        let message = redact_patterns(&self.message);
        let mut lines = message.lines();
        writeln!(f, "failure:   {}", lines.next().unwrap_or(""))?;
        for line in lines {
            writeln!(f, "           {line}")?;
        }
        if self.faults.is_empty() {
            writeln!(f, "faults:    none")?;
        } else {
            writeln!(f, "faults:    {}", self.faults.join("; "))?;
        }
        if !self.swarm.is_empty() {
            let drawn: Vec<String> = self.swarm.iter().map(ToString::to_string).collect();
            writeln!(f, "swarm:     {}", drawn.join(" "))?;
        }
        writeln!(f, "injected:  {} fault(s)", self.injections_total)?;
        for injection in &self.injections {
            writeln!(f, "           {injection}")?;
        }
        writeln!(
            f,
            "run:       {:.3}s simulated, {} steps, {} events, trace {}",
            self.sim_elapsed.as_secs_f64(),
            self.steps,
            self.events,
            self.trace_hash.short()
        )?;
        if let Some(divergence) = &self.divergence {
            writeln!(f, "{divergence}")?;
        }
        if !self.tail.is_empty() {
            writeln!(f, "last events:")?;
            for event in &self.tail {
                writeln!(f, "  {}", redact_patterns(&event.to_string()))?;
            }
        }
        writeln!(f, "replay:    {}", self.replay_command())?;
        let make = self.replay.make_command(self.seed, self.class);
        if let Some(make) = make.filter(|_| self.path.is_seed_only()) {
            writeln!(f, "           {make}")?;
        }
        write!(f, "{rule}")
    }
}

/// The cargo flag that builds the profile a test binary at `exe` was built in:
/// `target/<profile>/deps/<binary>`; `None` for `debug` (cargo's default, `dev`).
pub fn profile_flag(exe: &Path) -> Option<String> {
    let deps = exe.parent()?;
    if deps.file_name()? != "deps" {
        return None;
    }
    match deps.parent()?.file_name()?.to_str()? {
        "debug" => None,
        "release" => Some("--release".to_owned()),
        other => Some(format!("--profile {other}")),
    }
}

/// Whether the Makefile at the root of the workspace holding `manifest_dir` (the nearest
/// ancestor with a Makefile) has a `dst:` target.
pub fn workspace_makefile_has_dst(manifest_dir: &Path) -> bool {
    manifest_dir
        .ancestors()
        .take(MAKEFILE_SEARCH_DEPTH_MAX)
        .find_map(|dir| std::fs::read_to_string(dir.join("Makefile")).ok())
        .is_some_and(|text| makefile_has_target(&text, "dst"))
}

/// Directories searched upward for a Makefile.
const MAKEFILE_SEARCH_DEPTH_MAX: usize = 4;

/// Whether `makefile` defines `target` (a line `target:` or `target: deps`).
pub fn makefile_has_target(makefile: &str, target: &str) -> bool {
    makefile.lines().any(|line| {
        line.strip_prefix(target)
            .is_some_and(|rest| rest.starts_with(':') && !rest.starts_with(":="))
    })
}

fn show(event: Option<&TraceEvent>) -> String {
    event.map_or_else(|| "(run ended)".to_owned(), ToString::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_command_names_package_target_and_test() {
        let correctness = FailureClass::Correctness;
        let target = ReplayTarget {
            package: Some("umi-dst".into()),
            target: Some("--test main".into()),
            test: Some("self_test::canary".into()),
            make_dst: true,
            ..ReplayTarget::default()
        };
        assert_eq!(
            target.command(12, correctness),
            "DST_SEED=12 cargo test -p umi-dst --test main -- self_test::canary --exact --nocapture"
        );
        assert_eq!(
            target.make_command(12, correctness).unwrap(),
            "make dst PKG=umi-dst BIN=main TEST=self_test::canary SEED=12"
        );
        assert_eq!(
            ReplayTarget::default().command(3, correctness),
            "DST_SEED=3 cargo test"
        );
        let path: crate::path::RunPath = "12/40:7".parse().unwrap();
        assert_eq!(
            target.command_for_path(&path, correctness),
            "DST_PATH=12/40:7 cargo test -p umi-dst --test main -- self_test::canary --exact --nocapture"
        );
        assert_eq!(
            target.command_for_path(&crate::path::RunPath::from_seed(12), correctness),
            target.command(12, correctness)
        );
    }

    /// Each of these once printed a line that, run as printed, passed.
    #[test]
    fn replay_command_carries_what_the_failure_needs() {
        let base = ReplayTarget {
            package: Some("app".into()),
            target: Some("--test sim".into()),
            test: Some("slow::soak".into()),
            make_dst: true,
            ..ReplayTarget::default()
        };
        let nondeterminism = base.command(5, FailureClass::Nondeterminism);
        assert!(
            nondeterminism.starts_with("DST_SEED=5 DST_CHECK_DETERMINISM=1 cargo test"),
            "{nondeterminism}"
        );
        assert_eq!(base.make_command(5, FailureClass::Nondeterminism), None);

        let ignored = ReplayTarget {
            include_ignored: true,
            ..base.clone()
        };
        assert!(
            ignored
                .command(5, FailureClass::Crash)
                .ends_with("--exact --nocapture --include-ignored")
        );
        assert_eq!(ignored.make_command(5, FailureClass::Crash), None);

        let release = ReplayTarget {
            profile: Some("--profile sim".into()),
            ..base.clone()
        };
        assert!(
            release
                .command(5, FailureClass::Crash)
                .starts_with("DST_SEED=5 cargo test --profile sim -p app")
        );

        let no_makefile = ReplayTarget {
            make_dst: false,
            ..base
        };
        assert_eq!(no_makefile.make_command(5, FailureClass::Crash), None);
    }

    #[test]
    fn profiles_and_makefile_targets_are_read_from_paths_and_text() {
        let table = [
            ("/w/target/debug/deps/main-0123456789abcdef", None),
            (
                "/w/target/release/deps/main-0123456789abcdef",
                Some("--release"),
            ),
            (
                "/w/target/sim/deps/main-0123456789abcdef",
                Some("--profile sim"),
            ),
            ("/w/target/debug/dst", None),
        ];
        for (path, flag) in table {
            assert_eq!(profile_flag(Path::new(path)).as_deref(), flag, "{path}");
        }
        assert!(makefile_has_target("x:\n\techo\ndst:\n\t$(DST)", "dst"));
        assert!(makefile_has_target("dst: build\n", "dst"));
        assert!(!makefile_has_target("DST := cargo run\n", "DST"));
        assert!(!makefile_has_target("dst-all:\n", "dst"));
        assert!(!makefile_has_target("test:\n", "dst"));
    }

    #[test]
    fn this_workspace_offers_make_dst() {
        assert!(workspace_makefile_has_dst(Path::new(env!(
            "CARGO_MANIFEST_DIR"
        ))));
    }

    #[test]
    fn detect_finds_this_unit_test() {
        let target = ReplayTarget::detect();
        assert_eq!(target.package.as_deref(), Some("umi-dst"));
        assert_eq!(target.target.as_deref(), Some("--lib"));
        assert_eq!(
            target.test.as_deref(),
            Some("simulation::report::tests::detect_finds_this_unit_test")
        );
    }
}
