//! A sweep's rows: the load generator's steps (`steps.csv` of `slowlab
//! sweep-load`) with the CPU each component used during each step, appended
//! to `sweep.csv`; and the sweep's summary (where errors first appear, the
//! highest error-free rate), appended to `sweep-summary.csv`. Both are
//! [`schema`]'s rows.
//!
//! A step's CPU is the increase of the component's cumulative counter over
//! the step's sending window, `start_unix_s..end_unix_s`, divided by the
//! window's length. The sampler reads the counters every ~200 ms, but not
//! at the window's edges, and on a busy machine its passes can be a second
//! or more apart; so the counter at each edge is interpolated between the
//! samples on either side of it, rather than taken from the first and last
//! sample inside the window (which left a step empty when fewer than two
//! samples fell inside, and measured a short, skewed stretch when two
//! fell close together). Only where the samples do not reach past an edge
//! does the nearest sample inside the window stand in for it.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

use super::SweepArgs;
use lab::sample::{ResourceSample, Samples};
use lab::stack::policy::CapPlan;
use schema::file::read_log;
use schema::{
    Appender, CapsMode, STEPS_CSV, SWEEP_CSV, SWEEP_SUMMARY_CSV, SweepRow, SweepSummaryRow,
};

/// A step is flagged when the load generator used at least this share of a
/// core: on a 2-core machine it then competes with the server for CPU, and
/// the step measures the client as much as the server.
pub const LOADGEN_SATURATED_CORES: f64 = 0.9;
/// ... or when it started connections this late (p99).
pub const LOADGEN_LAG_MS: f64 = 5.0;

/// What one sweep found: its row of `sweep-summary.csv` and its steps.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SweepSummary {
    pub row: SweepSummaryRow,
    pub steps: Vec<SweepRow>,
}

/// A cumulative counter of one component: (Unix time, value), in time order.
type Series = Vec<(f64, f64)>;

/// The samples of `component` with a value of `counter`. CPU time comes
/// from the cgroup, or summed over the processes where a cgroup read
/// failed; the two count from different origins, so a series keeps the
/// cgroup's samples when there are any.
fn series(
    samples: &[ResourceSample],
    component: &str,
    counter: fn(&ResourceSample) -> Option<u64>,
) -> Series {
    let mine = || samples.iter().filter(|s| s.component == component);
    let cgroup = mine().any(|s| s.cpu_source == "cgroup");
    let mut v: Series = mine()
        .filter(|s| !cgroup || s.cpu_source == "cgroup")
        .filter_map(|s| Some((s.t_unix_s, counter(s)? as f64)))
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// The counter at `t`, interpolated between the samples around it; `None`
/// when no sample lies on one side of `t`, or the counter went back.
fn at(series: &[(f64, f64)], t: f64) -> Option<f64> {
    let i = series.partition_point(|(x, _)| *x < t);
    match (i.checked_sub(1).map(|j| series[j]), series.get(i)) {
        (_, Some(&(x, v))) if x == t => Some(v),
        (Some((ta, va)), Some(&(tb, vb))) if vb >= va => {
            Some(va + (vb - va) * (t - ta) / (tb - ta))
        }
        _ => None,
    }
}

/// How much the counter grew over `[start, end]`, and over how long: the
/// whole window where the samples surround its edges, else from the first
/// to the last sample inside it.
fn increase(series: &[(f64, f64)], start: f64, end: f64) -> Option<(f64, f64)> {
    let inside = || series.iter().filter(|(t, _)| *t >= start && *t <= end);
    let a = at(series, start)
        .map(|v| (start, v))
        .or_else(|| inside().next().copied())?;
    let b = at(series, end)
        .map(|v| (end, v))
        .or_else(|| inside().next_back().copied())?;
    (b.0 > a.0 && b.1 >= a.1).then_some((b.1 - a.1, b.0 - a.0))
}

/// CPU cores used by `component` between `start` and `end` (Unix seconds).
pub fn cpu_cores(samples: &[ResourceSample], component: &str, start: f64, end: f64) -> Option<f64> {
    let (ns, dt) = increase(&series(samples, component, |s| s.cpu_ns), start, end)?;
    Some(ns / 1e9 / dt)
}

/// Milliseconds the CPU cap held `component` back between `start` and
/// `end`, scaled to the whole window when the samples cover only part.
fn throttled_ms(samples: &[ResourceSample], component: &str, start: f64, end: f64) -> Option<f64> {
    let (ns, dt) = increase(&series(samples, component, |s| s.throttled_ns), start, end)?;
    Some(ns / 1e6 * (end - start) / dt)
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
    let id = identity(args, caps);
    let steps: Vec<SweepRow> = read_log(&dir.join("load").join(STEPS_CSV), &id.step_lead())
        .with_context(|| "the load generator wrote no steps".to_string())?;
    let summary = summarize(id, &samples.resources, steps);
    Appender::new(out.join(SWEEP_CSV)).append_existing(&summary.steps)?;
    Appender::new(out.join(SWEEP_SUMMARY_CSV))
        .append_existing(std::slice::from_ref(&summary.row))?;
    Ok(summary)
}

/// The sweep's row of `sweep-summary.csv` before its steps are counted.
fn identity(args: &SweepArgs, caps: CapPlan) -> SweepSummaryRow {
    SweepSummaryRow {
        sweep_id: args.sweep_id(),
        server: args.server.into(),
        route: args.route.into(),
        slow_clients: args.slow,
        caps: if caps.app.is_some() {
            CapsMode::Capped
        } else {
            CapsMode::Uncapped
        }
        .into(),
        calls_per_conn: Some(args.calls_per_conn),
        steps: Some(0),
        loadgen_saturated_steps: Some(0),
        ports_exhausted_steps: Some(0),
        ..SweepSummaryRow::default()
    }
}

/// Adds each component's CPU to the sweep's steps, and finds where errors
/// begin.
fn summarize(row: SweepSummaryRow, r: &[ResourceSample], steps: Vec<SweepRow>) -> SweepSummary {
    let mut s = SweepSummary {
        row,
        steps: Vec::new(),
    };
    let count = |n: &mut Option<usize>| *n = Some(n.unwrap_or(0) + 1);
    let mut seen_error = false;
    for mut step in steps {
        let (start, end) = (step.start_unix_s, step.end_unix_s);
        step.app_cpu_cores = cpu_cores(r, "app", start, end);
        step.proxy_cpu_cores = cpu_cores(r, "proxy", start, end);
        step.loadgen_cpu_cores = cpu_cores(r, "loadgen", start, end);
        step.app_throttled_ms = throttled_ms(r, "app", start, end);
        step.proxy_throttled_ms = throttled_ms(r, "proxy", start, end);
        let saturated = step
            .loadgen_cpu_cores
            .is_some_and(|c| c >= LOADGEN_SATURATED_CORES)
            || step
                .p99_schedule_lag_ms
                .is_some_and(|l| l >= LOADGEN_LAG_MS);
        step.loadgen_saturated = Some(saturated);
        count(&mut s.row.steps);
        if saturated {
            count(&mut s.row.loadgen_saturated_steps);
        }
        if step.err_ports_exhausted > 0 {
            count(&mut s.row.ports_exhausted_steps);
        }
        if step.errors > 0 && !seen_error {
            seen_error = true;
            s.row.first_error_conn_rate = Some(step.conn_rate_demanded);
        }
        if !seen_error {
            s.row.highest_error_free_conn_rate = Some(step.conn_rate_demanded);
            s.row.highest_error_free_req_rate = Some(step.req_rate_demanded);
            s.row.highest_error_free_replies_per_s = step.replies_per_s_avg;
        }
        s.steps.push(step);
    }
    s
}

/// The table printed at the end of a sweep.
pub fn console_summary(s: &SweepSummary) -> String {
    let mut out = String::new();
    let num = |v: Option<f64>, d: usize, none: &str| {
        v.map(|v| format!("{v:.d$}")).unwrap_or_else(|| none.into())
    };
    let _ = writeln!(out, "sweep {}", s.row.sweep_id);
    let _ = writeln!(
        out,
        "{:>10} {:>10} {:>10} {:>9} {:>7}  note",
        "conn/s", "req/s", "replies/s", "p95 ms", "errors"
    );
    for st in &s.steps {
        let mut notes = Vec::new();
        if st.loadgen_saturated == Some(true) {
            notes.push("load generator saturated: this step measures the client");
        }
        if st.loadgen_cpu_cores.is_none() {
            notes.push("load generator CPU not sampled in this window");
        }
        let _ = writeln!(
            out,
            "{:>10.0} {:>10.0} {:>10} {:>9} {:>7}  {}",
            st.conn_rate_demanded,
            st.req_rate_demanded,
            num(st.replies_per_s_avg, 1, "-"),
            num(st.p95_ms, 2, "-"),
            st.errors,
            notes.join("; ")
        );
    }
    let _ = writeln!(
        out,
        "highest error-free rate: {} req/s ({} conn/s); errors first at {} conn/s",
        num(s.row.highest_error_free_req_rate, 0, "none"),
        num(s.row.highest_error_free_conn_rate, 0, "none"),
        num(s.row.first_error_conn_rate, 0, "no step"),
    );
    let saturated = s.row.loadgen_saturated_steps.unwrap_or(0);
    if saturated > 0 {
        let _ = writeln!(
            out,
            "WARNING: the load generator saturated in {saturated} step(s); those steps measure the client",
        );
    }
    let ports = s.row.ports_exhausted_steps.unwrap_or(0);
    if ports > 0 {
        let _ = writeln!(
            out,
            "WARNING: ephemeral ports ran out in {ports} step(s) (TIME_WAIT); those errors are the client's, not the server's",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(component: &str, t: f64, cpu_s: f64) -> ResourceSample {
        ResourceSample {
            t_unix_s: t,
            component: component.into(),
            cpu_ns: Some((cpu_s * 1e9).round() as u64),
            cpu_source: "cgroup",
            ..ResourceSample::default()
        }
    }

    #[test]
    fn cpu_inside_a_window() {
        let s = |t: f64, cpu: f64| sample("app", t, cpu);
        let samples = vec![s(0.0, 0.0), s(1.0, 0.5), s(2.0, 1.0), s(3.0, 3.0)];
        // 0.25 s at 0.5 (interpolated), 2.0 s at 2.5: 1.75 s over 2 s.
        assert_eq!(cpu_cores(&samples, "app", 0.5, 2.5), Some(0.875));
        assert!((cpu_cores(&samples, "app", 1.0, 3.0).unwrap() - 1.25).abs() < 1e-9);
        assert_eq!(cpu_cores(&samples, "proxy", 0.0, 3.0), None);
        // Between two samples: the interpolated rate of that interval.
        assert!((cpu_cores(&samples, "app", 1.5, 1.9).unwrap() - 0.5).abs() < 1e-9);
    }

    /// The bug seen in `slowlab sweep --server rust-async --route direct
    /// --low 100 --high 300 --step 100 --step-duration 3s --no-caps`: a
    /// load generator using a steady half core, sampled irregularly (a busy
    /// sampler), had its first step right, its second empty and its third
    /// off. Every step must show the half core.
    #[test]
    fn every_step_gets_its_cpu_from_the_samples_around_its_window() {
        let times = [0.0, 0.15, 2.95, 3.05, 6.4, 9.6, 9.75];
        let samples: Vec<ResourceSample> = times
            .iter()
            .map(|&t| sample("loadgen", 100.0 + t, 0.5 * t))
            .collect();
        let windows = [(0.1, 3.1), (3.4, 6.4 - 0.05), (6.5, 9.5)];
        for (start, end) in windows {
            let cores = cpu_cores(&samples, "loadgen", 100.0 + start, 100.0 + end);
            assert!(
                cores.is_some_and(|c| (c - 0.5).abs() < 1e-6),
                "window {start}..{end}: {cores:?}"
            );
        }
    }

    #[test]
    fn a_procfs_fallback_sample_does_not_break_the_cgroup_series() {
        let mut samples: Vec<ResourceSample> = (0..=10)
            .map(|i| sample("app", i as f64, 0.25 * i as f64))
            .collect();
        // One cgroup read failed: the processes' own times, from another
        // origin (and far below the cgroup's total).
        samples[5].cpu_ns = Some(1);
        samples[5].cpu_source = "procfs";
        let c = cpu_cores(&samples, "app", 4.5, 5.5).unwrap();
        assert!((c - 0.25).abs() < 1e-9, "{c}");
    }

    #[test]
    fn the_summary_finds_the_first_errors_and_flags_the_steps() {
        let step = |n: u32, start: f64, errors: u64, lag: f64| SweepRow {
            step: n,
            conn_rate_demanded: 100.0 * n as f64,
            req_rate_demanded: 1000.0 * n as f64,
            start_unix_s: start,
            end_unix_s: start + 3.0,
            replies_per_s_avg: Some(990.0 * n as f64),
            errors,
            err_ports_exhausted: errors / 2,
            p99_schedule_lag_ms: Some(lag),
            ..SweepRow::default()
        };
        let samples: Vec<ResourceSample> = (0..=40)
            .map(|i| sample("loadgen", i as f64 * 0.25, 0.3 * i as f64 * 0.25))
            .collect();
        let steps = vec![
            step(1, 0.0, 0, 0.1),
            step(2, 4.0, 0, 6.0),
            step(3, 8.0, 4, 0.1),
        ];
        let s = summarize(SweepSummaryRow::default(), &samples, steps);
        assert_eq!(s.row.steps, Some(3));
        assert_eq!(s.row.loadgen_saturated_steps, Some(1), "the late step");
        assert_eq!(s.row.ports_exhausted_steps, Some(1));
        assert_eq!(s.row.first_error_conn_rate, Some(300.0));
        assert_eq!(s.row.highest_error_free_req_rate, Some(2000.0));
        assert_eq!(s.row.highest_error_free_replies_per_s, Some(1980.0));
        for st in &s.steps {
            let c = st.loadgen_cpu_cores.unwrap();
            assert!((c - 0.3).abs() < 1e-9, "step {}: {c}", st.step);
            assert_eq!(st.app_cpu_cores, None, "no app samples");
        }
        let table = console_summary(&s);
        assert!(table.contains("errors first at 300 conn/s"), "{table}");
        assert!(
            table.contains("load generator saturated in 1 step"),
            "{table}"
        );
    }

    #[test]
    fn a_window_the_samples_do_not_reach_is_empty() {
        let samples = vec![sample("app", 0.0, 0.0), sample("app", 1.0, 1.0)];
        assert_eq!(cpu_cores(&samples, "app", 5.0, 8.0), None);
        // Reaching only into the window: the samples inside stand in.
        let samples = vec![sample("app", 5.5, 0.0), sample("app", 6.5, 0.5)];
        assert_eq!(cpu_cores(&samples, "app", 5.0, 8.0), Some(0.5));
    }
}
