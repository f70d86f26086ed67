//! A sweep's rows: the load generator's steps (`steps.csv` of `slowlab
//! sweep-load`) with the CPU each component used during each step, appended
//! to `sweep.csv`; and the sweep's summary (where errors first appear, the
//! highest error-free rate), appended to `sweep-summary.csv`.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

use super::SweepArgs;
use crate::reproduce::runner::CapPlan;
use crate::reproduce::table::{Appender, Table, opt};
use crate::sample::{ResourceSample, Samples};

/// A step is flagged when the load generator used at least this share of a
/// core: on a 2-core machine it then competes with the server for CPU, and
/// the step measures the client as much as the server.
pub const LOADGEN_SATURATED_CORES: f64 = 0.9;
/// ... or when it started connections this late (p99).
pub const LOADGEN_LAG_MS: f64 = 5.0;

/// What one sweep found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SweepSummary {
    pub sweep_id: String,
    pub steps: usize,
    /// Demanded connection rate of the first step with errors.
    pub first_error_conn_rate: Option<f64>,
    /// The last step before the first error: demanded and achieved rates.
    pub highest_error_free_conn_rate: Option<f64>,
    pub highest_error_free_req_rate: Option<f64>,
    pub highest_error_free_replies_per_s: Option<f64>,
    pub loadgen_saturated_steps: usize,
    pub ports_exhausted_steps: usize,
    pub rows: Vec<(f64, f64, f64, f64, f64, bool)>,
}

/// CPU cores used by `component` between `start` and `end` (Unix seconds),
/// from the cumulative counter of the samples inside the window.
pub fn cpu_cores(samples: &[ResourceSample], component: &str, start: f64, end: f64) -> Option<f64> {
    let (a, b) = first_and_last(samples, component, start, end)?;
    let dt = b.t_unix_s - a.t_unix_s;
    let (ca, cb) = (a.cpu_ns?, b.cpu_ns?);
    (dt > 0.0 && cb >= ca).then(|| (cb - ca) as f64 / 1e9 / dt)
}

fn throttled_ms(samples: &[ResourceSample], component: &str, start: f64, end: f64) -> Option<f64> {
    let (a, b) = first_and_last(samples, component, start, end)?;
    let (a, b) = (a.throttled_ns?, b.throttled_ns?);
    (b >= a).then(|| (b - a) as f64 / 1e6)
}

/// The first and last sample of `component` inside `[start, end]`.
fn first_and_last<'s>(
    samples: &'s [ResourceSample],
    component: &str,
    start: f64,
    end: f64,
) -> Option<(&'s ResourceSample, &'s ResourceSample)> {
    let mut inside = samples
        .iter()
        .filter(|s| s.component == component && s.t_unix_s >= start && s.t_unix_s <= end);
    let first = inside.next()?;
    Some((first, inside.next_back().unwrap_or(first)))
}

/// Appends the sweep's steps to `out/sweep.csv` and its summary to
/// `out/sweep-summary.csv`.
pub fn merge(
    out: &Path,
    dir: &Path,
    args: &SweepArgs,
    samples: &Samples,
    caps: CapPlan,
) -> Result<SweepSummary> {
    let steps_path = dir.join("load").join("steps.csv");
    let steps = Table::read(&steps_path)
        .with_context(|| "the load generator wrote no steps".to_string())?;
    let id = args.sweep_id();
    let capped = if caps.app.is_some() {
        "capped"
    } else {
        "uncapped"
    };
    let mut headers: Vec<String> = ["sweep_id", "server", "route", "slow_clients", "caps"]
        .map(String::from)
        .to_vec();
    headers.extend(steps.headers.iter().cloned());
    headers.extend(
        [
            "app_cpu_cores",
            "proxy_cpu_cores",
            "loadgen_cpu_cores",
            "app_throttled_ms",
            "proxy_throttled_ms",
            "loadgen_saturated",
        ]
        .map(String::from),
    );
    let mut summary = SweepSummary {
        sweep_id: id.clone(),
        ..SweepSummary::default()
    };
    let mut rows = Vec::new();
    let mut seen_error = false;
    for row in &steps.rows {
        let start = steps.f64(row, "start_unix_s").unwrap_or(0.0);
        let end = steps.f64(row, "end_unix_s").unwrap_or(0.0);
        let r = &samples.resources;
        let load_cpu = cpu_cores(r, "loadgen", start, end);
        let lag = steps.f64(row, "p99_schedule_lag_ms");
        let saturated = load_cpu.is_some_and(|c| c >= LOADGEN_SATURATED_CORES)
            || lag.is_some_and(|l| l >= LOADGEN_LAG_MS);
        let errors = steps.f64(row, "errors").unwrap_or(0.0);
        let conn_rate = steps.f64(row, "conn_rate_demanded").unwrap_or(0.0);
        let req_rate = steps.f64(row, "req_rate_demanded").unwrap_or(0.0);
        let replies = steps.f64(row, "replies_per_s_avg").unwrap_or(0.0);
        let p95 = steps.f64(row, "p95_ms").unwrap_or(f64::NAN);
        summary.steps += 1;
        summary.loadgen_saturated_steps += usize::from(saturated);
        if steps.f64(row, "err_ports_exhausted").unwrap_or(0.0) > 0.0 {
            summary.ports_exhausted_steps += 1;
        }
        if errors > 0.0 && !seen_error {
            seen_error = true;
            summary.first_error_conn_rate = Some(conn_rate);
        }
        if !seen_error {
            summary.highest_error_free_conn_rate = Some(conn_rate);
            summary.highest_error_free_req_rate = Some(req_rate);
            summary.highest_error_free_replies_per_s = Some(replies);
        }
        summary
            .rows
            .push((conn_rate, req_rate, replies, p95, errors, saturated));
        let mut cells: Vec<String> = vec![
            id.clone(),
            args.server.to_string(),
            args.route.to_string(),
            args.slow.to_string(),
            capped.to_string(),
        ];
        cells.extend(row.iter().cloned());
        cells.extend([
            opt(cpu_cores(r, "app", start, end), 4),
            opt(cpu_cores(r, "proxy", start, end), 4),
            opt(load_cpu, 4),
            opt(throttled_ms(r, "app", start, end), 1),
            opt(throttled_ms(r, "proxy", start, end), 1),
            saturated.to_string(),
        ]);
        rows.push(cells);
    }
    Appender::new(out.join("sweep.csv")).append_existing(&headers, &rows)?;
    let sh: Vec<String> = [
        "sweep_id",
        "server",
        "route",
        "slow_clients",
        "caps",
        "calls_per_conn",
        "steps",
        "first_error_conn_rate",
        "highest_error_free_conn_rate",
        "highest_error_free_req_rate",
        "highest_error_free_replies_per_s",
        "loadgen_saturated_steps",
        "ports_exhausted_steps",
    ]
    .map(String::from)
    .to_vec();
    let sr = vec![
        id,
        args.server.to_string(),
        args.route.to_string(),
        args.slow.to_string(),
        capped.to_string(),
        args.calls_per_conn.to_string(),
        summary.steps.to_string(),
        opt(summary.first_error_conn_rate, 0),
        opt(summary.highest_error_free_conn_rate, 0),
        opt(summary.highest_error_free_req_rate, 0),
        opt(summary.highest_error_free_replies_per_s, 1),
        summary.loadgen_saturated_steps.to_string(),
        summary.ports_exhausted_steps.to_string(),
    ];
    Appender::new(out.join("sweep-summary.csv")).append_existing(&sh, &[sr])?;
    Ok(summary)
}

/// The table printed at the end of a sweep.
pub fn console_summary(s: &SweepSummary) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "sweep {}", s.sweep_id);
    let _ = writeln!(
        out,
        "{:>10} {:>10} {:>10} {:>9} {:>7}  note",
        "conn/s", "req/s", "replies/s", "p95 ms", "errors"
    );
    for &(c, r, rep, p95, err, sat) in &s.rows {
        let _ = writeln!(
            out,
            "{c:>10.0} {r:>10.0} {rep:>10.1} {:>9} {err:>7.0}  {}",
            if p95.is_nan() {
                "-".into()
            } else {
                format!("{p95:.2}")
            },
            if sat {
                "load generator saturated: this step measures the client"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(
        out,
        "highest error-free rate: {} req/s ({} conn/s); errors first at {} conn/s",
        opt(s.highest_error_free_req_rate, 0).if_empty("none"),
        opt(s.highest_error_free_conn_rate, 0).if_empty("none"),
        opt(s.first_error_conn_rate, 0).if_empty("no step"),
    );
    if s.loadgen_saturated_steps > 0 {
        let _ = writeln!(
            out,
            "WARNING: the load generator saturated in {} step(s); those steps measure the client",
            s.loadgen_saturated_steps
        );
    }
    if s.ports_exhausted_steps > 0 {
        let _ = writeln!(
            out,
            "WARNING: ephemeral ports ran out in {} step(s) (TIME_WAIT); those errors are the client's, not the server's",
            s.ports_exhausted_steps
        );
    }
    out
}

trait IfEmpty {
    fn if_empty(self, alt: &str) -> String;
}

impl IfEmpty for String {
    fn if_empty(self, alt: &str) -> String {
        if self.is_empty() {
            alt.to_string()
        } else {
            self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_inside_a_window() {
        let s = |t: f64, cpu: u64| ResourceSample {
            t_unix_s: t,
            component: "app".into(),
            cpu_ns: Some(cpu),
            ..ResourceSample::default()
        };
        let samples = vec![
            s(0.0, 0),
            s(1.0, 500_000_000),
            s(2.0, 1_000_000_000),
            s(3.0, 3_000_000_000),
        ];
        assert_eq!(cpu_cores(&samples, "app", 0.5, 2.5), Some(0.5));
        assert_eq!(cpu_cores(&samples, "app", 1.5, 3.0), Some(2.0));
        assert_eq!(cpu_cores(&samples, "proxy", 0.0, 3.0), None);
        assert_eq!(cpu_cores(&samples, "app", 1.5, 1.9), None);
    }
}
