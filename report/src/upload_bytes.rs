//! Where the bytes of the slow uploads are in one run, at the last socket
//! sample before the uploads were half sent (halfway from the first
//! upload's start to the first client's last body byte):
//! still in the clients' send queues, in the kernel between (the proxy's
//! receive queues from the clients, its send queues to the app, the app's
//! receive queues), inside the proxy (pingora's gauge: memory and body temp
//! file; the sampler's temp files for NGINX), and read by the app (from
//! `tcp_info`: bytes the app's sockets received less what still waits in
//! their queues). Each layer is the sampled value at or before that
//! instant; a layer that was not sampled is `None` with its reason.

use super::data::Results;
use analysis::select;
use analysis::whereabouts::{Role, roles};
use schema::{Component, RouteName, SocketRow};

/// The request body's bytes at one instant, summed over the run's uploads.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub run_id: String,
    pub route: RouteName,
    /// The socket sample's time (run clock).
    pub t: f64,
    /// Halfway from the first upload's start to the first uploader's last
    /// byte handed to its kernel: the instant the snapshot is for.
    pub halfway: f64,
    /// Body bytes of all the run's uploads.
    pub total: f64,
    pub client_queue: f64,
    /// The proxy's receive queues from the clients (0 direct).
    pub proxy_recv_queue: f64,
    /// The proxy's send queues to the app (0 direct).
    pub proxy_send_queue: f64,
    pub app_recv_queue: f64,
    /// Inside the proxy, in memory and in its body temp file.
    pub proxy_memory: Result<f64, &'static str>,
    pub proxy_file: Result<f64, &'static str>,
    /// Read by the app from its sockets (request heads included).
    pub app_read: Result<f64, &'static str>,
}

impl Snapshot {
    /// The kernel between the clients and the app.
    pub fn between(&self) -> f64 {
        self.proxy_recv_queue + self.proxy_send_queue + self.app_recv_queue
    }

    /// Derived: what no sampled layer holds: what the clients had not yet
    /// written, and what sits in a layer that was not sampled.
    pub fn not_sent(&self) -> f64 {
        let sampled = |v: &Result<f64, &str>| v.as_ref().ok().copied().unwrap_or(0.0);
        let held = self.client_queue
            + self.between()
            + sampled(&self.proxy_memory)
            + sampled(&self.proxy_file)
            + sampled(&self.app_read);
        (self.total - held).max(0.0)
    }
}

/// Why the NGINX proxy's memory is not a layer here.
pub const NGINX_MEMORY: &str = "NGINX's memory buffers are not sampled (only its temp files and its cgroup's memory as a whole are); pingora's gauge is";
/// Why the app's reads are not a layer here.
pub const NO_TCP_INFO: &str =
    "the app's sockets were read from /proc, which has no tcp_info byte counts";

/// A gauge tick older than this before a sample is stale: the gauge writes
/// rows only while a request is open, so none means nothing is held.
const STALE_S: f64 = 1.0;

/// The latest value at or before `t` in a series sorted by time.
fn latest(series: &[(f64, f64)], t: f64) -> Option<(f64, f64)> {
    let i = series.partition_point(|(x, _)| *x <= t + 1e-9);
    i.checked_sub(1).map(|j| series[j])
}

/// The gauge's value at `t`: its latest tick, unless stale.
fn gauge_at(series: &[(f64, f64)], t: f64) -> f64 {
    latest(series, t)
        .filter(|(x, _)| t - x <= STALE_S)
        .map_or(0.0, |(_, v)| v)
}

/// Sums values of rows sharing a time (3 decimals) into a sorted series.
fn summed(rows: impl Iterator<Item = (f64, f64)>) -> Vec<(f64, f64)> {
    let mut by: std::collections::BTreeMap<i64, f64> = Default::default();
    for (t, v) in rows {
        *by.entry((t * 1000.0).round() as i64).or_default() += v;
    }
    by.into_iter()
        .map(|(k, v)| (k as f64 / 1000.0, v))
        .collect()
}

/// The snapshot of one run, or why there is none.
pub fn snapshot(r: &Results, run_id: &str, route: &RouteName) -> Result<Snapshot, String> {
    let ups: Vec<_> = r.uploads.iter().filter(|u| u.run_id == run_id).collect();
    let total: f64 = ups.iter().map(|u| u.upload_bytes as f64).sum();
    let min = |it: &mut dyn Iterator<Item = f64>| {
        it.fold(None, |m: Option<f64>, v| {
            Some(m.map_or(v, |m: f64| m.min(v)))
        })
    };
    let first_sent = min(&mut ups.iter().filter_map(|u| {
        u.send_s
            .map(|s| u.started_s + u.connect_ms.unwrap_or(0.0) / 1000.0 + s)
    }))
    .ok_or("no upload of this run finished sending")?;
    let began = min(&mut ups.iter().map(|u| u.started_s)).unwrap_or(0.0);
    let halfway = (began + first_sent) / 2.0;
    let sockets: Vec<&SocketRow> = r.sockets.iter().filter(|s| s.run_id == run_id).collect();
    let t = sockets
        .iter()
        .map(|s| s.t_s)
        .filter(|&t| t <= halfway + 1e-9)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
        .ok_or("no socket sample before the uploads were half sent")?;
    let at: Vec<&SocketRow> = sockets
        .iter()
        .copied()
        .filter(|s| (s.t_s - t).abs() < 1e-6)
        .collect();
    let mut snap = Snapshot {
        run_id: run_id.to_string(),
        route: route.clone(),
        t,
        halfway,
        total,
        client_queue: 0.0,
        proxy_recv_queue: 0.0,
        proxy_send_queue: 0.0,
        app_recv_queue: 0.0,
        proxy_memory: Ok(0.0),
        proxy_file: Ok(0.0),
        app_read: Ok(0.0),
    };
    let mut app_read = 0.0;
    let mut app_counted = true;
    for (role, s) in roles(&at) {
        match role {
            Role::Client => snap.client_queue += s.tx_queue_bytes as f64,
            Role::ProxyDownstream => snap.proxy_recv_queue += s.rx_queue_bytes as f64,
            Role::ProxyUpstream => snap.proxy_send_queue += s.tx_queue_bytes as f64,
            Role::App => {
                snap.app_recv_queue += s.rx_queue_bytes as f64;
                match s.bytes_received {
                    Some(b) => app_read += b.saturating_sub(s.rx_queue_bytes) as f64,
                    None => app_counted = false,
                }
            }
            Role::Listen | Role::Other => {}
        }
    }
    // Uploads the app finished reading before `t` left no socket behind.
    app_read += r
        .app_recvs
        .iter()
        .filter(|a| a.run_id == run_id && a.complete == Some(true))
        .filter(|a| a.t_s.zip(a.app_recv_s).is_some_and(|(s, d)| s + d <= t))
        .filter(|a| {
            // ... unless its socket is still sampled (not yet closed).
            !at.iter()
                .any(|s| s.component == Component::App && s.bytes_received.unwrap_or(0) >= a.bytes)
        })
        .map(|a| a.bytes as f64)
        .sum::<f64>();
    snap.app_read = if app_counted {
        Ok(app_read)
    } else {
        Err(NO_TCP_INFO)
    };
    if select::is_pingora(route) {
        let gauge: Vec<_> = r.gauge.iter().filter(|g| g.run_id == run_id).collect();
        let mem = summed(
            gauge
                .iter()
                .filter_map(|g| Some((g.t_s?, g.req_mem_bytes as f64))),
        );
        let file = summed(
            gauge
                .iter()
                .filter_map(|g| Some((g.t_s?, g.req_file_bytes as f64))),
        );
        snap.proxy_memory = Ok(gauge_at(&mem, t));
        snap.proxy_file = Ok(gauge_at(&file, t));
    } else if select::is_nginx(route) {
        let temp = summed(
            r.resources
                .iter()
                .filter(|x| x.run_id == run_id && x.component == Component::Proxy)
                .filter_map(|x| Some((x.t_s, x.temp_logical_bytes? as f64))),
        );
        snap.proxy_memory = Err(NGINX_MEMORY);
        snap.proxy_file = latest(&temp, t)
            .map(|(_, v)| v)
            .ok_or("no temp-file sample of NGINX");
    }
    Ok(snap)
}
