//! Durations as people type them on a command line or in a `DST_*` variable: `500ms`,
//! `30s`, `5m`, `2h`, `1h 30m` (humantime's syntax), a bare number being seconds; up to
//! [`DURATION_ARG_MAX`], so a huge value is refused instead of wrapping to zero.
//!
//! `DST_SEED_TIMEOUT` is read with it, and the `dst` command's duration flags are. Public
//! for tools of your own that take a duration the same way.

use std::time::Duration;

/// The longest duration a flag accepts: 30 days (longer ones once wrapped to zero).
pub const DURATION_ARG_MAX: Duration = Duration::from_secs(30 * 24 * 3600);

/// `500ms`, `30s`, `5m`, `2h`, `1h 30m`, `45` (seconds), up to [`DURATION_ARG_MAX`].
pub fn duration_arg(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let duration = match text.parse::<u64>() {
        Ok(seconds) => Some(Duration::from_secs(seconds)),
        Err(_) => Some(humantime::parse_duration(text).map_err(|error| {
            format!("{text:?} is not a duration like 30s, 5m or 500ms ({error})")
        })?),
    };
    match duration {
        Some(duration) if duration <= DURATION_ARG_MAX => Ok(duration),
        _ => Err(format!(
            "{text:?} is longer than 30 days, the longest accepted"
        )),
    }
}

/// Like [`duration_arg`], refusing zero (a zero seed timeout made every seed a hang).
pub fn positive_duration_arg(text: &str) -> Result<Duration, String> {
    match duration_arg(text)? {
        Duration::ZERO => Err(format!("{text:?} is zero; give at least 1ms")),
        duration => Ok(duration),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_people_type_them() {
        let accepted = [
            ("500ms", Duration::from_millis(500)),
            ("30s", Duration::from_secs(30)),
            (" 5m ", Duration::from_secs(300)),
            ("2h", Duration::from_secs(7200)),
            ("1h 30m", Duration::from_secs(5400)),
            ("45", Duration::from_secs(45)),
            ("30days", DURATION_ARG_MAX),
        ];
        for (text, expected) in accepted {
            assert_eq!(duration_arg(text), Ok(expected), "{text}");
        }
        let refused = [
            ("soon", "not a duration"),
            ("5 parsecs", "not a duration"),
            ("-1s", "not a duration"),
            ("31d", "longer than 30 days"),
            ("18446744073709551615", "longer than 30 days"),
            ("99999999999999999999h", "not a duration"),
        ];
        for (text, says) in refused {
            let error = duration_arg(text).unwrap_err();
            assert!(error.contains(says), "{text}: {error}");
        }
        assert!(positive_duration_arg("0s").unwrap_err().contains("zero"));
        assert_eq!(positive_duration_arg("1ms"), Ok(Duration::from_millis(1)));
    }
}
