//! Bad input of every verb through the real binary (the book, "Exit status"):
//! oversized numbers, durations that would overflow a deadline, values that
//! parse but cannot work, addresses outside loopback. Each gives exit
//! status 2 and one `slowlab: ` line naming the flag, at once, without
//! growing memory, and without starting anything.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::slowlab;

/// What a refused command left: its status, its stderr, its peak RSS.
struct Refusal {
    code: Option<i32>,
    stderr: String,
    max_rss_kib: i64,
    took: Duration,
}

/// Runs `slowlab args`, kills it if it is still running after 10 s, and
/// reads its peak RSS from `wait4`, which also reaps it (clippy cannot see
/// that).
#[allow(clippy::zombie_processes)]
fn refuse(args: &[&str]) -> Refusal {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let err = dir.path().join("stderr");
    let mut child = Command::new(slowlab())
        .args(args)
        .env("SLOWLAB_HOME", support::state_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("start slowlab");
    let pid = libc::pid_t::try_from(child.id()).expect("pid fits");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut status = 0;
        // SAFETY: rusage is plain old data; wait4 only writes into it and
        // `status`, for a child of ours that nobody else reaps.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if rc == pid {
            let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
            return Refusal {
                code,
                stderr: std::fs::read_to_string(&err).expect("stderr"),
                max_rss_kib: usage.ru_maxrss,
                took: started.elapsed(),
            };
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} still running after 10 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn assert_refused(args: &[&str], needle: &str) {
    let r = refuse(args);
    assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: one line, got {:?}", r.stderr);
    assert!(lines[0].starts_with("slowlab: "), "{args:?}: {}", lines[0]);
    assert!(lines[0].contains(needle), "`{needle}` not in {}", lines[0]);
    // A second is generous for parsing arguments on a loaded machine.
    assert!(
        r.took < Duration::from_secs(2),
        "{args:?} took {:?}",
        r.took
    );
    assert!(
        r.max_rss_kib < 64 * 1024,
        "{args:?} grew to {} KiB",
        r.max_rss_kib
    );
}

const TARGET: [&str; 3] = ["load", "--target", "http://127.0.0.1:1"];

fn load(extra: &[&'static str]) -> Vec<&'static str> {
    TARGET.iter().chain(extra).copied().collect()
}

#[test]
fn oversized_load_inputs_are_refused_at_once() {
    for (extra, needle) in [
        (
            &["--slow", "0", "--fast-rate", "1e9", "--fast-duration", "1s"][..],
            "--fast-rate",
        ),
        (&["--slow", "100000"][..], "--slow"),
        (
            &["--fast-duration", "99999999999999s"][..],
            "--fast-duration",
        ),
        (&["--timeout", "99999999999999s"][..], "--timeout"),
        (&["--fast-start", "99999999999999s"][..], "--fast-start"),
        (&["--read-chunk", "1GiB"][..], "--read-chunk"),
        (
            &["--fast-rate", "10000", "--fast-duration", "1day"][..],
            "more than 1000000",
        ),
    ] {
        assert_refused(&load(extra), needle);
    }
}

#[test]
fn load_values_that_cannot_work_are_bad_input() {
    for (args, needle) in [
        (load(&["--slow-rate", "0"]), "--slow-rate"),
        (load(&["--timeout", "0s"]), "--timeout"),
        (vec!["load", "--target", "garbage"], "garbage"),
        (vec!["load", "--target", "ftp://127.0.0.1:1"], "http://"),
        (
            vec!["load", "--target", "https://127.0.0.1:1"],
            "--tls-ca FILE",
        ),
        (
            vec!["load", "--target", "http://192.0.2.1:80"],
            "--allow-remote",
        ),
        (load(&["--label", "seq=1"]), "clash"),
        // `load` runs against a server that is already there: it cannot
        // place it in a namespace, so it has no `--link` (the book: "Shaped
        // links").
        (
            load(&["--link", "rate=2MiB"]),
            "unexpected argument '--link'",
        ),
    ] {
        assert_refused(&args, needle);
    }
}

#[test]
fn a_bad_bind_address_is_bad_input() {
    for (flag, value, needle) in [
        ("--fast-bind", "192.0.2.1", "outside 127.0.0.0/8"),
        ("--fast-bind", "::1", "address family"),
        ("--slow-bind", "192.0.2.1", "outside 127.0.0.0/8"),
        // Slow client 1 would bind 128.0.0.0.
        ("--slow-bind", "127.255.255.255", "the last slow client"),
    ] {
        for verb in ["load", "sweep-load"] {
            let mut args = match verb {
                "load" => load(&["--slow", "2", "--fast-duration", "1s"]),
                _ => vec![
                    "sweep-load",
                    "--target",
                    "http://127.0.0.1:9",
                    "--rates",
                    "1",
                    "--slow",
                    "2",
                    "--out",
                    "/nonexistent/never-written",
                ],
            };
            args.extend([flag, value]);
            let o = Command::new(slowlab())
                .args(&args)
                .stdin(Stdio::null())
                .output()
                .expect("slowlab");
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{verb} {flag} {value}: {err}");
            assert_eq!(err.lines().count(), 1, "{verb} {flag} {value}: {err}");
            assert!(err.contains(needle), "{verb} {flag} {value}: {err}");
        }
    }
    assert_refused(&load(&["--fast-bind", "nonsense"]), "--fast-bind");
}

#[test]
fn oversized_serve_and_proxy_inputs_are_refused_at_once() {
    assert_refused(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--model",
            "async",
            "--workers",
            "100000",
        ],
        "--workers",
    );
    let proxy = [
        "proxy",
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        "127.0.0.1:1",
        "--buffering",
        "on",
    ];
    for (extra, needle) in [
        (["--threads", "100000"], "--threads"),
        (["--read-timeout", "99999999999999s"], "--read-timeout"),
        (["--send-timeout", "99999999999999s"], "--send-timeout"),
        (["--gauge-interval", "0s"], "--gauge-interval"),
        (["--buffers", "100000x64m"], "--buffers"),
    ] {
        let args: Vec<&str> = proxy.iter().chain(&extra).copied().collect();
        assert_refused(&args, needle);
    }
}

#[test]
fn serve_listens_on_loopback_only_unless_allowed() {
    assert_refused(&["serve", "--listen", "0.0.0.0:0"], "--allow-remote");
    assert_refused(&["serve", "--listen", "[::]:0"], "refusing --listen");
}

#[test]
fn sweep_checks_its_flags_before_it_starts_a_stack() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("sweep");
    let out = out.to_str().expect("utf-8");
    let base = ["sweep", "--server", "rust-async", "--no-caps", "--out", out];
    for (extra, needle) in [
        (&["--step-duration", "0s"][..], "--step-duration"),
        (&["--timeout", "0s"][..], "--timeout"),
        (&["--timeout", "99999999999999s"][..], "--timeout"),
        (&["--high", "2000000"][..], "--high"),
        (
            &["--low", "100", "--high", "50"][..],
            "--low 100 is above --high 50",
        ),
        (
            &["--low", "1", "--high", "100000", "--step", "1"][..],
            "steps",
        ),
        (&["--slow", "100000"][..], "--slow"),
        (&["--slow-upload", "25001"][..], "--slow-upload"),
        (&["--upload-path", "up"][..], "--upload-path"),
    ] {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        assert_refused(&args, needle);
    }
    assert!(
        !tmp.path().join("sweep").join("sweeps").exists(),
        "no sweep was started"
    );
    let base = [
        "sweep-load",
        "--target",
        "http://127.0.0.1:1",
        "--rates",
        "10",
        "--out",
        out,
    ];
    for (extra, needle) in [
        (["--timeout", "0s"], "--timeout"),
        (["--step-duration", "0s"], "--step-duration"),
        (["--slow", "100000"], "--slow"),
        (["--upload-bytes", "65GiB"], "--upload-bytes"),
        (["--header-interval", "0s"], "--header-interval"),
    ] {
        let args: Vec<&str> = base.iter().chain(&extra).copied().collect();
        assert_refused(&args, needle);
    }
}

#[test]
fn a_sweep_that_needs_more_descriptors_than_allowed_starts_no_stack() {
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("sweep");
    let mut cmd = Command::new(slowlab());
    cmd.args([
        "sweep",
        "--server",
        "rust-async",
        "--no-caps",
        "--high",
        "100",
        "--out",
    ])
    .arg(&out)
    .env("SLOWLAB_HOME", support::state_dir());
    // SAFETY: limit_open_files makes plain system calls only.
    unsafe {
        cmd.pre_exec(|| support::limit_open_files(64, 64));
    }
    let o = support::child::Child::spawn(cmd).finish(Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(2), "{}", o.stderr);
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", o.stderr);
    assert!(
        lines[0].contains("hard open-files limit (ulimit -Hn) is 64"),
        "{}",
        lines[0]
    );
    assert!(!out.join("sweeps").exists(), "no stack was started");
}
