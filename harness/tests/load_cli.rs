//! `slowlab load` through the real binary: one-line errors for bad flags and
//! refused targets, the `--json` summary, the files of `--out`, and the exit
//! code when no `/fast` request succeeds.
//!
//! Every child is killed and reaped by [`Child`]'s `Drop`, so a failing
//! assertion leaves no load generator behind.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use support::child::{Child, Outcome};

use server::{Model, ServerConfig};

const BIN: &str = env!("CARGO_BIN_EXE_slowlab");
/// Generous: a loaded machine may take a while to run a debug binary.
const PATIENCE: Duration = Duration::from_secs(60);

fn run(args: &[&str]) -> Outcome {
    let mut cmd = Command::new(BIN);
    cmd.arg("load").args(args).env("RUST_LOG", "info");
    Child::spawn(cmd).finish(PATIENCE)
}

fn assert_one_line_error(out: &Outcome, code: i32, needle: &str) {
    assert_eq!(out.status.code(), Some(code), "stderr: {}", out.stderr);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "stderr: {}", out.stderr);
    assert!(lines[0].starts_with("slowlab: "), "{}", lines[0]);
    assert!(lines[0].contains(needle), "`{needle}` not in: {}", lines[0]);
}

#[test]
fn bad_flags_are_one_line_errors() {
    let out = run(&["--slow", "2"]);
    // The first line of clap's message; harness/src/main.rs keeps only that.
    assert_one_line_error(&out, 2, "required");
    let out = run(&["--target", "http://127.0.0.1:1", "--slow-rate", "2MB"]);
    assert_one_line_error(&out, 2, "2MB");
    let out = run(&[
        "--target",
        "http://127.0.0.1:1",
        "--label",
        "no-equals-sign",
    ]);
    assert_one_line_error(&out, 2, "key=value");
    let out = run(&["--target", "http://127.0.0.1:1", "--verify", "maybe"]);
    assert_one_line_error(&out, 2, "maybe");
    // Values that parse but cannot work are bad input too (the book, "Exit
    // status").
    let out = run(&["--target", "ftp://127.0.0.1:1"]);
    assert_one_line_error(&out, 2, "http://");
    let out = run(&["--target", "http://127.0.0.1:1", "--label", "seq=1"]);
    assert_one_line_error(&out, 2, "clash");
    // A loop lag that caps every reader below the asked rate (measured:
    // 100 ms with 8 KiB --rcvbuf read at about 120 KiB/s).
    let lagged = |rate: &str, rcvbuf: &str| {
        run(&[
            "--target",
            "http://127.0.0.1:1",
            "--slow",
            "1",
            "--reader",
            "streamreader",
            "--loop-lag",
            "100ms",
            "--slow-rate",
            rate,
            "--rcvbuf",
            rcvbuf,
        ])
    };
    assert_one_line_error(
        &lagged("8MiB", "8KiB"),
        2,
        "caps a reader at about 120KiB/s",
    );
    assert_one_line_error(&lagged("8MiB", "0"), 2, "asyncio's recv size");
}

#[test]
fn a_remote_target_is_refused_at_once() {
    let started = Instant::now();
    let out = run(&["--target", "http://192.0.2.1:8000"]);
    assert_one_line_error(&out, 2, "--allow-remote");
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn json_summary_and_out_files() {
    let mut config = ServerConfig::new(Model::Async, Some(2));
    config.large_bytes = 1 << 20;
    let server = server::spawn(config).expect("server starts");
    let url = format!("http://{}", server.local_addr());
    let dir = tempfile::tempdir().expect("tempdir");
    let out_dir = dir.path().join("run");
    let out = run(&[
        "--target",
        &url,
        "--slow",
        "1",
        "--slow-rate",
        "16MiB",
        "--fast-rate",
        "20",
        "--fast-duration",
        "500ms",
        "--fast-start",
        "0ms",
        "--json",
        "--out",
        out_dir.to_str().expect("utf-8"),
        "--label",
        "server=rust-async",
        "--label",
        "repetition=1",
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
    let json: serde_json::Value = serde_json::from_str(&out.stdout).expect("stdout is JSON");
    assert_eq!(json["fast"]["requests"], 10);
    assert_eq!(json["fast"]["ok"], 10);
    assert_eq!(json["slow"]["ok"], 1);
    assert!(json["fast"]["latency_ms"]["p95"].as_f64().is_some());
    assert!(json["fast"]["schedule_lag_ms"]["max"].as_f64().is_some());
    assert!(json["cpu"]["total_s"].as_f64().is_some());
    assert_eq!(json["labels"]["server"], "rust-async");
    let file: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("summary.json")).expect("summary.json"),
    )
    .expect("summary.json parses");
    assert_eq!(file, json);
    for name in [
        "requests.csv",
        "large-responses.csv",
        "slow-progress.csv",
        "latency.hgrm",
    ] {
        let text = std::fs::read_to_string(out_dir.join(name)).expect(name);
        assert!(text.lines().count() > 1, "{name} is empty");
    }
    let requests = std::fs::read_to_string(out_dir.join("requests.csv")).expect("csv");
    assert!(
        requests.starts_with("server,repetition,seq,scheduled_s,"),
        "{requests}"
    );
}

#[test]
fn no_successful_fast_request_exits_non_zero() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let out = run(&[
        "--target",
        &url,
        "--slow",
        "1",
        "--fast-rate",
        "20",
        "--fast-duration",
        "200ms",
        "--fast-start",
        "0ms",
    ]);
    assert_one_line_error(&out, 1, "no /fast request succeeded");
    assert!(out.stderr.contains("connect_refused"), "{}", out.stderr);
    // The summary is still printed.
    assert!(
        out.stdout.contains("4 requests: 0 ok, 4 failed"),
        "{}",
        out.stdout
    );
}

#[test]
fn an_unwritable_out_fails_before_any_connection() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let out = run(&[
        "--target",
        &url,
        "--slow",
        "1",
        "--fast-rate",
        "20",
        "--fast-duration",
        "200ms",
        "--out",
        "/proc/x",
    ]);
    assert_one_line_error(&out, 2, "--out /proc/x");
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    let mut accepted = 0;
    while listener.accept().is_ok() {
        accepted += 1;
    }
    assert_eq!(accepted, 0, "no connection before --out is known writable");
}

#[test]
fn an_interrupted_load_keeps_what_it_measured() {
    // A minute of /fast calls and two slow downloads of 16 MiB at 64 KiB/s,
    // stopped after a second and a half.
    let server = server::spawn(ServerConfig::new(Model::Async, Some(2))).expect("server");
    let url = format!("http://{}", server.local_addr());
    // The second case signals after the last /fast call, while the load
    // waits for its slow readers: they are cut all the same.
    for (signal, code, fast_duration) in [
        (libc::SIGINT, 130, "60s"),
        (libc::SIGTERM, 143, "60s"),
        (libc::SIGTERM, 143, "1s"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("load");
        let mut cmd = Command::new(BIN);
        cmd.arg("load")
            .args(["--target", &url, "--slow", "2", "--slow-rate", "64KiB"])
            .args(["--fast-rate", "20", "--fast-duration", fast_duration])
            .args(["--json", "--out"])
            .arg(&out);
        let child = Child::spawn(cmd);
        std::thread::sleep(Duration::from_millis(1500));
        // SAFETY: kill(2) on our own child.
        unsafe {
            libc::kill(child.pid() as libc::pid_t, signal);
        }
        let sent = Instant::now();
        let done = child.finish(PATIENCE);
        assert!(sent.elapsed() < Duration::from_secs(5), "stopped late");
        assert_eq!(done.status.code(), Some(code), "{}", done.stderr);
        // The summary on stdout, and every file of --out with the rows
        // measured so far, marked incomplete.
        let summary: serde_json::Value = serde_json::from_str(done.stdout.trim()).unwrap();
        let started = summary["fast"]["requests"].as_u64().unwrap();
        let expected = if fast_duration == "1s" {
            20..21
        } else {
            15..200
        };
        assert!(expected.contains(&started), "{summary}");
        let requests = std::fs::read_to_string(out.join("requests.csv")).unwrap();
        assert_eq!(requests.lines().count() as u64, 1 + started);
        let large = std::fs::read_to_string(out.join("large-responses.csv")).unwrap();
        assert!(large.lines().skip(1).all(|l| l.contains("cut")), "{large}");
        let marker = std::fs::read_to_string(out.join("INCOMPLETE")).unwrap();
        assert!(marker.contains("interrupted"), "{marker}");
        assert!(done.stderr.contains("partial results"), "{}", done.stderr);
    }
}
