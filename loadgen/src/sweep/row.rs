//! One row of `steps.csv`, the contract with `slowlab sweep` (its columns
//! are the `schema` crate's `StepCells`, which `sweep.csv` carries and the
//! the book's results files document), and the file it goes to.
//!
//! Rates are per second of the measured sending window (`duration_s`).
//! `loadgen_cpu_s` is this process's CPU time (`getrusage`, all threads,
//! slow readers included) from the window's start to the end of the
//! step's wait for its sessions. `time_wait_sockets` is the host's (its
//! network namespace's) TIME_WAIT count at the step's end, the server's
//! included. `slow_active` counts slow downloads running at the step's end.
//! An unmeasured value (a percentile without replies, a lag without
//! sessions) is an empty cell.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use anyhow::Context;
use schema::StepCells;
use schema::child::Labelled;

use super::step::{Reply, StepStats, reply_rates};
use crate::error::SweepColumn;

/// What one step measured.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StepRow {
    /// 1-based.
    pub step: usize,
    pub conn_rate_demanded: f64,
    pub calls_per_conn: u32,
    /// The sending window, wall clock.
    pub start_unix_s: f64,
    pub end_unix_s: f64,
    pub duration_s: f64,
    pub sessions: u64,
    pub connections: u64,
    pub requests: u64,
    pub replies: u64,
    pub replies_per_s: (f64, f64, f64),
    /// p50, p95, p99 and max of the replies' response times; `None` without
    /// replies.
    pub response_ms: Option<[f64; 4]>,
    pub err_timeout: u64,
    pub err_connect_refused: u64,
    pub err_reset: u64,
    pub err_ports_exhausted: u64,
    pub err_other: u64,
    /// Max and p99 of the sessions' schedule lag; `None` without sessions.
    pub schedule_lag_ms: Option<(f64, f64)>,
    pub loadgen_cpu_s: f64,
    pub time_wait_sockets: Option<u64>,
    pub slow_active: usize,
}

/// What the scheduler thread saw of a sending window.
#[derive(Debug, Clone, Default)]
pub struct WindowFacts {
    pub start_unix_s: f64,
    pub end_unix_s: f64,
    pub duration_s: f64,
    /// Each session's actual start minus its scheduled start.
    pub lags_ms: Vec<f64>,
}

impl StepRow {
    /// Builds the row of a drained step. `replies` are the step's replies
    /// (taken from `stats`).
    pub fn of(
        step: usize,
        conn_rate: f64,
        calls_per_conn: u32,
        window: &WindowFacts,
        stats: &StepStats,
        replies: &[Reply],
    ) -> StepRow {
        let load = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
        let times: Vec<f64> = replies.iter().map(|r| r.response_ms).collect();
        let rank = |p| common::stats::nearest_rank(&times, p);
        let response_ms = match (rank(50.0), rank(95.0), rank(99.0), rank(100.0)) {
            (Some(a), Some(b), Some(c), Some(d)) => Some([a, b, c, d]),
            _ => None,
        };
        let lag = |p| common::stats::nearest_rank(&window.lags_ms, p);
        StepRow {
            step,
            conn_rate_demanded: conn_rate,
            calls_per_conn,
            start_unix_s: window.start_unix_s,
            end_unix_s: window.end_unix_s,
            duration_s: window.duration_s,
            sessions: load(&stats.sessions),
            connections: load(&stats.connections),
            requests: load(&stats.requests),
            replies: replies.len() as u64,
            replies_per_s: reply_rates(replies.iter().map(|r| r.done_s), window.duration_s),
            response_ms,
            err_timeout: stats.errors(SweepColumn::Timeout),
            err_connect_refused: stats.errors(SweepColumn::ConnectRefused),
            err_reset: stats.errors(SweepColumn::Reset),
            err_ports_exhausted: stats.errors(SweepColumn::PortsExhausted),
            err_other: stats.errors(SweepColumn::Other),
            schedule_lag_ms: lag(100.0).zip(lag(99.0)),
            ..StepRow::default()
        }
    }

    pub fn req_rate_demanded(&self) -> f64 {
        self.conn_rate_demanded * f64::from(self.calls_per_conn)
    }

    pub fn errors(&self) -> u64 {
        self.err_timeout
            + self.err_connect_refused
            + self.err_reset
            + self.err_ports_exhausted
            + self.err_other
    }

    fn per_s(&self, n: u64) -> f64 {
        if self.duration_s > 0.0 {
            n as f64 / self.duration_s
        } else {
            0.0
        }
    }

    /// The step's row of `steps.csv`; a value not measured is empty.
    pub fn cells(&self) -> StepCells {
        let (rmin, ravg, rmax) = self.replies_per_s;
        let ms = |i: usize| self.response_ms.map(|r| r[i]);
        StepCells {
            step: self.step as u32,
            conn_rate_demanded: self.conn_rate_demanded,
            req_rate_demanded: self.req_rate_demanded(),
            calls_per_conn: self.calls_per_conn,
            start_unix_s: self.start_unix_s,
            end_unix_s: self.end_unix_s,
            duration_s: self.duration_s,
            sessions: self.sessions,
            connections: self.connections,
            requests: self.requests,
            replies: self.replies,
            conn_rate_achieved: self.per_s(self.sessions),
            req_rate_achieved: self.per_s(self.requests),
            replies_per_s_min: Some(rmin),
            replies_per_s_avg: Some(ravg),
            replies_per_s_max: Some(rmax),
            p50_ms: ms(0),
            p95_ms: ms(1),
            p99_ms: ms(2),
            max_ms: ms(3),
            errors: self.errors(),
            err_timeout: self.err_timeout,
            err_connect_refused: self.err_connect_refused,
            err_reset: self.err_reset,
            err_ports_exhausted: self.err_ports_exhausted,
            err_other: self.err_other,
            max_schedule_lag_ms: self.schedule_lag_ms.map(|l| l.0),
            p99_schedule_lag_ms: self.schedule_lag_ms.map(|l| l.1),
            loadgen_cpu_s: self.loadgen_cpu_s,
            time_wait_sockets: self.time_wait_sockets,
            slow_active: self.slow_active as u64,
        }
    }

    /// The progress line printed on stderr as the step ends.
    pub fn line(&self) -> String {
        let p95 = self
            .response_ms
            .map(|r| format!("{:.2} ms", r[1]))
            .unwrap_or_else(|| "-".into());
        let mut s = format!(
            "step {}: {} conn/s ({} req/s): {:.1} replies/s, p95 {p95}, {} errors of {} requests",
            self.step,
            self.conn_rate_demanded,
            self.req_rate_demanded(),
            self.replies_per_s.1,
            self.errors(),
            self.requests,
        );
        if self.err_ports_exhausted > 0 {
            s.push_str(&format!(
                " ({} for lack of ephemeral ports: the client's limit)",
                self.err_ports_exhausted
            ));
        }
        s
    }
}

/// `steps.csv`, written row by row and flushed as each step ends, so an
/// interrupted sweep keeps the steps it finished.
pub struct StepsFile {
    path: PathBuf,
    w: Labelled<'static, BufWriter<File>>,
}

impl StepsFile {
    /// Creates `dir/steps.csv` with its header (replacing an older one).
    pub fn create(dir: &Path) -> anyhow::Result<StepsFile> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join(schema::STEPS_CSV);
        let file = File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        let w = Labelled::new::<StepCells>(BufWriter::new(file), &[])
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(StepsFile { path, w })
    }

    pub fn append(&mut self, row: &StepRow) -> anyhow::Result<()> {
        self.w
            .write(&row.cells())
            .and_then(|()| self.w.flush())
            .with_context(|| format!("writing {}", self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_follow_the_header() {
        let row = StepRow {
            step: 2,
            conn_rate_demanded: 50.0,
            calls_per_conn: 10,
            duration_s: 2.0,
            sessions: 100,
            requests: 990,
            replies: 980,
            err_timeout: 10,
            response_ms: Some([1.0, 2.0, 3.0, 4.0]),
            ..StepRow::default()
        };
        let text = |row: &StepRow| {
            let line = schema::child::line(&row.cells()).expect("a line");
            let line = String::from_utf8(line).expect("text");
            let cols = schema::columns::<StepCells>();
            let cells: Vec<String> = line.trim_end().split(',').map(String::from).collect();
            assert_eq!(cells.len(), cols.len());
            move |name: &str| cells[cols.iter().position(|h| *h == name).expect("column")].clone()
        };
        let get = text(&row);
        assert_eq!(get("conn_rate_demanded"), "50");
        assert_eq!(get("req_rate_demanded"), "500");
        assert_eq!(get("conn_rate_achieved"), "50.00");
        assert_eq!(get("req_rate_achieved"), "495.00");
        assert_eq!(get("errors"), "10");
        assert_eq!(get("p95_ms"), "2.000");
        assert_eq!(get("max_schedule_lag_ms"), "", "not measured: empty");
        assert_eq!(get("time_wait_sockets"), "");
        assert_eq!(text(&StepRow::default())("p50_ms"), "");
    }
}
