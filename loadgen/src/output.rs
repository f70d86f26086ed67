//! The files of `--out DIR`: three CSVs with label columns first, the
//! latency histogram and the JSON summary. The column lists here are the
//! contract with the harness; a test pins them.

use std::fs;
use std::path::Path;

use anyhow::Context;

use crate::hgrm;
use crate::record::{FastRecord, LargeRecord, ProgressRow, SlowHeaderRecord, UploadRecord};
use crate::runner::Report;
use crate::summary::Summary;

pub const REQUESTS_CSV: &str = "requests.csv";
pub const LARGE_CSV: &str = "large-responses.csv";
pub const PROGRESS_CSV: &str = "slow-progress.csv";
pub const UPLOADS_CSV: &str = "uploads.csv";
pub const SLOW_HEADERS_CSV: &str = "slow-headers.csv";
pub const LATENCY_HGRM: &str = "latency.hgrm";
pub const SUMMARY_JSON: &str = "summary.json";

/// Columns of `requests.csv` after the labels.
pub const REQUESTS_COLUMNS: &[&str] = &[
    "seq",
    "scheduled_s",
    "started_s",
    "schedule_lag_ms",
    "connect_ms",
    "first_byte_ms",
    "latency_ms",
    "status",
    "bytes",
    "error",
];

/// Columns of `large-responses.csv` after the labels. The harness's copy
/// of the file keeps its `app_*` columns where they were first, before
/// `first_read_bytes`, which came later: both files only ever append.
pub const LARGE_COLUMNS: &[&str] = &[
    "client",
    "started_s",
    "connect_ms",
    "first_byte_ms",
    "status",
    "bytes",
    "content_length",
    "receive_s",
    "rcvbuf_requested_bytes",
    "rcvbuf_granted_bytes",
    "verified",
    "error",
    "reader",
    "first_read_bytes",
    "loop_lag_us",
];

/// Columns of `slow-progress.csv` after the labels.
pub const PROGRESS_COLUMNS: &[&str] = &[
    "t_s",
    "client",
    "received_bytes",
    "consumed_bytes",
    "socket_queue_bytes",
    "user_buffer_bytes",
    "reading_paused",
];

/// Columns of `uploads.csv` after the labels.
pub const UPLOADS_COLUMNS: &[&str] = &[
    "client",
    "started_s",
    "connect_ms",
    "send_s",
    "bytes_sent",
    "upload_bytes",
    "first_byte_ms",
    "status",
    "server_bytes",
    "pattern_ok",
    "sndbuf_requested_bytes",
    "sndbuf_granted_bytes",
    "error",
];

/// Columns of `slow-headers.csv` after the labels.
pub const SLOW_HEADERS_COLUMNS: &[&str] = &[
    "client",
    "started_s",
    "connect_ms",
    "header_lines",
    "held_s",
    "ended",
    "status",
    "error",
];

/// Whether a label key would repeat a column name.
pub fn is_column_name(key: &str) -> bool {
    [
        REQUESTS_COLUMNS,
        LARGE_COLUMNS,
        PROGRESS_COLUMNS,
        UPLOADS_COLUMNS,
        SLOW_HEADERS_COLUMNS,
    ]
    .iter()
    .any(|cols| cols.contains(&key))
}

pub use results::file::probe;

/// Writes every output file into `dir`, creating it.
pub fn write_all(dir: &Path, report: &Report, summary: &Summary) -> anyhow::Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let labels = &report.labels;
    write_csv(
        &dir.join(REQUESTS_CSV),
        labels,
        REQUESTS_COLUMNS,
        report.fast.iter().map(request_row),
    )?;
    write_csv(
        &dir.join(LARGE_CSV),
        labels,
        LARGE_COLUMNS,
        report.large.iter().map(large_row),
    )?;
    write_csv(
        &dir.join(PROGRESS_CSV),
        labels,
        PROGRESS_COLUMNS,
        report.progress.iter().map(progress_row),
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
        write_csv(
            &dir.join(UPLOADS_CSV),
            labels,
            UPLOADS_COLUMNS,
            uploads.iter().map(upload_row),
        )?;
    }
    if !slow_headers.is_empty() {
        write_csv(
            &dir.join(SLOW_HEADERS_CSV),
            labels,
            SLOW_HEADERS_COLUMNS,
            slow_headers.iter().map(slow_header_row),
        )?;
    }
    Ok(())
}

fn write_csv(
    path: &Path,
    labels: &[(String, String)],
    columns: &[&str],
    rows: impl Iterator<Item = Vec<String>>,
) -> anyhow::Result<()> {
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("creating {}", path.display()))?;
    let header = labels
        .iter()
        .map(|(k, _)| k.as_str())
        .chain(columns.iter().copied());
    w.write_record(header)
        .with_context(|| format!("writing {}", path.display()))?;
    for row in rows {
        debug_assert_eq!(row.len(), columns.len());
        let record = labels
            .iter()
            .map(|(_, v)| v.as_str())
            .chain(row.iter().map(String::as_str));
        w.write_record(record)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    w.flush()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Seconds with microsecond resolution.
fn s(v: f64) -> String {
    format!("{v:.6}")
}

/// Milliseconds with microsecond resolution.
fn ms(v: f64) -> String {
    format!("{v:.3}")
}

/// An empty cell for a missing value.
fn cell<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map(f).unwrap_or_default()
}

pub fn request_row(r: &FastRecord) -> Vec<String> {
    vec![
        r.seq.to_string(),
        s(r.scheduled_s),
        s(r.started_s),
        ms(r.schedule_lag_ms),
        cell(r.connect_ms, ms),
        cell(r.first_byte_ms, ms),
        cell(r.latency_ms, ms),
        cell(r.status, |v| v.to_string()),
        r.bytes.to_string(),
        cell(r.error.as_ref(), |e| e.kind.as_str().to_string()),
    ]
}

pub fn large_row(r: &LargeRecord) -> Vec<String> {
    vec![
        r.client.to_string(),
        s(r.started_s),
        cell(r.connect_ms, ms),
        cell(r.first_byte_ms, ms),
        cell(r.status, |v| v.to_string()),
        r.bytes.to_string(),
        cell(r.content_length, |v| v.to_string()),
        cell(r.receive_s, s),
        r.rcvbuf_requested_bytes.to_string(),
        cell(r.rcvbuf_granted_bytes, |v| v.to_string()),
        r.verified.as_str().to_string(),
        cell(r.error.as_ref(), |e| e.kind.as_str().to_string()),
        r.reader.as_str().to_string(),
        cell(r.first_read_bytes, |v| v.to_string()),
        cell(r.loop_lag, |d| format!("{:.3}", d.as_secs_f64() * 1e6)),
    ]
}

pub fn progress_row(r: &ProgressRow) -> Vec<String> {
    vec![
        s(r.t_s),
        r.client.to_string(),
        r.received_bytes.to_string(),
        r.consumed_bytes.to_string(),
        cell(r.socket_queue_bytes, |v| v.to_string()),
        cell(r.user_buffer_bytes, |v| v.to_string()),
        cell(r.reading_paused, |v| v.to_string()),
    ]
}

pub fn upload_row(r: &UploadRecord) -> Vec<String> {
    vec![
        r.client.to_string(),
        s(r.started_s),
        cell(r.connect_ms, ms),
        cell(r.send_s, s),
        r.bytes_sent.to_string(),
        r.upload_bytes.to_string(),
        cell(r.first_byte_ms, ms),
        cell(r.status, |v| v.to_string()),
        cell(r.server_bytes, |v| v.to_string()),
        cell(r.pattern_ok, |v| v.to_string()),
        r.sndbuf_requested_bytes.to_string(),
        cell(r.sndbuf_granted_bytes, |v| v.to_string()),
        cell(r.error.as_ref(), |e| e.kind.as_str().to_string()),
    ]
}

pub fn slow_header_row(r: &SlowHeaderRecord) -> Vec<String> {
    vec![
        r.client.to_string(),
        s(r.started_s),
        cell(r.connect_ms, ms),
        r.header_lines.to_string(),
        cell(r.held_s, s),
        r.ended.as_str().to_string(),
        cell(r.status, |v| v.to_string()),
        cell(r.error.as_ref(), |e| e.kind.as_str().to_string()),
    ]
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
