//! Figures and text for people: durations as `1.2 s` or `3m 4s`, a message's first line.
//! Shared by the table, the HTML pages, JUnit and progress lines, below all of them.

/// The first line of `text` (a failure's headline).
pub(crate) fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

/// `0.42 ms`, then as [`human_ms`].
pub fn human_us(us: u64) -> String {
    if us < 1_000 {
        format!("{:.2} ms", us as f64 / 1000.0)
    } else {
        human_ms(us / 1000)
    }
}

/// `1.2 s`, `3m 4s`, `2h 13m`.
pub fn human_ms(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms} ms"),
        1_000..=59_999 => format!("{:.1} s", ms as f64 / 1000.0),
        60_000..=3_599_999 => format!("{}m {}s", ms / 60_000, (ms % 60_000) / 1000),
        _ => format!("{}h {}m", ms / 3_600_000, (ms % 3_600_000) / 60_000),
    }
}
