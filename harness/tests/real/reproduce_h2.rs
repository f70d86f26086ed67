//! `slowlab reproduce --preset h2`, scaled to rust-sync2 behind
//! `nginx-h2-off` at 2 slow streams: one connection of 2 and 2
//! connections of 1 are two conditions, each recorded with its streams
//! per connection and window, and both hold the replica's 2 workers, as
//! the rule predicts of a proxy that does not buffer. Waits for the load
//! generator's `--http2`.

use crate::support;

use std::process::Command;

use support::{slowlab, state_dir};
use testkit::Table;

#[test]
fn h2_preset_records_streams_per_connection_and_both_shapes_block() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("results");
    let status = Command::new(slowlab())
        .args([
            "reproduce",
            "--preset",
            "h2",
            "--only",
            "rust-sync2,nginx-h2-off,slow=0,slow=2",
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
    let shapes: Vec<(String, String, String)> = runs
        .rows
        .iter()
        .map(|r| {
            assert_eq!(
                runs.get(r, "status"),
                Some("ok"),
                "{:?}",
                runs.get(r, "reason")
            );
            let get = |c| runs.get(r, c).unwrap_or_default().to_string();
            (
                get("slow_clients"),
                get("streams_per_conn"),
                get("h2_window_bytes"),
            )
        })
        .collect();
    let want = |slow: &str, spc: &str| (slow.to_string(), spc.to_string(), "65535".to_string());
    assert_eq!(shapes, [want("0", "1"), want("2", "2"), want("2", "1")]);
    let cross = Table::read(&out.join("crosscheck.csv")).unwrap();
    let observed: Vec<(&str, &str)> = cross
        .rows
        .iter()
        .filter(|r| cross.get(r, "check") == Some("prediction"))
        .map(|r| {
            (
                cross.get(r, "streams_per_conn").unwrap_or_default(),
                cross.get(r, "observed").unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(observed.len(), 2, "{observed:?}");
    assert!(
        observed.iter().all(|(_, o)| *o == "blocked"),
        "one connection of 2 streams holds both workers as 2 connections do: {observed:?}"
    );
}
