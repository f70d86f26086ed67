//! From raw rows to the original's figures: per run (nearest-rank
//! percentiles of its `/fast` requests, medians of its `/large` responses,
//! resource use per component) and per condition (the median of its runs,
//! with the min and max of p95).

use std::collections::BTreeMap;

use common::stats::{median, rank_index};

use super::matrix::Condition;
use super::table::Table;
use crate::sample::ResourceSample;

/// Resource use of one component over one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ComponentUse {
    /// CPU time increment / elapsed time; 1.0 is one core.
    pub cpu_cores: Option<f64>,
    pub throttled_ms: Option<f64>,
    pub memory_peak_bytes: Option<u64>,
    pub rss_peak_bytes: Option<u64>,
}

/// The figures of one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFigures {
    pub fast_requests: usize,
    pub fast_ok: usize,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub max_schedule_lag_ms: Option<f64>,
    pub large_responses: usize,
    pub large_ok: usize,
    /// Median over the run's `/large` responses.
    pub app_send_s: Option<f64>,
    pub client_receive_s: Option<f64>,
    /// Largest total logical size of the proxy's open temp files.
    pub temp_peak_bytes: Option<u64>,
    pub components: BTreeMap<String, ComponentUse>,
}

/// Nearest-rank percentile where failed requests rank as the slowest: a
/// percentile that lands on a failure has no value, rather than a flattering
/// one computed from the successes alone.
pub fn percentile_with_failures(ok_values: &[f64], total: usize, p: f64) -> Option<f64> {
    if total == 0 {
        return None;
    }
    let mut sorted = ok_values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(rank_index(total, p)).copied()
}

/// Whether a request or response row succeeded: status 200 and no error.
fn ok_row(t: &Table, row: &[String]) -> bool {
    t.get(row, "error").is_none_or(|e| e.trim().is_empty())
        && t.get(row, "status").is_none_or(|s| s.trim() == "200")
}

/// Computes a run's figures from its files and samples.
pub fn run_figures(
    requests: Option<&Table>,
    large: Option<&Table>,
    app_sends: Option<&Table>,
    samples: &[ResourceSample],
) -> RunFigures {
    let mut f = RunFigures::default();
    if let Some(t) = requests {
        let ok: Vec<f64> = t
            .rows
            .iter()
            .filter(|r| ok_row(t, r))
            .filter_map(|r| t.f64(r, "latency_ms"))
            .collect();
        f.fast_requests = t.rows.len();
        f.fast_ok = ok.len();
        f.p50_ms = percentile_with_failures(&ok, t.rows.len(), 50.0);
        f.p95_ms = percentile_with_failures(&ok, t.rows.len(), 95.0);
        f.p99_ms = percentile_with_failures(&ok, t.rows.len(), 99.0);
        f.max_ms = if ok.len() == t.rows.len() {
            ok.iter().copied().reduce(f64::max)
        } else {
            None
        };
        f.max_schedule_lag_ms = t.floats("schedule_lag_ms").into_iter().reduce(f64::max);
    }
    if let Some(t) = large {
        f.large_responses = t.rows.len();
        let ok: Vec<f64> = t
            .rows
            .iter()
            .filter(|r| ok_row(t, r))
            .filter_map(|r| t.f64(r, "receive_s"))
            .collect();
        f.large_ok = ok.len();
        f.client_receive_s = median(&ok);
    }
    if let Some(t) = app_sends {
        let done: Vec<f64> = t
            .rows
            .iter()
            .filter(|r| t.get(r, "complete") == Some("true"))
            .filter_map(|r| t.f64(r, "app_send_s"))
            .collect();
        f.app_send_s = median(&done);
    }
    f.temp_peak_bytes = samples
        .iter()
        .filter(|s| s.component == "proxy")
        .filter_map(|s| s.temp_logical_bytes)
        .max();
    let mut names: Vec<&str> = samples.iter().map(|s| s.component.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let mine: Vec<&ResourceSample> = samples.iter().filter(|s| s.component == name).collect();
        f.components.insert(name.to_string(), component_use(&mine));
    }
    f
}

fn component_use(s: &[&ResourceSample]) -> ComponentUse {
    let (Some(first), Some(last)) = (s.first(), s.last()) else {
        return ComponentUse::default();
    };
    let elapsed = last.t_unix_s - first.t_unix_s;
    let cpu_cores = match (first.cpu_ns, last.cpu_ns) {
        (Some(a), Some(b)) if elapsed > 0.0 && b >= a => Some((b - a) as f64 / 1e9 / elapsed),
        _ => None,
    };
    let throttled_ms = match (first.throttled_ns, last.throttled_ns) {
        (Some(a), Some(b)) if b >= a => Some((b - a) as f64 / 1e6),
        _ => None,
    };
    ComponentUse {
        cpu_cores,
        throttled_ms,
        memory_peak_bytes: s.iter().filter_map(|x| x.memory_bytes).max(),
        rss_peak_bytes: s.iter().map(|x| x.rss_bytes).max(),
    }
}

/// The figures of one condition over its completed runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConditionFigures {
    pub runs: usize,
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub p95_min: Option<f64>,
    pub p95_max: Option<f64>,
    pub app_send_s: Option<f64>,
    pub client_receive_s: Option<f64>,
    pub temp_peak_mib: Option<f64>,
    pub fast_requests: usize,
    pub fast_errors: usize,
    pub max_schedule_lag_ms: Option<f64>,
    pub app_cpu_cores: Option<f64>,
}

/// Aggregates runs as the original did: the median of per-run values, the
/// min and max of per-run p95, the max of temp peaks.
pub fn condition_figures(runs: &[&RunFigures]) -> ConditionFigures {
    let vals = |f: fn(&RunFigures) -> Option<f64>| -> Vec<f64> {
        runs.iter().filter_map(|r| f(r)).collect()
    };
    let p95s = vals(|r| r.p95_ms);
    ConditionFigures {
        runs: runs.len(),
        p50: median(&vals(|r| r.p50_ms)),
        // A run whose p95 landed on a failed request has no p95; the
        // condition then reports none either, rather than the median of the
        // others.
        p95: if p95s.len() == runs.len() {
            median(&p95s)
        } else {
            None
        },
        p95_min: p95s.iter().copied().reduce(f64::min),
        p95_max: if p95s.len() == runs.len() {
            p95s.iter().copied().reduce(f64::max)
        } else {
            None
        },
        app_send_s: median(&vals(|r| r.app_send_s)),
        client_receive_s: median(&vals(|r| r.client_receive_s)),
        temp_peak_mib: runs
            .iter()
            .filter_map(|r| r.temp_peak_bytes)
            .max()
            .map(|b| b as f64 / (1u64 << 20) as f64),
        fast_requests: runs.iter().map(|r| r.fast_requests).sum(),
        fast_errors: runs.iter().map(|r| r.fast_requests - r.fast_ok).sum(),
        max_schedule_lag_ms: vals(|r| r.max_schedule_lag_ms).into_iter().reduce(f64::max),
        app_cpu_cores: median(
            &runs
                .iter()
                .filter_map(|r| r.components.get("app").and_then(|c| c.cpu_cores))
                .collect::<Vec<_>>(),
        ),
    }
}

/// Groups completed runs by condition, in a stable order.
pub fn by_condition<'a>(
    runs: impl IntoIterator<Item = (Condition, &'a RunFigures)>,
) -> BTreeMap<Condition, Vec<&'a RunFigures>> {
    let mut map: BTreeMap<Condition, Vec<&RunFigures>> = BTreeMap::new();
    for (c, f) in runs {
        map.entry(c).or_default().push(f);
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(headers: &[&str], rows: &[&[&str]]) -> Table {
        Table {
            headers: headers.iter().map(|s| s.to_string()).collect(),
            rows: rows
                .iter()
                .map(|r| r.iter().map(|s| s.to_string()).collect())
                .collect(),
        }
    }

    #[test]
    fn failures_rank_last() {
        let ok: Vec<f64> = (1..=70).map(f64::from).collect();
        // 72 requests, 2 failed: p95 is rank 69, still a success.
        assert_eq!(percentile_with_failures(&ok, 72, 95.0), Some(69.0));
        // p99 is rank 72: a failure, so no value.
        assert_eq!(percentile_with_failures(&ok, 72, 99.0), None);
        assert_eq!(percentile_with_failures(&[], 0, 95.0), None);
    }

    #[test]
    fn run_figures_from_rows() {
        let mut rows: Vec<Vec<String>> = Vec::new();
        for i in 1..=72 {
            rows.push(vec![
                i.to_string(),
                format!("{}", i as f64 * 10.0),
                "200".into(),
                "".into(),
                "0.1".into(),
            ]);
        }
        let req = Table {
            headers: ["seq", "latency_ms", "status", "error", "schedule_lag_ms"]
                .map(String::from)
                .to_vec(),
            rows,
        };
        let large = table(
            &["client", "receive_s", "status", "error"],
            &[&["0", "8.0", "200", ""], &["1", "8.2", "200", ""]],
        );
        let sends = table(
            &["app_send_s", "complete"],
            &[&["6.5", "true"], &["6.7", "true"], &["", "false"]],
        );
        let f = run_figures(Some(&req), Some(&large), Some(&sends), &[]);
        assert_eq!(f.fast_requests, 72);
        assert_eq!(f.p95_ms, Some(690.0));
        assert_eq!(f.p50_ms, Some(360.0));
        assert_eq!(f.max_ms, Some(720.0));
        assert_eq!(f.client_receive_s, Some(8.1));
        assert_eq!(f.app_send_s, Some(6.6));
        assert_eq!(f.max_schedule_lag_ms, Some(0.1));
    }

    #[test]
    fn component_use_is_an_increment_over_elapsed_time() {
        let s = |t: f64, cpu: u64, thr: u64, mem: u64| ResourceSample {
            t_unix_s: t,
            component: "app".into(),
            cpu_ns: Some(cpu),
            throttled_ns: Some(thr),
            memory_bytes: Some(mem),
            rss_bytes: mem / 2,
            ..ResourceSample::default()
        };
        let samples = vec![
            s(100.0, 1_000_000_000, 0, 10),
            s(101.0, 1_100_000_000, 5_000_000, 30),
            s(102.0, 1_200_000_000, 7_000_000, 20),
        ];
        let f = run_figures(None, None, None, &samples);
        let app = &f.components["app"];
        assert!((app.cpu_cores.unwrap() - 0.1).abs() < 1e-9);
        assert_eq!(app.throttled_ms, Some(7.0));
        assert_eq!(app.memory_peak_bytes, Some(30));
        assert_eq!(app.rss_peak_bytes, Some(15));
    }

    #[test]
    fn conditions_take_the_median_of_runs() {
        let r = |p95: f64, send: f64| RunFigures {
            p50_ms: Some(p95 / 2.0),
            p95_ms: Some(p95),
            app_send_s: Some(send),
            temp_peak_bytes: Some((p95 as u64) << 20),
            fast_requests: 72,
            fast_ok: 72,
            ..RunFigures::default()
        };
        let runs = [r(5945.11, 6.5), r(5928.68, 6.6), r(6590.04, 6.4)];
        let refs: Vec<&RunFigures> = runs.iter().collect();
        let c = condition_figures(&refs);
        assert_eq!(c.p95, Some(5945.11));
        assert_eq!(c.p95_min, Some(5928.68));
        assert_eq!(c.p95_max, Some(6590.04));
        assert_eq!(c.app_send_s, Some(6.5));
        assert_eq!(c.temp_peak_mib, Some(6590.0));
        assert_eq!(c.fast_requests, 216);
        assert_eq!(c.fast_errors, 0);
    }

    #[test]
    fn a_run_without_p95_leaves_the_condition_without_one() {
        let a = RunFigures {
            p95_ms: Some(3.0),
            ..RunFigures::default()
        };
        let b = RunFigures::default();
        let c = condition_figures(&[&a, &b]);
        assert_eq!(c.p95, None);
        assert_eq!(c.p95_min, Some(3.0));
    }
}
