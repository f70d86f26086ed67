//! The two reader models at the socket level: `streamreader` keeps the
//! kernel's receive queue near empty while its buffer is below the pause
//! threshold, `strict` leaves it full between its paced reads.
//!
//! The sender is scripted so that both situations last: it writes 24 KiB at
//! once (more than the ~8 KiB the granted 16 KiB `SO_RCVBUF` lets the
//! kernel queue, less than the 32 KiB above which a `StreamReader` with
//! limit 16 KiB pauses), then exactly the reader's rate, 4 KiB every 2 ms.
//! So the sender stays about 24 KiB ahead of the paced consumption: a
//! strict reader finds a full queue at each deadline, a streamreader holds
//! the 24 KiB in its own buffer, never paused, and drains the socket as
//! bytes arrive. The samples of `slow-progress.csv` (every 100 ms, the
//! queue by `FIONREAD`) must show it.

mod support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::thread;
use std::time::{Duration, Instant};

use loadgen::ProgressRow;

const RATE: u64 = 2 << 20;
const BODY: usize = 4 << 20;
const AHEAD: usize = 24 << 10;
const PIECE: usize = 4 << 10;

/// Reads a request's head; false if the connection ended first.
fn read_request(s: &mut std::net::TcpStream) -> bool {
    let mut req = [0u8; 4096];
    let mut got = Vec::new();
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut req) {
            Ok(0) | Err(_) => return false,
            Ok(n) => got.extend_from_slice(&req[..n]),
        }
    }
    true
}

/// Serves `connections` downloads of [`BODY`] bytes, each [`AHEAD`] bytes
/// ahead of the pace and then at [`RATE`].
fn paced_sender(connections: usize) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    thread::spawn(move || {
        for _ in 0..connections {
            let Ok((mut s, _)) = listener.accept() else {
                return;
            };
            read_request(&mut s);
            let head =
                format!("HTTP/1.1 200 OK\r\nContent-Length: {BODY}\r\nConnection: close\r\n\r\n");
            let piece = [0u8; PIECE];
            let start = Instant::now();
            if s.write_all(head.as_bytes()).is_err() || s.write_all(&[0u8; AHEAD]).is_err() {
                continue;
            }
            let mut sent = AHEAD;
            while sent < BODY {
                let due = start + Duration::from_secs_f64((sent - AHEAD) as f64 / RATE as f64);
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    thread::sleep(wait);
                }
                let n = PIECE.min(BODY - sent);
                if s.write_all(&piece[..n]).is_err() {
                    break;
                }
                sent += n;
            }
        }
    });
    addr
}

/// The samples of the middle of the download, when both situations hold.
fn middle(rows: &[ProgressRow]) -> Vec<&ProgressRow> {
    let m: Vec<&ProgressRow> = rows
        .iter()
        .filter(|r| (0.3..1.7).contains(&r.t_s))
        .collect();
    assert!(m.len() >= 10, "{} samples in the middle", m.len());
    m
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

/// One slow reader of `addr`, no `/fast` load, with `extra` flags.
fn download(addr: std::net::SocketAddr, extra: &[&str]) -> loadgen::Report {
    let url = format!("http://{addr}");
    let mut words = vec!["--target", &url, "--slow", "1", "--fast-rate", "0"];
    words.extend_from_slice(extra);
    let report = support::run(&words);
    assert!(report.large[0].error.is_none(), "{:?}", report.large[0]);
    report
}

fn run(reader: &str, addr: std::net::SocketAddr) -> Vec<ProgressRow> {
    let report = download(addr, &["--reader", reader]);
    report.progress
}

#[test]
fn streamreader_drains_the_socket_and_strict_leaves_it_full() {
    let addr = paced_sender(2);
    let strict = run("strict", addr);
    let stream = run("streamreader", addr);

    let queue = |rows: &[&ProgressRow]| {
        median(
            rows.iter()
                .map(|r| r.socket_queue_bytes.expect("sampled"))
                .collect(),
        )
    };
    let strict_mid = middle(&strict);
    let stream_mid = middle(&stream);
    let (strict_q, stream_q) = (queue(&strict_mid), queue(&stream_mid));
    eprintln!("median kernel receive queue: strict {strict_q} B, streamreader {stream_q} B");
    assert!(
        strict_mid.iter().all(|r| r.user_buffer_bytes.is_none()),
        "strict has no user-space buffer"
    );
    assert!(
        strict_q >= 4096,
        "strict leaves its queue full: {strict_q} B"
    );

    let paused = stream_mid
        .iter()
        .filter(|r| r.reading_paused == Some(true))
        .count();
    assert!(
        paused * 10 <= stream_mid.len(),
        "the buffer stays below the pause threshold: {paused} of {} samples paused",
        stream_mid.len()
    );
    let buffered = median(
        stream_mid
            .iter()
            .map(|r| r.user_buffer_bytes.expect("streamreader"))
            .collect(),
    );
    assert!(
        buffered >= 4096,
        "the sender's lead sits in the user-space buffer: {buffered} B"
    );
    assert!(
        stream_q <= 1024,
        "streamreader drains its queue while reading: {stream_q} B"
    );
}

/// Serves one response whose head and body leave `gap` apart: the head,
/// then, `gap` later, a body of `len` bytes in one write.
fn head_then_body(gap: Duration, len: usize) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    thread::spawn(move || {
        let Ok((mut s, _)) = listener.accept() else {
            return;
        };
        if !read_request(&mut s) {
            return;
        }
        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n");
        if s.write_all(head.as_bytes()).is_ok() {
            thread::sleep(gap);
            let _ = s.write_all(&vec![0u8; len]);
        }
    });
    addr
}

/// `--loop-lag` is the time from readiness to `recv`: with none, the first
/// `recv` takes the head as it arrives and the body comes 20 ms later; with
/// 60 ms, the body has arrived by the time the first `recv` runs. The row
/// records the lag, in microseconds.
#[test]
fn the_loop_lag_delays_each_recv_after_readiness() {
    let (gap, body) = (Duration::from_millis(20), 4096);
    let first_read = |lag: &str| {
        let addr = head_then_body(gap, body);
        // A rate a 60 ms lag allows (one 12 KiB window per lag).
        let rate = ["--slow-rate", "128KiB"];
        let mut args = vec!["--reader", "streamreader", "--loop-lag", lag];
        args.extend(rate);
        let report = download(addr, &args);
        let large = &report.large[0];
        (
            large.first_read_bytes.expect("a first read"),
            large.loop_lag,
        )
    };
    let head = "HTTP/1.1 200 OK\r\nContent-Length: 4096\r\nConnection: close\r\n\r\n".len();
    assert_eq!(
        first_read("0s"),
        (head, Some(Duration::ZERO)),
        "no lag: the head alone"
    );
    assert_eq!(
        first_read("60ms"),
        (head + body, Some(Duration::from_millis(60))),
        "a 60 ms lag: head and body in one recv"
    );
}
