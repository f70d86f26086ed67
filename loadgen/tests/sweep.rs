//! `slowlab sweep-load` against in-process servers: one row per step with
//! every column of the contract, achieved rates that follow the demanded
//! ones below saturation, timeouts counted as such, the early stop, and
//! slow readers, uploaders and slowloris clients that keep running.
//!
//! Margins are wide: these run on a busy 2-core machine beside other tests.

mod support;

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use clap::Parser;
use loadgen::sweep::{self, SweepConfig, SweepLoadArgs};

fn header() -> &'static [&'static str] {
    schema::columns::<schema::StepCells>()
}
use server::{Model, ServerConfig};
use support::{Reply, ScriptedServer};

#[derive(Parser)]
struct Cmd {
    #[command(flatten)]
    args: SweepLoadArgs,
}

/// Arguments for a sweep of `url` into `out`, plus `extra` words.
fn args(url: &str, out: &Path, extra: &[&str]) -> SweepLoadArgs {
    let out = out.to_string_lossy();
    let mut words = vec!["sweep-load", "--target", url, "--out", &out];
    words.extend_from_slice(extra);
    Cmd::try_parse_from(words).expect("arguments parse").args
}

fn sweep(url: &str, out: &Path, extra: &[&str]) -> sweep::SweepOutcome {
    let config = SweepConfig::from_args(&args(url, out, extra)).expect("valid config");
    sweep::run_sweep(&config).expect("the sweep runs")
}

/// `steps.csv` as maps from column to cell, after checking its header.
fn steps(out: &Path) -> Vec<HashMap<String, String>> {
    csv_rows(&out.join("steps.csv"), header())
}

/// A CSV file as maps from column to cell, after checking that its header
/// is `columns` (the contract's, in order).
fn csv_rows(path: &Path, columns: &[&str]) -> Vec<HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let header: Vec<String> = r
        .headers()
        .expect("header")
        .iter()
        .map(String::from)
        .collect();
    assert_eq!(header, columns, "the columns of the contract, in order");
    r.records()
        .map(|rec| {
            let rec = rec.expect("row");
            header
                .iter()
                .cloned()
                .zip(rec.iter().map(String::from))
                .collect()
        })
        .collect()
}

fn num(row: &HashMap<String, String>, col: &str) -> f64 {
    row[col]
        .parse()
        .unwrap_or_else(|_| panic!("{col} = `{}` is not a number", row[col]))
}

fn async_server() -> server::ServerHandle {
    server::spawn(ServerConfig::new(Model::Async, Some(2))).expect("server starts")
}

#[test]
fn a_short_sweep_writes_one_full_row_per_step() {
    let server = async_server();
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("http://{}", server.local_addr());
    let outcome = sweep(
        &url,
        dir.path(),
        &[
            "--rates",
            "20,40,60",
            "--step-duration",
            "1500ms",
            "--calls-per-conn",
            "2",
            "--timeout",
            "10s",
        ],
    );
    assert_eq!(outcome.rows.len(), 3);
    assert!(!outcome.stopped_saturated);
    let rows = steps(dir.path());
    assert_eq!(rows.len(), 3);
    for (i, (row, rate)) in rows.iter().zip([20.0, 40.0, 60.0]).enumerate() {
        for col in header() {
            assert!(!row[*col].is_empty(), "step {}: {col} is empty", i + 1);
        }
        assert_eq!(num(row, "step"), (i + 1) as f64);
        assert_eq!(num(row, "conn_rate_demanded"), rate);
        assert_eq!(num(row, "req_rate_demanded"), rate * 2.0);
        let achieved = num(row, "conn_rate_achieved");
        assert!(
            (achieved / rate - 1.0).abs() < 0.15,
            "step {}: {achieved} conn/s for {rate}",
            i + 1
        );
        // Below saturation every request is answered; the server closes
        // after each answer, so each call has its own connection.
        assert_eq!(num(row, "errors"), 0.0, "step {}", i + 1);
        assert_eq!(num(row, "replies"), num(row, "requests"));
        assert_eq!(num(row, "requests"), num(row, "sessions") * 2.0);
        assert_eq!(num(row, "connections"), num(row, "requests"));
        let avg = num(row, "replies_per_s_avg");
        assert!(
            (avg / (rate * 2.0) - 1.0).abs() < 0.25,
            "step {}: {avg} replies/s",
            i + 1
        );
        // Cells are rounded to 0.01.
        assert!(
            num(row, "replies_per_s_min") <= avg + 0.01
                && avg <= num(row, "replies_per_s_max") + 0.01
        );
        assert!(
            num(row, "p50_ms") <= num(row, "p95_ms") && num(row, "p99_ms") <= num(row, "max_ms")
        );
        assert!(num(row, "end_unix_s") - num(row, "start_unix_s") > 1.4);
        assert_eq!(num(row, "slow_active"), 0.0);
    }
    // Steps follow each other without overlapping.
    for pair in rows.windows(2) {
        assert!(num(&pair[1], "start_unix_s") >= num(&pair[0], "end_unix_s"));
    }
}

#[test]
fn unanswered_requests_are_timeouts() {
    let silent = ScriptedServer::start(|_| Reply::Silent(Duration::from_secs(3)));
    let dir = tempfile::tempdir().expect("tempdir");
    let outcome = sweep(
        &silent.url(),
        dir.path(),
        &[
            "--rates",
            "10",
            "--step-duration",
            "500ms",
            "--calls-per-conn",
            "3",
            "--timeout",
            "200ms",
        ],
    );
    let row = &steps(dir.path())[0];
    let requests = num(row, "requests");
    assert!(requests >= 4.0, "{requests}");
    // A session ends at its first error: one request each, all timed out.
    assert_eq!(requests, num(row, "sessions"));
    assert_eq!(num(row, "err_timeout"), requests);
    assert_eq!(num(row, "errors"), requests);
    assert_eq!(num(row, "replies"), 0.0);
    assert_eq!(row["p95_ms"], "", "no replies, no response time");
    assert_eq!(outcome.replies(), 0);
}

#[test]
fn a_server_that_never_answers_stops_the_sweep_early() {
    let silent = ScriptedServer::start(|_| Reply::Silent(Duration::from_secs(3)));
    let dir = tempfile::tempdir().expect("tempdir");
    let a = args(
        &silent.url(),
        dir.path(),
        &[
            "--rates",
            "10,10,10,10,10",
            "--step-duration",
            "300ms",
            "--calls-per-conn",
            "2",
            "--timeout",
            "200ms",
            "--stop-when-saturated",
        ],
    );
    // The command's own entry point: it writes the steps it did, then fails
    // because not one request succeeded.
    let err = sweep::run(a).expect_err("no request succeeded");
    assert!(err.to_string().contains("no request succeeded"), "{err}");
    let rows = steps(dir.path());
    assert_eq!(rows.len(), 2, "two failing steps in a row end the sweep");
    assert!(
        rows.iter()
            .all(|r| num(r, "err_timeout") == num(r, "requests"))
    );
}

#[test]
fn slow_readers_keep_running_through_the_sweep() {
    let server = async_server();
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("http://{}", server.local_addr());
    // At 1 MiB/s the 16 MiB download outlasts the sweep.
    let outcome = sweep(
        &url,
        dir.path(),
        &[
            "--rates",
            "10,20",
            "--step-duration",
            "1s",
            "--calls-per-conn",
            "2",
            "--slow",
            "1",
            "--slow-rate",
            "1MiB",
        ],
    );
    for row in steps(dir.path()) {
        assert_eq!(num(&row, "slow_active"), 1.0);
        // An async server serves /fast beside the slow download.
        assert_eq!(num(&row, "errors"), 0.0);
    }
    assert_eq!((outcome.slow_completed, outcome.slow_failed), (0, 0));
}

#[test]
fn a_sync_worker_held_by_a_slow_reader_answers_nothing_in_time() {
    // The experiment's phenomenon at its smallest: one sync worker, one
    // slow reader holding it, so every /fast request waits past its timeout.
    let server = server::spawn(ServerConfig::new(Model::Sync, Some(1))).expect("server starts");
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("http://{}", server.local_addr());
    let outcome = sweep(
        &url,
        dir.path(),
        &[
            "--rates",
            "10",
            "--step-duration",
            "1s",
            "--calls-per-conn",
            "1",
            "--timeout",
            "300ms",
            "--slow",
            "1",
            "--slow-rate",
            "1MiB",
        ],
    );
    let row = &steps(dir.path())[0];
    assert!(num(row, "requests") >= 8.0);
    assert_eq!(num(row, "err_timeout"), num(row, "requests"));
    assert_eq!(num(row, "slow_active"), 1.0);
    assert_eq!(outcome.replies(), 0);
}

#[test]
fn a_refused_target_counts_refusals() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("http://127.0.0.1:{}", support::closed_port());
    sweep(
        &url,
        dir.path(),
        &[
            "--rates",
            "10",
            "--step-duration",
            "300ms",
            "--timeout",
            "1s",
        ],
    );
    let row = &steps(dir.path())[0];
    assert!(num(row, "requests") >= 2.0);
    assert_eq!(num(row, "err_connect_refused"), num(row, "requests"));
    assert_eq!(num(row, "err_ports_exhausted"), 0.0);
}

/// Two uploaders of 192 KiB at 128 KiB/s (1.5 s each) through two steps of
/// 1 s: the first uploads end during the second step, and their slots
/// start the next ones at once.
const UPLOADERS: &[&str] = &[
    "--rates",
    "5,10",
    "--step-duration",
    "1s",
    "--calls-per-conn",
    "1",
    "--timeout",
    "300ms",
    "--slow-upload",
    "2",
    "--upload-bytes",
    "192KiB",
    "--upload-rate",
    "128KiB",
];

#[test]
fn slow_uploaders_hold_sync_workers_through_the_sweep_and_not_async_ones() {
    for (model, blocked) in [(Model::Sync, true), (Model::Async, false)] {
        let server = server::spawn(ServerConfig::new(model, Some(2))).expect("server starts");
        let dir = tempfile::tempdir().expect("tempdir");
        let url = format!("http://{}", server.local_addr());
        let outcome = sweep(&url, dir.path(), UPLOADERS);
        let rows = csv_rows(
            &dir.path().join("uploads.csv"),
            schema::columns::<schema::UploadCells>(),
        );
        assert_eq!(rows.len(), outcome.uploads.len());
        // The two first uploads end inside the sweep; every one that ended
        // was whole and verified by the server.
        assert!(rows.len() >= 2, "{model:?}: {rows:?}");
        for r in &rows {
            assert_eq!(r["status"], "200", "{model:?}: {r:?}");
            assert_eq!(r["server_bytes"], (192 << 10).to_string(), "{r:?}");
            assert_eq!(r["pattern_ok"], "true", "{r:?}");
            assert_eq!(r["error"], "", "{r:?}");
            let send_s: f64 = r["send_s"].parse().expect("send_s");
            assert!((1.3..3.0).contains(&send_s), "{model:?}: send_s {send_s}");
        }
        let slots: std::collections::BTreeSet<&str> =
            rows.iter().map(|r| r["client"].as_str()).collect();
        assert_eq!(slots.len(), 2, "both slots uploaded: {rows:?}");
        for row in steps(dir.path()) {
            let (errors, requests) = (num(&row, "errors"), num(&row, "requests"));
            let p95 = row["p95_ms"].parse::<f64>().unwrap_or(f64::INFINITY);
            eprintln!(
                "{model:?}: step {}: {errors} of {requests} failed, p95 {p95} ms",
                row["step"]
            );
            assert!(requests >= 4.0, "{row:?}");
            if blocked {
                // Both workers read an upload: /fast waits in the backlog.
                assert!(
                    errors > 0.0 || p95 > 150.0,
                    "{model:?} not blocked: {row:?}"
                );
            } else {
                assert_eq!(errors, 0.0, "{model:?} blocked: {row:?}");
                assert!(p95 < 150.0, "{model:?}: p95 {p95} ms");
            }
        }
    }
}

#[test]
fn slowloris_clients_are_held_for_the_whole_sweep() {
    let server = server::spawn(ServerConfig::new(Model::Sync, Some(2))).expect("server starts");
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("http://{}", server.local_addr());
    let outcome = sweep(
        &url,
        dir.path(),
        &[
            "--rates",
            "5,5",
            "--step-duration",
            "1s",
            "--calls-per-conn",
            "1",
            "--timeout",
            "300ms",
            "--slow-headers",
            "2",
            "--header-interval",
            "100ms",
        ],
    );
    let rows = csv_rows(
        &dir.path().join("slow-headers.csv"),
        schema::columns::<schema::SlowHeaderCells>(),
    );
    assert_eq!(rows.len(), 2, "{rows:?}");
    for r in &rows {
        assert_eq!(r["ended"], "run_end", "{r:?}");
        let held: f64 = r["held_s"].parse().expect("held_s");
        assert!(held > 2.0, "held for the whole sweep: {r:?}");
    }
    for row in steps(dir.path()) {
        // Both sync workers wait for a head that never ends.
        assert_eq!(num(&row, "err_timeout"), num(&row, "requests"), "{row:?}");
    }
    assert_eq!(outcome.replies(), 0);
    assert!(!dir.path().join("uploads.csv").exists());
}
