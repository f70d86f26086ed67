//! The components' own logs, merged run by run: the app's send log
//! (`app-sends.csv`) and pingora's response log and gauge
//! (`proxy-responses.csv`, `proxy-gauge.csv`). Each row is the log's line
//! after the run's identity and `t_s` (the log's wall-clock time on the
//! run's clock). The same structs read the raw per-run logs, which lack
//! those leading columns, through [`super::file::read_log`].

use super::cell;

child_row! {
    /// A row of `app-sends.csv` (one `/large` response of the app).
    pub struct AppSendRow / SendLogCells {
        @ident,
        @own
        /// When the body started, on the run's clock.
        #[serde(default, serialize_with = "cell::d3")]
        pub t_s: Option<f64>,
        #[serde(default, serialize_with = "cell::d6")]
        pub start_unix_s: Option<f64>,
        #[serde(default, serialize_with = "cell::d6")]
        pub start_s: Option<f64>,
        #[serde(serialize_with = "cell::d6")]
        pub app_send_s: Option<f64>,
        pub bytes: u64,
        #[serde(default)]
        pub worker: Option<String>,
        #[serde(default)]
        pub complete: Option<bool>,
    }
}

impl AppSendRow {
    /// When the kernel accepted the last byte, on the run's clock.
    pub fn end_s(&self) -> Option<f64> {
        Some(self.t_s? + self.app_send_s?)
    }
}

child_row! {
    /// A row of `proxy-responses.csv` (one response of pingora).
    pub struct ProxyResponseRow / ProxyStatsCells {
        @ident,
        @own #[serde(default, serialize_with = "cell::d3")]
        pub t_s: Option<f64>,
        #[serde(serialize_with = "cell::d6")]
        pub start_unix_s: Option<f64>,
        pub mode: String,
        pub status: Option<u16>,
        pub bytes: u64,
        pub mem_peak_bytes: u64,
        pub spilled_bytes: u64,
        #[serde(serialize_with = "cell::d6")]
        pub upstream_done_s: Option<f64>,
        #[serde(serialize_with = "cell::d6")]
        pub client_done_s: Option<f64>,
        pub error: Option<String>,
        /// The request direction (absent from logs of older versions).
        #[serde(default)]
        pub req_mode: Option<String>,
        #[serde(default)]
        pub req_bytes: u64,
        #[serde(default)]
        pub req_mem_peak_bytes: u64,
        #[serde(default)]
        pub req_spilled_bytes: u64,
        #[serde(default, serialize_with = "cell::d6")]
        pub req_done_s: Option<f64>,
        #[serde(default, serialize_with = "cell::d6")]
        pub upstream_start_s: Option<f64>,
    }
}

child_row! {
    /// A row of `proxy-gauge.csv` (one open pingora response at one instant).
    pub struct GaugeRow / GaugeCells {
        @ident,
        @own #[serde(default, serialize_with = "cell::d3")]
        pub t_s: Option<f64>,
        #[serde(default, serialize_with = "cell::d6")]
        pub t_unix_s: Option<f64>,
        pub conn: u64,
        pub upstream_read_bytes: u64,
        pub client_written_bytes: u64,
        pub mem_bytes: u64,
        pub file_bytes: u64,
        /// The request direction (absent from logs of older versions).
        #[serde(default)]
        pub req_read_bytes: u64,
        #[serde(default)]
        pub req_sent_bytes: u64,
        #[serde(default)]
        pub req_mem_bytes: u64,
        #[serde(default)]
        pub req_file_bytes: u64,
    }
}

impl GaugeRow {
    /// Bytes read from the app and not yet accepted by the client's socket:
    /// what the proxy holds, in memory or in its temp file.
    pub fn held(&self) -> u64 {
        self.upstream_read_bytes
            .saturating_sub(self.client_written_bytes)
    }

    /// Request body bytes read from the client and not yet sent to the
    /// app: what the proxy holds of the upload.
    pub fn req_held(&self) -> u64 {
        self.req_read_bytes.saturating_sub(self.req_sent_bytes)
    }
}

child_row! {
    /// A row of the app's receive log (`recv-log.csv`, one `POST /upload`),
    /// after the run's identity and `t_s`, as [`AppSendRow`].
    pub struct AppRecvRow / RecvLogCells {
        @ident,
        @own #[serde(default, serialize_with = "cell::d3")]
        pub t_s: Option<f64>,
        #[serde(default, serialize_with = "cell::d6")]
        pub start_unix_s: Option<f64>,
        #[serde(default, serialize_with = "cell::d6")]
        pub start_s: Option<f64>,
        #[serde(serialize_with = "cell::d6")]
        pub app_recv_s: Option<f64>,
        pub bytes: u64,
        pub content_length: Option<u64>,
        pub pattern_ok: Option<bool>,
        #[serde(default)]
        pub worker: Option<String>,
        #[serde(default)]
        pub complete: Option<bool>,
    }
}
