//! Timestamps as servers write them, from simulated wall-clock time: RFC 3339 with
//! microseconds (Ollama's `created_at`), GLM's `YYYYMMDDhhmmss` id prefix.

/// Days since 1970-01-01 to (year, month, day): Howard Hinnant's `civil_from_days`.
pub(crate) fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `2024-01-01T00:00:00.123000Z` for `unix_ms`.
pub(crate) fn rfc3339(unix_ms: u64) -> String {
    let seconds = unix_ms / 1_000;
    let (year, month, day) = civil_from_days(seconds / 86_400);
    let of_day = seconds % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        of_day / 3_600,
        of_day % 3_600 / 60,
        of_day % 60,
        (unix_ms % 1_000) * 1_000
    )
}

/// `2024-01-01 00:00:00.123000+00:00`: Python's `str(datetime.now(timezone.utc))`, as
/// sse-starlette's ping writes it.
pub(crate) fn python_utc(unix_ms: u64) -> String {
    let text = rfc3339(unix_ms);
    format!("{} {}+00:00", &text[..10], &text[11..26])
}

/// GLM's id prefix: `YYYYMMDDhhmmss` (UTC) of `unix_s`.
pub(crate) fn compact(unix_s: u64) -> String {
    let (year, month, day) = civil_from_days(unix_s / 86_400);
    let of_day = unix_s % 86_400;
    format!(
        "{year:04}{month:02}{day:02}{:02}{:02}{:02}",
        of_day / 3_600,
        of_day % 3_600 / 60,
        of_day % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(19_723 + 59), (2024, 2, 29));
        assert_eq!(compact(1_704_067_200 + 3_723), "20240101010203");
        assert_eq!(rfc3339(1_704_067_200_123), "2024-01-01T00:00:00.123000Z");
    }
}
