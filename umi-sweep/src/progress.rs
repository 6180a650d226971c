//! Progress output: a bar on a terminal (indicatif), plain lines every few seconds
//! otherwise, or nothing; both show the rate (runs per second of wall time, all workers
//! together) and the time left at that rate.
#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the sweep engine measures wall time and runs worker threads, outside every simulation"
)]

use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProgressStyle {
    /// A bar on a terminal, plain lines otherwise.
    #[default]
    Auto,
    /// Plain lines.
    Lines,
    /// Nothing.
    Quiet,
}

/// How often a plain progress line is printed.
const PROGRESS_LINE_INTERVAL_MS: u64 = 5_000;

/// `1234 runs/s, 2m 3s left` (or `time left unknown` before the first run is done).
pub(crate) fn pace(done: u64, total: u64, elapsed: Duration) -> String {
    let seconds = elapsed.as_secs_f64();
    if done == 0 || seconds <= 0.0 {
        return "time left unknown".to_owned();
    }
    let rate = done as f64 / seconds;
    let left_ms = (total.saturating_sub(done) as f64 / rate * 1000.0).round() as u64;
    format!(
        "{rate:.0} runs/s, {} left",
        crate::report::human_ms(left_ms)
    )
}

pub(crate) struct Progress {
    style: ProgressStyle,
    bar: Option<indicatif::ProgressBar>,
    last_line: Instant,
}

impl Progress {
    pub(crate) fn new(style: ProgressStyle, total: u64) -> Self {
        let bar = (style == ProgressStyle::Auto && std::io::stderr().is_terminal()).then(|| {
            let bar = indicatif::ProgressBar::new(total);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} runs, {msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar
        });
        Self {
            style,
            bar,
            last_line: Instant::now(),
        }
    }

    #[allow(clippy::print_stderr, reason = "progress goes to stderr")]
    pub(crate) fn update(&mut self, done: u64, total: u64, failures: u64, started: Instant) {
        let pace = pace(done, total, started.elapsed());
        match &self.bar {
            Some(bar) => {
                bar.set_position(done);
                bar.set_message(format!("{failures} failure(s), {pace}"));
            }
            None if self.style != ProgressStyle::Quiet
                && self.last_line.elapsed() >= Duration::from_millis(PROGRESS_LINE_INTERVAL_MS) =>
            {
                self.last_line = Instant::now();
                eprintln!(
                    "dst: {done}/{total} runs, {failures} failure(s), {pace}, {:.1} s",
                    started.elapsed().as_secs_f64()
                );
            }
            None => {}
        }
    }

    #[allow(clippy::print_stderr, reason = "progress goes to stderr")]
    pub(crate) fn say(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None if self.style != ProgressStyle::Quiet => eprintln!("{line}"),
            None => {}
        }
    }

    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pace_is_the_rate_so_far_and_the_time_left_at_it() {
        let cases = [
            (0, 100, 1_000, "time left unknown"),
            (50, 100, 0, "time left unknown"),
            (50, 100, 1_000, "50 runs/s, 1.0 s left"),
            (1_000, 61_000, 10_000, "100 runs/s, 10m 0s left"),
            (100, 100, 2_000, "50 runs/s, 0 ms left"),
        ];
        for (done, total, elapsed_ms, expected) in cases {
            assert_eq!(
                pace(done, total, Duration::from_millis(elapsed_ms)),
                expected,
                "{done}/{total} after {elapsed_ms} ms"
            );
        }
    }
}
