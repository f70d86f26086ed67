//! `slowlab serve` through the real binary: the ready line, stopping on
//! signals while a slow client downloads, and one-line errors for bad input.
//!
//! Every child is killed and reaped by `testkit`'s [`Child`] guard, so a
//! failing assertion leaves no server behind.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use testkit::Child;

const BIN: &str = env!("CARGO_BIN_EXE_slowlab");
/// Generous: a loaded machine may take a while to start a debug binary.
const PATIENCE: Duration = Duration::from_secs(15);

/// `slowlab ARGS` with `RUST_LOG=info`, killed and reaped when dropped.
fn start(args: &[&str]) -> Child {
    let mut cmd = Command::new(BIN);
    cmd.args(args).env("RUST_LOG", "info");
    Child::spawn(cmd)
}

/// The child's ready line, within [`PATIENCE`].
fn ready_line(child: &Child) -> String {
    child.line(PATIENCE).expect("a ready line on stdout")
}

fn parse_ready(line: &str, details: &str) -> SocketAddr {
    let rest = line
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("ready line {line:?}"));
    let (addr, tail) = rest.split_once(' ').unwrap_or((rest, ""));
    assert_eq!(tail, details, "ready line {line:?}");
    let addr: SocketAddr = addr.parse().expect("ip:port in the ready line");
    assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");
    addr
}

fn get_fast(addr: SocketAddr) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(PATIENCE)).expect("timeout");
    s.write_all(b"GET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("send");
    let mut data = Vec::new();
    s.read_to_end(&mut data).expect("read");
    data
}

#[test]
fn ready_line_names_address_model_and_workers() {
    let cases: [(&[&str], &str); 3] = [
        (&[], "(model sync, 2 workers)"),
        (&["--model", "threads"], "(model threads, 4 workers)"),
        (
            &["--model", "async", "--workers", "3"],
            "(model async, 3 workers)",
        ),
    ];
    for (extra, details) in cases {
        let mut args = vec!["serve", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let mut server = start(&args);
        let addr = parse_ready(&ready_line(&server), details);
        // Ready means accepting: no retry needed.
        assert!(get_fast(addr).ends_with(br#"{"ok": true}"#));
        server.signal(libc::SIGTERM);
        let status = server.wait_for(PATIENCE).expect("exits on SIGTERM");
        assert!(status.success(), "{status:?}");
        // Exactly one line on stdout, ever.
        assert!(server.line(Duration::from_secs(1)).is_none());
    }
}

/// A client that downloads `/large` slowly (16 KiB every 20 ms) on a thread,
/// and at full speed once `hurry` is set, until the connection ends; returns
/// the bytes it received.
fn slow_download(addr: SocketAddr, hurry: Arc<AtomicBool>) -> std::thread::JoinHandle<usize> {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.write_all(b"GET /large HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("send");
    s.set_read_timeout(Some(PATIENCE)).expect("timeout");
    let mut first = [0u8; 1];
    assert_eq!(s.read(&mut first).expect("response starts"), 1);
    std::thread::spawn(move || {
        let mut total = 1;
        let mut buf = [0u8; 16 * 1024];
        loop {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => return total,
                Ok(n) => total += n,
            }
            if !hurry.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    })
}

#[test]
fn signals_stop_within_two_seconds_during_slow_downloads() {
    for (model, signal) in [
        ("sync", libc::SIGTERM),
        ("threads", libc::SIGINT),
        ("async", libc::SIGTERM),
    ] {
        let mut server = start(&["serve", "--listen", "127.0.0.1:0", "--model", model]);
        let line = ready_line(&server);
        let addr: SocketAddr = line
            .split(' ')
            .nth(2)
            .and_then(|a| a.parse().ok())
            .expect("address");
        let hurry = Arc::new(AtomicBool::new(false));
        let downloads = [
            slow_download(addr, hurry.clone()),
            slow_download(addr, hurry.clone()),
        ];
        std::thread::sleep(Duration::from_millis(300));
        let sent = Instant::now();
        server.signal(signal);
        let status = server
            .wait_for(Duration::from_secs(2))
            .unwrap_or_else(|| panic!("{model} still running 2 s after signal {signal}"));
        assert!(status.success(), "{model}: {status:?}");
        eprintln!("{model} stopped in {:?}", sent.elapsed());
        // What the kernel still held for the clients arrives now; then the
        // connections end, cut short.
        hurry.store(true, Ordering::Relaxed);
        for d in downloads {
            let got = d.join().expect("download thread");
            assert!(
                got < 16 << 20,
                "{model}: the download was not cut ({got} bytes)"
            );
        }
    }
}

/// Runs a command that must fail at once; returns its stderr.
fn fails(args: &[&str]) -> String {
    let out = start(args).finish(PATIENCE);
    // Bad input, a port in use and an unwritable log alike: status 2.
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", out.stderr);
    assert!(out.stdout.is_empty(), "{args:?} printed on stdout");
    let stderr = out.stderr;
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: stderr {stderr:?}");
    assert!(lines[0].starts_with("slowlab: "), "{args:?}: {stderr:?}");
    stderr
}

#[test]
fn bad_input_is_one_line_and_a_failure() {
    let l = ["serve", "--listen", "127.0.0.1:0"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        l.iter().copied().chain(extra.iter().copied()).collect()
    };
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (with(&["--model", "forking"]), "forking"),
        (with(&["--workers", "0"]), "--workers"),
        (with(&["--workers", "two"]), "two"),
        (with(&["--large-bytes", "16MB"]), "16MB"),
        (with(&["--chunk-bytes", "lots"]), "lots"),
        (with(&["--chunk-bytes", "0"]), "--chunk-bytes"),
        (
            vec!["serve", "--listen", "localhost:8000"],
            "localhost:8000",
        ),
        (vec!["serve", "--listen", "127.0.0.1"], "127.0.0.1"),
    ];
    for (args, needle) in cases {
        let stderr = fails(&args);
        assert!(stderr.contains(needle), "{args:?}: {stderr:?}");
    }
}

#[test]
fn unwritable_send_log_is_one_line_and_a_failure() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A path below a regular file can never be created.
    let file = dir.path().join("file");
    std::fs::write(&file, b"").expect("write");
    let log = file.join("send.csv");
    let log = log.to_str().expect("utf-8 path");
    let stderr = fails(&["serve", "--listen", "127.0.0.1:0", "--send-log", log]);
    assert!(stderr.contains("send log"), "{stderr:?}");
}

#[test]
fn address_in_use_is_one_line_and_a_failure() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let stderr = fails(&["serve", "--listen", &addr]);
    assert!(
        stderr.contains(&addr) && stderr.contains("in use"),
        "{stderr:?}"
    );
}
