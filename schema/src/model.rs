//! `model.csv`: the buffer model's prediction of each condition's app write
//! time beside what was measured (written by the `analysis` crate).

use serde::{Deserialize, Serialize};

use super::cell;
use catalogue::{RouteName, ServerName, VerdictName};

dim_row! {
/// A row of `model.csv`: one download-direction condition (server, route,
/// slow clients and the cells of `schema::DimCells`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelRow {
    pub server: ServerName,
    pub route: RouteName,
    pub slow_clients: u32,
    // The runs' `--sysctl`s as in `runs.csv`; empty for the host's.
    @sysctls,
    pub runs: u32,
    pub body_bytes: u64,
    #[serde(serialize_with = "cell::d0")]
    pub slow_rate_bytes_per_s: Option<f64>,
    /// `tcp_wmem` and `tcp_rmem` max in the server's namespace, the slow
    /// clients' receive buffer (granted `SO_RCVBUF`, else client `tcp_rmem`
    /// max) and the proxy's own hold, as the model used them.
    pub wmem_max_bytes: Option<u64>,
    pub rmem_max_bytes: Option<u64>,
    pub client_rcvbuf_bytes: Option<u64>,
    pub proxy_hold_bytes: Option<u64>,
    /// B from the sysctls (the prediction).
    pub predicted_b_bytes: Option<u64>,
    #[serde(serialize_with = "cell::d3")]
    pub predicted_app_send_s: Option<f64>,
    /// Median over the condition's completed runs.
    #[serde(serialize_with = "cell::d3")]
    pub observed_app_send_s: Option<f64>,
    /// B from the measured peak queues (the explanation): median over runs
    /// of the sum of each hop's peak.
    pub explained_b_bytes: Option<u64>,
    #[serde(serialize_with = "cell::d3")]
    pub explained_app_send_s: Option<f64>,
    /// `observed / predicted`.
    #[serde(serialize_with = "cell::d3")]
    pub ratio: Option<f64>,
    #[serde(default, with = "cell::yes_no")]
    pub predicted_blocked: Option<bool>,
    /// The cross-check's verdict of the condition's median p95 against the
    /// same stack's 0-slow baseline.
    pub observed: Option<VerdictName>,
    #[serde(serialize_with = "cell::d2")]
    pub p95_ms: Option<f64>,
    // As in `runs.csv`: part of the condition (with `sysctls`, which
    // holds a `buffers` cell).
    @netns, @slow_kind, @link, @reader, @mtu,
    /// The app socket's send buffer (`sndbuf_bytes` of
    /// `socket-samples.csv`): its largest sample in a run, median over the
    /// runs; empty without sock_diag samples.
    pub app_sndbuf_peak_bytes: Option<u64>,
    /// Whether that send buffer grew to the `wmem_max_bytes` the
    /// prediction assumes: `no` where the kernel (growing it by the
    /// congestion window in segments, so by the MTU) stopped it short,
    /// and B is overstated; empty when not sampled.
    #[serde(default, with = "cell::yes_no")]
    pub sndbuf_as_assumed: Option<bool>,
    /// Through a proxy, the proxy's receive buffer from the app that `B`
    /// counts: `tcp_rmem` default of the server's namespace, at most its
    /// max (a proxy reading at its client's pace does not grow it);
    /// empty on the direct route and in older files.
    #[serde(default)]
    pub proxy_rcvbuf_bytes: Option<u64>,
    @streams_per_conn, @h2_window_bytes,
}
}
