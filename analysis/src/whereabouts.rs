//! Where the `/large` bytes of one run are at each socket sample (chart 5):
//! consumed by the clients, in their receive queues, in a shaped link's
//! queue (the tbf's backlog, runs with `--link`), in the proxy's send
//! queues, inside the proxy, in the kernel between the app and the proxy,
//! and, derived as the remainder, not yet written by the app or somewhere
//! that was not sampled.
//!
//! The grid is the harness's socket samples (~200 ms). The clients'
//! progress (~100 ms) and the pingora gauge (~100 ms) come from other
//! clocks of the same run; each sample takes their latest value at or
//! before it, never an interpolation.

use std::collections::{BTreeMap, BTreeSet};

use crate::select;
use schema::ResultSet as Results;
use schema::{Component, GaugeRow, RouteName, SocketRow};

/// What a sampled socket is on the path of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A listening socket; its receive queue is the accept backlog.
    Listen,
    /// The app's end of a connection: its send queue holds response bytes
    /// the next hop has not taken yet.
    App,
    /// The proxy's connection to the app: its receive queue holds bytes the
    /// proxy has not read yet.
    ProxyUpstream,
    /// The proxy's connection to a client: its send queue holds bytes the
    /// client's receive queue has no room for yet.
    ProxyDownstream,
    /// The load generator's end: its receive queue holds bytes the reader
    /// has not read yet.
    Client,
    Other,
}

/// Classifies the sockets of one run: the app's listening ports tell the
/// proxy's upstream connections from its client connections.
pub fn roles<'a>(sockets: &[&'a SocketRow]) -> Vec<(Role, &'a SocketRow)> {
    let app_ports: BTreeSet<u16> = sockets
        .iter()
        .filter(|s| s.component == Component::App && s.listening())
        .filter_map(|s| s.local_port())
        .collect();
    sockets
        .iter()
        .map(|s| {
            let role = match (s.component.known(), s.listening()) {
                (_, true) => Role::Listen,
                (Some(Component::App), _) => Role::App,
                (Some(Component::Proxy), _)
                    if s.remote_port().is_some_and(|p| app_ports.contains(&p)) =>
                {
                    Role::ProxyUpstream
                }
                (Some(Component::Proxy), _) => Role::ProxyDownstream,
                (Some(Component::Loadgen), _) => Role::Client,
                (None, _) => Role::Other,
            };
            (role, *s)
        })
        .collect()
}

/// The layers at one instant, in bytes, summed over the run's responses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    pub t: f64,
    /// Read from the socket by the clients (their paced consumption trails
    /// this by at most one read chunk).
    pub consumed: f64,
    pub client_queue: f64,
    /// In the link's tbf on the server's veth end (`qdisc-samples.csv`
    /// `backlog_bytes`); `None` without a link. Those bytes were sent but
    /// not acknowledged, so the sender's socket counts them in its send
    /// queue too: they are taken out of that layer (the proxy's send
    /// queues behind a proxy, else the app's), never counted twice.
    pub link_queue: Option<f64>,
    pub proxy_send_queue: f64,
    /// Inside the proxy (pingora's gauge); `None` where not sampled (NGINX).
    pub proxy_held: Option<f64>,
    /// App send queues plus the proxy's upstream receive queues.
    pub app_queue: f64,
    /// Derived: the remainder, up to the bytes of responses the app had not
    /// finished writing.
    pub not_written: f64,
    /// Derived: the rest of the remainder.
    pub not_sampled: f64,
    /// The summed send-buffer sizes of the app's connected sockets (not
    /// bytes of the response: the room the kernel gave them); `None` where
    /// the samples came from `/proc`, which does not show it.
    pub app_sndbuf: Option<f64>,
}

/// Chart 5's data for one run.
#[derive(Debug, Clone, Default)]
pub struct Whereabouts {
    pub run_id: String,
    pub route: RouteName,
    /// Bytes of all its `/large` responses.
    pub total: f64,
    pub samples: Vec<Sample>,
    /// When the app's kernel accepted each response's last byte.
    pub app_ends: Vec<f64>,
    /// The proxy's temp-file logical size over time (for NGINX, the only
    /// sampled trace of what it holds).
    pub temp_logical: Vec<(f64, f64)>,
    /// How many samples had a negative remainder (sampling skew), clamped.
    pub clamped: usize,
}

/// Milliseconds as a grouping key for sample times written with 3 decimals.
fn key(t: f64) -> i64 {
    (t * 1000.0).round() as i64
}

/// Latest value at or before `t` in a time-sorted series.
fn at_or_before(series: &[(f64, f64)], t: f64) -> f64 {
    let i = series.partition_point(|(x, _)| *x <= t + 1e-9);
    if i == 0 { 0.0 } else { series[i - 1].1 }
}

/// Held bytes from the gauge tick at or before `t`, if that tick is recent;
/// ticks stop when no response is open, so an old tick means zero.
fn gauge_at(ticks: &[(f64, f64)], interval: f64, t: f64) -> f64 {
    let i = ticks.partition_point(|(x, _)| *x <= t + 1e-9);
    match i.checked_sub(1).map(|j| ticks[j]) {
        Some((x, v)) if t - x <= 1.5 * interval => v,
        _ => 0.0,
    }
}

fn gauge_ticks(rows: &[&GaugeRow]) -> (Vec<(f64, f64)>, f64) {
    let mut by: BTreeMap<i64, f64> = BTreeMap::new();
    for g in rows {
        if let Some(t) = g.t_s {
            *by.entry(key(t)).or_default() += g.held() as f64;
        }
    }
    let ticks: Vec<(f64, f64)> = by
        .into_iter()
        .map(|(k, v)| (k as f64 / 1000.0, v))
        .collect();
    let mut gaps: Vec<f64> = ticks.windows(2).map(|w| w[1].0 - w[0].0).collect();
    gaps.sort_by(f64::total_cmp);
    let interval = gaps.get(gaps.len() / 2).copied().unwrap_or(0.1);
    (ticks, interval)
}

/// How much later than its socket samples the sampler reads the qdiscs in
/// the same round: milliseconds; a round is ~200 ms.
const QDISC_LAG: f64 = 0.1;

/// The server-side tbf's backlog over time, bytes (`qdisc-samples.csv`);
/// empty without a link.
pub fn link_backlog(r: &Results, run_id: &str) -> Vec<(f64, f64)> {
    let mut v: Vec<(f64, f64)> = r
        .qdiscs
        .iter()
        .filter(|q| q.run_id == run_id && q.side == "server" && q.is_root())
        .map(|q| (q.t_s, q.backlog_bytes as f64))
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// Computes chart 5's layers for one run, or says why it cannot.
pub fn compute(r: &Results, run_id: &str, route: &RouteName) -> Result<Whereabouts, String> {
    let sockets: Vec<&SocketRow> = r.sockets.iter().filter(|s| s.run_id == run_id).collect();
    if sockets.is_empty() {
        return Err("no socket samples for this run".into());
    }
    let large: Vec<_> = r.large.iter().filter(|l| l.run_id == run_id).collect();
    let body = r.profile_f64(&["body", "large_bytes"]);
    let total: f64 = large
        .iter()
        .map(|l| {
            l.content_length
                .map(|c| c as f64)
                .or(body)
                .unwrap_or(l.bytes as f64)
        })
        .sum();
    if total <= 0.0 {
        return Err("no /large responses recorded for this run".into());
    }
    let mut progress: BTreeMap<u32, Vec<(f64, f64)>> = BTreeMap::new();
    for p in r.progress.iter().filter(|p| p.run_id == run_id) {
        progress
            .entry(p.client)
            .or_default()
            .push((p.t_s, p.received_bytes as f64));
    }
    if progress.is_empty() {
        return Err("no client progress samples for this run".into());
    }
    for v in progress.values_mut() {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let pingora = select::is_pingora(route);
    let gauge_rows: Vec<&GaugeRow> = r.gauge.iter().filter(|g| g.run_id == run_id).collect();
    let gauge = (pingora && !gauge_rows.is_empty()).then(|| gauge_ticks(&gauge_rows));
    let proxied = select::has_proxy(route);
    let sends: Vec<Option<f64>> = r
        .app_sends
        .iter()
        .filter(|a| a.run_id == run_id)
        .map(|a| a.end_s())
        .collect();
    let per_response = total / large.len().max(1) as f64;

    let qdisc = link_backlog(r, run_id);

    let mut ticks: BTreeMap<i64, Sample> = BTreeMap::new();
    for (role, s) in roles(&sockets) {
        let e = ticks.entry(key(s.t_s)).or_insert_with(|| Sample {
            t: s.t_s,
            ..Sample::default()
        });
        match role {
            Role::App => {
                e.app_queue += s.tx_queue_bytes as f64;
                if let Some(b) = s.sndbuf_bytes {
                    *e.app_sndbuf.get_or_insert(0.0) += b as f64;
                }
            }
            Role::ProxyUpstream => e.app_queue += s.rx_queue_bytes as f64,
            Role::ProxyDownstream => e.proxy_send_queue += s.tx_queue_bytes as f64,
            Role::Client => e.client_queue += s.rx_queue_bytes as f64,
            Role::Listen | Role::Other => {}
        }
    }
    let end = large
        .iter()
        .filter_map(|l| l.end_s())
        .fold(0.0f64, f64::max);
    let mut out = Whereabouts {
        run_id: run_id.to_string(),
        route: route.clone(),
        total,
        app_ends: sends.iter().flatten().copied().collect(),
        ..Whereabouts::default()
    };
    for (_, mut s) in ticks {
        if end > 0.0 && s.t > end + 0.5 {
            continue;
        }
        s.consumed = progress.values().map(|v| at_or_before(v, s.t)).sum();
        if !qdisc.is_empty() {
            let sender = if proxied {
                &mut s.proxy_send_queue
            } else {
                &mut s.app_queue
            };
            let q = at_or_before(&qdisc, s.t + QDISC_LAG).min(*sender);
            *sender -= q;
            s.link_queue = Some(q);
        }
        s.proxy_held = match (&gauge, proxied, pingora) {
            (Some((ticks, interval)), _, _) => Some(gauge_at(ticks, *interval, s.t)),
            (None, false, _) => Some(0.0),
            _ => None,
        };
        let sampled = s.consumed
            + s.client_queue
            + s.link_queue.unwrap_or(0.0)
            + s.proxy_send_queue
            + s.proxy_held.unwrap_or(0.0)
            + s.app_queue;
        let rest = total - sampled;
        if rest < 0.0 {
            out.clamped += 1;
        }
        let rest = rest.max(0.0);
        // Responses the app had not finished writing may still have bytes
        // in the app; without a send log every response counts as unfinished.
        let unfinished: f64 = if sends.is_empty() {
            total
        } else {
            sends.iter().filter(|e| e.is_none_or(|e| e > s.t)).count() as f64 * per_response
        };
        s.not_written = rest.min(unfinished);
        s.not_sampled = rest - s.not_written;
        out.samples.push(s);
    }
    out.temp_logical = r
        .resources
        .iter()
        .filter(|x| x.run_id == run_id && x.component == Component::Proxy)
        .filter_map(|x| Some((x.t_s, x.temp_logical_bytes? as f64)))
        .filter(|(t, _)| end <= 0.0 || *t <= end + 0.5)
        .collect();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_lookups_never_interpolate() {
        let s = [(0.0, 10.0), (0.1, 20.0), (0.2, 30.0)];
        assert_eq!(at_or_before(&s, -0.1), 0.0);
        assert_eq!(at_or_before(&s, 0.15), 20.0);
        assert_eq!(at_or_before(&s, 0.2), 30.0);
        assert_eq!(gauge_at(&s, 0.1, 0.25), 30.0);
        assert_eq!(gauge_at(&s, 0.1, 0.5), 0.0);
    }

    fn sock(component: &str, local: &str, remote: &str, state: &str) -> SocketRow {
        SocketRow {
            run_id: "1".into(),
            t_s: 0.0,
            component: schema::Named::parse(component),
            local: local.into(),
            remote: remote.into(),
            state: state.into(),
            ..SocketRow::default()
        }
    }

    fn queue(t: f64, component: &str, local: &str, remote: &str, tx: u64, rx: u64) -> SocketRow {
        SocketRow {
            t_s: t,
            tx_queue_bytes: tx,
            rx_queue_bytes: rx,
            ..sock(component, local, remote, "ESTABLISHED")
        }
    }

    #[test]
    fn the_remainder_is_unwritten_until_the_app_finishes() {
        use schema::{AppSendRow, LargeRow, ProgressRow};
        let large = LargeRow {
            run_id: "1".into(),
            connect_ms: Some(0.0),
            bytes: 100,
            content_length: Some(100),
            receive_s: Some(2.0),
            ..LargeRow::default()
        };
        let progress = |t: f64, b: u64| ProgressRow {
            run_id: "1".into(),
            t_s: t,
            received_bytes: b,
            consumed_bytes: b,
            ..ProgressRow::default()
        };
        let r = Results {
            large: vec![large],
            progress: vec![progress(0.0, 0), progress(0.9, 40), progress(1.9, 80)],
            app_sends: vec![AppSendRow {
                run_id: "1".into(),
                t_s: Some(0.0),
                app_send_s: Some(1.5),
                bytes: 100,
                complete: Some(true),
                ..AppSendRow::default()
            }],
            sockets: vec![
                sock("app", "127.0.0.1:5000", "0.0.0.0:0", "LISTEN"),
                SocketRow {
                    sndbuf_bytes: Some(4096),
                    ..queue(1.0, "app", "127.0.0.1:5000", "127.0.0.1:40000", 30, 0)
                },
                queue(1.0, "loadgen", "127.0.0.1:40000", "127.0.0.1:5000", 0, 10),
                queue(2.0, "loadgen", "127.0.0.1:40000", "127.0.0.1:5000", 0, 5),
            ],
            ..Results::default()
        };
        let w = compute(&r, "1", &catalogue::Route::Direct.into()).unwrap();
        assert_eq!(w.total, 100.0);
        assert_eq!(w.app_ends, vec![1.5]);
        let at = |t: f64| w.samples.iter().find(|s| (s.t - t).abs() < 1e-9).unwrap();
        // At 1.0 s the app is still writing: 100 - 40 read - 10 - 30 = 20
        // not yet written.
        let s = at(1.0);
        assert_eq!(
            (s.consumed, s.client_queue, s.app_queue),
            (40.0, 10.0, 30.0)
        );
        assert_eq!((s.not_written, s.not_sampled), (20.0, 0.0));
        assert_eq!(s.app_sndbuf, Some(4096.0));
        assert_eq!(s.proxy_held, Some(0.0));
        // At 2.0 s the app has finished and closed its socket: the 15 bytes
        // nobody sampled are not unwritten.
        let s = at(2.0);
        assert_eq!((s.consumed, s.client_queue, s.app_queue), (80.0, 5.0, 0.0));
        assert_eq!((s.not_written, s.not_sampled), (0.0, 15.0));
        // No app socket at 2.0 s: no send buffer, not a zero one.
        assert_eq!(s.app_sndbuf, None);
    }

    #[test]
    fn roles_follow_the_app_port() {
        let rows = [
            sock("app", "127.0.0.1:5000", "0.0.0.0:0", "LISTEN"),
            sock("app", "127.0.0.1:5000", "127.0.0.1:40000", "ESTABLISHED"),
            sock("proxy", "127.0.0.1:40000", "127.0.0.1:5000", "ESTABLISHED"),
            sock("proxy", "127.0.0.1:6000", "127.0.0.1:50000", "ESTABLISHED"),
            sock(
                "loadgen",
                "127.0.0.1:50000",
                "127.0.0.1:6000",
                "ESTABLISHED",
            ),
        ];
        let refs: Vec<&SocketRow> = rows.iter().collect();
        let got: Vec<Role> = roles(&refs).into_iter().map(|(r, _)| r).collect();
        assert_eq!(
            got,
            [
                Role::Listen,
                Role::App,
                Role::ProxyUpstream,
                Role::ProxyDownstream,
                Role::Client
            ]
        );
    }
}
