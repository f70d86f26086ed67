//! `slowlab reproduce --preset quick` end to end with real Gunicorn, real
//! NGINX, the Rust replica and pingora: every file with its header, the
//! phenomenon with wide margins, and nothing left running afterwards.

use crate::support;

use std::process::Command;

use support::{processes_mentioning, slowlab, state_dir};
use testkit::Table;

#[test]
fn quick_reproduction_shows_the_phenomenon_and_cleans_up() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("results");
    // A relative --out, as `scripts/reproduce` gives by default: NGINX must
    // still find its config and logs.
    let status = Command::new(slowlab())
        .args([
            "reproduce",
            "--preset",
            "quick",
            "--no-report",
            "--out",
            "results",
        ])
        .current_dir(tmp.path())
        .env("SLOWLAB_HOME", state_dir())
        .status()
        .expect("run slowlab reproduce");
    assert!(status.success(), "reproduce exited with {status}");
    assert!(
        !out.join("INCOMPLETE").exists(),
        "a finished run is not marked incomplete"
    );

    for (file, columns) in [
        (
            "conditions.csv",
            &[
                "server",
                "route",
                "slow_clients",
                "p50",
                "p95",
                "p95_min",
                "p95_max",
                "app_send_s",
                "client_receive_s",
                "temp_peak_mib",
            ][..],
        ),
        (
            "runs.csv",
            &[
                "run_id",
                "status",
                "app_cpu_cores",
                "app_throttled_ms",
                "app_memory_peak_bytes",
                "app_rss_peak_bytes",
                "proxy_cpu_cores",
                "loadgen_cpu_cores",
            ][..],
        ),
        (
            "requests.csv",
            &[
                "run_id",
                "server",
                "route",
                "slow_clients",
                "repetition",
                "latency_ms",
                "schedule_lag_ms",
                "connect_ms",
                "status",
            ][..],
        ),
        (
            "large-responses.csv",
            &["run_id", "receive_s", "app_send_s", "first_read_bytes"][..],
        ),
        (
            "resource-samples.csv",
            &[
                "run_id",
                "t_s",
                "component",
                "temp_logical_bytes",
                "temp_allocated_bytes",
                "memory_bytes",
                "send_queue_bytes",
                "recv_queue_bytes",
            ][..],
        ),
        (
            "socket-samples.csv",
            &[
                "run_id",
                "t_s",
                "component",
                "tx_queue_bytes",
                "rx_queue_bytes",
            ][..],
        ),
        (
            "crosscheck.csv",
            &["check", "server", "route", "predicted", "observed", "agree"][..],
        ),
    ] {
        let t = Table::read(&out.join(file)).unwrap_or_else(|e| panic!("{file}: {e:#}"));
        for c in columns {
            assert!(
                t.col(c).is_some(),
                "{file} lacks column {c}: {:?}",
                t.headers
            );
        }
        assert!(!t.rows.is_empty(), "{file} is empty");
    }
    // Every CSV of the directory, including those not listed above.
    for entry in std::fs::read_dir(&out).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "csv") {
            let t = Table::read(&path).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
            support::assert_documented(&path.display().to_string(), &t.headers);
        }
    }
    assert!(out.join("environment.json").exists());

    let runs = Table::read(&out.join("runs.csv")).unwrap();
    assert_eq!(runs.rows.len(), 12);
    for r in &runs.rows {
        assert_eq!(
            runs.get(r, "status"),
            Some("ok"),
            "run failed: {:?}",
            runs.get(r, "reason")
        );
    }

    // Each reader's first `recv` comes through from the load generator's
    // own file: a status line at least ("HTTP/1.1 200 OK\r\n", 17 bytes).
    let large = Table::read(&out.join("large-responses.csv")).unwrap();
    for r in &large.rows {
        let first = large.get(r, "first_read_bytes");
        assert!(
            first
                .and_then(|v| v.parse::<u64>().ok())
                .is_some_and(|n| n >= 17),
            "first_read_bytes {first:?}"
        );
    }

    let cross = Table::read(&out.join("crosscheck.csv")).unwrap();
    let verdict = |server: &str, route: &str| {
        cross
            .rows
            .iter()
            .find(|r| {
                cross.get(r, "check") == Some("prediction")
                    && cross.get(r, "server") == Some(server)
                    && cross.get(r, "route") == Some(route)
            })
            .and_then(|r| cross.get(r, "observed"))
            .map(str::to_string)
    };
    for (server, on) in [("gunicorn-sync2", "nginx-on"), ("rust-sync2", "pingora-on")] {
        assert_eq!(
            verdict(server, "direct").as_deref(),
            Some("blocked"),
            "{server} direct"
        );
        assert_eq!(
            verdict(server, on).as_deref(),
            Some("relieved"),
            "{server} {on}"
        );
    }

    let left = processes_mentioning(&out.to_string_lossy());
    assert!(left.is_empty(), "processes left behind: {left:?}");
}
