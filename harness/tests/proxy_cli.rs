//! `slowlab proxy` through the real binary: the ready line, stopping on
//! SIGTERM/SIGINT with downloads in flight, one-line errors for bad flags,
//! a port in use and addresses outside loopback, and taking a backlog one
//! connection per pass of the event loop, as NGINX does. Children are
//! killed from a `Drop` guard, so a failing test leaves nothing behind.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};

use std::time::{Duration, Instant};
use testkit::{Child, Outcome};

const BIN: &str = env!("CARGO_BIN_EXE_slowlab");

fn upstream(len: usize) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { break };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n");
                let _ = s.write_all(head.as_bytes());
                let block = vec![b'x'; 64 * 1024];
                let mut left = len;
                while left > 0 {
                    let n = left.min(block.len());
                    if s.write_all(&block[..n]).is_err() {
                        return;
                    }
                    left -= n;
                }
            });
        }
    });
    addr
}

/// Starts `slowlab proxy` with `args` and returns it with its ready line.
fn start(args: &[&str]) -> (Child, String) {
    let mut cmd = Command::new(BIN);
    cmd.arg("proxy").args(args);
    let child = Child::spawn(cmd);
    let mut line = child.line(Duration::from_secs(20)).expect("a ready line");
    line.push('\n');
    (child, line)
}

fn addr_of(ready: &str) -> SocketAddr {
    let rest = ready.strip_prefix("listening on ").expect(ready);
    rest.split_whitespace()
        .next()
        .unwrap()
        .parse()
        .expect(ready)
}

fn wait_exit(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    child
        .wait_for(within)
        .unwrap_or_else(|| panic!("did not exit within {within:?}"))
}

fn stop_with(signal: i32) {
    let up = upstream(16 << 20);
    let tmp = tempfile::tempdir().unwrap();
    let stats = tmp.path().join("stats.csv");
    let (mut guard, ready) = start(&[
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &up.to_string(),
        "--buffering",
        "on",
        "--temp-path",
        tmp.path().to_str().unwrap(),
        "--stats-log",
        stats.to_str().unwrap(),
    ]);
    assert!(ready.starts_with("listening on 127.0.0.1:"), "{ready}");
    assert!(ready.contains("(buffering on"), "{ready}");
    assert!(ready.ends_with(")\n"), "{ready}");
    let addr = addr_of(&ready);
    // Two downloads that read a little and then stall.
    let mut clients = Vec::new();
    for _ in 0..2 {
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"GET /large HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut buf = [0u8; 4096];
        assert!(c.read(&mut buf).unwrap() > 0);
        clients.push(c);
    }
    let pid = guard.id() as i32;
    let sent = Instant::now();
    // SAFETY: kill(2) on our own child's pid has no memory effects.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    let status = wait_exit(&mut guard, Duration::from_secs(2));
    assert!(status.success(), "{status:?} after {:?}", sent.elapsed());
    let text = std::fs::read_to_string(&stats).unwrap();
    assert!(
        text.starts_with("start_unix_s,mode,status,bytes,"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 3, "a row per cut download: {text}");
}

#[test]
fn ready_line_then_sigterm_stops_within_two_seconds() {
    stop_with(libc::SIGTERM);
}

#[test]
fn sigint_stops_too() {
    stop_with(libc::SIGINT);
}

fn run(args: &[&str]) -> Outcome {
    let mut cmd = Command::new(BIN);
    cmd.arg("proxy").args(args);
    Child::spawn(cmd).finish(Duration::from_secs(20))
}

fn assert_one_line_error(out: &Outcome, code: i32, needle: &str) {
    let stderr = &out.stderr;
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("slowlab: "), "{stderr}");
    assert!(stderr.contains(needle), "{needle} in {stderr}");
    assert!(out.stdout.is_empty(), "no ready line");
}

#[test]
fn bad_flags_get_one_line() {
    let out = run(&["--upstream", "127.0.0.1:1", "--buffering", "maybe"]);
    assert_one_line_error(&out, 2, "maybe");
    // The harness keeps clap's first line, which for a missing flag does
    // not name it.
    let out = run(&["--buffering", "on"]);
    assert_one_line_error(&out, 2, "required");
    let out = run(&[
        "--upstream",
        "127.0.0.1:1",
        "--buffering",
        "on",
        "--buffer-size",
        "16MB",
    ]);
    assert_one_line_error(&out, 2, "16MB");
    let out = run(&[
        "--upstream",
        "127.0.0.1:1",
        "--buffering",
        "on",
        "--buffers",
        "4",
    ]);
    assert_one_line_error(&out, 2, "--buffers");
    let out = run(&[
        "--upstream",
        "127.0.0.1:1",
        "--buffering",
        "on",
        "--busy-buffers-size",
        "1m",
    ]);
    assert_one_line_error(&out, 2, "--busy-buffers-size");
}

#[test]
fn port_in_use_is_one_line() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = run(&[
        "--listen",
        &addr,
        "--upstream",
        "127.0.0.1:1",
        "--buffering",
        "off",
    ]);
    assert_one_line_error(&out, 1, &addr);
    let stderr = &out.stderr;
    assert!(stderr.contains("in use"), "{stderr}");
}

/// Runs `slowlab proxy` with `args`, killing it if it has not exited within
/// 5 s (today's refusal takes milliseconds; a proxy that starts instead
/// would run until stopped).
fn run_briefly(args: &[&str]) -> Outcome {
    let mut cmd = Command::new(BIN);
    cmd.arg("proxy").args(args);
    Child::spawn(cmd).finish(Duration::from_secs(5))
}

#[test]
fn addresses_outside_loopback_are_refused_with_exit_2() {
    // Refused before any socket exists: 192.0.2.1 (TEST-NET-1) is never
    // connected to, 0.0.0.0 never bound.
    for (listen, upstream, flag) in [
        ("127.0.0.1:0", "192.0.2.1:80", "--upstream 192.0.2.1:80"),
        ("0.0.0.0:0", "127.0.0.1:1", "--listen 0.0.0.0:0"),
        ("[::]:0", "127.0.0.1:1", "--listen [::]:0"),
    ] {
        let out = run_briefly(&[
            "--listen",
            listen,
            "--upstream",
            upstream,
            "--buffering",
            "on",
        ]);
        assert_one_line_error(&out, 2, flag);
        let stderr = &out.stderr;
        assert!(stderr.contains("outside 127.0.0.0/8"), "{stderr}");
        assert!(stderr.contains("--allow-remote"), "{stderr}");
    }
}

#[test]
fn allow_remote_is_a_flag_of_proxy() {
    // Parse level only: --help stops before anything starts, and clap would
    // reject an unknown --allow-remote before reaching it.
    let out = Command::new(BIN)
        .args(["proxy", "--allow-remote", "--help"])
        .stdin(Stdio::null())
        .output()
        .expect("run slowlab");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("--allow-remote"), "{stdout}");
}

/// Connections waiting in the accept queue of the listener on `port`
/// (127.0.0.1): for a listening socket, `/proc/net/tcp`'s `rx_queue`.
fn accept_queue(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    let local = format!("0100007F:{port:04X}");
    table
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.len() > 4 && f[1] == local && f[3] == "0A")
        .and_then(|f| f[4].split(':').nth(1).map(str::to_owned))
        .map(|q| usize::from_str_radix(&q, 16).expect("rx_queue"))
        .expect("the proxy's listening socket")
}

/// Whether process `pid` is stopped (state `T` in `/proc/PID/stat`).
fn stopped(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/PID/stat");
    // The state follows the command name, which is in parentheses.
    stat.rsplit_once(") ")
        .is_some_and(|(_, rest)| rest.starts_with('T'))
}

/// Like NGINX (`multi_accept off`), the proxy takes one waiting
/// connection per pass of its event loop: a hundred connections queued
/// while it was stopped are not all accepted before the first of them is
/// answered. (Accepting them in one go, it showed no queue at all by
/// then; a saturated proxy piled up connections that way until it closed
/// idle kept-open ones for room and their clients were reset.)
///
/// What is left in the queue is read once the first answer has been
/// read, and a busy machine may keep this test from reading it for a
/// while, as the proxy goes on accepting: up to three tries, the first
/// that shows the queue decides. A proxy that accepts all at once shows
/// none at every try.
#[test]
fn a_backlog_is_accepted_one_connection_per_pass() {
    const QUEUED: usize = 100;
    let mut accepted_first = Vec::new();
    for _ in 0..3 {
        let left = backlog_left_at_first_answer(QUEUED);
        if left >= QUEUED / 4 {
            return;
        }
        accepted_first.push(QUEUED - left);
    }
    panic!(
        "{accepted_first:?} of {QUEUED} connections were accepted before the first was answered, in three tries"
    );
}

/// Queues `QUEUED` requests at a stopped proxy, lets it go, and returns
/// how many were still in its accept queue when the first was answered
/// (every one of them answered in the end).
fn backlog_left_at_first_answer(queued: usize) -> usize {
    let up = upstream(12);
    let (guard, ready) = start(&[
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &up.to_string(),
        "--buffering",
        "on",
        "--threads",
        "1",
    ]);
    let addr = addr_of(&ready);
    let pid = guard.id() as i32;
    // SAFETY: kill(2) on our own child's pid has no memory effects.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    // A signal is delivered asynchronously: wait until it is stopped.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !stopped(pid) {
        assert!(Instant::now() < deadline, "the proxy did not stop");
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut clients: Vec<TcpStream> = (0..queued)
        .map(|_| {
            let mut c = TcpStream::connect(addr).expect("connect while stopped");
            c.write_all(b"GET /fast HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .expect("request");
            c
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(5);
    while accept_queue(addr.port()) < queued {
        assert!(Instant::now() < deadline, "the backlog never held {queued}");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
    let first = &mut clients[0];
    first
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = [0u8; 256];
    let n = first.read(&mut buf).expect("the first answer");
    let left = accept_queue(addr.port());
    assert!(
        buf[..n].starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&buf[..n])
    );
    // Every one is answered in the end.
    for (i, c) in clients.iter_mut().enumerate().skip(1) {
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut head = [0u8; 12];
        c.read_exact(&mut head)
            .unwrap_or_else(|e| panic!("connection {i}: {e}"));
        assert_eq!(&head, b"HTTP/1.1 200", "connection {i}");
    }
    left
}
