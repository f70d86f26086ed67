//! `check` stopped by SIGINT or SIGTERM in the middle of a level: exit
//! 130/143 as the book's exit-status table says, the levels measured so far kept with
//! an `INCOMPLETE` marker and a report, nothing left running, its scratch
//! directories removed; and a scratch directory a killed check left behind
//! is removed by the next start.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use support::{processes_mentioning, slowlab};

/// Starts a check of a sync server that levels can hold, waits for the
/// load generator of its level of 1 slow reader (the baseline is measured
/// by then), then sends `signal`.
fn interrupt(signal: libc::c_int, out: &Path, scratch: &Path) -> std::process::ExitStatus {
    let serve = format!(
        "{} serve --listen {{host}}:{{port}} --model sync --workers 2",
        slowlab().display()
    );
    let mut child = Command::new(slowlab())
        .args(["check", "--server-cmd", &serve, "--large-path", "/large"])
        .args([
            "--max-slow",
            "8",
            "--level-duration",
            "3s",
            "--fast-rate",
            "10",
        ])
        .arg("--out")
        .arg(out)
        .env("TMPDIR", scratch)
        .spawn()
        .expect("start check");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let level = out.join("direct").join("level-1");
        let loading = processes_mentioning(&level.to_string_lossy())
            .iter()
            .any(|(_, cmd)| cmd.contains(" load "));
        if loading {
            break;
        }
        assert!(Instant::now() < deadline, "the check never started a level");
        assert!(child.try_wait().unwrap().is_none(), "check ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, signal);
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("check did not stop within 20 s of signal {signal}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_interrupted_check_keeps_its_levels_marked_incomplete() {
    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("results");
        let scratch = tmp.path().join("tmp");
        std::fs::create_dir(&scratch).unwrap();
        // What a check killed with SIGKILL leaves: a scratch directory
        // whose process is gone.
        let mut gone = Command::new("true").spawn().unwrap();
        let stale = scratch.join(format!("slowlab-check-{}-zzzz", gone.id()));
        gone.wait().unwrap();
        std::fs::create_dir(&stale).unwrap();

        let status = interrupt(signal, &out, &scratch);
        assert_eq!(status.code(), Some(code), "signal {signal}: {status:?}");
        let marker = std::fs::read_to_string(out.join("INCOMPLETE")).expect("INCOMPLETE");
        assert!(marker.contains("interrupted"), "{marker}");
        assert!(
            out.join("check.csv").is_file(),
            "the levels measured are kept"
        );
        assert!(out.join("report.md").is_file(), "and reported");
        let left: Vec<_> = std::fs::read_dir(&scratch)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "scratch directories left: {left:?}");
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            let left = processes_mentioning(&out.to_string_lossy());
            if left.is_empty() {
                break;
            }
            assert!(Instant::now() < deadline, "processes left: {left:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[test]
fn a_check_waiting_for_its_server_stops_at_once_on_sigterm() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("results");
    // A server that never listens: the check waits up to 20 s for it.
    let mut child = Command::new(slowlab())
        .args([
            "check",
            "--server-cmd",
            "sleep 60 # {port}",
            "--large-path",
            "/large",
        ])
        .arg("--out")
        .arg(&out)
        .spawn()
        .expect("start check");
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let sent = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(sent.elapsed() < Duration::from_secs(5), "still waiting");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert!(processes_mentioning("sleep 60").is_empty());
}
