//! A progress bar on stderr for work that takes more than a moment: shown only when stderr is
//! a terminal, and only once half a second has passed, so quick runs and pipelines stay silent.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

const DELAY: Duration = Duration::from_millis(500);

pub(crate) struct Progress<F: FnOnce() -> Option<u64>> {
    enabled: bool,
    start: Instant,
    /// Computes the total row count when the bar first shows (it may cost a metadata read).
    total: Option<F>,
    limit: Option<u64>,
    bar: Option<ProgressBar>,
    done: u64,
}

impl<F: FnOnce() -> Option<u64>> Progress<F> {
    /// `total` tells the row count if it is cheap to know; `limit` caps it.
    pub fn new(total: F, limit: Option<usize>) -> Self {
        Progress {
            enabled: std::io::stderr().is_terminal(),
            start: Instant::now(),
            total: Some(total),
            limit: limit.map(|l| l as u64),
            bar: None,
            done: 0,
        }
    }

    /// No bar, whatever stderr is (`--quiet`).
    pub fn silence(&mut self) {
        self.enabled = false;
    }

    pub fn add(&mut self, rows: usize) {
        self.set(self.done + rows as u64);
    }

    /// Moves the bar to `done` rows (a second pass over the input starts again from 0).
    pub fn set(&mut self, done: u64) {
        self.done = done;
        if !self.enabled {
            return;
        }
        if self.bar.is_none() && self.start.elapsed() >= DELAY {
            let total = self.total.take().and_then(|f| f());
            let total = match (total, self.limit) {
                (Some(t), Some(l)) => Some(t.min(l)),
                (t, _) => t,
            };
            self.bar = Some(make_bar(total));
        }
        if let Some(bar) = &self.bar {
            bar.set_position(self.done);
        }
    }

    /// Removes the bar (before a result or an error is printed).
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl<F: FnOnce() -> Option<u64>> Drop for Progress<F> {
    fn drop(&mut self) {
        self.finish();
    }
}

fn make_bar(total: Option<u64>) -> ProgressBar {
    let (bar, template) = match total {
        Some(total) => (
            ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr()),
            "{elapsed_precise} [{wide_bar}] {human_pos}/{human_len} rows, {eta} left",
        ),
        None => (
            ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
            "{spinner} {elapsed_precise} {human_pos} rows",
        ),
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}
