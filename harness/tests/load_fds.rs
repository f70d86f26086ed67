//! `slowlab load` and its file descriptors: a run that needs more than the
//! hard open-files limit is refused before a packet (exit 2); a soft limit
//! below the need is raised, and said so; descriptors that run out during
//! the run are `fd_exhausted`, counted in the JSON, with empty percentiles
//! and exit status 1.

mod support;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use server::{Model, ServerConfig};
use support::child::{Child, Outcome};

/// `slowlab load` under an open-files limit of `soft`/`hard`, set in the
/// child before it runs (as `ulimit -Sn`/`-Hn` would), without the
/// privilege to raise the hard limit unless `privileged`.
fn load_with_limit(soft: u64, hard: u64, args: &[&str]) -> Child {
    load_as(soft, hard, false, args)
}

fn load_as(soft: u64, hard: u64, privileged: bool, args: &[&str]) -> Child {
    let mut cmd = Command::new(support::slowlab());
    cmd.arg("load").args(args);
    let lim = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: setrlimit and prctl are plain system calls, safe between fork
    // and exec.
    unsafe {
        cmd.pre_exec(move || {
            if !privileged {
                return support::limit_open_files(soft, hard);
            }
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Child::spawn(cmd)
}

/// A listener that accepts and holds every connection without answering,
/// counting them.
fn silent_listener() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        let mut held: Vec<TcpStream> = Vec::new();
        for s in listener.incoming().flatten() {
            seen.fetch_add(1, Ordering::SeqCst);
            held.push(s);
        }
    });
    (addr, count)
}

const ISSUE_LOAD: [&str; 7] = [
    "--slow",
    "2",
    "--fast-rate",
    "200",
    "--fast-duration",
    "2s",
    "--slow-rate",
];

#[test]
fn a_run_that_needs_more_than_the_hard_limit_is_refused_before_a_packet() {
    let (addr, accepted) = silent_listener();
    let url = format!("http://{addr}");
    // The issue's case: 400 /fast requests that may all be open within the
    // 30 s timeout, and 2 readers, under `ulimit -n 64` (soft and hard).
    let mut args = vec!["--target", url.as_str()];
    args.extend(ISSUE_LOAD);
    args.push("4MiB");
    let started = Instant::now();
    let out = load_with_limit(64, 64, &args).finish(Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].starts_with("slowlab: --slow 2 with --fast-rate 200"),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains("hard open-files limit (ulimit -Hn) is 64"),
        "{}",
        lines[0]
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(accepted.load(Ordering::SeqCst), 0, "nothing was sent");
}

#[test]
fn a_soft_limit_below_the_need_is_raised_and_said_so() {
    let mut config = ServerConfig::new(Model::Sync, Some(2));
    config.large_bytes = 256 << 10;
    let server = server::spawn(config).expect("server starts");
    let url = format!("http://{}", server.local_addr());
    let out: Outcome = load_with_limit(
        64,
        4096,
        &[
            "--target",
            &url,
            "--slow",
            "2",
            "--slow-rate",
            "4MiB",
            "--fast-rate",
            "200",
            "--fast-duration",
            "500ms",
            "--fast-start",
            "0ms",
            "--json",
        ],
    )
    .finish(Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("raised the open-files limit (RLIMIT_NOFILE) from 64 to 4096"),
        "{}",
        out.stderr
    );
    let json: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON summary");
    assert_eq!(json["fast"]["requests"], 100);
    assert!(json["errors"].get("fd_exhausted").is_none(), "{json}");
}

/// Whether this process may raise its hard limits: `CAP_SYS_RESOURCE`
/// (bit 24) in the effective set of `/proc/self/status`.
fn may_raise_hard_limit() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let hex = s
                .lines()
                .find_map(|l| l.strip_prefix("CapEff:"))?
                .trim()
                .to_string();
            u64::from_str_radix(&hex, 16).ok()
        })
        .is_some_and(|caps| caps & (1 << 24) != 0)
}

#[test]
fn a_hard_limit_below_the_need_is_raised_where_privilege_allows_else_refused_in_one_line() {
    let mut config = ServerConfig::new(Model::Sync, Some(2));
    config.large_bytes = 256 << 10;
    let server = server::spawn(config).expect("server starts");
    let url = format!("http://{}", server.local_addr());
    let mut args = vec!["--target", url.as_str()];
    args.extend(ISSUE_LOAD);
    args.extend(["4MiB", "--fast-start", "0ms", "--json"]);
    let out: Outcome = load_as(64, 64, true, &args).finish(Duration::from_secs(60));
    if may_raise_hard_limit() {
        assert_eq!(out.status.code(), Some(0), "{}", out.stderr);
        assert!(
            out.stderr
                .contains("raised the hard open-files limit (RLIMIT_NOFILE) from 64 to "),
            "{}",
            out.stderr
        );
    } else {
        // Root in a container without CAP_SYS_RESOURCE, or any other user.
        assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{}", out.stderr);
        assert!(
            lines[0].contains("hard open-files limit (ulimit -Hn) is 64 and raising it failed")
                && lines[0].contains("CAP_SYS_RESOURCE"),
            "{}",
            lines[0]
        );
    }
}

#[test]
fn descriptors_that_run_out_mid_run_are_fd_exhausted_and_exit_1() {
    let (addr, accepted) = silent_listener();
    let url = format!("http://{addr}");
    // 1000 requests that may all be open at once (none is answered): the
    // limit of 2000 allows them, so the run starts.
    let child = load_with_limit(
        2000,
        2000,
        &[
            "--target",
            &url,
            "--slow",
            "0",
            "--fast-rate",
            "500",
            "--fast-duration",
            "2s",
            "--fast-start",
            "0ms",
            "--timeout",
            "2s",
            "--json",
        ],
    );
    // Once it is sending, take its descriptors away, as an administrator's
    // prlimit would: every request from then on finds none.
    let deadline = Instant::now() + Duration::from_secs(20);
    while accepted.load(Ordering::SeqCst) < 20 {
        assert!(Instant::now() < deadline, "the load never connected");
        std::thread::sleep(Duration::from_millis(5));
    }
    let pid = libc::pid_t::try_from(child.id()).expect("pid fits");
    let lim = libc::rlimit {
        rlim_cur: 16,
        rlim_max: 16,
    };
    // SAFETY: prlimit on our own child, with a live rlimit to read.
    let rc = unsafe { libc::prlimit(pid, libc::RLIMIT_NOFILE, &lim, std::ptr::null_mut()) };
    assert_eq!(rc, 0, "prlimit: {}", std::io::Error::last_os_error());
    let out = child.finish(Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("ran out of file descriptors"),
        "{}",
        out.stderr
    );
    let json: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON summary");
    let exhausted = json["errors"]["fd_exhausted"].as_u64().unwrap_or(0);
    assert!(exhausted > 100, "{}", json["errors"]);
    assert_eq!(
        json["fast"]["errors"]["fd_exhausted"].as_u64(),
        Some(exhausted)
    );
    for p in ["p50", "p95", "p99", "max"] {
        assert!(json["fast"]["latency_ms"][p].is_null(), "{p} is left empty");
    }
}
