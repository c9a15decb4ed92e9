//! Import progress: a bar on a terminal, periodic plain lines otherwise.

use crate::ImportStats;
use indicatif::{ProgressBar, ProgressStyle};
use std::{
    io::IsTerminal,
    time::{Duration, Instant},
};

const LINE_EVERY: Duration = Duration::from_secs(5);

enum Mode {
    Hidden,
    Bar(ProgressBar),
    Lines { last: Instant },
}

/// Reports progress of an import.
pub struct Progress {
    mode: Mode,
    started: Instant,
    gas_at_start: u64,
    /// Set for a range of block numbers (no file): the bar counts blocks from this one.
    first_block: Option<u64>,
}

impl Progress {
    /// A bar when stderr is a terminal, else a line every few seconds.
    pub fn auto() -> Self {
        let mode = if std::io::stderr().is_terminal() {
            Mode::Bar(ProgressBar::hidden())
        } else {
            Mode::Lines {
                last: Instant::now(),
            }
        };
        Self {
            mode,
            started: Instant::now(),
            gas_at_start: 0,
            first_block: None,
        }
    }

    /// Reports nothing.
    pub fn hidden() -> Self {
        Self {
            mode: Mode::Hidden,
            started: Instant::now(),
            gas_at_start: 0,
            first_block: None,
        }
    }

    /// Starts reporting an import of blocks `first..=last` from `name` (not a file).
    pub fn start_range(&mut self, name: &str, first: u64, last: u64) {
        self.start_file(name, Some(last.saturating_sub(first) + 1));
        self.first_block = Some(first);
    }

    pub(crate) fn start_file(&mut self, name: &str, size: Option<u64>) {
        self.started = Instant::now();
        self.gas_at_start = 0;
        self.first_block = None;
        match &mut self.mode {
            Mode::Bar(bar) => {
                let new_bar = match size {
                    Some(size) => ProgressBar::new(size),
                    None => ProgressBar::new_spinner(),
                };
                let style = ProgressStyle::with_template(
                    "{prefix} [{bar:30}] {percent:>3}% {msg} ETA {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
                new_bar.set_style(style);
                new_bar.set_prefix(name.to_string());
                *bar = new_bar;
            }
            Mode::Lines { last } => {
                *last = Instant::now();
                eprintln!("importing {name}");
            }
            Mode::Hidden => {}
        }
    }

    pub(crate) fn block(&mut self, number: u64, offset: u64, stats: &ImportStats) {
        let elapsed = self.started.elapsed().as_secs_f64().max(1e-9);
        let rate = stats.blocks as f64 / elapsed;
        let mgas = (stats.gas - self.gas_at_start) as f64 / 1e6 / elapsed;
        match &mut self.mode {
            Mode::Bar(bar) => {
                bar.set_position(match self.first_block {
                    Some(first) => number.saturating_sub(first) + 1,
                    None => offset,
                });
                bar.set_message(format!(
                    "block {number} | {} blocks | {rate:.0} blocks/s | {mgas:.1} Mgas/s",
                    stats.blocks
                ));
            }
            Mode::Lines { last } if last.elapsed() >= LINE_EVERY => {
                *last = Instant::now();
                eprintln!(
                    "block {number}: {} blocks imported, {rate:.0} blocks/s, {mgas:.1} Mgas/s",
                    stats.blocks
                );
            }
            _ => {}
        }
    }

    pub(crate) fn finish(&mut self) {
        if let Mode::Bar(bar) = &self.mode {
            bar.finish_and_clear();
        }
    }
}
