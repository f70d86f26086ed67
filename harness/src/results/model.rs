//! `model.csv`: the buffer model's prediction of each condition's app write
//! time beside what was measured (written by [`crate::model`]).

use serde::{Deserialize, Serialize};

use super::cell;
use super::names::{RouteName, ServerName, VerdictName};

/// A row of `model.csv`: one download-direction condition (server, route,
/// slow clients and the cells of `results::DimCells`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelRow {
    pub server: ServerName,
    pub route: RouteName,
    pub slow_clients: u32,
    /// The runs' `--sysctl`s as in `runs.csv`; empty for the host's.
    #[serde(default)]
    pub sysctls: Option<String>,
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
    /// As in `runs.csv`: part of the condition (with `sysctls`, which
    /// holds a `buffers` cell).
    #[serde(default)]
    pub netns: Option<bool>,
    #[serde(default)]
    pub slow_kind: Option<String>,
    #[serde(default)]
    pub link: Option<String>,
    #[serde(default)]
    pub reader: Option<String>,
}
