//! The `--send-log` CSV: one row per `/large` response, written when its
//! connection ends.
//!
//! Its columns are the `schema` crate's [`SendLogCells`] (shared with the
//! WSGI app, whose header a test holds to them):
//! `start_unix_s,start_s,app_send_s,bytes,worker,complete`.

use std::path::Path;
use std::time::{Instant, UNIX_EPOCH};

use crate::log_file::LogFile;
use crate::meter::LargeSend;

use schema::SendLogCells;
use schema::child::{header_line, line};

/// An open send log shared by every worker of one server.
#[derive(Debug)]
pub struct SendLog {
    file: LogFile,
    /// Time zero of `start_s`: when the server started.
    server_start: Instant,
}

impl SendLog {
    /// Opens (creating if needed) `path` and writes the header if the file is
    /// empty, so a bad path fails at start-up rather than at the first row.
    pub fn open(path: &Path, server_start: Instant) -> anyhow::Result<Self> {
        Ok(SendLog {
            file: LogFile::open(path, "send log", header_line::<SendLogCells>())?,
            server_start,
        })
    }

    /// Appends the row for one finished `/large` response.
    pub fn record(&self, send: &LargeSend) -> anyhow::Result<()> {
        self.file.append(&format_row(send, self.server_start))
    }
}

/// The row of `send`; `app_send_s` is empty unless the kernel accepted the
/// whole body.
pub fn cells(send: &LargeSend, server_start: Instant) -> SendLogCells {
    let unix = send
        .started_wall
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let start_s = send
        .started
        .saturating_duration_since(server_start)
        .as_secs_f64();
    let complete = send.written == send.total && send.last_byte_at.is_some();
    SendLogCells {
        start_unix_s: Some(unix),
        start_s: Some(start_s),
        app_send_s: send
            .last_byte_at
            .filter(|_| complete)
            .map(|at| at.duration_since(send.started).as_secs_f64()),
        bytes: send.written,
        worker: Some(send.worker.clone()),
        complete: Some(complete),
    }
}

/// One CSV line (with its newline) for `send`.
pub fn format_row(send: &LargeSend, server_start: Instant) -> String {
    let bytes = line(&cells(send, server_start)).unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn send(written: u64, last_after: Option<Duration>) -> (LargeSend, Instant) {
        let server_start = Instant::now();
        let started = server_start + Duration::from_millis(1500);
        let send = LargeSend {
            started,
            started_wall: UNIX_EPOCH + Duration::from_micros(1_700_000_000_250_000),
            total: 100,
            written,
            last_byte_at: last_after.map(|d| started + d),
            worker: "sync-1".into(),
        };
        (send, server_start)
    }

    #[test]
    fn complete_row() {
        let (s, t0) = send(100, Some(Duration::from_micros(6_562_000)));
        assert_eq!(
            format_row(&s, t0),
            "1700000000.250000,1.500000,6.562000,100,sync-1,true\n"
        );
    }

    #[test]
    fn incomplete_row_has_no_app_send() {
        let (s, t0) = send(40, None);
        assert_eq!(
            format_row(&s, t0),
            "1700000000.250000,1.500000,,40,sync-1,false\n"
        );
    }

    #[test]
    fn header_once_then_rows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("send.csv");
        let t0 = Instant::now();
        let log = SendLog::open(&path, t0).expect("open");
        let (s, _) = send(100, Some(Duration::from_secs(1)));
        log.record(&s).expect("record");
        drop(log);
        // Reopening an existing log must not repeat the header.
        let log = SendLog::open(&path, t0).expect("reopen");
        log.record(&s).expect("record");
        let text = std::fs::read_to_string(&path).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[0], header_line::<SendLogCells>().trim_end());
        assert!(lines[1].ends_with(",100,sync-1,true"), "{text}");
    }
}
