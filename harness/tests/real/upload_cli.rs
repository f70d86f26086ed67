//! The request direction through the real binaries: `slowlab load
//! --slow-upload` against `slowlab serve` of each model and against real
//! Gunicorn sync x2; every upload verified in the receive log; a client that
//! leaves mid-upload logged incomplete; slowloris clients holding the sync
//! workers. Sizes and rates are scaled down (4 MiB at 1 MiB/s) so that each
//! test stays within some 20 s.

use crate::support;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use catalogue::Server;
use lab::process;
use support::child::Child;
use support::{slowlab, stacks};

const PATIENCE: Duration = Duration::from_secs(60);
const UPLOAD_BYTES: u64 = 4 << 20;

/// `slowlab serve` of `model` x `workers` with its receive log in `dir`.
fn serve(dir: &Path, model: &str, workers: &str) -> (process::Guard, SocketAddr) {
    let log = dir.join("recv-log.csv");
    let log = log.to_str().expect("a UTF-8 temp dir");
    stacks::serve(
        dir,
        &["--model", model, "--workers", workers, "--recv-log", log],
    )
}

/// Runs `slowlab load --json` against `addr` with `extra`; the summary.
fn load(addr: SocketAddr, out: &Path, extra: &[&str]) -> (Option<i32>, serde_json::Value) {
    let mut cmd = Command::new(slowlab());
    cmd.arg("load")
        .args(["--target", &format!("http://{addr}"), "--slow", "0"])
        .args(["--fast-rate", "8", "--fast-duration", "3s", "--json"])
        .arg("--out")
        .arg(out)
        .args(extra);
    let done = Child::spawn(cmd).finish(PATIENCE);
    let summary = serde_json::from_str(&done.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} / {}", done.stdout, done.stderr));
    (done.status.code(), summary)
}

fn uploads(n: &str) -> Vec<String> {
    let bytes = UPLOAD_BYTES.to_string();
    [
        "--slow-upload",
        n,
        "--upload-bytes",
        &bytes,
        "--upload-rate",
        "1MiB",
    ]
    .map(String::from)
    .to_vec()
}

fn p95(summary: &serde_json::Value) -> f64 {
    summary["fast"]["latency_ms"]["p95"]
        .as_f64()
        .unwrap_or(f64::INFINITY)
}

/// p95 of `/fast` without and with 2 slow uploaders; checks that both
/// uploads were whole and verified, by the client and in the receive log.
fn p95_without_and_with(addr: SocketAddr, dir: &Path, what: &str) -> (f64, f64) {
    let (code, base) = load(addr, &dir.join("base"), &[]);
    assert_eq!(code, Some(0), "{what}: {base}");
    let args = uploads("2");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, with) = load(addr, &dir.join("up"), &args);
    assert_eq!(code, Some(0), "{what}: {with}");
    assert_eq!(with["uploads"]["count"], 2, "{what}: {with}");
    assert_eq!(with["uploads"]["ok"], 2, "{what}: {with}");
    let send_s = with["uploads"]["send_s_median"].as_f64().expect("send_s");
    assert!(
        (3.5..8.0).contains(&send_s),
        "{what}: 4 MiB at 1 MiB/s took {send_s} s"
    );
    let csv = std::fs::read_to_string(dir.join("up").join("uploads.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(
        csv.lines()
            .skip(1)
            .all(|l| l.contains(",200,4194304,true,")),
        "{csv}"
    );
    let rows = recv_rows(&dir.join("recv-log.csv"));
    let whole = rows
        .iter()
        .filter(|r| r[3] == UPLOAD_BYTES.to_string() && r[5] == "true" && r[7] == "true")
        .count();
    assert_eq!(
        whole, 2,
        "{what}: every upload verified in the receive log: {rows:?}"
    );
    let (b, w) = (p95(&base), p95(&with));
    eprintln!("{what}: /fast p95 {b:.1} ms without, {w:.1} ms with 2 slow uploaders");
    (b, w)
}

fn recv_rows(path: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(schema::child::header_line::<schema::RecvLogCells>().trim_end()),
        "{text}"
    );
    lines
        .map(|l| l.split(',').map(String::from).collect())
        .collect()
}

#[test]
fn slow_uploads_block_the_sync_replica_only() {
    for (model, workers, blocked) in [
        ("sync", "2", true),
        ("threads", "4", false),
        ("async", "2", false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (_server, addr) = serve(dir.path(), model, workers);
        let what = format!("slowlab serve {model} x{workers}");
        let (base, with) = p95_without_and_with(addr, dir.path(), &what);
        assert!(base < 200.0, "{what}: {base} ms without uploaders");
        if blocked {
            // Both workers read an upload for ~4 s; /fast waits in the backlog.
            assert!(with > 1000.0, "{what}: {with} ms, not blocked");
        } else {
            assert!(with < 500.0, "{what}: {with} ms, blocked");
        }
    }
}

#[test]
fn a_client_that_leaves_mid_upload_is_logged_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, addr) = serve(dir.path(), "sync", "2");
    let body: Vec<u8> = (0..5000u64)
        .map(|i| common::pattern::byte_at(i, common::pattern::DEFAULT_BLOCK))
        .collect();
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n")
        .unwrap();
    s.write_all(&body).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    drop(s);
    let path = dir.path().join("recv-log.csv");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let rows = loop {
        let rows = recv_rows(&path);
        if !rows.is_empty() || std::time::Instant::now() > deadline {
            break rows;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(rows.len(), 1, "{rows:?}");
    let r = &rows[0];
    assert_eq!(r[2], "", "no app_recv_s for a short body: {r:?}");
    assert_eq!((r[3].as_str(), r[4].as_str()), ("5000", "100000"), "{r:?}");
    assert_eq!(r[7], "false", "{r:?}");
}

#[test]
fn slow_uploads_block_real_gunicorn_sync2() {
    let tools = stacks::tools_with_gunicorn();
    let dir = tempfile::tempdir().unwrap();
    let gunicorn = stacks::start(
        &stacks::launcher(&tools, dir.path()),
        Server::GunicornSync2,
        dir.path(),
    );
    let (base, with) = p95_without_and_with(gunicorn.addr, dir.path(), "gunicorn sync x2");
    assert!(
        base < 200.0,
        "gunicorn sync x2: {base} ms without uploaders"
    );
    assert!(with > 1000.0, "gunicorn sync x2: {with} ms, not blocked");
}

/// Two slowloris clients hold both workers of a sync server: no /fast
/// request is answered before its timeout, and both clients still hold
/// their unfinished heads when the run ends.
fn assert_slowloris_holds(addr: SocketAddr, dir: &Path, what: &str) {
    let (code, s) = load(
        addr,
        &dir.join("hdr"),
        &[
            "--slow-headers",
            "2",
            "--header-interval",
            "200ms",
            "--timeout",
            "2s",
        ],
    );
    assert_eq!(code, Some(1), "{what}: no /fast succeeded: {s}");
    assert_eq!(s["fast"]["ok"], 0, "{what}: {s}");
    assert_eq!(s["slow_headers"]["clients"], 2, "{what}: {s}");
    assert_eq!(s["slow_headers"]["held_to_end"], 2, "{what}: {s}");
    let csv = std::fs::read_to_string(dir.join("hdr").join("slow-headers.csv")).unwrap();
    assert!(
        csv.lines().skip(1).all(|l| l.contains(",run_end,")),
        "{csv}"
    );
}

#[test]
fn slowloris_clients_hold_sync_workers_direct() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, addr) = serve(dir.path(), "sync", "2");
    assert_slowloris_holds(addr, dir.path(), "slowlab serve sync x2");
    // The async replica is not held by two unfinished heads.
    let adir = dir.path().join("async");
    std::fs::create_dir_all(&adir).unwrap();
    let (_server, addr) = serve(&adir, "async", "2");
    let (code, s) = load(
        addr,
        &dir.path().join("hdr-async"),
        &[
            "--slow-headers",
            "2",
            "--header-interval",
            "200ms",
            "--timeout",
            "2s",
        ],
    );
    assert_eq!(code, Some(0), "{s}");
    assert!(p95(&s) < 500.0, "{s}");

    let tools = stacks::tools_with_gunicorn();
    let gdir = dir.path().join("gunicorn");
    std::fs::create_dir_all(&gdir).unwrap();
    let gunicorn = stacks::start(
        &stacks::launcher(&tools, &gdir),
        Server::GunicornSync2,
        &gdir,
    );
    assert_slowloris_holds(gunicorn.addr, &gdir, "gunicorn sync x2");
}

/// Sends a request head that never ends and reads until the server closes:
/// what arrived and after how long.
fn unfinished_head(addr: SocketAddr) -> (Vec<u8>, Duration) {
    use std::io::Read;
    let start = std::time::Instant::now();
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(b"GET /fast HTTP/1.1\r\nHost: slowlab\r\n")
        .unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).expect("the server closes");
    (got, start.elapsed())
}

/// Gunicorn's sync worker waits on an unfinished head until the arbiter
/// aborts it after `--timeout`, which answers 500 and closes; the replica's
/// `--worker-timeout` does the same, with the same bytes. Scaled to 2 s.
#[test]
fn an_unfinished_head_is_cut_by_the_worker_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let (guard, addr) = stacks::serve(dir.path(), &["--workers", "1", "--worker-timeout", "2s"]);
    let (ours, took) = unfinished_head(addr);
    let text = String::from_utf8_lossy(&ours);
    assert!(
        text.starts_with("HTTP/1.1 500 Internal Server Error\r\n"),
        "{text}"
    );
    assert!(
        (1.9..6.0).contains(&took.as_secs_f64()),
        "replica: {took:?}"
    );
    // The worker serves again afterwards.
    assert_eq!(support::raw_request(addr, GET_FAST).status, 200);
    drop(guard);

    let tools = stacks::tools_with_gunicorn();
    let app_dir = stacks::launcher(&tools, dir.path()).app_dir;
    let addr = SocketAddr::from(([127, 0, 0, 1], stacks::free_port()));
    let program = tools.gunicorn.as_ref().unwrap().gunicorn.clone();
    let args = [
        "--bind",
        &addr.to_string(),
        "--chdir",
        app_dir.to_str().unwrap(),
        "--workers",
        "1",
        "--timeout",
        "2",
        "slowlab_app:application",
    ];
    let args = args.map(String::from).to_vec();
    let _gunicorn = process::spawn(&stacks::spec(dir.path(), "gunicorn", program, args), None)
        .expect("gunicorn starts");
    stacks::wait_answering(addr, Duration::from_secs(20));
    let (theirs, took) = unfinished_head(addr);
    assert_eq!(String::from_utf8_lossy(&theirs), text, "the same 500");
    assert!(
        (1.9..6.0).contains(&took.as_secs_f64()),
        "gunicorn: {took:?}"
    );
}

const GET_FAST: &str = "GET /fast HTTP/1.1\r\nHost: slowlab\r\nConnection: close\r\n\r\n";

/// A user's own upload endpoint, as Gunicorn serves it: it reads the whole
/// body and answers 201 with its own JSON on `/saved`, 204 with no body on
/// `/nocontent`, and 500 on `/broken`.
const USER_APP: &str = r#"
import json

def app(environ, start_response):
    n = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(n)
    path = environ["PATH_INFO"]
    if path == "/saved":
        out = json.dumps({"saved": len(body)}).encode()
        start_response("201 Created", [("Content-Type", "application/json"), ("Content-Length", str(len(out)))])
        return [out]
    if path == "/nocontent":
        start_response("204 No Content", [])
        return [b""]
    if path == "/broken":
        start_response("500 Internal Server Error", [("Content-Length", "0")])
        return [b""]
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", "12")])
    return [b'{"ok": true}']
"#;

#[test]
fn any_servers_upload_answer_counts() {
    let tools = stacks::tools_with_gunicorn();
    let g = tools.gunicorn.as_ref().expect("checked");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("userapp.py"), USER_APP).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut cmd = Command::new(&g.gunicorn);
    cmd.args(["--workers", "2", "--bind", &addr.to_string(), "--chdir"])
        .arg(dir.path())
        .arg("userapp:app");
    let _gunicorn = Child::spawn_group(cmd);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(addr).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "gunicorn never listened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let up = |path: &str, extra: &[&str]| {
        let out = dir.path().join(path.trim_start_matches('/'));
        let mut args = vec![
            "--slow-upload",
            "2",
            "--upload-bytes",
            "1MiB",
            "--upload-rate",
            "1MiB",
            "--upload-path",
            path,
        ];
        args.extend(extra);
        let (code, s) = load(addr, &out, &args);
        let csv = std::fs::read_to_string(out.join("uploads.csv")).unwrap_or_default();
        (code, s, csv)
    };
    for (path, status) in [("/saved", "201"), ("/nocontent", "204")] {
        let (code, s, csv) = up(path, &[]);
        assert_eq!(code, Some(0), "{path}: {s}");
        assert_eq!(s["uploads"]["ok"], 2, "{path}: {s}\n{csv}");
        // Its own answer: no lab JSON to read, nothing held against it.
        for row in csv.lines().skip(1) {
            assert!(row.contains(&format!(",{status},,,")), "{path}: {row}");
        }
    }
    // A 500 is not an upload that went well, unless the user says so.
    let (_, s, csv) = up("/broken", &[]);
    assert_eq!(s["uploads"]["ok"], 0, "{s}\n{csv}");
    assert_eq!(s["uploads"]["errors"]["bad_status"], 2, "{s}");
    let (_, s, _) = up("/broken", &["--upload-ok", "2xx,500"]);
    assert_eq!(s["uploads"]["ok"], 2, "{s}");
}
