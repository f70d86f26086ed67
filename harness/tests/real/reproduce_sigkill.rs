//! A harness killed with SIGKILL in the middle of a Gunicorn run: Gunicorn's
//! master and its workers go within a second or two like every other
//! component (the master through its parent-death signal, each worker
//! through the one the harness's Gunicorn config gives it after fork), so
//! nothing keeps listening on the run's port. Idle workers are the case
//! that lingered: they notice a dead master only when their select() times
//! out, 15 s with Gunicorn's default --timeout; so the run has no slow
//! client.

use crate::support;

use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use support::{processes_mentioning, slowlab, state_dir};

#[test]
fn gunicorn_goes_with_a_harness_killed_by_sigkill() {
    testkit::real::require_program("Gunicorn", &state_dir().join("venv/bin/gunicorn"));
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("results");
    let mut child = Command::new(slowlab())
        .args([
            "reproduce",
            "--preset",
            "quick",
            "--no-report",
            "--only",
            "gunicorn-sync2,direct,slow=0",
            "--out",
        ])
        .arg(&out)
        .env("SLOWLAB_HOME", state_dir())
        .spawn()
        .expect("start reproduce");
    let needle = out.to_string_lossy().to_string();
    // Wait until the load generator runs and the workers sit idle between
    // /fast requests.
    let deadline = Instant::now() + Duration::from_secs(60);
    let bind = loop {
        let procs = processes_mentioning(&needle);
        let loading = procs.iter().any(|(_, cmd)| cmd.contains(" load "));
        let bind = procs.iter().find_map(|(_, cmd)| {
            let mut words = cmd.split(' ');
            words.find(|w| *w == "--bind")?;
            words.next()?.parse::<SocketAddr>().ok()
        });
        if let (true, Some(bind)) = (loading, bind) {
            break bind;
        }
        assert!(
            Instant::now() < deadline,
            "the run never started: {procs:?}"
        );
        assert!(child.try_wait().unwrap().is_none(), "reproduce ended early");
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(1500));
    let gunicorns = processes_mentioning(&needle)
        .into_iter()
        .filter(|(_, cmd)| cmd.contains("gunicorn"))
        .count();
    assert!(
        gunicorns >= 3,
        "master and two workers expected, saw {gunicorns}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let left: Vec<_> = processes_mentioning(&needle);
    let listening = TcpStream::connect_timeout(&bind, Duration::from_millis(500)).is_ok();
    // Whatever the outcome, leave nothing behind for the next test.
    for (pid, _) in &left {
        // SAFETY: kill(2) on a pid we just read; at worst it is gone.
        unsafe {
            libc::kill(*pid as libc::pid_t, libc::SIGKILL);
        }
    }
    assert!(left.is_empty(), "2 s after the harness's SIGKILL: {left:?}");
    assert!(!listening, "something still listens on {bind}");
}
