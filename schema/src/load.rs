//! The load generator's files, merged run by run: `requests.csv`,
//! `large-responses.csv` (with the app's side the harness adds) and
//! `slow-progress.csv`. `slowlab load` writes them with the run's identity
//! as label columns; the columns after those are loadgen's
//! (`loadgen::output::*_COLUMNS`), and a test holds the two together.

use super::cell;

child_row! {
    /// A row of `requests.csv` (one `/fast` request).
    pub struct RequestRow / RequestCells {
        @ident,
        #[serde(default)]
        pub seq: u64,
        #[serde(default, serialize_with = "cell::d6")]
        pub scheduled_s: f64,
        #[serde(serialize_with = "cell::d6")]
        pub started_s: f64,
        #[serde(default, serialize_with = "cell::d3")]
        pub schedule_lag_ms: Option<f64>,
        #[serde(default, serialize_with = "cell::d3")]
        pub connect_ms: Option<f64>,
        #[serde(default, serialize_with = "cell::d3")]
        pub first_byte_ms: Option<f64>,
        #[serde(serialize_with = "cell::d3")]
        pub latency_ms: Option<f64>,
        pub status: Option<u16>,
        #[serde(default)]
        pub bytes: u64,
        #[serde(default)]
        pub error: Option<String>,
        /// Connect done to the TLS handshake done; empty without TLS and in
        /// files from before it.
        #[serde(default, serialize_with = "cell::d3")]
        pub tls_ms: Option<f64>,
        /// `http/1.1`, `http/1.1+tls`, `h2c` or `h2`; empty in files from
        /// before it, which were all `http/1.1`.
        #[serde(default)]
        pub protocol: Option<String>,
    }
}

impl RequestRow {
    /// A whole 200: the rows the percentiles are computed from.
    pub fn ok(&self) -> bool {
        self.error.as_deref().is_none_or(|e| e.trim().is_empty())
            && self.status == Some(200)
            && self.latency_ms.is_some()
    }
}

child_row! {
    /// A row of `large-responses.csv` (one slow download), with the app's side
    /// the harness appends.
    pub struct LargeRow / LargeCells {
        @ident,
        pub client: u32,
        /// When the connect began.
        #[serde(serialize_with = "cell::d6")]
        pub started_s: f64,
        #[serde(serialize_with = "cell::d3")]
        pub connect_ms: Option<f64>,
        #[serde(default, serialize_with = "cell::d3")]
        pub first_byte_ms: Option<f64>,
        #[serde(default)]
        pub status: Option<u16>,
        pub bytes: u64,
        pub content_length: Option<u64>,
        /// From TCP established to the paced consumption of the last byte.
        #[serde(serialize_with = "cell::d6")]
        pub receive_s: Option<f64>,
        #[serde(default)]
        pub rcvbuf_requested_bytes: Option<u64>,
        #[serde(default)]
        pub rcvbuf_granted_bytes: Option<u64>,
        #[serde(default)]
        pub verified: Option<String>,
        #[serde(default)]
        pub error: Option<String>,
        /// The reader model (`strict`, `streamreader`); empty in files written
        /// before there was a choice, which were all `strict`.
        #[serde(default)]
        pub reader: Option<String>,
        @own #[serde(default, serialize_with = "cell::d6")]
        pub app_send_s: Option<f64>,
        @own #[serde(default)]
        pub app_bytes: Option<u64>,
        @own #[serde(default)]
        pub app_worker: Option<String>,
        /// Bytes the reader's first `recv` returned, the head included; empty
        /// in files from before it was recorded.
        #[serde(default)]
        pub first_read_bytes: Option<u64>,
        /// `streamreader` only: its `--loop-lag` in microseconds; empty for
        /// `strict` and in files from before the flag.
        #[serde(default, serialize_with = "cell::d3")]
        pub loop_lag_us: Option<f64>,
        /// `http/1.1`, `http/1.1+tls`, `h2c` or `h2`; empty in files from
        /// before it, which were all `http/1.1`.
        #[serde(default)]
        pub protocol: Option<String>,
        /// The connection that carried the download (the reader's own over
        /// HTTP/1.1; shared by `streams_per_conn` downloads over HTTP/2).
        #[serde(default)]
        pub connection: Option<u32>,
        /// HTTP/2: the downloads its connection carried at once.
        #[serde(default)]
        pub streams_per_conn: Option<u32>,
        /// HTTP/2: the stream's window the load advertised
        /// (`SETTINGS_INITIAL_WINDOW_SIZE`), and the connection's.
        #[serde(default)]
        pub h2_window_bytes: Option<u64>,
        #[serde(default)]
        pub h2_conn_window_bytes: Option<u64>,
        /// HTTP/2: the most bytes the server had sent that the reader had
        /// not yet consumed (at most the stream's window).
        #[serde(default)]
        pub h2_unconsumed_peak_bytes: Option<u64>,
    }
}

impl LargeRow {
    /// Whether the download ended whole: status 200 and no error.
    pub fn ok(&self) -> bool {
        self.error.as_deref().is_none_or(|e| e.trim().is_empty()) && self.status == Some(200)
    }

    /// When the download ended on the run's clock, if it ended whole.
    pub fn end_s(&self) -> Option<f64> {
        self.receive_s
            .map(|r| self.started_s + self.connect_ms.unwrap_or(0.0) / 1000.0 + r)
    }
}

child_row! {
    /// A row of `slow-progress.csv`.
    pub struct ProgressRow / ProgressCells {
        @ident,
        #[serde(serialize_with = "cell::d6")]
        pub t_s: f64,
        pub client: u32,
        pub received_bytes: u64,
        pub consumed_bytes: u64,
        /// The kernel's receive queue of the reader's socket; empty while it
        /// held none (and in files written before this column).
        #[serde(default)]
        pub socket_queue_bytes: Option<u64>,
        /// `streamreader` only: bytes in its user-space buffer.
        #[serde(default)]
        pub user_buffer_bytes: Option<u64>,
        /// `streamreader` only: its transport's reading was paused.
        #[serde(default)]
        pub reading_paused: Option<bool>,
    }
}

child_row! {
    /// A row of `uploads.csv` (one slow upload), read and written after the
    /// run's identity; loadgen's columns are held to it by a test.
    pub struct UploadRow / UploadCells {
        @ident,
        pub client: u32,
        #[serde(serialize_with = "cell::d6")]
        pub started_s: f64,
        #[serde(serialize_with = "cell::d3")]
        pub connect_ms: Option<f64>,
        #[serde(serialize_with = "cell::d6")]
        pub send_s: Option<f64>,
        pub bytes_sent: u64,
        pub upload_bytes: u64,
        #[serde(serialize_with = "cell::d3")]
        pub first_byte_ms: Option<f64>,
        pub status: Option<u16>,
        pub server_bytes: Option<u64>,
        pub pattern_ok: Option<bool>,
        pub sndbuf_requested_bytes: Option<u64>,
        pub sndbuf_granted_bytes: Option<u64>,
        #[serde(default)]
        pub error: Option<String>,
    }
}

child_row! {
    /// A row of `slow-headers.csv` (one slowloris client).
    pub struct SlowHeaderRow / SlowHeaderCells {
        @ident,
        pub client: u32,
        #[serde(serialize_with = "cell::d6")]
        pub started_s: f64,
        #[serde(serialize_with = "cell::d3")]
        pub connect_ms: Option<f64>,
        pub header_lines: u64,
        #[serde(serialize_with = "cell::d6")]
        pub held_s: Option<f64>,
        pub ended: String,
        pub status: Option<u16>,
        #[serde(default)]
        pub error: Option<String>,
    }
}
