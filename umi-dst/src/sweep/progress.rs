//! Progress output: a bar on a terminal (indicatif), plain lines every few seconds
//! otherwise, or nothing.
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
                    "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} runs {msg}",
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
        match &self.bar {
            Some(bar) => {
                bar.set_position(done);
                bar.set_message(format!("{failures} failure(s)"));
            }
            None if self.style != ProgressStyle::Quiet
                && self.last_line.elapsed() >= Duration::from_secs(5) =>
            {
                self.last_line = Instant::now();
                eprintln!(
                    "dst: {done}/{total} runs, {failures} failure(s), {:.1} s",
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
