//! The buffer model: how long the app writes one `/large` response, from
//! the sizes of the queues between it and a slow client.
//!
//! The app's last `send` returns once the rest of the body fits into what
//! lies between it and the client, `B` bytes, so the client has consumed
//! `size - B` at its rate by then:
//!
//! ```text
//! app_send_s = max(0, size - B) / slow_rate
//! B (direct)  = wmem_max + rcvbuf
//! B (proxy)   = wmem_max + proxy_rcvbuf + hold + wmem_max + rcvbuf
//! B (h2 edge) = wmem_max + proxy_rcvbuf + hold + min(window, wmem_max + rcvbuf)
//! ```
//!
//! `wmem_max`: `tcp_wmem` max of the server's namespace (the run's
//! `--sysctl`s, else the host's); `proxy_rcvbuf`: the proxy's receive
//! buffer from the app, `tcp_rmem` default there (capped by its max): the
//! kernel grows a receive buffer beyond it only for a reader that drains
//! more per round trip (`tcp_rcv_space_adjust`), and a proxy passing bytes
//! on reads at its client's pace, so `tcp_rmem` max is not reached (on
//! the host, `tcp_rmem` max 32 MiB, one such queue peaked at 334 KiB; in
//! the `buffers` preset the default fits 40 of 64 proxy conditions within
//! 15%, the max 20); `rcvbuf`: the slow
//! client's granted `SO_RCVBUF` (else twice the requested one, as Linux
//! grants, else the client side's `tcp_rmem` max);
//! `hold`: the proxy's own buffer, `proxy_buffer_size` with buffering off,
//! its memory buffers plus `proxy_max_temp_file_size` with buffering on.
//! The app side's send buffer and the proxy's client-side send buffer both
//! autotune up to the server namespace's `wmem_max`, which the formula
//! assumes they reach. The kernel grows a send buffer from the congestion
//! window counted in segments (`tcp_sndbuf_expand`), each segment's slot
//! sized by the MTU, so on a small-MTU path (the veth's 1500) it stops
//! short of a large `wmem_max` and `B` is overstated; on loopback (65536)
//! or veths at 65535 it reaches it. `model.csv` says per condition whether
//! the app's measured send buffer reached the `wmem_max` assumed
//! (`sndbuf_as_assumed`, beside the `mtu`); the prediction itself stays
//! the sysctls' (no fitted cap). `/fast` is predicted
//! blocked when every handler holds a slow client ([`crosscheck::predict`]'s
//! saturation) for at least the cross-check's blocked p95 threshold.
//!
//! The same formula with each hop's measured peak queue in place of its
//! sysctl (sock_diag's send and receive queues, pingora's gauge, NGINX's
//! temp files) is the explanation: what the kernel actually let through.
//!
//! At an HTTP/2 edge (the `h2` preset's routes) the proxy sends a stream
//! no more than its flow-control window ahead of what the reader has
//! consumed, so the last hop holds at most `window` per stream (the
//! load's `--h2-window`; its connection window is the sum of its streams'
//! windows, so never the tighter bound): the reader's HTTP/2 client takes
//! the frames off its socket as they come, and the bytes wait in its
//! stream buffer (`h2_unconsumed_peak_bytes` of `large-responses.csv`,
//! which the explanation adds to the measured queues). What the proxy
//! cannot send waits in its `hold`, as over HTTP/1.1.
//!
//! The model is for the download direction, under either slow-client kind:
//! - `pace`: `slow_rate` is the profile's paced rate, and the client's
//!   receive buffer fills (the reader takes bytes off it at the pace).
//! - `link`: `slow_rate` is the link's rate shared by the slow readers,
//!   or all of it behind a per-client link (`Link::share`); they read unpaced, so their receive buffers stay
//!   empty and `rcvbuf` counts 0: the bytes ahead of a reader wait in the
//!   sender's buffer, which also holds what queues in the tbf (TCP keeps a
//!   segment in its write queue until it is acknowledged).
//!
//! Request-direction conditions (slow uploads, slowloris) get no row: the
//! app writes no slow response there, so a write time has nothing to
//! predict.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use common::stats::median;

use crate::aggregate::by_condition;
use crate::crosscheck::{self, BLOCKED_MIN_MS};
use crate::whereabouts::{Role, roles};
use catalogue::{ProxyBuffers, Route, Server};
use catalogue::{Side, Sysctl};
use schema::dims::condition_of;
use schema::{self, DimCells, Direction, MODEL_CSV, ModelRow, Named, ResultSet, RunRow};

/// The buffer sizes along one condition's path, in bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathBuffers {
    pub wmem_max: u64,
    /// `tcp_rmem` max, recorded beside `proxy_rcvbuf`.
    pub rmem_max: u64,
    /// The proxy's receive buffer from the app: `tcp_rmem` default, at
    /// most its max.
    pub proxy_rcvbuf: u64,
    pub client_rcvbuf: u64,
    /// The proxy's own hold; `None` on the direct route.
    pub proxy_hold: Option<u64>,
    /// A stream's flow-control window at an HTTP/2 edge; `None` over
    /// HTTP/1.1.
    pub h2_window: Option<u64>,
}

impl PathBuffers {
    /// The direct route's buffers: the app's send buffer and the client's
    /// receive buffer, no proxy between them (`proxy_rcvbuf` counts
    /// nothing there).
    pub fn direct(wmem_max: u64, rmem_max: u64, client_rcvbuf: u64) -> PathBuffers {
        PathBuffers {
            wmem_max,
            rmem_max,
            proxy_rcvbuf: 0,
            client_rcvbuf,
            proxy_hold: None,
            h2_window: None,
        }
    }

    /// `B`: what the queues between the app and one client can hold.
    pub fn b(&self) -> u64 {
        match self.proxy_hold {
            None => self.wmem_max + self.client_rcvbuf,
            Some(hold) => self.wmem_max + self.proxy_rcvbuf + hold + self.last_hop(),
        }
    }

    /// What the hop from the proxy to one client holds: the proxy's send
    /// buffer and the client's receive buffer, or, at an HTTP/2 edge, no
    /// more than the stream's window.
    pub fn last_hop(&self) -> u64 {
        let kernel = self.wmem_max + self.client_rcvbuf;
        self.h2_window.map_or(kernel, |w| w.min(kernel))
    }
}

/// A slow client's receive buffer as `B` counts it: nothing for readers
/// that read unpaced behind a link (their receive buffers stay empty; the
/// bytes ahead of them wait in the sender's buffer), else `rcvbuf`.
pub fn client_rcvbuf(behind_link: bool, rcvbuf: Option<u64>) -> Option<u64> {
    if behind_link { Some(0) } else { rcvbuf }
}

/// The proxy's own buffer on `route`: `buffer_size` with buffering off,
/// everything it can park with buffering on (where it takes effect,
/// [`Route::buffers_here`]).
pub fn proxy_hold(route: Route, buffers: &ProxyBuffers) -> Option<u64> {
    route.proxy().map(|_| {
        if route.buffers_here() {
            buffers.capacity()
        } else {
            buffers.buffer_size
        }
    })
}

/// `max(0, size - B) / rate` in seconds.
pub fn app_send_s(body: u64, b: u64, rate: f64) -> f64 {
    body.saturating_sub(b) as f64 / rate
}

/// Whether the model says `/fast` waits: every handler is held, each for at
/// least the blocked threshold.
pub fn blocked(server: Server, slow: u32, app_send_s: f64) -> bool {
    server.handlers().is_some_and(|h| h <= slow) && app_send_s * 1000.0 >= BLOCKED_MIN_MS
}

/// The max of `key` in `side`'s namespace: the last `--sysctl` naming it
/// there, else the host's value in `environment.json`.
fn sysctl_max(r: &ResultSet, sysctls: &[Sysctl], side: Side, key: &str) -> Option<u64> {
    sysctl_field(r, sysctls, side, key, 2)
}

/// Field `i` (0 min, 1 default, 2 max) of the triple `key` in `side`'s
/// namespace, found as [`sysctl_max`] finds the max.
fn sysctl_field(r: &ResultSet, sysctls: &[Sysctl], side: Side, key: &str, i: usize) -> Option<u64> {
    sysctls
        .iter()
        .rev()
        .find(|s| s.key == key && s.applies_to(side))
        .and_then(|s| s.triple())
        .map(|t| t[i])
        .or_else(|| r.sysctl_triple(key).map(|t| t[i] as u64))
}

/// A condition of the model: its runs share server, route, slow clients
/// and the condition cells (namespaces, `--sysctl`s and so a `buffers`
/// cell, slow-client kind, link, reader, MTU).
type Key = (String, String, u32, DimCells);

/// The sampled sockets of one run, with their roles on the path.
fn run_sockets<'a>(r: &'a ResultSet, run: &RunRow) -> Vec<(Role, &'a schema::SocketRow)> {
    let sockets: Vec<_> = r
        .sockets
        .iter()
        .filter(|s| s.run_id == run.run_id)
        .collect();
    roles(&sockets)
}

/// The measured `B` of one run: each hop's peak queue (one socket's most
/// in one sample), plus what the proxy held itself per response.
fn explained_b(r: &ResultSet, run: &RunRow) -> Option<u64> {
    let rs = run_sockets(r, run);
    if rs.is_empty() {
        return None;
    }
    let peak = |role: Role, rx: bool| {
        rs.iter()
            .filter(|(ro, _)| *ro == role)
            .map(|(_, s)| {
                if rx {
                    s.rx_queue_bytes
                } else {
                    s.tx_queue_bytes
                }
            })
            .max()
            .unwrap_or(0)
    };
    // An HTTP/2 reader's stream buffer: what it received and has not
    // consumed, its peak over the run's downloads.
    let unconsumed = r
        .large
        .iter()
        .filter(|l| l.run_id == run.run_id)
        .filter_map(|l| l.h2_unconsumed_peak_bytes)
        .max()
        .unwrap_or(0);
    let queues = peak(Role::App, false)
        + peak(Role::ProxyUpstream, true)
        + peak(Role::ProxyDownstream, false)
        + peak(Role::Client, true)
        + unconsumed;
    let gauge = r
        .gauge
        .iter()
        .filter(|g| g.run_id == run.run_id)
        .map(|g| g.mem_bytes + g.file_bytes)
        .max()
        .unwrap_or(0);
    let slow = u64::from(run.slow_clients.max(1));
    let temp = run
        .temp_peak_mib
        .map(|m| (m * (1u64 << 20) as f64) as u64 / slow)
        .unwrap_or(0);
    Some(queues + gauge.max(temp))
}

/// The largest send buffer of the app's sockets in one run (sock_diag's
/// `sndbuf_bytes`); none without such samples.
fn app_sndbuf_peak(r: &ResultSet, run: &RunRow) -> Option<u64> {
    run_sockets(r, run)
        .into_iter()
        .filter(|(role, _)| *role == Role::App)
        .filter_map(|(_, s)| s.sndbuf_bytes)
        .max()
}

/// Whether a run's slow clients read `/large` (the model's direction).
fn downloads(run: &RunRow) -> bool {
    run.direction.or_download() == Some(Direction::Download)
}

/// One row per download-direction condition with slow clients, from a
/// results directory's rows; `buffers` are the proxy's settings the runs
/// used.
pub fn rows(r: &ResultSet, buffers: &ProxyBuffers) -> Vec<ModelRow> {
    let mut groups: BTreeMap<Key, Vec<&RunRow>> = BTreeMap::new();
    for run in r
        .runs
        .iter()
        .filter(|x| x.ok() && x.slow_clients > 0 && downloads(x))
    {
        let key = (
            run.server.to_string(),
            run.route.to_string(),
            run.slow_clients,
            run.dims(),
        );
        groups.entry(key).or_default().push(run);
    }
    let body = r
        .profile_f64(&["body", "large_bytes"])
        .map(|v| v as u64)
        .or_else(|| r.large.iter().filter_map(|l| l.content_length).max());
    let paced = r.profile_f64(&["slow_rate"]);
    groups
        .into_values()
        .map(|runs| row(r, &runs, body, paced, buffers))
        .collect()
}

/// The request-direction conditions `rows` leaves out (said once when
/// `model.csv` is written).
fn left_out(r: &ResultSet) -> usize {
    let mut keys: Vec<_> = r
        .runs
        .iter()
        .filter(|x| x.slow_clients > 0 && !downloads(x))
        .map(|x| (x.server.to_string(), x.route.to_string(), x.dims()))
        .collect();
    keys.sort();
    keys.dedup();
    keys.len()
}

fn row(
    r: &ResultSet,
    runs: &[&RunRow],
    body: Option<u64>,
    paced: Option<f64>,
    buffers: &ProxyBuffers,
) -> ModelRow {
    let first = runs[0];
    let dims = first.dims();
    let link = dims
        .link
        .as_deref()
        .filter(|_| dims.slow_kind.as_deref() == Some("link"))
        .and_then(|l| catalogue::net::link::parse(l).ok());
    // A link's rate shared by the readers (all of it per client); else
    // the paced rate.
    let rate = match link {
        Some(l) => Some(l.share(first.slow_clients) as f64),
        None => paced,
    };
    let sysctls = Sysctl::from_cell(first.sysctls.as_deref());
    let ids: Vec<&str> = runs.iter().map(|x| x.run_id.as_str()).collect();
    let granted = r
        .large
        .iter()
        .filter(|l| ids.contains(&l.run_id.as_str()))
        .filter_map(|l| l.rcvbuf_granted_bytes)
        .max();
    let route = first.route.known();
    let path = (|| {
        Some(PathBuffers {
            wmem_max: sysctl_max(r, &sysctls, Side::Server, "net.ipv4.tcp_wmem")?,
            rmem_max: sysctl_max(r, &sysctls, Side::Server, "net.ipv4.tcp_rmem")?,
            proxy_rcvbuf: sysctl_field(r, &sysctls, Side::Server, "net.ipv4.tcp_rmem", 1)?
                .min(sysctl_max(r, &sysctls, Side::Server, "net.ipv4.tcp_rmem")?),
            client_rcvbuf: client_rcvbuf(
                link.is_some(),
                granted
                    .or_else(|| r.profile_f64(&["rcvbuf"]).map(|v| 2 * v as u64))
                    .or_else(|| sysctl_max(r, &sysctls, Side::Client, "net.ipv4.tcp_rmem")),
            )?,
            proxy_hold: proxy_hold(route?, buffers),
            h2_window: dims.h2_window_bytes.map(u64::from),
        })
    })();
    let predicted = match (path, body, rate) {
        (Some(p), Some(b), Some(rt)) if rt > 0.0 => Some(app_send_s(b, p.b(), rt)),
        _ => None,
    };
    let observed = median(&runs.iter().filter_map(|x| x.app_send_s).collect::<Vec<_>>());
    // The median over the runs of a byte count of each.
    let median_bytes = |of: &dyn Fn(&RunRow) -> Option<u64>| {
        median(
            &runs
                .iter()
                .filter_map(|x| of(x).map(|v| v as f64))
                .collect::<Vec<_>>(),
        )
        .map(|v| v as u64)
    };
    let explained = median_bytes(&|x| explained_b(r, x));
    let sndbuf = median_bytes(&|x| app_sndbuf_peak(r, x));
    let p95 = median(&runs.iter().filter_map(|x| x.p95_ms).collect::<Vec<_>>());
    // The cross-check's baseline: the same stack and cells at 0 slow, else
    // the same network at the host's buffers.
    let baseline = condition_of(
        first.server.known(),
        first.route.known(),
        first.slow_clients,
        Some(Direction::Download),
        &dims,
    )
    .and_then(|c| crosscheck::baseline(&by_condition(&r.conditions), c))
    .map(|(p, _)| p);
    let mut out = ModelRow {
        server: first.server.clone(),
        route: first.route.clone(),
        slow_clients: first.slow_clients,
        sysctls: first.sysctls.clone().filter(|s| !s.is_empty()),
        runs: runs.len() as u32,
        body_bytes: body.unwrap_or(0),
        slow_rate_bytes_per_s: rate,
        wmem_max_bytes: path.map(|p| p.wmem_max),
        rmem_max_bytes: path.map(|p| p.rmem_max),
        client_rcvbuf_bytes: path.map(|p| p.client_rcvbuf),
        proxy_hold_bytes: path.and_then(|p| p.proxy_hold),
        predicted_b_bytes: path.map(|p| p.b()),
        predicted_app_send_s: predicted,
        observed_app_send_s: observed,
        explained_b_bytes: explained,
        explained_app_send_s: match (explained, body, rate) {
            (Some(e), Some(b), Some(rt)) if rt > 0.0 => Some(app_send_s(b, e, rt)),
            _ => None,
        },
        ratio: match (observed, predicted) {
            (Some(o), Some(p)) if p > 0.0 => Some(o / p),
            _ => None,
        },
        predicted_blocked: match (first.server.known(), predicted) {
            (Some(s), Some(p)) => Some(blocked(s, first.slow_clients, p)),
            _ => None,
        },
        observed: match (p95, baseline) {
            (Some(p), Some(b)) => Some(Named::Known(crosscheck::observe(p, b))),
            _ => None,
        },
        p95_ms: p95,
        app_sndbuf_peak_bytes: sndbuf,
        sndbuf_as_assumed: match (sndbuf, path) {
            (Some(got), Some(p)) => Some(got >= p.wmem_max),
            _ => None,
        },
        proxy_rcvbuf_bytes: path
            .filter(|p| p.proxy_hold.is_some())
            .map(|p| p.proxy_rcvbuf),
        ..ModelRow::default()
    };
    out.set_dims(dims);
    out
}

/// Writes `model.csv` into the results directory `dir` from its files.
pub fn write(dir: &Path, buffers: &ProxyBuffers) -> Result<()> {
    let r = schema::read_dir(dir);
    let n = left_out(&r);
    if n > 0 {
        eprintln!(
            "slowlab: model.csv leaves out {n} request-direction condition(s): the model predicts a response's write time"
        );
    }
    schema::file::write_whole(&dir.join(MODEL_CSV), &rows(&r, buffers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_formula() {
        let direct = PathBuffers {
            wmem_max: 4 << 20,
            rmem_max: 6 << 20,
            proxy_rcvbuf: 128 << 10,
            client_rcvbuf: 16 << 10,
            proxy_hold: None,
            h2_window: None,
        };
        assert_eq!(direct.b(), (4 << 20) + (16 << 10));
        assert_eq!(
            PathBuffers::direct(4 << 20, 6 << 20, 16 << 10).b(),
            direct.b()
        );
        // Readers behind a link keep their receive buffers empty.
        assert_eq!(client_rcvbuf(true, Some(16 << 10)), Some(0));
        assert_eq!(client_rcvbuf(true, None), Some(0));
        assert_eq!(client_rcvbuf(false, Some(16 << 10)), Some(16 << 10));
        assert_eq!(client_rcvbuf(false, None), None);
        // 16 MiB at 2 MiB/s with ~4 MiB ahead: ~6 s.
        let t = app_send_s(16 << 20, direct.b(), (2 << 20) as f64);
        assert!((t - 5.99).abs() < 0.01, "{t}");
        assert!(blocked(Server::GunicornSync2, 2, t));
        assert!(!blocked(Server::GunicornGthread4, 2, t));
        let on = PathBuffers {
            proxy_hold: proxy_hold(Route::NginxOn, &ProxyBuffers::EXPERIMENT),
            ..direct
        };
        assert_eq!(app_send_s(16 << 20, on.b(), 1.0), 0.0);
        assert!(!blocked(Server::GunicornSync2, 2, 0.0));
        let off = PathBuffers {
            proxy_hold: proxy_hold(Route::NginxOff, &ProxyBuffers::EXPERIMENT),
            ..direct
        };
        assert_eq!(off.b(), (8 << 20) + (128 << 10) + (16 << 10) + (16 << 10));
        // At an HTTP/2 edge the last hop holds one stream window, not a
        // send buffer and a receive buffer: the app writes ~2 s longer.
        let h2 = PathBuffers {
            h2_window: Some(65_535),
            ..off
        };
        assert_eq!(h2.b(), (4 << 20) + (128 << 10) + (16 << 10) + 65_535);
        let longer = app_send_s(16 << 20, h2.b(), (2 << 20) as f64)
            - app_send_s(16 << 20, off.b(), (2 << 20) as f64);
        assert!((longer - 1.98).abs() < 0.01, "{longer}");
        // A window larger than the kernel's buffers bounds nothing.
        let wide = PathBuffers {
            h2_window: Some(1 << 30),
            ..off
        };
        assert_eq!(wide.b(), off.b());
        let s = Sysctl::from_cell(Some(
            "server:net.ipv4.tcp_wmem=4096 16384 524288;net.ipv4.tcp_rmem=4096 131072 1048576",
        ));
        assert_eq!(s.len(), 2);
        let r = ResultSet::default();
        assert_eq!(
            sysctl_max(&r, &s, Side::Server, "net.ipv4.tcp_wmem"),
            Some(524288)
        );
        assert_eq!(sysctl_max(&r, &s, Side::Client, "net.ipv4.tcp_wmem"), None);
        assert_eq!(
            sysctl_max(&r, &s, Side::Client, "net.ipv4.tcp_rmem"),
            Some(1 << 20)
        );
        assert_eq!(
            sysctl_field(&r, &s, Side::Server, "net.ipv4.tcp_rmem", 1),
            Some(131072)
        );
    }
}
