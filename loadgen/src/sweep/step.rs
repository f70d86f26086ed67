//! One step's counters while it runs ([`StepStats`], shared by the
//! scheduler thread and the session tasks; errors counted by their
//! `err_*` column, [`crate::error::ErrorKind::sweep_column`]), and the
//! arithmetic that turns them into a row: replies per 1-second interval,
//! nearest-rank percentiles, the saturation rule.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use crate::error::{ErrorKind, SweepColumn};

/// One reply's times, in the step's terms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reply {
    /// Completion, seconds after the step's start.
    pub done_s: f64,
    /// Request written to whole body.
    pub response_ms: f64,
}

/// The live counters of one step. Every session holds it until it ends,
/// so late sessions can never count into the next step.
#[derive(Debug)]
pub struct StepStats {
    /// The step's scheduled start: time zero of `Reply::done_s`.
    pub t_start: Instant,
    pub sessions: AtomicU64,
    pub connections: AtomicU64,
    pub requests: AtomicU64,
    /// Failed requests, by `err_*` column.
    errors: [AtomicU64; SweepColumn::ALL.len()],
    /// Of those, the ones that ran out of file descriptors (`err_other`).
    fd_exhausted: AtomicU64,
    /// Sessions launched and not yet ended.
    pub outstanding: AtomicUsize,
    replies: Mutex<Vec<Reply>>,
}

impl StepStats {
    /// Counters for a step starting at `t_start`, with room for `expected`
    /// replies so the sessions rarely grow the vector under its lock.
    pub fn new(t_start: Instant, expected: usize) -> StepStats {
        StepStats {
            t_start,
            sessions: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            errors: Default::default(),
            fd_exhausted: AtomicU64::new(0),
            outstanding: AtomicUsize::new(0),
            replies: Mutex::new(Vec::with_capacity(expected)),
        }
    }

    pub fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a failed request in its kind's column.
    pub fn error(&self, kind: ErrorKind) {
        Self::add(&self.errors[kind.sweep_column().index()]);
        if kind == ErrorKind::FdExhausted {
            Self::add(&self.fd_exhausted);
        }
    }

    /// Requests that failed because this process ran out of descriptors.
    pub fn fd_exhausted(&self) -> u64 {
        self.fd_exhausted.load(Ordering::Relaxed)
    }

    pub fn errors(&self, column: SweepColumn) -> u64 {
        self.errors[column.index()].load(Ordering::Relaxed)
    }

    /// Records a complete 200 response.
    pub fn reply(&self, written: Instant, done: Instant) {
        let r = Reply {
            done_s: done.saturating_duration_since(self.t_start).as_secs_f64(),
            response_ms: done.saturating_duration_since(written).as_secs_f64() * 1000.0,
        };
        // A poisoned lock means a session panicked while pushing; the
        // vector is still whole, so keep counting.
        self.replies
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(r);
    }

    /// Takes the replies recorded so far.
    pub fn take_replies(&self) -> Vec<Reply> {
        std::mem::take(&mut *self.replies.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// Replies per second over the sending window `[0, duration_s)`, counted
/// in 1-second intervals by completion time: `(min, avg, max)`.
///
/// `avg` is every reply inside the window over its duration. A remainder
/// of the window shorter than half a second joins the last interval (a
/// sliver would read as a spike or a dip); a longer one is an interval of
/// its own; a window shorter than a second is one interval. Each interval's
/// rate is its count over its width, so `avg` always lies between `min` and
/// `max`. Replies after the window (while the step drains) are in none.
pub fn reply_rates(done_s: impl IntoIterator<Item = f64>, duration_s: f64) -> (f64, f64, f64) {
    if duration_s <= 0.0 {
        return (0.0, 0.0, 0.0);
    }
    let whole = duration_s.floor() as usize;
    let tail = duration_s - whole as f64;
    let n = match whole {
        0 => 1,
        _ if tail < 0.5 => whole,
        _ => whole + 1,
    };
    let mut counts = vec![0u64; n];
    let mut inside = 0u64;
    for t in done_s {
        if !(0.0..duration_s).contains(&t) {
            continue;
        }
        inside += 1;
        counts[(t as usize).min(n - 1)] += 1;
    }
    // Every interval is 1 s wide but the last, which ends with the window.
    let width = |i: usize| {
        if i + 1 < n {
            1.0
        } else {
            duration_s - (n - 1) as f64
        }
    };
    let rates = counts.iter().enumerate().map(|(i, &c)| c as f64 / width(i));
    let min = rates.clone().fold(f64::INFINITY, f64::min);
    let max = rates.fold(0.0, f64::max);
    (min, inside as f64 / duration_s, max)
}

/// The saturation rule of `--stop-when-saturated`: two consecutive steps in
/// which more than 10% of the issued requests failed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Saturation {
    failing_in_a_row: u32,
}

impl Saturation {
    /// The share of failed requests above which a step counts as failing.
    pub const ERROR_SHARE: f64 = 0.10;
    /// Failing steps in a row that end the sweep.
    pub const STEPS: u32 = 2;

    /// Takes one step's counts; `true` when the sweep should stop now.
    pub fn observe(&mut self, requests: u64, errors: u64) -> bool {
        if requests > 0 && errors as f64 > Self::ERROR_SHARE * requests as f64 {
            self.failing_in_a_row += 1;
        } else {
            self.failing_in_a_row = 0;
        }
        self.failing_in_a_row >= Self::STEPS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_bucketed_by_whole_seconds() {
        // 3 s window: 2, 5 and 3 replies; one after the window, one before.
        let t = [
            0.1, 0.9, 1.0, 1.2, 1.5, 1.7, 1.99, 2.0, 2.5, 2.999, 3.0, -0.1,
        ];
        let (min, avg, max) = reply_rates(t, 3.0);
        assert_eq!((min, max), (2.0, 5.0));
        assert!((avg - 10.0 / 3.0).abs() < 1e-9);
        // Half a second or more left over is an interval of its own...
        let (min, avg, max) = reply_rates([0.5, 1.5, 2.2], 2.5);
        assert_eq!((min, max), (1.0, 2.0));
        assert!((avg - 3.0 / 2.5).abs() < 1e-9);
        // ... less joins the last one.
        let (min, avg, max) = reply_rates([0.5, 1.5, 1.6, 2.2], 2.4);
        assert_eq!(min, 1.0);
        assert!((max - 3.0 / 1.4).abs() < 1e-9 && min <= avg && avg <= max);
        let (_, _, max) = reply_rates([0.5, 1.5, 2.0002], 2.0004);
        assert!((max - 2.0 / 1.0004).abs() < 1e-9);
        // An empty interval is a minimum of 0.
        assert_eq!(reply_rates([0.5, 0.6], 2.0), (0.0, 1.0, 2.0));
    }

    #[test]
    fn a_short_window_is_one_interval() {
        let (min, avg, max) = reply_rates([0.1, 0.2, 0.3], 0.5);
        assert_eq!((min, avg, max), (6.0, 6.0, 6.0));
        assert_eq!(reply_rates([], 1.0), (0.0, 0.0, 0.0));
        assert_eq!(reply_rates([0.1], 0.0), (0.0, 0.0, 0.0));
    }

    #[test]
    fn saturation_needs_two_failing_steps_in_a_row() {
        let mut s = Saturation::default();
        assert!(!s.observe(100, 11));
        assert!(!s.observe(100, 10), "exactly 10% is not more than 10%");
        assert!(!s.observe(100, 50));
        assert!(s.observe(100, 100));
        let mut s = Saturation::default();
        assert!(!s.observe(0, 0));
        assert!(!s.observe(10, 2));
        assert!(s.observe(10, 2));
    }

    #[test]
    fn replies_are_timed_from_the_step_start() {
        let t0 = Instant::now();
        let s = StepStats::new(t0, 4);
        s.reply(t0, t0 + std::time::Duration::from_millis(1500));
        s.error(ErrorKind::ShortBody);
        s.error(ErrorKind::Reset);
        s.error(ErrorKind::BadStatus);
        let r = s.take_replies();
        assert_eq!(r.len(), 1);
        assert!((r[0].done_s - 1.5).abs() < 1e-9 && (r[0].response_ms - 1500.0).abs() < 1e-6);
        assert_eq!(s.errors(SweepColumn::Reset), 2);
        assert_eq!(s.errors(SweepColumn::Other), 1);
        assert_eq!(s.errors(SweepColumn::Timeout), 0);
        assert!(s.take_replies().is_empty());
    }
}
