//! Durations as people type them on a command line or in a `DST_*` variable: `500ms`,
//! `30s`, `5m`, `2h`, a bare number being seconds; up to [`DURATION_ARG_MAX`], so a huge
//! value is refused instead of wrapping to zero.

use std::time::Duration;

/// The longest duration a flag accepts: 30 days (longer ones once wrapped to zero).
pub const DURATION_ARG_MAX: Duration = Duration::from_secs(30 * 24 * 3600);

/// `500ms`, `30s`, `5m`, `2h`, up to [`DURATION_ARG_MAX`].
pub fn duration_arg(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration like 30s, 5m or 500ms"))?;
    let seconds_per_unit = match unit {
        "ms" => None,
        "" | "s" => Some(1),
        "m" => Some(60),
        "h" => Some(3600),
        other => {
            return Err(format!(
                "unknown duration unit {other:?} (use ms, s, m or h)"
            ));
        }
    };
    let duration = match seconds_per_unit {
        None => Some(Duration::from_millis(number)),
        Some(factor) => number.checked_mul(factor).map(Duration::from_secs),
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
