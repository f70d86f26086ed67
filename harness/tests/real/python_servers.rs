//! The Python servers beyond Gunicorn sync (Uvicorn, Gunicorn with Uvicorn
//! or gevent workers, Waitress, Granian), as `slowlab prepare` installs them:
//! each answers the routes with the bytes of `slowlab serve` and writes the
//! shared send log; and a short reproduction of `uvicorn` and
//! `gunicorn-gevent2` at 2 slow readers shows the predicted verdict.

use crate::support;

use std::process::Command;

use catalogue::{Recipe, Server};
use support::{processes_mentioning, slowlab, stacks, state_dir};
use testkit::Table;

const PYTHON: [Server; 5] = [
    Server::Uvicorn,
    Server::GunicornUvicorn2,
    Server::GunicornGevent2,
    Server::Waitress4,
    Server::Granian,
];

#[test]
fn every_python_server_sends_the_bytes_of_slowlab_serve_and_logs_its_sends() {
    let listed: Vec<Server> = Server::ALL
        .into_iter()
        .filter(|s| matches!(s.recipe(), Recipe::Python(_)))
        .collect();
    assert_eq!(listed, PYTHON, "a Python server this test does not cover");
    let tools = stacks::tools();
    let dir = tempfile::tempdir().unwrap();
    let launcher = stacks::launcher(&tools, dir.path());
    let (_rust, rust_addr) = stacks::serve(dir.path(), &[]);

    for server in PYTHON {
        let logs = dir.path().join(server.name());
        std::fs::create_dir_all(&logs).unwrap();
        let running = stacks::start(&launcher, server, &logs);
        support::assert_same_answers(server.name(), running.addr, rust_addr);
        drop(running);
        // One send-log row for the one /large GET, under the shared header.
        let log = std::fs::read_to_string(logs.join("send-log.csv")).unwrap();
        let mut lines = log.lines();
        assert_eq!(
            lines.next(),
            Some("start_unix_s,start_s,app_send_s,bytes,worker,complete"),
            "{server}"
        );
        let rows: Vec<&str> = lines.collect();
        assert_eq!(rows.len(), 1, "{server}: {log}");
        let cols: Vec<&str> = rows[0].split(',').collect();
        assert_eq!(cols.len(), 6, "{server}: {log}");
        assert_eq!((cols[3], cols[5]), ("16777216", "true"), "{server}: {log}");
        let send: f64 = cols[2].parse().unwrap();
        assert!(send > 0.0 && send < 30.0, "{server}: app_send_s {send}");
    }
    let left = processes_mentioning(&dir.path().to_string_lossy());
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

#[test]
fn uvicorn_and_gevent_hold_no_handler_for_two_slow_readers() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("results");
    let status = Command::new(slowlab())
        .args([
            "reproduce",
            "--preset",
            "servers",
            "--only",
            "uvicorn,gunicorn-gevent2,slow=0,slow=2",
            "--runs",
            "1",
            "--no-report",
            "--out",
        ])
        .arg(&out)
        .env("SLOWLAB_HOME", state_dir())
        .status()
        .expect("run slowlab reproduce");
    assert!(status.success(), "reproduce exited with {status}");
    let runs = Table::read(&out.join("runs.csv")).unwrap();
    assert_eq!(runs.rows.len(), 4);
    for r in &runs.rows {
        assert_eq!(
            runs.get(r, "status"),
            Some("ok"),
            "run failed: {:?}",
            runs.get(r, "reason")
        );
    }
    let cross = Table::read(&out.join("crosscheck.csv")).unwrap();
    for server in ["uvicorn", "gunicorn-gevent2"] {
        let row = cross
            .rows
            .iter()
            .find(|r| {
                cross.get(r, "check") == Some("prediction")
                    && cross.get(r, "server") == Some(server)
            })
            .unwrap_or_else(|| panic!("no prediction row for {server}"));
        assert_eq!(cross.get(row, "predicted"), Some("relieved"), "{server}");
        assert_eq!(
            cross.get(row, "observed"),
            Some("relieved"),
            "{server}: p95 {:?} ms against {:?} ms",
            cross.get(row, "p95_ms"),
            cross.get(row, "baseline_p95_ms")
        );
        assert_eq!(cross.get(row, "agree"), Some("yes"), "{server}");
    }
    // Each server's send log made it into app-sends.csv: two complete rows
    // per server at 2 slow.
    let sends = Table::read(&out.join("app-sends.csv")).unwrap();
    for server in ["uvicorn", "gunicorn-gevent2"] {
        let complete = sends
            .rows
            .iter()
            .filter(|r| sends.get(r, "server") == Some(server))
            .filter(|r| sends.get(r, "complete") == Some("true"))
            .count();
        assert_eq!(complete, 2, "{server}");
    }
    let left = processes_mentioning(&out.to_string_lossy());
    assert!(left.is_empty(), "processes left behind: {left:?}");
}
