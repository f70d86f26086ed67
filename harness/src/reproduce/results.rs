//! The results directory: per-run rows appended as each run completes, and
//! the per-condition summaries rewritten after each run, so that an
//! interrupted reproduction keeps everything it measured.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::aggregate::{
    ConditionFigures, RunFigures, by_condition, condition_figures, run_figures,
};
use super::crosscheck;
use super::matrix::Condition;
use super::published;
use super::runner::{CapPlan, RunData, Status, labels};
use super::sample_rows;
use super::table::{Appender, Table, opt, opt_u, write_whole};
use crate::sample::{ResourceSample, SocketSample};
use crate::stack::ProxyBuffers;

/// The marker of an unfinished results directory.
pub const INCOMPLETE: &str = "INCOMPLETE";

/// Per-run files, in the order of `RESULT_FILES` in the README.
#[derive(Debug)]
pub struct Results {
    pub dir: PathBuf,
    requests: Appender,
    large: Appender,
    progress: Appender,
    runs: Appender,
    resources: Appender,
    sockets: Appender,
    app_sends: Appender,
    proxy_responses: Appender,
    proxy_gauge: Appender,
    /// Every run so far with its figures.
    pub done: Vec<(RunData, RunFigures)>,
    caps: CapPlan,
    buffers: ProxyBuffers,
}

const COMPONENTS: [&str; 3] = ["app", "proxy", "loadgen"];

impl Results {
    pub fn create(dir: &Path, caps: CapPlan, buffers: ProxyBuffers) -> Result<Results> {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let f = |name: &str| Appender::new(dir.join(name));
        Ok(Results {
            dir: dir.to_path_buf(),
            requests: f("requests.csv"),
            large: f("large-responses.csv"),
            progress: f("slow-progress.csv"),
            runs: f("runs.csv"),
            resources: f("resource-samples.csv"),
            sockets: f("socket-samples.csv"),
            app_sends: f("app-sends.csv"),
            proxy_responses: f("proxy-responses.csv"),
            proxy_gauge: f("proxy-gauge.csv"),
            done: Vec::new(),
            caps,
            buffers,
        })
    }

    /// Marks the directory incomplete with a reason (or removes the mark).
    pub fn mark(&self, reason: Option<&str>) -> Result<()> {
        let path = self.dir.join(INCOMPLETE);
        match reason {
            Some(r) => fs::write(&path, format!("{r}\n")).context("writing the INCOMPLETE marker"),
            None => {
                if path.exists() {
                    fs::remove_file(&path).context("removing the INCOMPLETE marker")?;
                }
                Ok(())
            }
        }
    }

    /// Adds one run's rows to every file and rewrites the summaries.
    pub fn record(&mut self, data: RunData) -> Result<RunFigures> {
        let load = data.dir.join("load");
        let requests = Table::read_optional(&load.join("requests.csv"))?;
        let large = Table::read_optional(&load.join("large-responses.csv"))?;
        let progress = Table::read_optional(&load.join("slow-progress.csv"))?;
        let sends = Table::read_optional(&data.dir.join("send-log.csv"))?;
        let stats = Table::read_optional(&data.dir.join("proxy-stats.csv"))?;
        let gauge = Table::read_optional(&data.dir.join("proxy-gauge.csv"))?;
        let t0 = t0(&load, &data);

        let ident: Vec<(String, String)> = labels(&data.spec)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let ident_h: Vec<String> = ident.iter().map(|(k, _)| k.clone()).collect();
        let ident_v: Vec<String> = ident.iter().map(|(_, v)| v.clone()).collect();

        if let Some(t) = &requests {
            self.requests.append(&t.headers, &t.rows)?;
        }
        if let Some(t) = &progress {
            self.progress.append(&t.headers, &t.rows)?;
        }
        if let Some(t) = &large {
            let (h, rows) = with_app_sends(t, sends.as_ref());
            self.large.append(&h, &rows)?;
        }
        if let Some(t) = &sends {
            let (h, rows) = relative(t, "start_unix_s", t0, &ident_h, &ident_v);
            self.app_sends.append(&h, &rows)?;
        }
        if let Some(t) = &stats {
            let (h, rows) = relative(t, "start_unix_s", t0, &ident_h, &ident_v);
            self.proxy_responses.append(&h, &rows)?;
        }
        if let Some(t) = &gauge {
            let (h, rows) = relative(t, "t_unix_s", t0, &ident_h, &ident_v);
            self.proxy_gauge.append(&h, &rows)?;
        }
        self.append_samples(
            &data.samples.resources,
            &data.samples.sockets,
            t0,
            &ident_h,
            &ident_v,
        )?;

        let figures = run_figures(
            requests.as_ref(),
            large.as_ref(),
            sends.as_ref(),
            &data.samples.resources,
        );
        self.append_run(&data, &figures)?;
        self.done.push((data, figures.clone()));
        self.write_summaries()?;
        Ok(figures)
    }

    fn append_samples(
        &mut self,
        resources: &[ResourceSample],
        sockets: &[SocketSample],
        t0: f64,
        ih: &[String],
        iv: &[String],
    ) -> Result<()> {
        let (h, rows) = sample_rows::resources(resources, t0, ih, iv);
        self.resources.append(&h, &rows)?;
        let (h, rows) = sample_rows::sockets(sockets, t0, ih, iv);
        self.sockets.append(&h, &rows)
    }

    fn append_run(&mut self, data: &RunData, f: &RunFigures) -> Result<()> {
        let mut h: Vec<String> = labels(&data.spec)
            .into_iter()
            .map(|(k, _)| k.to_string())
            .collect();
        h.extend(
            [
                "preset",
                "status",
                "reason",
                "started_utc",
                "wall_s",
                "load_s",
                "host_busy_cores",
                "host_steal_ms",
                "fast_requests",
                "fast_ok",
                "fast_errors",
                "p50_ms",
                "p95_ms",
                "p99_ms",
                "max_ms",
                "max_schedule_lag_ms",
                "large_responses",
                "large_ok",
                "app_send_s",
                "client_receive_s",
                "temp_peak_mib",
            ]
            .map(String::from),
        );
        for c in COMPONENTS {
            for col in [
                "cpu_cores",
                "throttled_ms",
                "memory_peak_bytes",
                "rss_peak_bytes",
                "cpu_cap_cores",
                "memory_cap_bytes",
            ] {
                h.push(format!("{c}_{col}"));
            }
        }
        let mut r: Vec<String> = labels(&data.spec).into_iter().map(|(_, v)| v).collect();
        r.extend([
            data.spec.preset.name().to_string(),
            data.status.label().to_string(),
            data.status.reason(),
            utc(data.started_unix_s),
            format!("{:.3}", data.wall_s),
            opt(data.load_s, 3),
            opt(data.host_busy_cores, 3),
            opt(data.host_steal_ms, 0),
            f.fast_requests.to_string(),
            f.fast_ok.to_string(),
            (f.fast_requests - f.fast_ok).to_string(),
            opt(f.p50_ms, 3),
            opt(f.p95_ms, 3),
            opt(f.p99_ms, 3),
            opt(f.max_ms, 3),
            opt(f.max_schedule_lag_ms, 3),
            f.large_responses.to_string(),
            f.large_ok.to_string(),
            opt(f.app_send_s, 3),
            opt(f.client_receive_s, 3),
            opt(f.temp_peak_bytes.map(|b| b as f64 / (1u64 << 20) as f64), 2),
        ]);
        for c in COMPONENTS {
            let u = f.components.get(c).cloned().unwrap_or_default();
            let cap = match c {
                "app" => self.caps.app,
                "proxy" => self.caps.proxy,
                _ => self.caps.loadgen,
            };
            let has = f.components.contains_key(c);
            r.extend([
                opt(u.cpu_cores, 4),
                opt(u.throttled_ms, 1),
                opt_u(u.memory_peak_bytes),
                opt_u(u.rss_peak_bytes),
                opt(cap.filter(|_| has).map(|c| c.cpu_cores), 2),
                opt_u(cap.filter(|_| has).map(|c| c.memory_bytes)),
            ]);
        }
        self.runs.append(&h, &[r])
    }

    /// The figures of every condition with at least one run so far.
    pub fn conditions(&self) -> BTreeMap<Condition, ConditionFigures> {
        let ok = self
            .done
            .iter()
            .filter(|(d, _)| d.status == Status::Ok)
            .map(|(d, f)| (d.spec.condition, f));
        let mut map: BTreeMap<Condition, ConditionFigures> = by_condition(ok)
            .into_iter()
            .map(|(c, runs)| (c, condition_figures(&runs)))
            .collect();
        for (d, _) in &self.done {
            map.entry(d.spec.condition).or_default();
        }
        map
    }

    /// Rewrites `conditions.csv` and `crosscheck.csv`.
    pub fn write_summaries(&self) -> Result<()> {
        let conditions = self.conditions();
        let mut rows = Vec::new();
        for (c, f) in &conditions {
            let failed: Vec<&RunData> = self
                .done
                .iter()
                .filter(|(d, _)| d.spec.condition == *c && d.status != Status::Ok)
                .map(|(d, _)| d)
                .collect();
            let note = failed
                .first()
                .map(|d| format!("{}: {}", d.status.label(), d.status.reason()))
                .unwrap_or_default();
            let publ = published::reference(c.server, c.route, c.slow);
            let pp = publ.as_ref().map(|(p, _)| *p);
            rows.push(vec![
                c.server.to_string(),
                c.route.to_string(),
                c.slow.to_string(),
                f.runs.to_string(),
                failed.len().to_string(),
                opt(f.p50, 2),
                opt(f.p95, 2),
                opt(f.p95_min, 2),
                opt(f.p95_max, 2),
                opt(f.app_send_s, 3),
                opt(f.client_receive_s, 3),
                opt(f.temp_peak_mib, 2),
                f.fast_requests.to_string(),
                f.fast_errors.to_string(),
                opt(f.max_schedule_lag_ms, 3),
                opt(f.app_cpu_cores, 4),
                opt(pp.map(|p| p.p95), 2),
                opt(pp.and_then(|p| p.p95_min), 2),
                opt(pp.and_then(|p| p.p95_max), 2),
                opt(pp.and_then(|p| p.app_send_s), 3),
                opt(pp.and_then(|p| p.client_receive_s), 3),
                publ.map(|(_, from)| from).unwrap_or_default(),
                note,
            ]);
        }
        write_whole(&self.dir.join("conditions.csv"), &CONDITION_HEADERS, &rows)?;
        let body = self
            .done
            .first()
            .map(|(d, _)| d.spec.profile.body.large_bytes)
            .unwrap_or(16 << 20);
        let cross = crosscheck::rows(&conditions, 2, body, self.buffers.capacity());
        let rows: Vec<Vec<String>> = cross.iter().map(|r| r.cells()).collect();
        write_whole(
            &self.dir.join("crosscheck.csv"),
            &crosscheck::HEADERS,
            &rows,
        )
    }
}

/// The columns of `conditions.csv`: the original's names first (p50, p95,
/// p95_min, p95_max in ms; app_send_s, client_receive_s; temp_peak_mib).
pub const CONDITION_HEADERS: [&str; 23] = [
    "server",
    "route",
    "slow_clients",
    "runs",
    "runs_failed",
    "p50",
    "p95",
    "p95_min",
    "p95_max",
    "app_send_s",
    "client_receive_s",
    "temp_peak_mib",
    "fast_requests",
    "fast_errors",
    "max_schedule_lag_ms",
    "app_cpu_cores",
    "published_p95",
    "published_p95_min",
    "published_p95_max",
    "published_app_send_s",
    "published_client_receive_s",
    "published_from",
    "note",
];

/// The run's time zero: the load generator's, else the first sample's.
fn t0(load: &Path, data: &RunData) -> f64 {
    fs::read_to_string(load.join("summary.json"))
        .ok()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
        .and_then(|v| v.get("t0_unix_s")?.as_f64())
        .or_else(|| data.samples.resources.first().map(|s| s.t_unix_s))
        .unwrap_or(data.started_unix_s)
}

/// Prefixes identity columns and adds `t_s` (relative to the run's t0)
/// computed from an absolute time column.
fn relative(
    t: &Table,
    time_col: &str,
    t0: f64,
    ih: &[String],
    iv: &[String],
) -> (Vec<String>, Vec<Vec<String>>) {
    let mut h = ih.to_vec();
    h.push("t_s".into());
    h.extend(t.headers.iter().cloned());
    let rows = t
        .rows
        .iter()
        .map(|row| {
            let mut r = iv.to_vec();
            r.push(opt(t.f64(row, time_col).map(|v| v - t0), 3));
            r.extend(row.iter().cloned());
            r
        })
        .collect();
    (h, rows)
}

/// Adds the app's side of each `/large` response to the client's rows:
/// `app_send_s`, `app_bytes`, `app_worker`. The app cannot see which client
/// a response went to (behind a proxy its peer is the proxy), so responses
/// are paired by start order; per-run medians do not depend on the pairing.
fn with_app_sends(large: &Table, sends: Option<&Table>) -> (Vec<String>, Vec<Vec<String>>) {
    let mut h = large.headers.clone();
    h.extend(["app_send_s", "app_bytes", "app_worker"].map(String::from));
    let mut order: Vec<usize> = (0..large.rows.len()).collect();
    order.sort_by(|&a, &b| {
        let k = |i: usize| large.f64(&large.rows[i], "started_s").unwrap_or(f64::MAX);
        k(a).total_cmp(&k(b)).then(a.cmp(&b))
    });
    let mut app: Vec<&Vec<String>> = sends.map(|s| s.rows.iter().collect()).unwrap_or_default();
    if let Some(s) = sends {
        app.sort_by(|a, b| {
            let k = |r: &Vec<String>| s.f64(r, "start_unix_s").unwrap_or(f64::MAX);
            k(a).total_cmp(&k(b))
        });
    }
    let mut rows = large.rows.clone();
    for (rank, &i) in order.iter().enumerate() {
        let cells = match (sends, app.get(rank)) {
            (Some(s), Some(r)) => [
                s.get(r, "app_send_s").unwrap_or("").to_string(),
                s.get(r, "bytes").unwrap_or("").to_string(),
                s.get(r, "worker").unwrap_or("").to_string(),
            ],
            _ => Default::default(),
        };
        rows[i].extend(cells);
    }
    (h, rows)
}

fn utc(unix_s: f64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(unix_s.max(0.0));
    humantime::format_rfc3339_seconds(t).to_string()
}
