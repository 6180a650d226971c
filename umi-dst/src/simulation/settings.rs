//! Reading the run's settings from the environment: `DST_SEED`, `DST_PATH`, `DST_SEEDS`,
//! `DST_SEED_START`, `DST_CHECK_DETERMINISM`, `DST_LOG`, `DST_TRACE`, `DST_PRINT_HASH`,
//! `DST_SEED_TIMEOUT`.
//!
//! A bad value is a one-line error naming the variable and the value; nothing here
//! panics.
//!
//! Public as [`Simulation::with_settings`](super::Simulation::with_settings)'s argument:
//! a test can give the settings from a lookup of its own (`Settings::from_lookup`)
//! instead of the process environment. The text forms are public here for tools of your
//! own that take the same values: [`parse_seed`] (a seed as `DST_SEED` and the `dst`
//! command read it), [`duration_arg`] and [`positive_duration_arg`] (a duration:
//! `DST_SEED_TIMEOUT`, `dst sweep --time-budget`), [`SEED_TIMEOUT_VAR`].

use std::time::Duration;

use crate::constants::{
    SEED_COUNT_DEFAULT, SEED_START_DEFAULT, SEED_WALL_TIMEOUT_DEFAULT, SEEDS_PER_RUN_MAX,
};
pub use crate::duration_text::{DURATION_ARG_MAX, duration_arg, positive_duration_arg};
use crate::path::RunPath;
pub use crate::seed_text::parse_seed;
pub use crate::watchdog::SEED_TIMEOUT_VAR;

/// A `DST_*` variable with a value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var}={value:?}: {reason}")]
pub struct SettingsError {
    /// The variable.
    pub var: &'static str,
    /// Its value.
    pub value: String,
    /// Why it cannot be used.
    pub reason: String,
}

/// What `tracing` prints inside simulations: `None` for nothing, else an `EnvFilter`
/// directive string (`warn`, `debug`, `umi_core::llm::router=trace,warn`), checked when
/// read so a run never meets a bad one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFilter(pub Option<String>);

impl LogFilter {
    /// `off` or `none`: nothing; anything else must parse as `EnvFilter` directives.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("off") || text.eq_ignore_ascii_case("none") {
            return Ok(Self(None));
        }
        tracing_subscriber::EnvFilter::builder()
            .parse(text)
            .map(|_| Self(Some(text.to_owned())))
            .map_err(|error| {
                format!(
                    "{error} (expected off, a level such as warn or debug, or tracing directives \
                     such as umi_core::llm::router=debug,warn)"
                )
            })
    }

    /// The filter to install, `None` for no output.
    pub fn env_filter(&self) -> Option<tracing_subscriber::EnvFilter> {
        let directives = self.0.as_deref()?;
        tracing_subscriber::EnvFilter::builder()
            .parse(directives)
            .ok()
    }
}

/// Everything `DST_*` can set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `DST_SEED`: run exactly this seed (and no corpus). `DST_PATH` sets it to its
    /// path's seed.
    pub seed: Option<u64>,
    /// `DST_PATH`: run exactly this path (`7/412:9913`), wherever `DST_SEED` works.
    pub path: Option<RunPath>,
    /// `DST_SEED_START`: the first seed of the default range.
    pub seed_start: u64,
    /// `DST_SEEDS`: how many seeds the default range covers.
    pub seed_count: u64,
    /// Whether `DST_SEEDS` or `DST_SEED_START` was set: the range from the environment
    /// then wins over a test's own `.with_seeds(..)`, as `PROPTEST_CASES` wins over a
    /// test's case count.
    pub seed_range_from_env: bool,
    /// `DST_CHECK_DETERMINISM=1`: run each seed twice and compare traces.
    pub check_determinism: bool,
    /// `DST_LOG`: `off`, a level (`warn`, the default; `debug`), or `tracing` directives
    /// (`umi_core::llm::router=debug,warn`), as tracing-subscriber's `EnvFilter` reads them.
    pub log: LogFilter,
    /// `DST_TRACE=1`: print each seed's whole trace.
    pub print_trace: bool,
    /// `DST_PRINT_HASH=1`: print each seed's trace hash (for cross-machine comparisons).
    pub print_hash: bool,
    /// `DST_SEED_TIMEOUT`: the wall time one seed may take before the watchdog ends the
    /// process naming it ([`Watchdog`](super::Watchdog)).
    pub seed_timeout: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            seed: None,
            path: None,
            seed_start: SEED_START_DEFAULT,
            seed_count: SEED_COUNT_DEFAULT,
            seed_range_from_env: false,
            check_determinism: false,
            log: LogFilter(Some("warn".to_owned())),
            print_trace: false,
            print_hash: false,
            seed_timeout: SEED_WALL_TIMEOUT_DEFAULT,
        }
    }
}

impl Settings {
    /// Reads the settings from the process environment.
    pub fn from_process_env() -> Result<Self, SettingsError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the settings through `lookup` (a test can pass a map).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, SettingsError> {
        let mut settings = Self::default();
        let invalid = |var: &'static str, value: &str, reason: String| SettingsError {
            var,
            value: value.to_owned(),
            reason,
        };
        if let Some(value) = lookup("DST_SEED") {
            settings.seed = Some(parse_seed(&value).map_err(|r| invalid("DST_SEED", &value, r))?);
        }
        if let Some(value) = lookup("DST_PATH") {
            let path: RunPath = value
                .parse()
                .map_err(|e: crate::path::PathError| invalid("DST_PATH", &value, e.to_string()))?;
            if settings.seed.is_some_and(|seed| seed != path.seed) {
                return Err(invalid(
                    "DST_PATH",
                    &value,
                    "names another seed than DST_SEED (set one of them)".into(),
                ));
            }
            settings.seed = Some(path.seed);
            settings.path = Some(path);
        }
        settings.seed_range_from_env =
            lookup("DST_SEEDS").is_some() || lookup("DST_SEED_START").is_some();
        if let Some(value) = lookup("DST_SEED_START") {
            settings.seed_start =
                parse_seed(&value).map_err(|r| invalid("DST_SEED_START", &value, r))?;
        }
        if let Some(value) = lookup("DST_SEEDS") {
            let count = value.trim().parse::<u64>().map_err(|_| {
                invalid(
                    "DST_SEEDS",
                    &value,
                    format!("is not a count in 1..={SEEDS_PER_RUN_MAX}"),
                )
            })?;
            if count == 0 || count > SEEDS_PER_RUN_MAX {
                return Err(invalid(
                    "DST_SEEDS",
                    &value,
                    format!("must be in 1..={SEEDS_PER_RUN_MAX}"),
                ));
            }
            if settings.seed_start.checked_add(count - 1).is_none() {
                return Err(invalid(
                    "DST_SEEDS",
                    &value,
                    "runs past the largest seed".into(),
                ));
            }
            settings.seed_count = count;
        }
        settings.check_determinism = flag(&lookup, "DST_CHECK_DETERMINISM")?;
        settings.print_trace = flag(&lookup, "DST_TRACE")?;
        settings.print_hash = flag(&lookup, "DST_PRINT_HASH")?;
        if let Some(value) = lookup(SEED_TIMEOUT_VAR) {
            settings.seed_timeout = positive_duration_arg(&value)
                .map_err(|reason| invalid(SEED_TIMEOUT_VAR, &value, reason))?;
        }
        if let Some(value) = lookup("DST_LOG") {
            settings.log =
                LogFilter::parse(&value).map_err(|reason| invalid("DST_LOG", &value, reason))?;
        }
        Ok(settings)
    }

    /// The path `DST_PATH` or `DST_SEED` chose, if any.
    pub fn chosen_path(&self) -> Option<RunPath> {
        self.path
            .clone()
            .or_else(|| self.seed.map(RunPath::from_seed))
    }

    /// The seeds to run, before any corpus: `DST_SEED` alone, or the default range.
    pub fn seeds(&self) -> Vec<u64> {
        match self.seed {
            Some(seed) => vec![seed],
            // Up to the largest seed: `DST_SEED_START=18446744073709551615` is one seed.
            None => (0..self.seed_count)
                .map_while(|offset| self.seed_start.checked_add(offset))
                .collect(),
        }
    }
}

fn flag(
    lookup: &impl Fn(&str) -> Option<String>,
    var: &'static str,
) -> Result<bool, SettingsError> {
    match lookup(var).as_deref().map(str::trim) {
        None | Some("" | "0" | "false" | "no") => Ok(false),
        Some("1" | "true" | "yes") => Ok(true),
        Some(other) => Err(SettingsError {
            var,
            value: other.to_owned(),
            reason: "expected 1 or 0".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<Settings, SettingsError> {
        Settings::from_lookup(|name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        })
    }

    #[test]
    fn seeds_parse_in_decimal_and_hex() {
        assert_eq!(parse_seed("42"), Ok(42));
        assert_eq!(parse_seed(" 0x2A "), Ok(42));
        assert_eq!(parse_seed("18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn bad_values_name_the_variable_and_value_in_one_line() {
        let error = read(&[("DST_SEED", "abc")]).unwrap_err();
        let message = error.to_string();
        assert!(
            message.starts_with("DST_SEED=\"abc\": is not a seed"),
            "{message}"
        );
        assert!(!message.contains('\n'));
        let overflow = read(&[("DST_SEED", "18446744073709551616")]).unwrap_err();
        assert!(
            overflow
                .to_string()
                .contains("larger than the largest seed"),
            "{overflow}"
        );
        assert!(read(&[("DST_SEEDS", "0")]).is_err());
        assert!(read(&[("DST_SEEDS", "-3")]).is_err());
        assert!(read(&[("DST_CHECK_DETERMINISM", "maybe")]).is_err());
        for bad in ["0", "soon", "99999999999h"] {
            let error = read(&[("DST_SEED_TIMEOUT", bad)]).unwrap_err().to_string();
            assert!(error.starts_with("DST_SEED_TIMEOUT="), "{error}");
        }
        assert_eq!(
            read(&[("DST_SEED_TIMEOUT", "90s")]).unwrap().seed_timeout,
            Duration::from_secs(90)
        );
        for bad in ["umi_core=loud", "[unclosed", "a=b=c"] {
            let error = read(&[("DST_LOG", bad)]).unwrap_err().to_string();
            assert!(error.starts_with("DST_LOG="), "{error}");
        }
        for (good, expected) in [
            ("debug", Some("debug")),
            (" OFF ", None),
            (
                "umi_core::llm::router=trace,warn",
                Some("umi_core::llm::router=trace,warn"),
            ),
        ] {
            let log = read(&[("DST_LOG", good)]).unwrap().log;
            assert_eq!(log.0.as_deref(), expected, "{good}");
            assert_eq!(log.env_filter().is_some(), expected.is_some(), "{good}");
        }
        let past_end = read(&[
            ("DST_SEED_START", "18446744073709551615"),
            ("DST_SEEDS", "2"),
        ]);
        assert!(past_end.is_err());
    }

    #[test]
    fn default_and_explicit_seed_sets() {
        let defaults = read(&[]).unwrap();
        assert_eq!(
            defaults.seeds(),
            (SEED_START_DEFAULT..SEED_START_DEFAULT + SEED_COUNT_DEFAULT).collect::<Vec<_>>()
        );
        assert_eq!(
            read(&[("DST_SEED", "7"), ("DST_SEEDS", "100")])
                .unwrap()
                .seeds(),
            [7]
        );
        assert_eq!(
            read(&[("DST_SEED_START", "10"), ("DST_SEEDS", "3")])
                .unwrap()
                .seeds(),
            [10, 11, 12]
        );
        assert!(
            read(&[("DST_CHECK_DETERMINISM", "1")])
                .unwrap()
                .check_determinism
        );
    }

    #[test]
    fn a_path_is_read_wherever_a_seed_is() {
        let chosen = read(&[("DST_PATH", "7/412:9913")]).unwrap();
        assert_eq!(chosen.seeds(), [7]);
        assert_eq!(chosen.chosen_path().unwrap().to_string(), "7/412:9913");
        assert_eq!(
            read(&[("DST_SEED", "7"), ("DST_PATH", "7/1:2")])
                .unwrap()
                .path
                .map(|p| p.to_string()),
            Some("7/1:2".to_owned())
        );
        assert_eq!(
            read(&[("DST_SEED", "3")]).unwrap().chosen_path(),
            Some(RunPath::from_seed(3))
        );
        for (bad, expected) in [
            ("7/0:1", "DST_PATH=\"7/0:1\": path branch 1: step 0"),
            (
                "7/x",
                "DST_PATH=\"7/x\": path branch 1 `x` is not STEP:STREAM",
            ),
        ] {
            let error = read(&[("DST_PATH", bad)]).unwrap_err().to_string();
            assert!(error.starts_with(expected), "{error}");
        }
        let both = read(&[("DST_SEED", "8"), ("DST_PATH", "7/1:2")]).unwrap_err();
        assert!(
            both.to_string().contains("another seed than DST_SEED"),
            "{both}"
        );
    }
}
