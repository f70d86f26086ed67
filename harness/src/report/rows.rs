//! One typed struct per row of each results file, holding only the columns
//! the report reads. Columns are matched by name (the files carry more, and
//! may gain more), so the report keeps working when a writer adds columns.
//! Empty cells become `None`.

use serde::Deserialize;

/// A row of `conditions.csv`.
#[derive(Debug, Clone, Deserialize)]
pub struct ConditionRow {
    pub server: String,
    pub route: String,
    pub slow_clients: u32,
    pub runs: u32,
    #[serde(default)]
    pub runs_failed: Option<u32>,
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub p95_min: Option<f64>,
    pub p95_max: Option<f64>,
    pub app_send_s: Option<f64>,
    pub client_receive_s: Option<f64>,
    pub temp_peak_mib: Option<f64>,
    #[serde(default)]
    pub fast_requests: Option<u64>,
    #[serde(default)]
    pub fast_errors: Option<u64>,
    #[serde(default)]
    pub max_schedule_lag_ms: Option<f64>,
    #[serde(default)]
    pub app_cpu_cores: Option<f64>,
    #[serde(default)]
    pub note: Option<String>,
}

/// A row of `runs.csv`.
#[derive(Debug, Clone, Deserialize)]
pub struct RunRow {
    pub run_id: String,
    pub server: String,
    pub route: String,
    pub slow_clients: u32,
    pub repetition: u32,
    #[serde(default)]
    pub preset: Option<String>,
    pub status: String,
    #[serde(default)]
    pub reason: Option<String>,
    pub p95_ms: Option<f64>,
    #[serde(default)]
    pub fast_requests: Option<u64>,
    #[serde(default)]
    pub fast_ok: Option<u64>,
    #[serde(default)]
    pub large_responses: Option<u64>,
    #[serde(default)]
    pub large_ok: Option<u64>,
    #[serde(default)]
    pub app_send_s: Option<f64>,
    #[serde(default)]
    pub app_cpu_cores: Option<f64>,
    #[serde(default)]
    pub app_memory_peak_bytes: Option<f64>,
    #[serde(default)]
    pub proxy_memory_peak_bytes: Option<f64>,
    #[serde(default)]
    pub proxy_rss_peak_bytes: Option<f64>,
    #[serde(default)]
    pub max_schedule_lag_ms: Option<f64>,
}

impl RunRow {
    pub fn ok(&self) -> bool {
        self.status == "ok"
    }
}

/// A row of `requests.csv` (one `/fast` request).
#[derive(Debug, Clone, Deserialize)]
pub struct RequestRow {
    pub run_id: String,
    pub started_s: f64,
    pub latency_ms: Option<f64>,
    #[serde(default)]
    pub schedule_lag_ms: Option<f64>,
    pub status: Option<u16>,
    #[serde(default)]
    pub error: Option<String>,
}

impl RequestRow {
    /// A whole 200: the rows the percentiles are computed from.
    pub fn ok(&self) -> bool {
        self.error.as_deref().is_none_or(|e| e.trim().is_empty())
            && self.status == Some(200)
            && self.latency_ms.is_some()
    }
}

/// A row of `large-responses.csv` (one slow download), with the app's side
/// the harness appends.
#[derive(Debug, Clone, Deserialize)]
pub struct LargeRow {
    pub run_id: String,
    pub client: u32,
    /// When the connect began.
    pub started_s: f64,
    pub connect_ms: Option<f64>,
    pub bytes: u64,
    pub content_length: Option<u64>,
    /// From TCP established to the paced consumption of the last byte.
    pub receive_s: Option<f64>,
    #[serde(default)]
    pub rcvbuf_requested_bytes: Option<u64>,
    #[serde(default)]
    pub rcvbuf_granted_bytes: Option<u64>,
    #[serde(default)]
    pub app_send_s: Option<f64>,
}

impl LargeRow {
    /// When the download ended on the run's clock, if it ended whole.
    pub fn end_s(&self) -> Option<f64> {
        self.receive_s
            .map(|r| self.started_s + self.connect_ms.unwrap_or(0.0) / 1000.0 + r)
    }
}

/// A row of `slow-progress.csv`.
#[derive(Debug, Clone, Deserialize)]
pub struct ProgressRow {
    pub run_id: String,
    pub t_s: f64,
    pub client: u32,
    pub received_bytes: u64,
    pub consumed_bytes: u64,
}

/// A row of `resource-samples.csv` (one component at one instant).
#[derive(Debug, Clone, Deserialize)]
pub struct ResourceRow {
    pub run_id: String,
    pub t_s: f64,
    pub component: String,
    pub memory_bytes: Option<u64>,
    #[serde(default)]
    pub rss_bytes: Option<u64>,
    pub temp_files: Option<u64>,
    pub temp_logical_bytes: Option<u64>,
    pub temp_allocated_bytes: Option<u64>,
    /// Connections waiting in the component's listening sockets.
    #[serde(default)]
    pub accept_backlog: Option<u64>,
}

/// A row of `socket-samples.csv` (one TCP socket of one component).
#[derive(Debug, Clone, Deserialize)]
pub struct SocketRow {
    pub run_id: String,
    pub t_s: f64,
    pub component: String,
    pub local: String,
    pub remote: String,
    pub state: String,
    pub tx_queue_bytes: u64,
    pub rx_queue_bytes: u64,
}

impl SocketRow {
    pub fn listening(&self) -> bool {
        self.state == "LISTEN"
    }

    pub fn local_port(&self) -> Option<u16> {
        port(&self.local)
    }

    pub fn remote_port(&self) -> Option<u16> {
        port(&self.remote)
    }
}

/// The port of `ip:port` (IPv6 addresses keep their colons before it).
fn port(addr: &str) -> Option<u16> {
    addr.rsplit_once(':').and_then(|(_, p)| p.parse().ok())
}

/// A row of `app-sends.csv` (the app's send log, one `/large` response).
#[derive(Debug, Clone, Deserialize)]
pub struct AppSendRow {
    pub run_id: String,
    /// When the body started, on the run's clock.
    pub t_s: Option<f64>,
    pub app_send_s: Option<f64>,
    pub bytes: u64,
    #[serde(default)]
    pub worker: Option<String>,
    #[serde(default)]
    pub complete: Option<String>,
}

impl AppSendRow {
    /// When the kernel accepted the last byte, on the run's clock.
    pub fn end_s(&self) -> Option<f64> {
        Some(self.t_s? + self.app_send_s?)
    }
}

/// A row of `proxy-gauge.csv` (one open pingora response at one instant).
#[derive(Debug, Clone, Deserialize)]
pub struct GaugeRow {
    pub run_id: String,
    pub t_s: Option<f64>,
    pub conn: u64,
    pub upstream_read_bytes: u64,
    pub client_written_bytes: u64,
    pub mem_bytes: u64,
    pub file_bytes: u64,
}

impl GaugeRow {
    /// Bytes read from the app and not yet accepted by the client's socket:
    /// what the proxy holds, in memory or in its temp file.
    pub fn held(&self) -> u64 {
        self.upstream_read_bytes
            .saturating_sub(self.client_written_bytes)
    }
}

/// A row of `crosscheck.csv`.
#[derive(Debug, Clone, Deserialize)]
pub struct CrossRow {
    pub check: String,
    pub server: String,
    pub route: String,
    pub slow_clients: u32,
    pub handlers: String,
    pub absorbs_whole_response: String,
    pub predicted: Option<String>,
    pub observed: Option<String>,
    pub p95_ms: Option<f64>,
    pub baseline_p95_ms: Option<f64>,
    pub baseline_from: Option<String>,
    pub reference: Option<String>,
    pub reference_observed: Option<String>,
    pub reference_p95_ms: Option<f64>,
    pub p95_ratio: Option<f64>,
    pub agree: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports() {
        assert_eq!(port("127.0.0.1:8080"), Some(8080));
        assert_eq!(port("[::1]:443"), Some(443));
        assert_eq!(port("nonsense"), None);
    }
}
