//! `--fast-settle`: when the `/fast` schedule begins, once the slow readers
//! hold what the run is about.
//!
//! Every slow reader of a run connects at t0, all at once. A server that
//! takes its connections one by one on an event loop (Uvicorn, the async
//! replica) spends its first second or so on that burst, accepting each
//! reader and writing the first chunk of its response, and a `/fast` call
//! that comes meanwhile waits behind the tester's own connect storm, not
//! behind slow readers: `check --server uvicorn` at 497 readers saw `/fast`
//! at 1.2 s until the last reader's first byte (1.4 s), then 1 ms. Real
//! slow clients do not arrive in one instant. So a run that asks for it
//! starts its schedule when every reader has its response's first byte (or
//! has ended), or when none got one for the quiet window (a server with
//! fewer handlers than readers never answers the rest), and never later
//! than `--timeout` after t0. The schedule keeps its rate and length; it is
//! shifted, and `summary.json` says by how much and why.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::slow::Gauge;

/// How often the readers' first bytes are looked at.
const POLL: Duration = Duration::from_millis(5);

/// Why the `/fast` schedule began when it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Settled {
    /// At `--fast-start`: no wait was asked for, or there are no readers.
    Start,
    /// Every slow reader had its first byte or had ended.
    FirstBytes,
    /// No reader got its first byte for the quiet window: the rest wait
    /// for a handler.
    Quiet,
    /// `--timeout` after t0, with readers still arriving.
    Timeout,
    /// The run was stopped (Ctrl-C, SIGTERM) while it waited.
    Stopped,
}

/// The wait, as a pure state machine of the readers' count over time.
#[derive(Debug, Clone)]
pub struct Settle {
    start: Duration,
    quiet: Duration,
    limit: Duration,
    ready: usize,
    changed: Duration,
}

impl Settle {
    /// The schedule begins no earlier than `start` (`--fast-start`), after
    /// `quiet` without a new first byte, and no later than `limit`.
    pub fn new(start: Duration, quiet: Duration, limit: Duration) -> Settle {
        Settle {
            start,
            quiet,
            limit: limit.max(start),
            ready: 0,
            changed: Duration::ZERO,
        }
    }

    /// At `at` after t0, `ready` of `total` readers have their first byte:
    /// whether the schedule begins now, and why.
    pub fn step(&mut self, at: Duration, ready: usize, total: usize) -> Option<Settled> {
        if ready != self.ready {
            self.ready = ready;
            self.changed = at;
        }
        if at < self.start {
            return None;
        }
        if ready >= total {
            Some(Settled::FirstBytes)
        } else if at.saturating_sub(self.changed) >= self.quiet {
            Some(Settled::Quiet)
        } else if at >= self.limit {
            Some(Settled::Timeout)
        } else {
            None
        }
    }
}

/// Waits, from `t0`, until the readers of `gauges` have settled under
/// `rule`; returns how much later than `--fast-start` the schedule begins,
/// and why.
pub async fn wait(t0: Instant, gauges: &[Arc<Gauge>], mut rule: Settle) -> (Duration, Settled) {
    let start = rule.start;
    loop {
        let at = t0.elapsed();
        if common::signals::requested() {
            return (at.saturating_sub(start), Settled::Stopped);
        }
        let ready = gauges
            .iter()
            .filter(|g| g.received.load(Ordering::Relaxed) > 0 || g.done.load(Ordering::Acquire))
            .count();
        if let Some(why) = rule.step(at, ready, gauges.len()) {
            return (at.saturating_sub(start), why);
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn readers_that_all_answer_before_the_start_change_nothing() {
        let mut s = Settle::new(ms(250), ms(250), ms(5000));
        assert_eq!(s.step(ms(20), 2, 2), None, "never before --fast-start");
        assert_eq!(s.step(ms(250), 2, 2), Some(Settled::FirstBytes));
    }

    #[test]
    fn a_burst_of_first_bytes_is_waited_for_to_its_end() {
        let mut s = Settle::new(ms(250), ms(250), ms(5000));
        // An event loop answering 497 readers over 1.4 s.
        let mut t = 0;
        let mut ready = 0;
        while ready < 497 {
            ready += 2;
            t += 6;
            let r = s.step(ms(t), ready.min(497), 497);
            if ready < 497 {
                assert_eq!(r, None, "at {t} ms, {ready} ready");
            } else {
                assert_eq!(r, Some(Settled::FirstBytes));
            }
        }
    }

    #[test]
    fn readers_that_wait_for_a_handler_end_the_wait_after_the_quiet_window() {
        // Sync x2: two readers answered at once, two never.
        let mut s = Settle::new(ms(250), ms(250), ms(5000));
        assert_eq!(s.step(ms(20), 2, 4), None);
        assert_eq!(s.step(ms(260), 2, 4), None, "quiet for 240 ms only");
        assert_eq!(s.step(ms(270), 2, 4), Some(Settled::Quiet));
        // None answered at all: quiet from t0.
        let mut s = Settle::new(ms(250), ms(250), ms(5000));
        assert_eq!(s.step(ms(250), 0, 4), Some(Settled::Quiet));
    }

    #[test]
    fn readers_that_trickle_in_end_the_wait_at_the_limit() {
        let mut s = Settle::new(ms(250), ms(250), ms(1000));
        let mut last = None;
        for (i, t) in (0..=1000).step_by(100).enumerate() {
            last = s.step(ms(t), i, 100);
            if t < 1000 {
                assert_eq!(last, None, "at {t} ms");
            }
        }
        assert_eq!(last, Some(Settled::Timeout));
    }
}
