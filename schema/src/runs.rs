//! The summaries: `runs.csv` (one row per run, its figures and resource
//! use), `conditions.csv` (one row per condition) and `crosscheck.csv`.

use serde::{Deserialize, Serialize};

use super::cell;
use catalogue::{
    CheckName, Component, Direction, DirectionName, RouteName, ServerName, StatusName, VerdictName,
};

dim_row! {
/// A row of `runs.csv`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    pub run_id: String,
    pub server: ServerName,
    pub route: RouteName,
    pub slow_clients: u32,
    pub repetition: u32,
    #[serde(default)]
    pub preset: Option<String>,
    pub status: StatusName,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub started_utc: Option<String>,
    #[serde(default, serialize_with = "cell::d3")]
    pub wall_s: Option<f64>,
    #[serde(default, serialize_with = "cell::d3")]
    pub load_s: Option<f64>,
    #[serde(default, serialize_with = "cell::d3")]
    pub host_busy_cores: Option<f64>,
    #[serde(default, serialize_with = "cell::d0")]
    pub host_steal_ms: Option<f64>,
    #[serde(default)]
    pub fast_requests: u64,
    #[serde(default)]
    pub fast_ok: u64,
    #[serde(default)]
    pub fast_errors: u64,
    #[serde(default, serialize_with = "cell::d3")]
    pub p50_ms: Option<f64>,
    #[serde(serialize_with = "cell::d3")]
    pub p95_ms: Option<f64>,
    #[serde(default, serialize_with = "cell::d3")]
    pub p99_ms: Option<f64>,
    #[serde(default, serialize_with = "cell::d3")]
    pub max_ms: Option<f64>,
    #[serde(default, serialize_with = "cell::d3")]
    pub max_schedule_lag_ms: Option<f64>,
    #[serde(default)]
    pub large_responses: u64,
    #[serde(default)]
    pub large_ok: u64,
    #[serde(default, serialize_with = "cell::d3")]
    pub app_send_s: Option<f64>,
    #[serde(default, serialize_with = "cell::d3")]
    pub client_receive_s: Option<f64>,
    #[serde(default, serialize_with = "cell::d2")]
    pub temp_peak_mib: Option<f64>,
    #[serde(default, serialize_with = "cell::d4")]
    pub app_cpu_cores: Option<f64>,
    #[serde(default, serialize_with = "cell::d1")]
    pub app_throttled_ms: Option<f64>,
    #[serde(default)]
    pub app_memory_peak_bytes: Option<u64>,
    #[serde(default)]
    pub app_rss_peak_bytes: Option<u64>,
    #[serde(default, serialize_with = "cell::d2")]
    pub app_cpu_cap_cores: Option<f64>,
    #[serde(default)]
    pub app_memory_cap_bytes: Option<u64>,
    #[serde(default, serialize_with = "cell::d4")]
    pub proxy_cpu_cores: Option<f64>,
    #[serde(default, serialize_with = "cell::d1")]
    pub proxy_throttled_ms: Option<f64>,
    #[serde(default)]
    pub proxy_memory_peak_bytes: Option<u64>,
    #[serde(default)]
    pub proxy_rss_peak_bytes: Option<u64>,
    #[serde(default, serialize_with = "cell::d2")]
    pub proxy_cpu_cap_cores: Option<f64>,
    #[serde(default)]
    pub proxy_memory_cap_bytes: Option<u64>,
    #[serde(default, serialize_with = "cell::d4")]
    pub loadgen_cpu_cores: Option<f64>,
    #[serde(default, serialize_with = "cell::d1")]
    pub loadgen_throttled_ms: Option<f64>,
    #[serde(default)]
    pub loadgen_memory_peak_bytes: Option<u64>,
    #[serde(default)]
    pub loadgen_rss_peak_bytes: Option<u64>,
    #[serde(default, serialize_with = "cell::d2")]
    pub loadgen_cpu_cap_cores: Option<f64>,
    #[serde(default)]
    pub loadgen_memory_cap_bytes: Option<u64>,
    @netns, @sysctls,
    /// What the `slow_clients` do: `download`, `upload`, `headers`; empty
    /// (files before the column) means `download`.
    #[serde(default)]
    pub direction: DirectionName,
    @slow_kind, @link, @reader, @mtu,
    /// When `p95_ms` is empty because its rank fell among the failed
    /// requests (failures rank last): their error kinds, `;` between them
    /// (`timeout`: each waited the whole `--timeout`).
    #[serde(default)]
    pub p95_error: Option<String>,
    @streams_per_conn, @h2_window_bytes,
}
}

/// The `<c>_*` columns of one component in `runs.csv`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ComponentColumns {
    /// CPU time increment / elapsed time; 1.0 is one core.
    pub cpu_cores: Option<f64>,
    pub throttled_ms: Option<f64>,
    pub memory_peak_bytes: Option<u64>,
    pub rss_peak_bytes: Option<u64>,
    pub cpu_cap_cores: Option<f64>,
    pub memory_cap_bytes: Option<u64>,
}

/// The per-component fields of [`RunRow`], by component: the one place
/// that ties a component to its six columns.
macro_rules! component_fields {
    ($($c:ident: $cpu:ident $thr:ident $mem:ident $rss:ident $cap:ident $mcap:ident;)+) => {
        impl RunRow {
            /// One component's columns.
            pub fn component(&self, c: Component) -> ComponentColumns {
                match c {
                    $(Component::$c => ComponentColumns {
                        cpu_cores: self.$cpu,
                        throttled_ms: self.$thr,
                        memory_peak_bytes: self.$mem,
                        rss_peak_bytes: self.$rss,
                        cpu_cap_cores: self.$cap,
                        memory_cap_bytes: self.$mcap,
                    },)+
                }
            }

            /// Sets one component's columns.
            pub fn set_component(&mut self, c: Component, u: ComponentColumns) {
                match c {
                    $(Component::$c => {
                        self.$cpu = u.cpu_cores;
                        self.$thr = u.throttled_ms;
                        self.$mem = u.memory_peak_bytes;
                        self.$rss = u.rss_peak_bytes;
                        self.$cap = u.cpu_cap_cores;
                        self.$mcap = u.memory_cap_bytes;
                    })+
                }
            }
        }
    };
}

component_fields! {
    App: app_cpu_cores app_throttled_ms app_memory_peak_bytes app_rss_peak_bytes
        app_cpu_cap_cores app_memory_cap_bytes;
    Proxy: proxy_cpu_cores proxy_throttled_ms proxy_memory_peak_bytes proxy_rss_peak_bytes
        proxy_cpu_cap_cores proxy_memory_cap_bytes;
    Loadgen: loadgen_cpu_cores loadgen_throttled_ms loadgen_memory_peak_bytes
        loadgen_rss_peak_bytes loadgen_cpu_cap_cores loadgen_memory_cap_bytes;
}

impl RunRow {
    /// Whether the run completed; only completed runs enter the figures.
    pub fn ok(&self) -> bool {
        self.status == catalogue::names::RunStatus::Ok
    }

    /// The slow clients that are slow in `direction`.
    pub fn slow_in(&self, direction: Direction) -> u32 {
        if self.direction.or_download() == Some(direction) {
            self.slow_clients
        } else {
            0
        }
    }

    /// Slow readers of `/large`.
    pub fn slow_readers(&self) -> u32 {
        self.slow_in(Direction::Download)
    }

    /// Slow uploaders.
    pub fn slow_uploads(&self) -> u32 {
        self.slow_in(Direction::Upload)
    }

    /// Slowloris clients.
    pub fn slow_headers(&self) -> u32 {
        self.slow_in(Direction::Headers)
    }
}

dim_row! {
/// A row of `conditions.csv`: the original's names first (p50, p95,
/// p95_min, p95_max in ms; app_send_s, client_receive_s; temp_peak_mib).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConditionRow {
    pub server: ServerName,
    pub route: RouteName,
    pub slow_clients: u32,
    pub runs: u32,
    #[serde(default)]
    pub runs_failed: u32,
    #[serde(serialize_with = "cell::d2")]
    pub p50: Option<f64>,
    #[serde(serialize_with = "cell::d2")]
    pub p95: Option<f64>,
    #[serde(serialize_with = "cell::d2")]
    pub p95_min: Option<f64>,
    #[serde(serialize_with = "cell::d2")]
    pub p95_max: Option<f64>,
    #[serde(serialize_with = "cell::d3")]
    pub app_send_s: Option<f64>,
    #[serde(serialize_with = "cell::d3")]
    pub client_receive_s: Option<f64>,
    #[serde(serialize_with = "cell::d2")]
    pub temp_peak_mib: Option<f64>,
    #[serde(default)]
    pub fast_requests: u64,
    #[serde(default)]
    pub fast_errors: u64,
    #[serde(default, serialize_with = "cell::d3")]
    pub max_schedule_lag_ms: Option<f64>,
    #[serde(default, serialize_with = "cell::d4")]
    pub app_cpu_cores: Option<f64>,
    #[serde(default, serialize_with = "cell::d2")]
    pub published_p95: Option<f64>,
    #[serde(default, serialize_with = "cell::d2")]
    pub published_p95_min: Option<f64>,
    #[serde(default, serialize_with = "cell::d2")]
    pub published_p95_max: Option<f64>,
    #[serde(default, serialize_with = "cell::d3")]
    pub published_app_send_s: Option<f64>,
    #[serde(default, serialize_with = "cell::d3")]
    pub published_client_receive_s: Option<f64>,
    #[serde(default)]
    pub published_from: Option<String>,
    #[serde(default)]
    pub note: Option<String>,
    /// As in `runs.csv`.
    #[serde(default)]
    pub direction: DirectionName,
    // As in `runs.csv`: part of the condition.
    @netns, @sysctls, @slow_kind, @link, @reader, @mtu,
    /// When the median of the runs' p95, a run without one (its p95 fell
    /// among failed requests) ranking last, is such a run: the error kinds
    /// of those runs' `p95_error`, `;` between them. `p95` is then empty.
    #[serde(default)]
    pub p95_error: Option<String>,
    @streams_per_conn, @h2_window_bytes,
}
}

dim_row! {
/// A row of `crosscheck.csv`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CrossRow {
    pub check: CheckName,
    pub server: ServerName,
    pub route: RouteName,
    pub slow_clients: u32,
    /// A count, or `unbounded`.
    pub handlers: String,
    pub absorbs_whole_response: bool,
    pub predicted: Option<VerdictName>,
    pub observed: Option<VerdictName>,
    #[serde(serialize_with = "cell::d2")]
    pub p95_ms: Option<f64>,
    #[serde(serialize_with = "cell::d2")]
    pub baseline_p95_ms: Option<f64>,
    pub baseline_from: Option<String>,
    pub reference: Option<String>,
    pub reference_observed: Option<VerdictName>,
    #[serde(serialize_with = "cell::d2")]
    pub reference_p95_ms: Option<f64>,
    #[serde(serialize_with = "cell::d3")]
    pub p95_ratio: Option<f64>,
    #[serde(with = "cell::yes_no")]
    pub agree: Option<bool>,
    /// As in `runs.csv`.
    #[serde(default)]
    pub direction: DirectionName,
    // As in `runs.csv`: part of the condition.
    @netns, @sysctls, @slow_kind, @link, @reader, @mtu,
    /// As in `conditions.csv`: the condition's p95 fell among failed
    /// requests of these kinds; `p95_ms` is empty and the observation is
    /// `blocked` (failures rank last) when a baseline was measured.
    #[serde(default)]
    pub p95_error: Option<String>,
    @streams_per_conn, @h2_window_bytes,
}
}
