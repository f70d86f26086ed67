//! SIGTERM in the middle of a sweep: every process stops, the steps done
//! stay, the directory is marked incomplete, and the exit status is 143
//! (the book, "Exit status").

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use support::child::Child;
use support::{processes_mentioning, slowlab, state_dir};

#[test]
fn sigterm_mid_sweep_exits_143_and_marks_the_results() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("sweep");
    let mut cmd = Command::new(slowlab());
    cmd.args([
        "sweep",
        "--server",
        "rust-async",
        "--route",
        "direct",
        "--low",
        "10",
        "--high",
        "100",
        "--step",
        "10",
        "--step-duration",
        "1s",
        "--calls-per-conn",
        "1",
        "--no-caps",
        "--out",
    ])
    .arg(&out)
    .env("SLOWLAB_HOME", state_dir());
    let child = Child::spawn(cmd);
    let needle = out.to_string_lossy().to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !processes_mentioning(&needle)
        .iter()
        .any(|(_, c)| c.contains(" sweep-load "))
    {
        assert!(
            Instant::now() < deadline,
            "the sweep never started its load"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Let a step or two finish.
    std::thread::sleep(Duration::from_millis(2500));
    let pid = libc::pid_t::try_from(child.id()).expect("pid fits");
    // SAFETY: kill(2) on our own child, not reaped yet.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let o = child.finish(Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(143), "{}\n{}", o.stdout, o.stderr);
    let last = o.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("slowlab: interrupted by SIGTERM; partial results in"),
        "{}",
        o.stderr
    );
    let marker = std::fs::read_to_string(out.join("INCOMPLETE")).expect("INCOMPLETE marker");
    assert!(marker.contains("interrupted"), "{marker}");
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let left = processes_mentioning(&needle);
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "processes left behind: {left:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
