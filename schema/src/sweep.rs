//! The files of `slowlab sweep`: `sweep.csv` (one row per step: the sweep's
//! identity, then the columns of `slowlab sweep-load`'s `steps.csv`, then
//! the CPU each component used during the step) and `sweep-summary.csv`
//! (one row per sweep). The step struct also reads the raw `steps.csv`
//! (through [`super::file::read_log`], which puts the sweep's identity in
//! front); the harness's columns, absent there, are empty until filled.

use serde::{Deserialize, Serialize};

use super::cell;
use catalogue::{CapsName, RouteName, ServerName};

child_row! {
    /// A row of `sweep.csv`; the columns from `step` to `slow_active` are
    /// `loadgen::sweep::row::HEADER`.
    pub struct SweepRow / StepCells {
        @own pub sweep_id: String,
        @own pub server: ServerName,
        @own pub route: RouteName,
        @own pub slow_clients: u32,
        @own pub caps: CapsName,
        #[serde(default)]
        pub step: u32,
        #[serde(default, serialize_with = "cell::plain")]
        pub conn_rate_demanded: f64,
        #[serde(serialize_with = "cell::plain")]
        pub req_rate_demanded: f64,
        #[serde(default)]
        pub calls_per_conn: u32,
        #[serde(default, serialize_with = "cell::d6")]
        pub start_unix_s: f64,
        #[serde(default, serialize_with = "cell::d6")]
        pub end_unix_s: f64,
        #[serde(default, serialize_with = "cell::d3")]
        pub duration_s: f64,
        #[serde(default)]
        pub sessions: u64,
        #[serde(default)]
        pub connections: u64,
        #[serde(default)]
        pub requests: u64,
        #[serde(default)]
        pub replies: u64,
        #[serde(default, serialize_with = "cell::d2")]
        pub conn_rate_achieved: f64,
        #[serde(default, serialize_with = "cell::d2")]
        pub req_rate_achieved: f64,
        #[serde(default, serialize_with = "cell::d2")]
        pub replies_per_s_min: Option<f64>,
        #[serde(default, serialize_with = "cell::d2")]
        pub replies_per_s_avg: Option<f64>,
        #[serde(default, serialize_with = "cell::d2")]
        pub replies_per_s_max: Option<f64>,
        #[serde(default, serialize_with = "cell::d3")]
        pub p50_ms: Option<f64>,
        #[serde(default, serialize_with = "cell::d3")]
        pub p95_ms: Option<f64>,
        #[serde(default, serialize_with = "cell::d3")]
        pub p99_ms: Option<f64>,
        #[serde(default, serialize_with = "cell::d3")]
        pub max_ms: Option<f64>,
        #[serde(default)]
        pub errors: u64,
        #[serde(default)]
        pub err_timeout: u64,
        #[serde(default)]
        pub err_connect_refused: u64,
        #[serde(default)]
        pub err_reset: u64,
        #[serde(default)]
        pub err_ports_exhausted: u64,
        #[serde(default)]
        pub err_other: u64,
        #[serde(default, serialize_with = "cell::d3")]
        pub max_schedule_lag_ms: Option<f64>,
        #[serde(default, serialize_with = "cell::d3")]
        pub p99_schedule_lag_ms: Option<f64>,
        #[serde(default, serialize_with = "cell::d3")]
        pub loadgen_cpu_s: f64,
        #[serde(default)]
        pub time_wait_sockets: Option<u64>,
        #[serde(default)]
        pub slow_active: u64,
        @own #[serde(default, serialize_with = "cell::d4")]
        pub app_cpu_cores: Option<f64>,
        @own #[serde(default, serialize_with = "cell::d4")]
        pub proxy_cpu_cores: Option<f64>,
        @own #[serde(default, serialize_with = "cell::d4")]
        pub loadgen_cpu_cores: Option<f64>,
        @own #[serde(default, serialize_with = "cell::d1")]
        pub app_throttled_ms: Option<f64>,
        @own #[serde(default, serialize_with = "cell::d1")]
        pub proxy_throttled_ms: Option<f64>,
        @own #[serde(default)]
        pub loadgen_saturated: Option<bool>,
    }
}

impl SweepSummaryRow {
    /// The sweep's identity as the leading cells of its steps' rows in
    /// `sweep.csv` (for [`super::file::read_log`]).
    pub fn step_lead(&self) -> Vec<(&'static str, String)> {
        let values = [
            self.sweep_id.clone(),
            self.server.to_string(),
            self.route.to_string(),
            self.slow_clients.to_string(),
            self.caps.to_string(),
        ];
        super::columns::<SweepRow>()
            .iter()
            .copied()
            .zip(values)
            .collect()
    }
}

/// A row of `sweep-summary.csv`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SweepSummaryRow {
    pub sweep_id: String,
    pub server: ServerName,
    pub route: RouteName,
    pub slow_clients: u32,
    pub caps: CapsName,
    #[serde(default)]
    pub calls_per_conn: Option<u32>,
    #[serde(default)]
    pub steps: Option<usize>,
    #[serde(default, serialize_with = "cell::d0")]
    pub first_error_conn_rate: Option<f64>,
    #[serde(default, serialize_with = "cell::d0")]
    pub highest_error_free_conn_rate: Option<f64>,
    #[serde(default, serialize_with = "cell::d0")]
    pub highest_error_free_req_rate: Option<f64>,
    #[serde(default, serialize_with = "cell::d1")]
    pub highest_error_free_replies_per_s: Option<f64>,
    #[serde(default)]
    pub loadgen_saturated_steps: Option<usize>,
    #[serde(default)]
    pub ports_exhausted_steps: Option<usize>,
}
