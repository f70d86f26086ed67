//! One row per request, per download and per progress sample: what the CSV
//! files hold. Times are relative to t0 (when the slow readers start).

use std::time::Duration;

use crate::config::ReaderModel;
use crate::edge::H2Settings;
use crate::error::Failure;

/// One `/fast` request (a row of `requests.csv`).
#[derive(Debug, Clone, PartialEq)]
pub struct FastRecord {
    pub seq: usize,
    pub scheduled_s: f64,
    pub started_s: f64,
    /// Actual start minus scheduled start.
    pub schedule_lag_ms: f64,
    /// Actual start to TCP established.
    pub connect_ms: Option<f64>,
    /// Actual start to the first response byte.
    pub first_byte_ms: Option<f64>,
    /// Actual start to the whole body; `None` unless the response was whole.
    pub latency_ms: Option<f64>,
    pub status: Option<u16>,
    /// Body bytes received.
    pub bytes: u64,
    pub error: Option<Failure>,
    /// TCP established to the TLS handshake done (TLS only).
    pub tls_ms: Option<f64>,
    pub protocol: catalogue::Edge,
}

impl FastRecord {
    /// A 200 with its whole body.
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }
}

/// How a `/large` body was checked (the `verified` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verified {
    /// Whole, and every byte matched the pattern.
    Pattern,
    /// Whole by its `Content-Length` (or chunk framing); bytes not checked.
    Length,
    /// Read to EOF with no length to check against.
    Unchecked,
    /// Not verified: the row's `error` says why.
    No,
}

impl Verified {
    pub fn as_str(self) -> &'static str {
        match self {
            Verified::Pattern => "pattern",
            Verified::Length => "length",
            Verified::Unchecked => "unchecked",
            Verified::No => "no",
        }
    }
}

/// One slow reader's download (a row of `large-responses.csv`).
#[derive(Debug, Clone, PartialEq)]
pub struct LargeRecord {
    pub client: usize,
    /// When the connect began.
    pub started_s: f64,
    pub connect_ms: Option<f64>,
    /// Connect start to the first response byte.
    pub first_byte_ms: Option<f64>,
    pub status: Option<u16>,
    /// Body bytes received.
    pub bytes: u64,
    pub content_length: Option<u64>,
    /// Request start (TCP established) to the paced consumption of the last
    /// chunk; `None` unless the body was whole.
    pub receive_s: Option<f64>,
    /// `--rcvbuf`; none on an HTTP/2 connection, whose socket keeps the
    /// kernel's buffer (its slow reader is its stream window).
    pub rcvbuf_requested_bytes: Option<usize>,
    pub rcvbuf_granted_bytes: Option<usize>,
    /// Bytes the first `recv` after the request returned, the head
    /// included; `None` if nothing was read.
    pub first_read_bytes: Option<usize>,
    pub verified: Verified,
    pub error: Option<Failure>,
    /// The reader model that read it.
    pub reader: ReaderModel,
    /// `streamreader` only: its `--loop-lag`.
    pub loop_lag: Option<Duration>,
    pub protocol: catalogue::Edge,
    /// The connection that carried it: the reader's own over HTTP/1.1.
    pub connection: usize,
    /// HTTP/2 only: how the stream was carried and held.
    pub h2: Option<H2Stream>,
}

/// How an HTTP/2 download was carried.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct H2Stream {
    pub settings: H2Settings,
    /// The most bytes received and not yet consumed at once.
    pub unconsumed_peak_bytes: u64,
}

/// One sample of a slow reader's progress (a row of `slow-progress.csv`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProgressRow {
    pub t_s: f64,
    pub client: usize,
    /// Body bytes read from the socket.
    pub received_bytes: u64,
    /// Body bytes whose paced consumption is complete.
    pub consumed_bytes: u64,
    /// The kernel's receive queue of the reader's socket (`FIONREAD`);
    /// `None` while it holds no connected socket.
    pub socket_queue_bytes: Option<u64>,
    /// `streamreader` only: bytes in the user-space buffer.
    pub user_buffer_bytes: Option<u64>,
    /// `streamreader` only: whether the transport's reading was paused.
    pub reading_paused: Option<bool>,
}

/// One slow upload (a row of `uploads.csv`).
#[derive(Debug, Clone, PartialEq)]
pub struct UploadRecord {
    pub client: usize,
    /// When the connect began.
    pub started_s: f64,
    pub connect_ms: Option<f64>,
    /// First body byte written to the return of the last write (the kernel
    /// accepted every byte); `None` unless the whole body was written.
    pub send_s: Option<f64>,
    /// Body bytes the kernel accepted.
    pub bytes_sent: u64,
    /// The body's `Content-Length`.
    pub upload_bytes: u64,
    /// Connect start to the first response byte.
    pub first_byte_ms: Option<f64>,
    pub status: Option<u16>,
    /// The body bytes the server says it read.
    pub server_bytes: Option<u64>,
    /// Whether the server says every byte held the pattern.
    pub pattern_ok: Option<bool>,
    pub sndbuf_requested_bytes: usize,
    pub sndbuf_granted_bytes: Option<usize>,
    pub error: Option<Failure>,
}

/// One slowloris client (a row of `slow-headers.csv`).
#[derive(Debug, Clone, PartialEq)]
pub struct SlowHeaderRecord {
    pub client: usize,
    /// When the connect began.
    pub started_s: f64,
    pub connect_ms: Option<f64>,
    /// Lines of the request head written (request line included).
    pub header_lines: u64,
    /// Connect done to the end of the connection (run end or server close).
    pub held_s: Option<f64>,
    pub ended: crate::slowloris::HeadersEnd,
    /// The status of the server's answer, if it sent one (a 408, say).
    pub status: Option<u16>,
    pub error: Option<Failure>,
}
