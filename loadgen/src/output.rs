//! The files of `--out DIR`: the CSVs with label columns first, the
//! latency histogram and the JSON summary. Each CSV is written through the
//! `schema` crate's cells struct of its file, which the harness reads
//! back as its row struct: the columns are defined there, once.

use std::fs;
use std::path::Path;

use anyhow::Context;

use schema::child::write_labelled;
use schema::columns;
use schema::{LargeCells, ProgressCells, RequestCells, SlowHeaderCells, UploadCells};

use crate::hgrm;
use crate::record::{FastRecord, LargeRecord, ProgressRow, SlowHeaderRecord, UploadRecord};
use crate::runner::Report;
use crate::summary::Summary;

pub use schema::{
    LARGE_CSV, LATENCY_HGRM, PROGRESS_CSV, REQUESTS_CSV, SLOW_HEADERS_CSV, SUMMARY_JSON,
    UPLOADS_CSV,
};

/// Whether a label key would repeat a column name of a file `load` writes.
pub fn is_column_name(key: &str) -> bool {
    [
        columns::<RequestCells>(),
        columns::<LargeCells>(),
        columns::<ProgressCells>(),
        columns::<UploadCells>(),
        columns::<SlowHeaderCells>(),
    ]
    .iter()
    .any(|cols| cols.contains(&key))
}

pub use schema::file::probe;

/// Writes every output file into `dir`, creating it.
pub fn write_all(dir: &Path, report: &Report, summary: &Summary) -> anyhow::Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let labels = &report.labels;
    write_labelled(
        &dir.join(REQUESTS_CSV),
        labels,
        report.fast.iter().map(RequestCells::from),
    )?;
    write_labelled(
        &dir.join(LARGE_CSV),
        labels,
        report.large.iter().map(LargeCells::from),
    )?;
    write_labelled(
        &dir.join(PROGRESS_CSV),
        labels,
        report.progress.iter().map(ProgressCells::from),
    )?;
    write_request_direction(dir, labels, &report.uploads, &report.slow_headers)?;
    let path = dir.join(LATENCY_HGRM);
    fs::write(&path, hgrm::render(&report.fast)?)
        .with_context(|| format!("writing {}", path.display()))?;
    let path = dir.join(SUMMARY_JSON);
    let json = serde_json::to_string_pretty(summary).context("serializing the summary")?;
    fs::write(&path, json + "\n").with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Writes `uploads.csv` and `slow-headers.csv` into `dir` (the rows of
/// `load` and of `sweep-load`), each only when it has rows, so that the
/// files of a run of the experiment stay what they were.
pub fn write_request_direction(
    dir: &Path,
    labels: &[(String, String)],
    uploads: &[UploadRecord],
    slow_headers: &[SlowHeaderRecord],
) -> anyhow::Result<()> {
    if !uploads.is_empty() {
        write_labelled(
            &dir.join(UPLOADS_CSV),
            labels,
            uploads.iter().map(UploadCells::from),
        )?;
    }
    if !slow_headers.is_empty() {
        write_labelled(
            &dir.join(SLOW_HEADERS_CSV),
            labels,
            slow_headers.iter().map(SlowHeaderCells::from),
        )?;
    }
    Ok(())
}

/// The text of an error cell: the failure's kind.
fn error_cell(e: &Option<crate::error::Failure>) -> Option<String> {
    e.as_ref().map(|e| e.kind.as_str().to_string())
}

impl From<&FastRecord> for RequestCells {
    fn from(r: &FastRecord) -> Self {
        RequestCells {
            seq: r.seq as u64,
            scheduled_s: r.scheduled_s,
            started_s: r.started_s,
            schedule_lag_ms: Some(r.schedule_lag_ms),
            connect_ms: r.connect_ms,
            first_byte_ms: r.first_byte_ms,
            latency_ms: r.latency_ms,
            status: r.status,
            bytes: r.bytes,
            error: error_cell(&r.error),
            tls_ms: r.tls_ms,
            protocol: Some(r.protocol.protocol().to_string()),
        }
    }
}

impl From<&LargeRecord> for LargeCells {
    fn from(r: &LargeRecord) -> Self {
        LargeCells {
            client: r.client as u32,
            started_s: r.started_s,
            connect_ms: r.connect_ms,
            first_byte_ms: r.first_byte_ms,
            status: r.status,
            bytes: r.bytes,
            content_length: r.content_length,
            receive_s: r.receive_s,
            rcvbuf_requested_bytes: r.rcvbuf_requested_bytes.map(|v| v as u64),
            rcvbuf_granted_bytes: r.rcvbuf_granted_bytes.map(|v| v as u64),
            verified: Some(r.verified.as_str().to_string()),
            error: error_cell(&r.error),
            reader: Some(r.reader.as_str().to_string()),
            first_read_bytes: r.first_read_bytes.map(|v| v as u64),
            loop_lag_us: r.loop_lag.map(|d| d.as_secs_f64() * 1e6),
            protocol: Some(r.protocol.protocol().to_string()),
            connection: Some(r.connection as u32),
            streams_per_conn: r.h2.map(|h| h.settings.streams_per_conn as u32),
            h2_window_bytes: r.h2.map(|h| u64::from(h.settings.window)),
            h2_conn_window_bytes: r.h2.map(|h| u64::from(h.settings.conn_window)),
            h2_unconsumed_peak_bytes: r.h2.map(|h| h.unconsumed_peak_bytes),
        }
    }
}

impl From<&ProgressRow> for ProgressCells {
    fn from(r: &ProgressRow) -> Self {
        ProgressCells {
            t_s: r.t_s,
            client: r.client as u32,
            received_bytes: r.received_bytes,
            consumed_bytes: r.consumed_bytes,
            socket_queue_bytes: r.socket_queue_bytes,
            user_buffer_bytes: r.user_buffer_bytes,
            reading_paused: r.reading_paused,
        }
    }
}

impl From<&UploadRecord> for UploadCells {
    fn from(r: &UploadRecord) -> Self {
        UploadCells {
            client: r.client as u32,
            started_s: r.started_s,
            connect_ms: r.connect_ms,
            send_s: r.send_s,
            bytes_sent: r.bytes_sent,
            upload_bytes: r.upload_bytes,
            first_byte_ms: r.first_byte_ms,
            status: r.status,
            server_bytes: r.server_bytes,
            pattern_ok: r.pattern_ok,
            sndbuf_requested_bytes: Some(r.sndbuf_requested_bytes as u64),
            sndbuf_granted_bytes: r.sndbuf_granted_bytes.map(|v| v as u64),
            error: error_cell(&r.error),
        }
    }
}

impl From<&SlowHeaderRecord> for SlowHeaderCells {
    fn from(r: &SlowHeaderRecord) -> Self {
        SlowHeaderCells {
            client: r.client as u32,
            started_s: r.started_s,
            connect_ms: r.connect_ms,
            header_lines: r.header_lines,
            held_s: r.held_s,
            ended: r.ended.as_str().to_string(),
            status: r.status,
            error: error_cell(&r.error),
        }
    }
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
