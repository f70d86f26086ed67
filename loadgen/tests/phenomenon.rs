//! The experiment, scaled down, against in-process Rust servers: two slow
//! readers stall both sync workers so `/fast` waits seconds, while the async
//! server answers at once.
//!
//! Scaling: /large stays 16 MiB (the body must dwarf the kernel buffers,
//! up to 4 MiB of send buffer here) and the readers go 2x faster (4 MiB/s,
//! so a download takes 4 s instead of 8); the 72 `/fast` requests are
//! packed into one second from 250 ms, all while the workers are stuck.
//! Margins are wide: this runs on small, busy machines.

mod support;

use std::fs;

use loadgen::{Report, Summary, Verified};
use server::{Model, ServerConfig};

const RATE_BYTES: f64 = 4.0 * 1024.0 * 1024.0;
const LARGE: u64 = 16 * 1024 * 1024;

fn run_against(model: Model, workers: Option<usize>, out: &std::path::Path) -> Report {
    let server = server::spawn(ServerConfig::new(model, workers)).expect("server starts");
    let url = format!("http://{}", server.local_addr());
    let out = out.to_str().expect("utf-8 path");
    support::run(&[
        "--target",
        &url,
        "--slow",
        "2",
        "--slow-rate",
        "4MiB",
        "--fast-rate",
        "72",
        "--fast-duration",
        "1s",
        "--out",
        out,
        "--label",
        "server=test",
    ])
}

fn check_downloads(report: &Report) {
    let expected_s = LARGE as f64 / RATE_BYTES;
    assert_eq!(report.large.len(), 2);
    for r in &report.large {
        assert_eq!(r.error, None, "client {}", r.client);
        assert_eq!(
            (r.status, r.bytes, r.content_length),
            (Some(200), LARGE, Some(LARGE))
        );
        assert_eq!(r.verified, Verified::Pattern);
        assert_eq!(r.rcvbuf_requested_bytes, Some(8192));
        assert!(r.rcvbuf_granted_bytes.expect("granted") >= 8192);
        let receive = r.receive_s.expect("receive time");
        // Pacing makes it at least the expected time; a loaded machine may
        // add some at the end, never double.
        assert!(
            receive >= expected_s - 0.001,
            "receive {receive} < {expected_s}"
        );
        assert!(
            receive < expected_s * 2.0,
            "receive {receive} >> {expected_s}"
        );
    }
}

#[test]
fn sync_two_workers_with_two_slow_readers_make_fast_wait() {
    let dir = tempfile::tempdir().expect("tempdir");
    let report = run_against(Model::Sync, Some(2), dir.path());
    let summary = Summary::of(&report);
    assert_eq!(report.fast.len(), 72);
    assert_eq!(summary.fast.ok, 72, "{summary}");
    let p95 = summary.fast.latency_ms.p95.expect("p95");
    assert!(
        p95 >= 1000.0,
        "p95 {p95} ms: /fast did not wait for the workers\n{summary}"
    );
    // Open loop: requests start on schedule although none is answered yet;
    // a closed loop would start them seconds late.
    let lag = summary.fast.schedule_lag_ms.max.expect("lag");
    assert!(
        lag < 500.0,
        "requests started {lag} ms late: not open-loop?"
    );
    check_downloads(&report);

    let rows = fs::read_to_string(dir.path().join("requests.csv")).expect("requests.csv");
    assert_eq!(rows.lines().count(), 1 + 72);
    assert!(rows.lines().skip(1).all(|l| l.starts_with("test,")));
    let large = fs::read_to_string(dir.path().join("large-responses.csv")).expect("csv");
    assert_eq!(large.lines().count(), 1 + 2);
    let progress = fs::read_to_string(dir.path().join("slow-progress.csv")).expect("csv");
    // About 10 samples a second per reader over ~4 s.
    assert!(progress.lines().count() > 2 * 30, "{progress}");
    let last = progress.lines().last().expect("rows");
    // received_bytes and consumed_bytes, then the socket columns.
    assert!(last.contains(&format!(",{LARGE},{LARGE},")), "{last}");
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.path().join("summary.json")).expect("json"))
            .expect("summary.json parses");
    assert_eq!(json["fast"]["requests"], 72);
    assert!(json["t0_unix_s"].as_f64().expect("t0") > 1.6e9);
    let hgrm = fs::read_to_string(dir.path().join("latency.hgrm")).expect("hgrm");
    assert!(hgrm.contains("Total count    =           72]"), "{hgrm}");
}

#[test]
fn async_server_answers_fast_despite_slow_readers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let report = run_against(Model::Async, None, dir.path());
    let summary = Summary::of(&report);
    assert_eq!(report.fast.len(), 72);
    assert_eq!(summary.fast.ok, 72, "{summary}");
    let p95 = summary.fast.latency_ms.p95.expect("p95");
    assert!(p95 < 100.0, "p95 {p95} ms\n{summary}");
    check_downloads(&report);
}
