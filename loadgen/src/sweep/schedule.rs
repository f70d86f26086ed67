//! The scheduler thread: starts each step's sessions on time, open loop.
//!
//! Session *i* of a step is due at `t_step + i / rate`, whatever happened to
//! earlier ones (httperf `--rate`). As in [`crate::schedule`], a dedicated
//! thread sleeps with `clock_nanosleep` (timer slack 1 ns and the short
//! slice of [`crate::latency`]), creates the socket, notes the actual start,
//! starts the connect and hands the session to the runtime. At thousands of
//! sessions per second it never sleeps for a session already due: when it
//! is behind (a late wake-up, a busy CPU) it starts every due session in a
//! row, and each one's lag (actual minus scheduled start) is recorded. One
//! wake-up per session and no allocation on the loop keep its CPU low.

use std::sync::Arc;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use tokio::runtime::Handle;

use super::row::WindowFacts;
use super::session::{self, Launched, Running, SessionContext};
use super::step::StepStats;
use crate::error::{ErrorKind, Phase};
use crate::latency;

/// One step's sending window, as the driver asks for it.
#[derive(Debug)]
pub struct Window {
    pub rate: f64,
    pub duration: Duration,
    pub stats: Arc<StepStats>,
}

/// The number of sessions a window starts: every *i* with `i / rate` inside
/// the window (50/s for 3 s is 150).
pub fn sessions_in(rate: f64, duration: Duration) -> u64 {
    if rate <= 0.0 {
        return 0;
    }
    // The epsilon keeps 3 s x 50/s at 150 when the product comes out as
    // 150.00000000001.
    (duration.as_secs_f64() * rate - 1e-9).ceil().max(0.0) as u64
}

/// The scheduler thread, waiting for windows.
#[derive(Debug)]
pub struct Scheduler {
    windows: mpsc::Sender<Window>,
    facts: mpsc::Receiver<WindowFacts>,
    thread: thread::JoinHandle<()>,
}

impl Scheduler {
    pub fn spawn(ctx: Arc<SessionContext>, runtime: Handle) -> anyhow::Result<Scheduler> {
        let (windows, windows_rx) = mpsc::channel::<Window>();
        let (facts_tx, facts) = mpsc::channel();
        let thread = thread::Builder::new()
            .name("slowlab-sweep-schedule".into())
            .spawn(move || {
                let tuning = latency::tune_current_thread(latency::SLICE, latency::NICE, false);
                tracing::debug!(?tuning, "sweep scheduler thread tuned");
                // The channel closes when the sweep ends.
                while let Ok(w) = windows_rx.recv() {
                    let facts = send_window(&w, &ctx, &runtime);
                    if facts_tx.send(facts).is_err() {
                        return;
                    }
                }
            })
            .context("starting the scheduler thread")?;
        Ok(Scheduler {
            windows,
            facts,
            thread,
        })
    }

    /// Runs one sending window from `w.stats.t_start` and returns what it
    /// saw once the window has ended (sessions may still be running).
    pub fn window(&self, w: Window) -> anyhow::Result<WindowFacts> {
        self.windows
            .send(w)
            .ok()
            .context("the scheduler thread stopped")?;
        self.facts
            .recv()
            .ok()
            .context("the scheduler thread stopped")
    }

    /// Ends the thread.
    pub fn stop(self) -> anyhow::Result<()> {
        drop(self.windows);
        self.thread
            .join()
            .map_err(|_| anyhow::anyhow!("the scheduler thread panicked"))
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

fn send_window(w: &Window, ctx: &Arc<SessionContext>, runtime: &Handle) -> WindowFacts {
    let n = sessions_in(w.rate, w.duration);
    // Reserved before the window so the loop does not allocate.
    let mut lags_ms = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
    let t0 = w.stats.t_start;
    latency::sleep_until(t0);
    let start_unix_s = unix_now();
    for i in 0..n {
        let due = t0 + Duration::from_secs_f64(i as f64 / w.rate);
        // Returns at once when the session is already due.
        latency::sleep_until(due);
        let started = Instant::now();
        lags_ms.push(started.saturating_duration_since(due).as_secs_f64() * 1000.0);
        launch(started, w, ctx, runtime);
    }
    latency::sleep_until(t0 + w.duration);
    let end = Instant::now();
    WindowFacts {
        start_unix_s,
        end_unix_s: unix_now(),
        duration_s: end.saturating_duration_since(t0).as_secs_f64(),
        lags_ms,
    }
}

/// Starts one session: its first connect here, the rest on the runtime.
fn launch(started: Instant, w: &Window, ctx: &Arc<SessionContext>, runtime: &Handle) {
    let stats = &w.stats;
    StepStats::add(&stats.sessions);
    StepStats::add(&stats.connections);
    match session::connect(ctx.addr, ctx.bind) {
        Ok(socket) => {
            let first = Launched { started, socket };
            let running = Running::new(stats.clone());
            runtime.spawn(session::run(first, ctx.clone(), running));
        }
        // Refused at once, or no port or descriptor left: the session's
        // first request fails and it ends here.
        Err(e) => {
            StepStats::add(&stats.requests);
            stats.error(ErrorKind::of_io(&e, Phase::Connect));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_per_window() {
        assert_eq!(sessions_in(50.0, Duration::from_secs(3)), 150);
        assert_eq!(sessions_in(20.0, Duration::from_secs(1)), 20);
        // A fraction of an interval still starts one.
        assert_eq!(sessions_in(8.0, Duration::from_millis(130)), 2);
        assert_eq!(sessions_in(0.5, Duration::from_secs(1)), 1);
        assert_eq!(sessions_in(0.0, Duration::from_secs(1)), 0);
    }
}
