//! Faults: upstream down, silent or cut; a client that aborts, leaves before
//! the head, stops reading or sends a short body; a malformed request;
//! `X-Accel-Buffering`.

mod support;

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use proxy::Buffering;
use support::*;

#[test]
fn upstream_down_is_502() {
    let gone = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = gone.local_addr().unwrap();
    drop(gone);
    let dir = tempfile::tempdir().unwrap();
    let proxy = start_proxy(proxy_config(addr, Buffering::On, dir.path()));
    let reply = get(proxy.local_addr(), "/fast", &Reader::fast());
    assert_eq!(reply.status, 502);
    let row = &rows(&dir.path().join("stats.csv"), 1)[0];
    assert_eq!(row.get("status"), "502");
    assert_eq!(row.get("error"), "upstream_connect");
}

#[test]
fn silent_upstream_is_504_after_the_read_timeout() {
    let upstream = FakeUpstream::start(|s| {
        std::thread::sleep(Duration::from_secs(3));
        drop(s);
    });
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = proxy_config(upstream.addr, Buffering::On, dir.path());
    cfg.read_timeout = Duration::from_millis(300);
    let proxy = start_proxy(cfg);
    let reply = get(proxy.local_addr(), "/fast", &Reader::fast());
    assert_eq!(reply.status, 504);
    assert!(reply.elapsed >= Duration::from_millis(300));
    assert_eq!(
        rows(&dir.path().join("stats.csv"), 1)[0].get("error"),
        "upstream_timeout"
    );
}

#[test]
fn upstream_cut_mid_body_closes_the_client_connection() {
    let upstream = FakeUpstream::start(|mut s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n");
        let _ = s.write_all(&[7u8; 1000]);
        // Dropped here: the body ends 999,000 bytes early.
    });
    for buffering in [Buffering::On, Buffering::Off] {
        let dir = tempfile::tempdir().unwrap();
        let proxy = start_proxy(proxy_config(upstream.addr, buffering, dir.path()));
        let reply = get(proxy.local_addr(), "/", &Reader::fast());
        assert_eq!(reply.status, 200, "the head was already sent");
        assert!(reply.body_len < 1_000_000, "{buffering:?}: body cut short");
        let row = &rows(&dir.path().join("stats.csv"), 1)[0];
        assert_eq!(row.get("error"), "upstream_closed");
        assert_eq!(row.get("client_done_s"), "");
    }
}

#[test]
fn malformed_request_is_400() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = FakeUpstream::start(|_| panic!("must not be reached"));
    let proxy = start_proxy(proxy_config(upstream.addr, Buffering::On, dir.path()));
    let mut s = connect(proxy.local_addr(), None);
    s.write_all(b"THIS IS NOT HTTP\r\n\x01\x02\r\n\r\n")
        .unwrap();
    let reply = read_reply(&mut s, &Reader::fast(), Instant::now());
    assert_eq!(reply.status, 400);
    assert_eq!(
        rows(&dir.path().join("stats.csv"), 1)[0].get("error"),
        "bad_request"
    );
}

#[test]
fn client_abort_mid_spool_releases_file_and_upstream_at_once() {
    let (closed_tx, closed_rx) = mpsc::channel::<u64>();
    let upstream = FakeUpstream::start(move |mut s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nX-Slowlab-Block: 65536\r\n\r\n");
        // Close-delimited and endless: only the proxy letting go ends it.
        let sent = write_pattern(&mut s, u64::MAX);
        let _ = closed_tx.send(sent);
    });
    let dir = tempfile::tempdir().unwrap();
    let proxy = start_proxy(proxy_config(upstream.addr, Buffering::On, dir.path()));
    let mut client = connect(proxy.local_addr(), Some(8 * 1024));
    client
        .write_all(b"GET /large HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 16 * 1024];
    let _ = client.read(&mut buf).unwrap();
    // The proxy spools to an unlinked 0600 file that only /proc shows.
    assert!(
        eventually(PATIENCE, || !open_files_in(dir.path()).is_empty()),
        "no temp file opened"
    );
    let fds = open_files_in(dir.path());
    assert_eq!(fds.len(), 1, "{fds:?}");
    assert!(fds[0].ends_with("(deleted)"), "{fds:?}");
    let fd_path = fds[0].split(" -> ").next().unwrap().to_string();
    let mode = std::fs::metadata(&fd_path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(std::fs::read_dir(temp_path(dir.path())).unwrap().count(), 0);

    drop(client);
    let released = Instant::now();
    assert!(
        eventually(Duration::from_secs(5), || open_files_in(dir.path())
            .is_empty()),
        "temp file still open"
    );
    let sent = closed_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("upstream connection not released");
    assert!(released.elapsed() < Duration::from_secs(5));
    assert_eq!(std::fs::read_dir(temp_path(dir.path())).unwrap().count(), 0);
    let row = &rows(&dir.path().join("stats.csv"), 1)[0];
    assert_eq!(row.get("error"), "client_closed");
    assert!(row.num("spilled_bytes") > 0.0);
    assert!(sent >= row.num("spilled_bytes") as u64);
}

#[test]
fn client_gone_while_the_origin_stalls_releases_the_upstream_at_once() {
    // The origin sends the head and a little of the body, then stalls: the
    // proxy has nothing to write, so only a look at the client's socket can
    // tell that the client left.
    let (closed_tx, closed_rx) = mpsc::channel::<Instant>();
    let upstream = FakeUpstream::start(move |mut s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n");
        let _ = s.write_all(&[7u8; 1000]);
        let mut buf = [0u8; 64];
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        // Ends when the proxy closes this connection (or after 20 s).
        let _ = s.read(&mut buf);
        let _ = closed_tx.send(Instant::now());
    });
    for buffering in [Buffering::Off, Buffering::On] {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = proxy_config(upstream.addr, buffering, dir.path());
        cfg.read_timeout = Duration::from_secs(30);
        let proxy = start_proxy(cfg);
        let mut client = connect(proxy.local_addr(), None);
        client
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while got.len() < 1000 || find(&got, b"\r\n\r\n").is_none() {
            let n = client.read(&mut buf).unwrap();
            assert!(n > 0, "{buffering:?}: proxy closed early");
            got.extend_from_slice(&buf[..n]);
        }
        drop(client);
        let left = Instant::now();
        let closed = closed_rx
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("{buffering:?}: upstream connection kept"));
        assert!(
            closed.duration_since(left) < Duration::from_secs(2),
            "{buffering:?}: released after {:?}",
            closed.duration_since(left)
        );
        let row = &rows(&dir.path().join("stats.csv"), 1)[0];
        assert_eq!(row.get("error"), "client_closed", "{buffering:?}");
    }
}

/// An upstream that reads whatever the proxy sends and never answers; it
/// reports when a request head arrived and when the proxy let go.
struct MuteUpstream {
    upstream: FakeUpstream,
    arrived: mpsc::Receiver<Instant>,
    closed: mpsc::Receiver<Instant>,
}

impl MuteUpstream {
    fn start() -> MuteUpstream {
        let (arrived_tx, arrived) = mpsc::channel::<Instant>();
        let (closed_tx, closed) = mpsc::channel::<Instant>();
        let upstream = FakeUpstream::start(move |mut s| {
            let _ = arrived_tx.send(Instant::now());
            s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            let mut buf = [0u8; 4096];
            // Ends when the proxy closes this connection (or after 20 s).
            while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
            let _ = closed_tx.send(Instant::now());
        });
        MuteUpstream {
            upstream,
            arrived,
            closed,
        }
    }

    /// A proxy in front of it whose read timeout (30 s) is far away.
    fn proxy(&self, buffering: Buffering, dir: &std::path::Path) -> proxy::ProxyHandle {
        let mut cfg = proxy_config(self.upstream.addr, buffering, dir);
        cfg.read_timeout = Duration::from_secs(30);
        start_proxy(cfg)
    }

    fn wait_for_request(&self) {
        self.arrived
            .recv_timeout(PATIENCE)
            .expect("request head not forwarded");
    }

    /// Asserts that the proxy closed the connection within 1 s of `since`.
    fn assert_released(&self, since: Instant, what: Buffering) {
        let released = self
            .closed
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("{what:?}: upstream connection kept"));
        let after = released.duration_since(since);
        assert!(
            after < Duration::from_secs(1),
            "{what:?}: released after {after:?}"
        );
    }
}

#[test]
fn short_request_body_is_400_for_the_client_and_releases_the_upstream() {
    let upstream = MuteUpstream::start();
    for buffering in [Buffering::On, Buffering::Off] {
        let dir = tempfile::tempdir().unwrap();
        let proxy = upstream.proxy(buffering, dir.path());
        let mut client = connect(proxy.local_addr(), None);
        let started = Instant::now();
        client
            .write_all(b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nhello")
            .unwrap();
        upstream.wait_for_request();
        // 5 of 1000 bytes, then the client's side of the stream ends.
        client.shutdown(std::net::Shutdown::Write).unwrap();
        let shut = Instant::now();
        let reply = read_reply(&mut client, &Reader::fast(), started);
        assert_eq!(reply.status, 400, "{buffering:?}: the client's fault");
        upstream.assert_released(shut, buffering);
        let row = &rows(&dir.path().join("stats.csv"), 1)[0];
        assert_eq!(row.get("status"), "400", "{buffering:?}");
        assert_eq!(row.get("error"), "client_body_short", "{buffering:?}");
    }
}

#[test]
fn client_gone_while_waiting_for_the_head_releases_the_upstream_at_once() {
    // The origin accepts and never answers: nothing is written to the
    // client, so only the peek at its socket can tell that it left.
    let upstream = MuteUpstream::start();
    for buffering in [Buffering::Off, Buffering::On] {
        let dir = tempfile::tempdir().unwrap();
        let proxy = upstream.proxy(buffering, dir.path());
        let mut client = connect(proxy.local_addr(), None);
        client
            .write_all(b"GET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        upstream.wait_for_request();
        // Past the first check, as `curl -m 1` would be.
        std::thread::sleep(Duration::from_millis(300));
        drop(client);
        upstream.assert_released(Instant::now(), buffering);
        let row = &rows(&dir.path().join("stats.csv"), 1)[0];
        assert_eq!(row.get("error"), "client_closed", "{buffering:?}");
        assert_eq!(row.get("status"), "", "{buffering:?}: nothing was sent");
        assert_eq!(row.get("client_done_s"), "", "{buffering:?}");
    }
}

#[test]
fn client_that_stops_reading_is_cut_after_the_send_timeout() {
    let upstream = FakeUpstream::start(|mut s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 67108864\r\n\r\n");
        write_pattern(&mut s, 64 << 20);
    });
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = proxy_config(upstream.addr, Buffering::On, dir.path());
    cfg.send_timeout = Duration::from_millis(500);
    let proxy = start_proxy(cfg);
    let mut client = connect(proxy.local_addr(), Some(8 * 1024));
    client
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let started = Instant::now();
    // Never read: the proxy fills the socket, waits 500 ms, and gives up.
    let row = rows(&dir.path().join("stats.csv"), 1)[0].clone();
    assert_eq!(row.get("error"), "send_timeout");
    assert!(started.elapsed() >= Duration::from_millis(500));
    assert!(open_files_in(dir.path()).is_empty());
    drop(client);
}

/// An upstream answering with `X-Accel-Buffering: <value>` and 4 MiB.
fn accel_upstream(value: &'static str) -> FakeUpstream {
    FakeUpstream::start(move |mut s| {
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: 4194304\r\nX-Accel-Buffering: {value}\r\nX-Slowlab-Block: 65536\r\n\r\n"
        );
        let _ = s.write_all(head.as_bytes());
        write_pattern(&mut s, 4 << 20);
    })
}

#[test]
fn x_accel_buffering_switches_the_mode_and_is_stripped() {
    for (configured, value, expected) in [
        (Buffering::On, "no", Buffering::Off),
        (Buffering::Off, "yes", Buffering::On),
        (Buffering::Off, "YES", Buffering::On),
        (Buffering::On, "bogus", Buffering::On),
    ] {
        let upstream = accel_upstream(value);
        let dir = tempfile::tempdir().unwrap();
        let proxy = start_proxy(proxy_config(upstream.addr, configured, dir.path()));
        // Slow enough that buffering shows: 4 MiB at 8 MiB/s.
        let reply = get(
            proxy.local_addr(),
            "/",
            &Reader::slow(8.0 * 1024.0 * 1024.0),
        );
        assert_eq!(reply.body_len, 4 << 20);
        assert_eq!(reply.first_bad, None);
        assert_eq!(reply.header("x-accel-buffering"), None, "stripped");
        let row = &rows(&dir.path().join("stats.csv"), 1)[0];
        assert_eq!(row.get("mode"), expected.name(), "{configured:?} + {value}");
        match expected {
            Buffering::On => assert!(row.num("mem_peak_bytes") > 16.0 * 1024.0, "{row:?}"),
            Buffering::Off => assert!(row.num("mem_peak_bytes") <= 16.0 * 1024.0, "{row:?}"),
        }
    }
}
