//! The `--recv-log` CSV, the send log's twin for the request direction: one
//! row per `POST /upload`, written when the handler stops reading its body
//! (whole, or cut short by a client that left).
//!
//! Its columns are the `schema` crate's [`RecvLogCells`] (shared with the
//! WSGI and ASGI apps):
//! `start_unix_s,start_s,app_recv_s,bytes,content_length,pattern_ok,worker,complete`.
//! `app_recv_s` runs from the request head (the handler's start) to the last
//! body byte read, and is empty unless the body was whole; an incomplete
//! body is never counted as received.

use std::path::Path;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::log_file::LogFile;

use schema::RecvLogCells;
use schema::child::{header_line, line};

/// One upload as the handler saw it.
#[derive(Debug, Clone)]
pub struct Upload {
    /// When the request head had been read (the handler began).
    pub started: Instant,
    pub started_wall: SystemTime,
    /// The request's `Content-Length`, if it had one.
    pub content_length: Option<u64>,
    /// Body bytes read.
    pub bytes: u64,
    /// Every byte read matched the pattern.
    pub pattern_ok: bool,
    /// When the last body byte was read; `None` while the body is not whole.
    pub done_at: Option<Instant>,
    pub worker: String,
}

impl Upload {
    /// The body ended where its `Content-Length` said (or, without one, at
    /// the end of its chunk framing).
    pub fn complete(&self) -> bool {
        self.done_at.is_some() && self.content_length.is_none_or(|n| n == self.bytes)
    }
}

/// An open receive log shared by every worker of one server.
#[derive(Debug)]
pub struct RecvLog {
    file: LogFile,
    /// Time zero of `start_s`: when the server started.
    server_start: Instant,
}

impl RecvLog {
    /// Opens (creating if needed) `path` and writes the header if the file is
    /// empty.
    pub fn open(path: &Path, server_start: Instant) -> anyhow::Result<Self> {
        Ok(RecvLog {
            file: LogFile::open(path, "receive log", header_line::<RecvLogCells>())?,
            server_start,
        })
    }

    /// Appends the row of one upload.
    pub fn record(&self, upload: &Upload) -> anyhow::Result<()> {
        self.file.append(&format_row(upload, self.server_start))
    }
}

/// The row of `upload`; `app_recv_s` is empty unless the body was whole.
pub fn cells(upload: &Upload, server_start: Instant) -> RecvLogCells {
    let unix = upload
        .started_wall
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let start_s = upload
        .started
        .saturating_duration_since(server_start)
        .as_secs_f64();
    let complete = upload.complete();
    RecvLogCells {
        start_unix_s: Some(unix),
        start_s: Some(start_s),
        app_recv_s: upload
            .done_at
            .filter(|_| complete)
            .map(|at| at.duration_since(upload.started).as_secs_f64()),
        bytes: upload.bytes,
        content_length: upload.content_length,
        pattern_ok: Some(upload.pattern_ok),
        worker: Some(upload.worker.clone()),
        complete: Some(complete),
    }
}

/// One CSV line (with its newline) for `upload`.
pub fn format_row(upload: &Upload, server_start: Instant) -> String {
    let bytes = line(&cells(upload, server_start)).unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn upload(bytes: u64, done_after: Option<Duration>) -> (Upload, Instant) {
        let server_start = Instant::now();
        let started = server_start + Duration::from_millis(1500);
        let upload = Upload {
            started,
            started_wall: UNIX_EPOCH + Duration::from_micros(1_700_000_000_250_000),
            content_length: Some(100),
            bytes,
            pattern_ok: true,
            done_at: done_after.map(|d| started + d),
            worker: "sync-1".into(),
        };
        (upload, server_start)
    }

    #[test]
    fn complete_row() {
        let (u, t0) = upload(100, Some(Duration::from_micros(6_562_000)));
        assert_eq!(
            format_row(&u, t0),
            "1700000000.250000,1.500000,6.562000,100,100,true,sync-1,true\n"
        );
    }

    #[test]
    fn a_short_body_is_incomplete_and_has_no_recv_time() {
        let (u, t0) = upload(40, None);
        assert_eq!(
            format_row(&u, t0),
            "1700000000.250000,1.500000,,40,100,true,sync-1,false\n"
        );
        // Even a body that "ended" short of its length is not received.
        let (u, t0) = upload(40, Some(Duration::from_secs(1)));
        assert!(format_row(&u, t0).ends_with(",,40,100,true,sync-1,false\n"));
    }

    #[test]
    fn header_once_then_rows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("recv.csv");
        let t0 = Instant::now();
        let log = RecvLog::open(&path, t0).expect("open");
        let (u, _) = upload(100, Some(Duration::from_secs(1)));
        log.record(&u).expect("record");
        drop(log);
        let log = RecvLog::open(&path, t0).expect("reopen");
        log.record(&u).expect("record");
        let text = std::fs::read_to_string(&path).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[0], header_line::<RecvLogCells>().trim_end());
    }
}
