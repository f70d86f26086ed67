//! The numbers the lesson quotes, each computed from the directory's data
//! (conditions, runs, socket and progress samples, `environment.json`).
//! Everything is optional: a missing file leaves a gap the lesson skips.

use common::stats::median;

use super::data::Results;
use analysis::select::{self, Cond};
use analysis::whereabouts::{Role, roles};
use catalogue::{Route, Server};
use schema::{Check, Component, Direction, ServerName, SocketRow};

/// What one route did for the lesson's server.
#[derive(Debug, Clone, Default)]
pub struct RouteFacts {
    pub cond: Option<Cond>,
    pub p95: Option<f64>,
    /// The same stack's p95 with no slow client.
    pub baseline_p95: Option<f64>,
    pub app_send_s: Option<f64>,
    pub client_receive_s: Option<f64>,
    pub temp_peak_mib: Option<f64>,
    /// The largest cgroup memory of the proxy over the condition's runs.
    pub proxy_memory_peak: Option<f64>,
    /// The observed verdict of `crosscheck.csv`.
    pub verdict: Option<String>,
    /// The run whose samples are quoted.
    pub run_id: Option<String>,
    /// The most bytes one socket of each kind held in one sample.
    pub max_app_queue: Option<f64>,
    /// The largest send buffer (`sndbuf_bytes`, sock_diag only) of one of
    /// the app's connected sockets.
    pub max_app_sndbuf: Option<f64>,
    pub max_upstream_queue: Option<f64>,
    pub max_proxy_send_queue: Option<f64>,
    pub max_client_queue: Option<f64>,
    /// The most connections waiting in the app's accept queue at once.
    pub max_accept_backlog: Option<f64>,
    /// Bytes a client had read when the app handed over the last byte, and
    /// the rest of the response, which was on the way (median over the
    /// run's responses).
    pub read_at_app_end: Option<f64>,
    pub in_flight_at_app_end: Option<f64>,
}

/// Where the bytes queued for the slow clients of one kind (`pace`:
/// paced reads; `link`: unpaced reads behind `--link`), for the lesson's
/// server, direct, with the comparison's slow clients: over its ok runs of
/// that kind.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KindFacts {
    pub kind: String,
    /// `runs.csv` `link` of its first run (empty for `pace`).
    pub link: Option<String>,
    pub runs: usize,
    /// Median over the runs of `app_send_s`.
    pub app_send_s: Option<f64>,
    /// The most bytes one socket of each kind held in one sample.
    pub max_app_queue: Option<f64>,
    pub max_client_queue: Option<f64>,
    /// The largest backlog of the link's root qdisc (server side: the tbf, or a per-client link's htb, all its classes) in one sample.
    pub max_link_backlog: Option<f64>,
    /// Packets the tbf dropped, summed over the runs (its last sample).
    pub link_drops: Option<f64>,
}

/// Everything the lesson needs.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    pub slow: u32,
    pub body: Option<f64>,
    pub slow_rate: Option<f64>,
    pub fast_rate: Option<f64>,
    pub rcvbuf_requested: Option<f64>,
    pub rcvbuf_granted: Option<f64>,
    pub wmem: Option<[f64; 3]>,
    pub rmem: Option<[f64; 3]>,
    pub server: Option<ServerName>,
    pub handlers: Option<u32>,
    pub direct: RouteFacts,
    pub off: RouteFacts,
    pub on: RouteFacts,
    /// Servers with more handlers than slow clients, direct: (server, p95).
    pub more_handlers: Vec<(ServerName, Option<f64>)>,
    /// The largest per-run average CPU of the app, in cores.
    pub app_cpu_max: Option<f64>,
    /// Per slow-client kind present (`pace` first), direct.
    pub kinds: Vec<KindFacts>,
}

fn max_of(it: impl Iterator<Item = f64>) -> Option<f64> {
    it.fold(None, |m, v| Some(m.map_or(v, |m: f64| m.max(v))))
}

/// The server the lesson follows: one whose handlers the slow clients can
/// all occupy, Gunicorn sync first (the original), then its replica.
fn lesson_server(r: &Results, slow: u32) -> Option<ServerName> {
    let conds = select::at_slow(r, slow);
    let blockable = |s: &ServerName| select::handlers(s).is_some_and(|h| h <= slow);
    [Server::GunicornSync2, Server::RustSync2]
        .into_iter()
        .map(ServerName::from)
        .chain(conds.iter().map(|c| c.server.clone()))
        .find(|s| blockable(s) && conds.iter().any(|c| &c.server == s))
        .or_else(|| conds.first().map(|c| c.server.clone()))
}

/// The most bytes one socket of `role` held in one sample: its receive
/// queue (`rx`) or its send queue.
fn queue_peak(rs: &[(Role, &SocketRow)], role: Role, rx: bool) -> Option<f64> {
    max_of(rs.iter().filter(|(ro, _)| *ro == role).map(|(_, s)| {
        (if rx {
            s.rx_queue_bytes
        } else {
            s.tx_queue_bytes
        }) as f64
    }))
}

fn route_facts(r: &Results, cond: Cond, body: Option<f64>) -> RouteFacts {
    let row = select::condition_row(r, &cond);
    let base = select::condition_row(
        r,
        &Cond {
            slow: 0,
            ..cond.clone()
        },
    );
    let runs = select::ok_runs(r, &cond);
    let mut f = RouteFacts {
        p95: row.and_then(|c| c.p95),
        baseline_p95: base.and_then(|c| c.p95),
        app_send_s: row.and_then(|c| c.app_send_s),
        client_receive_s: row.and_then(|c| c.client_receive_s),
        temp_peak_mib: row.and_then(|c| c.temp_peak_mib),
        proxy_memory_peak: max_of(
            runs.iter()
                .filter_map(|x| x.proxy_memory_peak_bytes.map(|v| v as f64)),
        ),
        verdict: r
            .crosscheck
            .iter()
            .find(|c| {
                c.check == Check::Prediction
                    && select::in_direction(&c.direction, Direction::Download)
                    && cond.is(&c.server, &c.route, c.slow_clients)
            })
            .and_then(|c| c.observed.as_ref().map(|v| v.to_string())),
        ..RouteFacts::default()
    };
    if let Some(run) = select::median_run(r, &cond) {
        let id = run.run_id.as_str();
        f.run_id = Some(id.to_string());
        let sockets: Vec<_> = r.sockets.iter().filter(|s| s.run_id == id).collect();
        let rs = roles(&sockets);
        let max_by = |role: Role, rx: bool| queue_peak(&rs, role, rx);
        f.max_app_queue = max_by(Role::App, false);
        f.max_app_sndbuf = max_of(
            rs.iter()
                .filter(|(ro, _)| *ro == Role::App)
                .filter_map(|(_, s)| s.sndbuf_bytes.map(|v| v as f64)),
        );
        f.max_upstream_queue = max_by(Role::ProxyUpstream, true);
        f.max_proxy_send_queue = max_by(Role::ProxyDownstream, false);
        f.max_client_queue = max_by(Role::Client, true);
        f.max_accept_backlog = max_of(
            r.resources
                .iter()
                .filter(|x| x.run_id == id && x.component == Component::App)
                .filter_map(|x| x.accept_backlog.map(|v| v as f64)),
        );
        let ends: Vec<f64> = r
            .app_sends
            .iter()
            .filter(|a| a.run_id == id)
            .filter_map(|a| a.end_s())
            .collect();
        let progress: Vec<_> = r.progress.iter().filter(|p| p.run_id == id).collect();
        let read_at = |t: f64| -> Option<f64> {
            let mut clients: Vec<u32> = progress.iter().map(|p| p.client).collect();
            clients.sort_unstable();
            clients.dedup();
            let per: Vec<f64> = clients
                .iter()
                .map(|c| {
                    progress
                        .iter()
                        .filter(|p| p.client == *c && p.t_s <= t)
                        .map(|p| p.received_bytes as f64)
                        .fold(0.0, f64::max)
                })
                .collect();
            (!per.is_empty()).then(|| per.iter().sum::<f64>() / per.len() as f64)
        };
        let read: Vec<f64> = ends.iter().filter_map(|&e| read_at(e)).collect();
        f.read_at_app_end = median(&read);
        f.in_flight_at_app_end = match (body, f.read_at_app_end) {
            (Some(b), Some(read)) => Some(b - read),
            _ => None,
        };
    }
    f.cond = Some(cond);
    f
}

/// [`KindFacts`] of every slow-client kind among the direct runs of
/// `server` with `slow` slow clients.
fn kind_facts(r: &Results, server: &ServerName, slow: u32) -> Vec<KindFacts> {
    let cond = Cond {
        server: server.clone(),
        route: Route::Direct.into(),
        slow,
    };
    let runs = select::ok_runs(r, &cond);
    ["pace", "link"]
        .into_iter()
        .filter_map(|kind| {
            let mine: Vec<_> = runs
                .iter()
                .filter(|x| x.slow_kind.as_deref().unwrap_or("pace") == kind)
                .collect();
            let first = mine.first()?;
            let ids: Vec<&str> = mine.iter().map(|x| x.run_id.as_str()).collect();
            let sockets: Vec<_> = r
                .sockets
                .iter()
                .filter(|s| ids.contains(&s.run_id.as_str()))
                .collect();
            let rs = roles(&sockets);
            let max_by = |role: Role, rx: bool| queue_peak(&rs, role, rx);
            let qdiscs: Vec<_> = r
                .qdiscs
                .iter()
                .filter(|q| q.side == "server" && q.is_root() && ids.contains(&q.run_id.as_str()))
                .collect();
            let drops = ids.iter().filter_map(|id| {
                qdiscs
                    .iter()
                    .filter(|q| q.run_id == *id)
                    .map(|q| q.drops as f64)
                    .reduce(f64::max)
            });
            let sends: Vec<f64> = mine.iter().filter_map(|x| x.app_send_s).collect();
            Some(KindFacts {
                kind: kind.into(),
                link: first.link.clone(),
                runs: mine.len(),
                app_send_s: median(&sends),
                max_app_queue: max_by(Role::App, false),
                max_client_queue: max_by(Role::Client, true),
                max_link_backlog: max_of(qdiscs.iter().map(|q| q.backlog_bytes as f64)),
                link_drops: (!qdiscs.is_empty()).then(|| drops.sum()),
            })
        })
        .collect()
}

/// Computes every fact the data allows.
pub fn gather(r: &Results) -> Facts {
    let slow = select::comparison_slow(r).unwrap_or(0);
    let body = r.profile_f64(&["body", "large_bytes"]).or_else(|| {
        r.large
            .iter()
            .filter_map(|l| l.content_length)
            .max()
            .map(|v| v as f64)
    });
    let mut f = Facts {
        slow,
        body,
        slow_rate: r.profile_f64(&["slow_rate"]),
        fast_rate: r.profile_f64(&["fast_rate"]),
        rcvbuf_requested: r
            .large
            .iter()
            .filter_map(|l| l.rcvbuf_requested_bytes)
            .max()
            .map(|v| v as f64),
        rcvbuf_granted: r
            .large
            .iter()
            .filter_map(|l| l.rcvbuf_granted_bytes)
            .max()
            .map(|v| v as f64),
        wmem: r.sysctl_triple("net.ipv4.tcp_wmem"),
        rmem: r.sysctl_triple("net.ipv4.tcp_rmem"),
        app_cpu_max: max_of(
            r.runs
                .iter()
                .filter(|x| x.ok())
                .filter_map(|x| x.app_cpu_cores),
        ),
        ..Facts::default()
    };
    f.server = lesson_server(r, slow);
    f.handlers = f.server.as_ref().and_then(select::handlers);
    if let Some(server) = &f.server {
        let conds: Vec<Cond> = select::at_slow(r, slow)
            .into_iter()
            .filter(|c| &c.server == server)
            .collect();
        let pick = |p: fn(&schema::RouteName) -> bool| conds.iter().find(|c| p(&c.route)).cloned();
        if let Some(c) = pick(|r| *r == Route::Direct) {
            f.direct = route_facts(r, c, body);
        }
        if let Some(c) = pick(select::buffering_off) {
            f.off = route_facts(r, c, body);
        }
        if let Some(c) = pick(select::buffering_on) {
            f.on = route_facts(r, c, body);
        }
        f.kinds = kind_facts(r, server, slow);
    }
    f.more_handlers = select::at_slow(r, slow)
        .into_iter()
        .filter(|c| {
            c.route == Route::Direct && select::handlers(&c.server).is_none_or(|h| h > slow)
        })
        .filter(|c| c.server.known().is_some())
        .map(|c| {
            let p95 = select::condition_row(r, &c).and_then(|x| x.p95);
            (c.server, p95)
        })
        .collect();
    f
}
