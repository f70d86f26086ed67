//! Ctrl-C in the middle of a reproduction: every process of the run stops,
//! its scratch directories are removed, the files written so far stay, and
//! the directory is marked incomplete. A scratch directory left by a killed
//! harness is removed by the next one.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use support::{processes_mentioning, slowlab, state_dir};

#[test]
fn sigint_mid_run_leaves_no_process_and_marks_the_results() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("results");
    // The harness's scratch directories go here, so that we can see them go.
    let scratch = tmp.path().join("tmp");
    std::fs::create_dir(&scratch).unwrap();
    // What a harness killed with SIGKILL leaves: a scratch directory whose
    // process is gone (a child we waited for).
    let mut gone = Command::new("true").spawn().unwrap();
    let stale = scratch.join(format!("slowlab-run-{}-zzzz", gone.id()));
    gone.wait().unwrap();
    std::fs::create_dir(&stale).unwrap();
    let mut child = Command::new(slowlab())
        .args([
            "reproduce",
            "--preset",
            "quick",
            "--no-report",
            "--only",
            "rust-sync2,direct,slow=2",
            "--out",
        ])
        .arg(&out)
        .env("SLOWLAB_HOME", state_dir())
        .env("TMPDIR", &scratch)
        .spawn()
        .expect("start reproduce");
    // Wait until the load generator of the first run is running.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let loading = processes_mentioning(&out.to_string_lossy())
            .iter()
            .any(|(_, cmd)| cmd.contains(" load "));
        if loading {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the run never started its load generator"
        );
        assert!(child.try_wait().unwrap().is_none(), "reproduce ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("reproduce did not stop within 20 s of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        !status.success(),
        "an interrupted reproduction exits non-zero"
    );
    // the book, "Exit status": 130 for SIGINT, as a shell reports it.
    assert_eq!(status.code(), Some(130), "{status:?}");
    let marker = std::fs::read_to_string(out.join("INCOMPLETE")).expect("INCOMPLETE marker");
    assert!(marker.contains("interrupted"), "{marker}");
    let runs = std::fs::read_to_string(out.join("runs.csv")).expect("runs.csv kept");
    assert!(runs.contains("interrupted"), "{runs}");
    let left: Vec<_> = std::fs::read_dir(&scratch)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "scratch directories left behind: {left:?}");
    // Give orphans a moment to be reaped, then look for survivors.
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let left = processes_mentioning(&out.to_string_lossy());
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "processes left behind: {left:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
