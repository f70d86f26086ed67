//! The proxy's measurement files: the stats log (one row per response) and
//! the gauge log (one row per open response every interval).
//!
//! Both are CSV with a header, appended with one `write(2)` per batch on a
//! file opened `O_APPEND`, so rows never interleave, even with several
//! threads or processes writing the same file. Each row goes through the
//! `schema` crate's cells struct of its file ([`ProxyStatsCells`],
//! [`GaugeCells`]), which the harness reads back as its rows.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;

use schema::child::{header_line, line_into};
use schema::{GaugeCells, ProxyStatsCells};

/// Seconds since the Unix epoch.
pub fn unix_s(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// An append-only CSV file that starts with its header.
#[derive(Debug)]
struct CsvFile {
    writer: Mutex<Writer>,
}

/// The file and the batch being written to it, under one lock.
#[derive(Debug)]
struct Writer {
    file: File,
    /// The batch last written, kept for its capacity: [`CsvFile::append_taken`]
    /// swaps it, cleared, for the rows it takes.
    batch: Vec<u8>,
}

impl Writer {
    fn write(&mut self, lines: &[u8]) {
        if lines.is_empty() {
            return;
        }
        if let Err(e) = self.file.write_all(lines) {
            tracing::error!(cause = %e, "writing a measurement row failed");
        }
    }
}

impl CsvFile {
    fn open(path: &Path, header: String) -> anyhow::Result<CsvFile> {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        let empty = file
            .metadata()
            .with_context(|| format!("reading the size of {}", path.display()))?
            .len()
            == 0;
        if empty {
            file.write_all(header.as_bytes())
                .with_context(|| format!("writing the header of {}", path.display()))?;
        }
        Ok(CsvFile {
            writer: Mutex::new(Writer {
                file,
                batch: Vec::new(),
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Writer> {
        // A poisoned lock only means another writer panicked mid-write; the
        // file itself is still usable.
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends complete lines with one write.
    fn append(&self, lines: &[u8]) {
        self.lock().write(lines);
    }

    /// Appends, with one write, the lines `pending` holds, taken from it
    /// (and replaced by an empty buffer of the last batch's capacity) under
    /// `pending`'s lock only for the swap. The take happens while this
    /// file's lock is held, so batches reach the file in the order they
    /// were taken, and a response appending its row to `pending` never
    /// waits for a `write(2)` in progress.
    fn append_taken(&self, pending: &Mutex<Vec<u8>>) {
        let mut writer = self.lock();
        let mut batch = std::mem::take(&mut writer.batch);
        batch.clear();
        {
            let mut pending = pending.lock().unwrap_or_else(|p| p.into_inner());
            std::mem::swap(&mut *pending, &mut batch);
        }
        writer.write(&batch);
        writer.batch = batch;
    }
}

/// One row of the stats log.
#[derive(Debug, Clone, PartialEq)]
pub struct StatsRow {
    pub start_unix_s: f64,
    pub mode: &'static str,
    /// `None` when no response header reached the client.
    pub status: Option<u16>,
    /// Body bytes the client's socket accepted.
    pub bytes: u64,
    pub mem_peak_bytes: usize,
    pub spilled_bytes: u64,
    pub upstream_done_s: Option<f64>,
    pub client_done_s: Option<f64>,
    pub error: Option<&'static str>,
    /// The request direction.
    pub req: RequestStats,
}

/// The request side of a stats row: how its body went upstream.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestStats {
    /// `on` when the body was read whole before the upstream was
    /// connected, `off` when it was streamed; `None` without a body.
    pub mode: Option<&'static str>,
    /// Body bytes read from the client.
    pub bytes: u64,
    pub mem_peak_bytes: usize,
    /// Body bytes written to the request's temp file.
    pub spilled_bytes: u64,
    /// From the request's arrival to its last body byte read.
    pub done_s: Option<f64>,
    /// From the request's arrival to the start of the upstream connect;
    /// `None` when no upstream connection was opened.
    pub upstream_start_s: Option<f64>,
}

impl From<&StatsRow> for ProxyStatsCells {
    fn from(r: &StatsRow) -> Self {
        ProxyStatsCells {
            start_unix_s: Some(r.start_unix_s),
            mode: r.mode.to_string(),
            status: r.status,
            bytes: r.bytes,
            mem_peak_bytes: r.mem_peak_bytes as u64,
            spilled_bytes: r.spilled_bytes,
            upstream_done_s: r.upstream_done_s,
            client_done_s: r.client_done_s,
            error: r.error.map(str::to_string),
            req_mode: r.req.mode.map(str::to_string),
            req_bytes: r.req.bytes,
            req_mem_peak_bytes: r.req.mem_peak_bytes as u64,
            req_spilled_bytes: r.req.spilled_bytes,
            req_done_s: r.req.done_s,
            upstream_start_s: r.req.upstream_start_s,
        }
    }
}

impl StatsRow {
    /// The CSV line, with a trailing newline.
    pub fn to_line(&self) -> String {
        let mut line = Vec::new();
        self.write_line(&mut line);
        String::from_utf8_lossy(&line).into_owned()
    }

    /// Appends the CSV line (with its newline) to `out`.
    pub fn write_line(&self, out: &mut Vec<u8>) {
        if let Err(e) = line_into(out, &ProxyStatsCells::from(self)) {
            tracing::error!(cause = %e, "formatting a stats row failed");
        }
    }
}

/// `--stats-log`. Rows are gathered in memory and appended in batches,
/// each with one `write(2)`: when [`STATS_BATCH_BYTES`] are pending, at every
/// [`StatsLog::run_flusher`] tick, and when the last handle is dropped (the
/// proxy stopping). A row therefore reaches the file at most one flush
/// interval after its response ended, and no row costs a system call of its
/// own (NGINX in the same stacks keeps no access log at all). A response
/// holds the pending lock only to append its row: a batch is swapped out
/// under it and written under the file's own lock, so a response on another
/// thread never waits for a `write(2)` unless its row fills the batch.
#[derive(Debug, Clone)]
pub struct StatsLog(Arc<StatsInner>);

#[derive(Debug)]
struct StatsInner {
    file: CsvFile,
    pending: Mutex<Vec<u8>>,
}

/// Pending rows beyond this size are written at once (some 700 rows).
pub const STATS_BATCH_BYTES: usize = 64 * 1024;

/// How often pending rows are written while the proxy runs.
pub const STATS_FLUSH_EVERY: Duration = Duration::from_millis(100);

impl StatsInner {
    fn flush(&self) {
        self.file.append_taken(&self.pending);
    }
}

impl Drop for StatsInner {
    fn drop(&mut self) {
        self.flush();
    }
}

impl StatsLog {
    pub fn open(path: &Path) -> anyhow::Result<StatsLog> {
        let file = CsvFile::open(path, header_line::<ProxyStatsCells>())?;
        Ok(StatsLog(Arc::new(StatsInner {
            file,
            pending: Mutex::new(Vec::new()),
        })))
    }

    pub fn write(&self, row: &StatsRow) {
        let full = {
            let mut pending = self.0.pending.lock().unwrap_or_else(|p| p.into_inner());
            row.write_line(&mut pending);
            pending.len() >= STATS_BATCH_BYTES
        };
        // Outside `pending`'s lock: other responses append meanwhile.
        if full {
            self.0.flush();
        }
    }

    /// Writes the pending rows now.
    pub fn flush(&self) {
        self.0.flush();
    }

    /// Writes the pending rows every `every` until `stop` resolves, and
    /// once more then.
    pub async fn run_flusher(self, every: Duration, stop: impl std::future::Future<Output = ()>) {
        ticking(every, stop, || self.flush()).await;
        self.flush();
    }
}

/// Live counters of one open response, read by the gauge log.
#[derive(Debug, Default)]
pub struct Progress {
    pub upstream_read: AtomicU64,
    pub client_written: AtomicU64,
    pub mem: AtomicU64,
    pub file: AtomicU64,
    /// The request direction: body bytes read from the client, sent
    /// upstream, held in memory and in the request's temp file.
    pub req_read: AtomicU64,
    pub req_sent: AtomicU64,
    pub req_mem: AtomicU64,
    pub req_file: AtomicU64,
}

impl Progress {
    pub fn set(counter: &AtomicU64, v: u64) {
        counter.store(v, Ordering::Relaxed);
    }
}

/// The open responses, by connection number.
#[derive(Debug, Default)]
pub struct Gauges {
    open: Mutex<BTreeMap<u64, Arc<Progress>>>,
}

/// Keeps a response in [`Gauges`] until dropped.
#[derive(Debug)]
pub struct OpenResponse {
    gauges: Arc<Gauges>,
    conn: u64,
    pub progress: Arc<Progress>,
}

impl Drop for OpenResponse {
    fn drop(&mut self) {
        let mut open = self.gauges.open.lock().unwrap_or_else(|p| p.into_inner());
        open.remove(&self.conn);
    }
}

impl Gauges {
    pub fn open(self: &Arc<Self>, conn: u64) -> OpenResponse {
        let progress = Arc::new(Progress::default());
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.insert(conn, progress.clone());
        OpenResponse {
            gauges: self.clone(),
            conn,
            progress,
        }
    }

    /// The rows for one sample at `t`. The registry's lock is held only to
    /// copy the list, not while the rows are formatted, so responses that
    /// open or close meanwhile do not wait for the sampler.
    pub fn sample(&self, t: SystemTime) -> Vec<u8> {
        let open: Vec<(u64, Arc<Progress>)> = {
            let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
            open.iter().map(|(c, p)| (*c, p.clone())).collect()
        };
        let t = unix_s(t);
        let mut out = Vec::new();
        for (conn, p) in open.iter() {
            let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
            let row = GaugeCells {
                t_unix_s: Some(t),
                conn: *conn,
                upstream_read_bytes: load(&p.upstream_read),
                client_written_bytes: load(&p.client_written),
                mem_bytes: load(&p.mem),
                file_bytes: load(&p.file),
                req_read_bytes: load(&p.req_read),
                req_sent_bytes: load(&p.req_sent),
                req_mem_bytes: load(&p.req_mem),
                req_file_bytes: load(&p.req_file),
            };
            if let Err(e) = line_into(&mut out, &row) {
                tracing::error!(cause = %e, "formatting a gauge row failed");
            }
        }
        out
    }
}

/// `--gauge-log`.
#[derive(Debug)]
pub struct GaugeLog(CsvFile);

impl GaugeLog {
    pub fn open(path: &Path) -> anyhow::Result<GaugeLog> {
        CsvFile::open(path, header_line::<GaugeCells>()).map(GaugeLog)
    }

    /// Samples `gauges` every `interval` until `stop` resolves.
    pub async fn run(
        self,
        gauges: Arc<Gauges>,
        interval: Duration,
        stop: impl std::future::Future<Output = ()>,
    ) {
        ticking(interval, stop, || {
            self.0.append(&gauges.sample(SystemTime::now()))
        })
        .await;
    }
}

/// Calls `tick` every `interval` (the first time at once; late ticks are
/// delayed, not bunched) until `stop` resolves.
async fn ticking(
    interval: Duration,
    stop: impl std::future::Future<Output = ()>,
    mut tick: impl FnMut(),
) {
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            _ = ticks.tick() => tick(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row with only its start, mode and status set.
    fn bare_row(start_unix_s: f64, mode: &'static str, status: Option<u16>) -> StatsRow {
        StatsRow {
            start_unix_s,
            mode,
            status,
            bytes: 0,
            mem_peak_bytes: 0,
            spilled_bytes: 0,
            upstream_done_s: None,
            client_done_s: None,
            error: None,
            req: RequestStats::default(),
        }
    }

    #[test]
    fn rows_reach_the_file_whole_and_in_order_with_concurrent_flushes() {
        const THREADS: u16 = 4;
        const ROWS: u32 = 20_000;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats.csv");
        let log = StatsLog::open(&path).unwrap();
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let flusher = s.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    log.flush();
                }
            });
            let writers: Vec<_> = (0..THREADS)
                .map(|t| {
                    let log = log.clone();
                    s.spawn(move || {
                        for i in 0..ROWS {
                            log.write(&bare_row(f64::from(i), "on", Some(t)));
                        }
                    })
                })
                .collect();
            for w in writers {
                w.join().unwrap();
            }
            done.store(true, Ordering::Relaxed);
            flusher.join().unwrap();
        });
        drop(log);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut next = [0u32; THREADS as usize];
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split(',').collect();
            let t: usize = fields[2].parse().unwrap();
            let i: f64 = fields[0].parse().unwrap();
            assert_eq!(i, f64::from(next[t]), "thread {t}'s rows out of order");
            next[t] += 1;
        }
        assert_eq!(next, [ROWS; THREADS as usize], "every row written once");
    }

    const STATS_HEADER: &str = "start_unix_s,mode,status,bytes,mem_peak_bytes,spilled_bytes,upstream_done_s,client_done_s,error,req_mode,req_bytes,req_mem_peak_bytes,req_spilled_bytes,req_done_s,upstream_start_s";

    #[test]
    fn headers_are_the_pinned_schema() {
        assert_eq!(
            header_line::<ProxyStatsCells>(),
            format!("{STATS_HEADER}\n")
        );
        assert_eq!(
            header_line::<GaugeCells>(),
            "t_unix_s,conn,upstream_read_bytes,client_written_bytes,mem_bytes,file_bytes,req_read_bytes,req_sent_bytes,req_mem_bytes,req_file_bytes\n"
        );
    }

    #[test]
    fn rows_have_one_field_per_column() {
        let row = StatsRow {
            start_unix_s: 1.5,
            mode: "on",
            status: Some(200),
            bytes: 10,
            mem_peak_bytes: 3,
            spilled_bytes: 0,
            upstream_done_s: Some(0.25),
            client_done_s: None,
            error: Some("client_closed"),
            req: RequestStats {
                mode: Some("on"),
                bytes: 20,
                mem_peak_bytes: 16,
                spilled_bytes: 20,
                done_s: Some(0.5),
                upstream_start_s: Some(0.5),
            },
        };
        let line = row.to_line();
        assert_eq!(
            line,
            "1.500000,on,200,10,3,0,0.250000,,client_closed,on,20,16,20,0.500000,0.500000\n"
        );
        assert_eq!(line.trim_end().split(',').count(), 15);
    }

    #[test]
    fn logs_start_with_the_header_once_and_gauges_list_open_responses() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats.csv");
        let log = StatsLog::open(&path).unwrap();
        drop(log);
        let log = StatsLog::open(&path).unwrap();
        log.write(&bare_row(0.0, "off", None));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{STATS_HEADER}\n"),
            "a row waits for its batch"
        );
        log.flush();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            format!("{STATS_HEADER}\n0.000000,off,,0,0,0,,,,,0,0,0,,\n")
        );
        let row = StatsRow {
            start_unix_s: 1.0,
            mode: "on",
            status: Some(200),
            bytes: 12,
            mem_peak_bytes: 12,
            spilled_bytes: 0,
            upstream_done_s: Some(0.5),
            client_done_s: Some(0.75),
            error: None,
            req: RequestStats::default(),
        };
        log.write(&row);
        drop(log);
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .ends_with(&row.to_line()),
            "the last handle writes what is pending"
        );

        let gauges = Arc::new(Gauges::default());
        let a = gauges.open(7);
        Progress::set(&a.progress.mem, 42);
        Progress::set(&a.progress.req_file, 5);
        let sample = gauges.sample(UNIX_EPOCH + Duration::from_secs(2));
        assert_eq!(sample, b"2.000000,7,0,0,42,0,0,0,0,5\n");
        drop(a);
        assert!(gauges.sample(SystemTime::now()).is_empty());
    }
}
