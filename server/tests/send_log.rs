//! `--send-log`: one row per `/large` response when its connection ends,
//! timed at the socket.

mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn header() -> String {
    schema::child::header_line::<schema::SendLogCells>()
        .trim_end()
        .to_string()
}
use server::{Model, ServerConfig};
use support::{PATIENCE, get, stalled_large};

/// One parsed row of the send log.
#[derive(Debug)]
struct Row {
    start_unix_s: f64,
    start_s: f64,
    app_send_s: Option<f64>,
    bytes: u64,
    worker: String,
    complete: bool,
}

fn rows(path: &Path) -> Vec<Row> {
    let text = std::fs::read_to_string(path).expect("read send log");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(header().as_str()), "header of {text:?}");
    lines
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            assert_eq!(f.len(), 6, "row {line:?}");
            Row {
                start_unix_s: f[0].parse().expect("start_unix_s"),
                start_s: f[1].parse().expect("start_s"),
                app_send_s: (!f[2].is_empty()).then(|| f[2].parse().expect("app_send_s")),
                bytes: f[3].parse().expect("bytes"),
                worker: f[4].to_string(),
                complete: match f[5] {
                    "true" => true,
                    "false" => false,
                    other => panic!("complete = {other:?}"),
                },
            }
        })
        .collect()
}

/// Waits until the log has `n` rows; the row follows the client's EOF by
/// the time the server takes to close the socket.
fn wait_rows(path: &Path, n: usize) -> Vec<Row> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let rows = rows(path);
        if rows.len() >= n || Instant::now() > deadline {
            return rows;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn start(model: Model, workers: usize, log: &Path) -> (server::ServerHandle, SocketAddr) {
    let mut config = ServerConfig::new(model, Some(workers));
    config.send_log = Some(log.to_path_buf());
    let server = server::spawn(config).expect("server starts");
    let addr = server.local_addr();
    (server, addr)
}

fn log_path(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("send.csv")
}

fn now_unix() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64()
}

#[test]
fn header_is_written_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_server, _) = start(Model::Sync, 1, &log_path(&dir));
    assert!(rows(&log_path(&dir)).is_empty());
}

#[test]
fn fast_reader_row_is_complete_and_below_the_read_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = log_path(&dir);
    let (_server, addr) = start(Model::Sync, 2, &path);
    let before = now_unix();
    let started = Instant::now();
    let reply = get(addr, "/large");
    let read_s = started.elapsed().as_secs_f64();
    assert_eq!(reply.body.len(), 16 << 20);
    let rows = wait_rows(&path, 1);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert!(row.complete, "{row:?}");
    assert_eq!(row.bytes, 16 << 20);
    let app_send = row.app_send_s.expect("app_send_s of a complete body");
    assert!(
        app_send > 0.0 && app_send < read_s,
        "{app_send} vs read {read_s}"
    );
    assert!(row.worker.starts_with("sync-"), "{row:?}");
    assert!(row.start_unix_s >= before - 1.0 && row.start_unix_s <= now_unix() + 1.0);
    assert!(row.start_s >= 0.0 && row.start_s < 60.0, "{row:?}");
}

#[test]
fn never_reading_reader_has_no_row_until_its_connection_ends() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = log_path(&dir);
    let (server, addr) = start(Model::Sync, 2, &path);
    let reader = stalled_large(addr);
    std::thread::sleep(Duration::from_millis(500));
    assert!(rows(&path).is_empty(), "a row before the body was written");
    // The stop cuts the connection: the row says how far the kernel got.
    server.shutdown();
    let rows = rows(&path);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert!(!row.complete && row.app_send_s.is_none(), "{row:?}");
    // Backpressure reached the worker: it stopped well short of the body
    // (the kernel buffers on both sides hold a few MiB at most).
    assert!(row.bytes > 0 && row.bytes < 12 << 20, "{row:?}");
    drop(reader);
}

#[test]
fn stuck_worker_stops_writing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = log_path(&dir);
    let mut config = ServerConfig::new(Model::Async, Some(2));
    config.send_log = Some(path.clone());
    // A body far beyond any kernel buffer: if hyper or the body kept going
    // while the socket is full, memory (not the socket) would take it.
    config.large_bytes = 256 << 20;
    let server = server::spawn(config).expect("server starts");
    let _reader = stalled_large(server.local_addr());
    std::thread::sleep(Duration::from_millis(700));
    server.shutdown();
    let rows = rows(&path);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(rows[0].bytes < 12 << 20, "{:?}", rows[0]);
}

#[test]
fn concurrent_rows_stay_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = log_path(&dir);
    let mut config = ServerConfig::new(Model::Async, Some(2));
    config.send_log = Some(path.clone());
    config.large_bytes = 256 * 1024;
    let server = server::spawn(config).expect("server starts");
    let addr = server.local_addr();
    let clients: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || {
                for _ in 0..5 {
                    assert_eq!(get(addr, "/large").body.len(), 256 * 1024);
                }
            })
        })
        .collect();
    for c in clients {
        c.join().expect("client");
    }
    let rows = wait_rows(&path, 40);
    assert_eq!(rows.len(), 40);
    assert!(rows.iter().all(|r| r.complete && r.bytes == 256 * 1024));
    assert!(rows.iter().all(|r| r.worker.starts_with("async-")));
}

#[test]
fn fast_and_errors_write_no_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = log_path(&dir);
    let (server, addr) = start(Model::Threads, 2, &path);
    get(addr, "/fast");
    get(addr, "/nope");
    server.shutdown();
    assert!(rows(&path).is_empty());
}
