//! The results directory of a reproduction: per-run rows appended as each
//! run completes, and the per-condition summaries rewritten after each run
//! from `runs.csv` as written, so that an interrupted reproduction keeps
//! everything it measured and a merge of directories aggregates the same
//! way. The files and their rows are [`schema`]'s.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::de::DeserializeOwned;

use super::runner::{CapPlan, RunData};
use super::sample_rows;
use analysis::aggregate::{self, ConditionFigures, RunFigures, run_figures};
use catalogue::ProxyBuffers;
use catalogue::preset::Condition;
use schema::file::{read_all, read_log_optional, read_optional};
use schema::{
    self, AppRecvRow, AppSendRow, Appenders, Component, ComponentColumns, GaugeRow, LargeRow,
    Missing, PerRun, ProxyResponseRow, ResultSet, RunRow,
};

pub use schema::INCOMPLETE;

/// The results directory of a reproduction in progress.
#[derive(Debug)]
pub struct Results {
    pub dir: PathBuf,
    files: Appenders,
    /// Every run so far with its row of `runs.csv`.
    pub done: Vec<(RunData, RunFigures)>,
    /// `runs.csv` as written, read back after each run.
    written: Vec<RunRow>,
    caps: CapPlan,
    buffers: ProxyBuffers,
}

impl Results {
    pub fn create(dir: &Path, caps: CapPlan, buffers: ProxyBuffers) -> Result<Results> {
        Ok(Results {
            dir: dir.to_path_buf(),
            files: Appenders::create(dir)?,
            done: Vec::new(),
            written: Vec::new(),
            caps,
            buffers,
        })
    }

    /// Adds one run's rows to every file and rewrites the summaries.
    pub fn record(&mut self, data: RunData) -> Result<RunFigures> {
        let set = self.rows_of(&data)?;
        self.files.append(&set)?;
        let row = set.runs[0].clone();
        self.done.push((data, row.clone()));
        self.written = read_all(&self.dir.join(schema::RUNS_CSV))?;
        self.write_summaries()?;
        Ok(row)
    }

    /// Every row one run adds, with the files it has none of in `missing`.
    fn rows_of(&self, data: &RunData) -> Result<ResultSet> {
        let load = data.dir.join("load");
        let mut set = ResultSet::default();
        let missing = &mut set.missing;
        let requests = take(missing, schema::REQUESTS_CSV, &load)?;
        let progress = take(missing, schema::PROGRESS_CSV, &load)?;
        let large: Vec<LargeRow> = take(missing, schema::LARGE_CSV, &load)?;
        // The request direction's: the load generator writes them only
        // where such clients ran.
        let uploads = take(missing, schema::UPLOADS_CSV, &load)?;
        let slow_headers = take(missing, schema::SLOW_HEADERS_CSV, &load)?;
        let ident = schema::Ident::from(&data.spec);
        // The logs lack the identity (and `t_s`, computed below).
        let lead = ident.cells();
        let logs = |raw: &str| data.dir.join(raw);
        let sends: Vec<AppSendRow> = take_log(
            missing,
            schema::APP_SENDS_CSV,
            &logs(schema::SEND_LOG_CSV),
            &lead,
        )?;
        let recvs: Vec<AppRecvRow> = take_log(
            missing,
            schema::APP_RECVS_CSV,
            &logs(schema::RECV_LOG_CSV),
            &lead,
        )?;
        let stats: Vec<ProxyResponseRow> = take_log(
            missing,
            schema::PROXY_RESPONSES_CSV,
            &logs(schema::PROXY_STATS_CSV),
            &lead,
        )?;
        let gauge: Vec<GaugeRow> = take_log(
            missing,
            schema::PROXY_GAUGE_CSV,
            &logs(schema::PROXY_GAUGE_LOG),
            &lead,
        )?;
        let t0 = t0(&load, data);
        let relative = |t: Option<f64>| t.map(|t| t - t0);
        set.requests = requests;
        set.progress = progress;
        set.large = with_app_sends(large, &sends);
        set.app_sends = sends
            .into_iter()
            .map(|r| AppSendRow {
                t_s: relative(r.start_unix_s),
                ..r
            })
            .collect();
        set.uploads = uploads;
        set.slow_headers = slow_headers;
        set.app_recvs = recvs
            .into_iter()
            .map(|r| AppRecvRow {
                t_s: relative(r.start_unix_s),
                ..r
            })
            .collect();
        set.proxy_responses = stats
            .into_iter()
            .map(|r| ProxyResponseRow {
                t_s: relative(r.start_unix_s),
                ..r
            })
            .collect();
        set.gauge = gauge
            .into_iter()
            .map(|r| GaugeRow {
                t_s: relative(r.t_unix_s),
                ..r
            })
            .collect();
        set.resources = sample_rows::resources(&data.samples.resources, t0, &ident);
        set.sockets = sample_rows::sockets(&data.samples.sockets, t0, &ident);
        set.qdiscs = sample_rows::qdiscs(&data.samples.qdiscs, t0, &ident);
        let mut run = run_figures(&set.requests, &set.large, &set.app_sends, &set.resources);
        run.stamp(&ident);
        run.preset = Some(data.spec.preset.name().to_string());
        run.direction = data.spec.condition.direction.into();
        run.status = schema::Named::parse(data.status.label());
        run.reason = Some(data.status.reason()).filter(|r| !r.is_empty());
        run.started_utc = Some(utc(data.started_unix_s));
        run.wall_s = Some(data.wall_s);
        run.load_s = data.load_s;
        run.host_busy_cores = data.host_busy_cores;
        run.host_steal_ms = data.host_steal_ms;
        run.netns = Some(data.netns.is_some());
        run.sysctls = data
            .netns
            .as_ref()
            .map(|n| n.sysctls_cell())
            .filter(|c| !c.is_empty());
        run.slow_kind = Some(lab::netns::slow_kind(data.netns.as_ref()).as_str().into());
        run.link = data
            .netns
            .as_ref()
            .and_then(|n| n.link)
            .map(|l| l.to_string());
        run.reader = Some(data.spec.reader().as_str().into());
        run.mtu = match &data.netns {
            Some(n) => Some(n.mtu.unwrap_or(lab::netns::VETH_DEFAULT_MTU)),
            None => loopback_mtu(),
        };
        run.streams_per_conn = Some(data.spec.condition.streams_per_conn);
        run.h2_window_bytes = data.spec.condition.h2_window_on_edge();
        for (component, cap) in [
            (Component::App, self.caps.app),
            (Component::Proxy, self.caps.proxy),
            (Component::Loadgen, self.caps.loadgen),
        ] {
            let sampled = set.resources.iter().any(|s| s.component == component);
            let cap = cap.filter(|_| sampled);
            run.set_component(
                component,
                ComponentColumns {
                    cpu_cap_cores: cap.map(|c| c.cpu_cores),
                    memory_cap_bytes: cap.map(|c| c.memory_bytes),
                    ..run.component(component)
                },
            );
        }
        set.runs = vec![run];
        Ok(set)
    }

    /// The figures of every condition with at least one run so far.
    pub fn conditions(&self) -> BTreeMap<Condition, ConditionFigures> {
        aggregate::by_condition(&aggregate::conditions(&self.written))
    }

    /// Rewrites `conditions.csv` and `crosscheck.csv` from `runs.csv`.
    pub fn write_summaries(&self) -> Result<()> {
        let body = self
            .done
            .first()
            .map(|(d, _)| d.spec.profile.body.large_bytes)
            .unwrap_or(16 << 20);
        analysis::summaries::write(&self.dir, &self.written, body, self.buffers.capacity())
    }
}

/// The MTU of the host's loopback, which a run outside namespaces uses
/// (`runs.csv` `mtu`); none when it cannot be read.
fn loopback_mtu() -> Option<u32> {
    std::fs::read_to_string("/sys/class/net/lo/mtu")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The rows of `dir/file`, or none with `file` recorded as missing.
fn take<T: DeserializeOwned>(
    missing: &mut Vec<Missing>,
    file: &'static str,
    dir: &Path,
) -> Result<Vec<T>> {
    let rows = read_optional(&dir.join(file))?;
    if rows.is_none() {
        missing.push(Missing { file, error: None });
    }
    Ok(rows.unwrap_or_default())
}

/// The rows of a component's log at `path` behind `lead`, or none with
/// `file` (the results file they go to) recorded as missing.
fn take_log<T: DeserializeOwned>(
    missing: &mut Vec<Missing>,
    file: &'static str,
    path: &Path,
    lead: &[(&str, String)],
) -> Result<Vec<T>> {
    let rows = read_log_optional(path, lead)?;
    if rows.is_none() {
        missing.push(Missing { file, error: None });
    }
    Ok(rows.unwrap_or_default())
}

/// The run's time zero: the load generator's, else the first sample's.
fn t0(load: &Path, data: &RunData) -> f64 {
    fs::read_to_string(load.join(schema::SUMMARY_JSON))
        .ok()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
        .and_then(|v| v.get("t0_unix_s")?.as_f64())
        .or_else(|| data.samples.resources.first().map(|s| s.t_unix_s))
        .unwrap_or(data.started_unix_s)
}

/// Adds the app's side of each `/large` response to the client's rows:
/// `app_send_s`, `app_bytes`, `app_worker`. The app cannot see which client
/// a response went to (behind a proxy its peer is the proxy), so responses
/// are paired by start order; per-run medians do not depend on the pairing.
fn with_app_sends(mut large: Vec<LargeRow>, sends: &[AppSendRow]) -> Vec<LargeRow> {
    let mut order: Vec<usize> = (0..large.len()).collect();
    order.sort_by(|&a, &b| {
        large[a]
            .started_s
            .total_cmp(&large[b].started_s)
            .then(a.cmp(&b))
    });
    let mut app: Vec<&AppSendRow> = sends.iter().collect();
    app.sort_by(|a, b| {
        let k = |r: &AppSendRow| r.start_unix_s.unwrap_or(f64::MAX);
        k(a).total_cmp(&k(b))
    });
    for (rank, &i) in order.iter().enumerate() {
        if let Some(s) = app.get(rank) {
            large[i].app_send_s = s.app_send_s;
            large[i].app_bytes = Some(s.bytes);
            large[i].app_worker = s.worker.clone();
        }
    }
    large
}

fn utc(unix_s: f64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(unix_s.max(0.0));
    humantime::format_rfc3339_seconds(t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_pair_with_sends_by_start_order() {
        let large = |client: u32, started_s: f64| LargeRow {
            client,
            started_s,
            ..LargeRow::default()
        };
        let send = |start: f64, s: f64| AppSendRow {
            start_unix_s: Some(start),
            app_send_s: Some(s),
            bytes: 100,
            worker: Some(format!("w{start}")),
            ..AppSendRow::default()
        };
        let rows = with_app_sends(
            vec![large(0, 0.2), large(1, 0.1), large(2, 0.3)],
            &[send(11.0, 2.0), send(10.0, 1.0)],
        );
        assert_eq!(rows[1].app_send_s, Some(1.0), "the first to start");
        assert_eq!(rows[0].app_send_s, Some(2.0));
        assert_eq!(rows[0].app_worker.as_deref(), Some("w11"));
        assert_eq!((rows[2].app_send_s, rows[2].app_bytes), (None, None));
    }
}
