//! Client keep-alive as NGINX does it: a connection serves requests one
//! after the other (each on a fresh upstream connection) until the client
//! says `close`, `keepalive_requests` is reached, it idles past
//! `keepalive_timeout`, a response cannot be framed, or the proxy stops.

mod support;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use proxy::{Buffering, KeepAlive, ProxyHandle};
use support::*;

/// One response read by its `Content-Length`, the connection left open.
struct One {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl One {
    fn connection(&self) -> String {
        self.head
            .split("\r\n")
            .filter_map(|l| l.split_once(':'))
            .find(|(n, _)| n.eq_ignore_ascii_case("connection"))
            .map(|(_, v)| v.trim().to_ascii_lowercase())
            .unwrap_or_default()
    }
}

/// Reads one response; `pending` holds bytes read past the previous one.
fn read_one(s: &mut TcpStream, pending: &mut Vec<u8>) -> One {
    let deadline = Instant::now() + Duration::from_secs(10);
    let end = loop {
        if let Some(i) = find(pending, b"\r\n\r\n") {
            break i + 4;
        }
        read_more(s, pending, deadline, "the head");
    };
    let head = String::from_utf8_lossy(&pending[..end]).to_string();
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap();
    let length: usize = head
        .split("\r\n")
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| v.trim().parse().unwrap())
        .expect("a Content-Length");
    while pending.len() < end + length {
        read_more(s, pending, deadline, "the body");
    }
    let body = pending[end..end + length].to_vec();
    pending.drain(..end + length);
    One { status, head, body }
}

/// One read into `pending`; panics on a close, an error or the deadline.
fn read_more(s: &mut TcpStream, pending: &mut Vec<u8>, deadline: Instant, what: &str) {
    assert!(Instant::now() < deadline, "{what} did not arrive");
    let mut buf = [0u8; 4096];
    match s.read(&mut buf) {
        Ok(0) => panic!("closed before {what} was whole"),
        Ok(n) => pending.extend_from_slice(&buf[..n]),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
        Err(e) => panic!("reading {what}: {e}"),
    }
}

/// Waits up to `within` for the proxy to close `s`; how long it took.
fn closed_within(s: &mut TcpStream, within: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = [0u8; 64];
    while started.elapsed() < within {
        match s.read(&mut buf) {
            Ok(0) => return Some(started.elapsed()),
            Ok(n) => panic!("{n} unexpected bytes on an idle connection"),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return Some(started.elapsed()),
        }
    }
    None
}

/// An upstream answering `answer` to every request, counting connections.
fn counting_upstream(answer: &'static [u8]) -> (FakeUpstream, Arc<AtomicUsize>) {
    let seen = Arc::new(AtomicUsize::new(0));
    let count = seen.clone();
    let upstream = FakeUpstream::start(move |mut s| {
        count.fetch_add(1, Ordering::SeqCst);
        let _ = s.write_all(answer);
    });
    (upstream, seen)
}

const OK: &[u8] = b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok";

fn proxy(upstream: SocketAddr, keepalive: KeepAlive, dir: &std::path::Path) -> ProxyHandle {
    let mut cfg = proxy_config(upstream, Buffering::On, dir);
    cfg.keepalive = keepalive;
    start_proxy(cfg)
}

fn get(s: &mut TcpStream, extra: &str) {
    let req = format!("GET /fast HTTP/1.1\r\nHost: x\r\n{extra}\r\n");
    s.write_all(req.as_bytes()).unwrap();
}

#[test]
fn one_connection_serves_requests_until_the_client_says_close() {
    let (upstream, seen) = counting_upstream(OK);
    for buffering in [Buffering::On, Buffering::Off] {
        seen.store(0, Ordering::SeqCst);
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = proxy_config(upstream.addr, buffering, dir.path());
        cfg.keepalive = KeepAlive::nginx_defaults();
        let proxy = start_proxy(cfg);
        let mut s = connect(proxy.local_addr(), None);
        let mut pending = Vec::new();
        for _ in 0..3 {
            get(&mut s, "");
            let r = read_one(&mut s, &mut pending);
            assert_eq!((r.status, r.body.as_slice()), (200, &b"ok"[..]));
            assert_eq!(r.connection(), "keep-alive", "{buffering:?}: {}", r.head);
        }
        get(&mut s, "Connection: close\r\n");
        let r = read_one(&mut s, &mut pending);
        assert_eq!(r.connection(), "close", "{}", r.head);
        assert!(closed_within(&mut s, Duration::from_secs(2)).is_some());
        // Each request had an upstream connection of its own (NGINX's
        // HTTP/1.0 upstream, no upstream keepalive).
        assert_eq!(seen.load(Ordering::SeqCst), 4, "{buffering:?}");
        let rows = rows(&dir.path().join("stats.csv"), 4);
        assert!(rows.iter().all(|r| r.get("status") == "200"), "{rows:?}");
    }
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let upstream = SyncUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let proxy = proxy(upstream.addr, KeepAlive::nginx_defaults(), dir.path());
    let mut s = connect(proxy.local_addr(), None);
    // Three requests in one write; the upstream echoes each path.
    s.write_all(
        b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /bb HTTP/1.1\r\nHost: x\r\n\r\n\
          GET /ccc HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    for path in ["/a", "/bb", "/ccc"] {
        let got = upstream.next();
        assert!(
            got.head.starts_with(&format!("GET {path} HTTP/1.0")),
            "{}",
            got.head
        );
    }
    let mut pending = Vec::new();
    let statuses: Vec<u16> = (0..3)
        .map(|_| read_one(&mut s, &mut pending).status)
        .collect();
    assert_eq!(statuses, [200, 200, 200]);
    assert!(closed_within(&mut s, Duration::from_secs(2)).is_some());
}

#[test]
fn keepalive_requests_and_http_1_0_end_the_connection() {
    let (upstream, _) = counting_upstream(OK);
    let dir = tempfile::tempdir().unwrap();
    let keepalive = KeepAlive {
        requests: 2,
        ..KeepAlive::nginx_defaults()
    };
    let proxy = proxy(upstream.addr, keepalive, dir.path());
    // keepalive_requests 2: the second response closes.
    let mut s = connect(proxy.local_addr(), None);
    let mut pending = Vec::new();
    get(&mut s, "");
    assert_eq!(read_one(&mut s, &mut pending).connection(), "keep-alive");
    get(&mut s, "");
    assert_eq!(read_one(&mut s, &mut pending).connection(), "close");
    assert!(closed_within(&mut s, Duration::from_secs(2)).is_some());
    // HTTP/1.0 keeps the connection only when it asks to.
    for (extra, kept) in [("", false), ("Connection: keep-alive\r\n", true)] {
        let mut s = connect(proxy.local_addr(), None);
        let req = format!("GET /fast HTTP/1.0\r\n{extra}\r\n");
        s.write_all(req.as_bytes()).unwrap();
        let r = read_one(&mut s, &mut Vec::new());
        let want = if kept { "keep-alive" } else { "close" };
        assert_eq!(r.connection(), want, "HTTP/1.0 {extra:?}: {}", r.head);
        let closed = closed_within(&mut s, Duration::from_secs(2));
        assert_eq!(closed.is_some(), !kept, "HTTP/1.0 {extra:?}");
    }
}

#[test]
fn an_idle_connection_closes_after_the_keepalive_timeout() {
    let (upstream, _) = counting_upstream(OK);
    for timeout in [Duration::ZERO, Duration::from_millis(300)] {
        let dir = tempfile::tempdir().unwrap();
        let keepalive = KeepAlive {
            timeout,
            ..KeepAlive::nginx_defaults()
        };
        let proxy = proxy(upstream.addr, keepalive, dir.path());
        let mut s = connect(proxy.local_addr(), None);
        // Before the request: the proxy's wait starts after it, so the
        // close cannot come sooner than `timeout` from here.
        let sent = Instant::now();
        get(&mut s, "");
        let r = read_one(&mut s, &mut Vec::new());
        let want = if timeout.is_zero() {
            "close"
        } else {
            "keep-alive"
        };
        assert_eq!(r.connection(), want, "keepalive_timeout {timeout:?}");
        closed_within(&mut s, Duration::from_secs(5)).expect("closed");
        let idle = sent.elapsed();
        // pingora's timer fires on a 10 ms tick.
        assert!(
            idle >= timeout.saturating_sub(Duration::from_millis(10)),
            "{idle:?}"
        );
        assert!(idle < timeout + Duration::from_secs(2), "{idle:?}");
    }
}

#[test]
fn a_response_without_a_length_or_an_error_page_closes_the_connection() {
    // An HTTP/1.0 body that ends with the upstream's close cannot be framed
    // for the client (NGINX would chunk it): the connection closes after it.
    let (until_close, _) = counting_upstream(b"HTTP/1.0 200 OK\r\n\r\nuntil close");
    // Nobody listens on the upstream's port: 502.
    let refused = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    for (upstream, status) in [(until_close.addr, 200), (refused, 502)] {
        let dir = tempfile::tempdir().unwrap();
        let proxy = proxy(upstream, KeepAlive::nginx_defaults(), dir.path());
        let mut s = connect(proxy.local_addr(), None);
        get(&mut s, "");
        let reply = read_reply(&mut s, &Reader::fast(), Instant::now());
        assert_eq!(reply.status, status);
        assert_eq!(reply.header("connection"), Some("close"), "{status}");
        assert!(reply.clean_eof, "{status}: the proxy closed the connection");
    }
}

#[test]
fn an_idle_connection_does_not_hold_up_the_stop() {
    let (upstream, _) = counting_upstream(OK);
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = proxy_config(upstream.addr, Buffering::On, dir.path());
    cfg.shutdown_grace = Duration::from_secs(5);
    let proxy = start_proxy(cfg);
    let mut s = connect(proxy.local_addr(), None);
    get(&mut s, "");
    assert_eq!(read_one(&mut s, &mut Vec::new()).connection(), "keep-alive");
    let started = Instant::now();
    drop(proxy);
    // Well within the 5 s grace that a response in flight would get.
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "stop took {took:?}");
    assert!(closed_within(&mut s, Duration::from_secs(1)).is_some());
}

/// A proxy with room for `n` connections, the listener's included.
fn proxy_with_room(upstream: SocketAddr, n: usize, dir: &std::path::Path) -> ProxyHandle {
    let mut cfg = proxy_config(upstream, Buffering::On, dir);
    cfg.worker_connections = n;
    start_proxy(cfg)
}

#[test]
fn a_full_proxy_closes_idle_connections_for_a_new_client() {
    let (upstream, _) = counting_upstream(OK);
    let dir = tempfile::tempdir().unwrap();
    // The listener, one client and its upstream connection: 3.
    let proxy = proxy_with_room(upstream.addr, 3, dir.path());
    let mut idle = connect(proxy.local_addr(), None);
    get(&mut idle, "");
    assert_eq!(
        read_one(&mut idle, &mut Vec::new()).connection(),
        "keep-alive"
    );
    // A new client takes the free slot; its upstream connection finds
    // none and closes the idle connection for it (NGINX's
    // ngx_drain_connections), so it is served.
    let mut fresh = connect(proxy.local_addr(), None);
    get(&mut fresh, "");
    let r = read_one(&mut fresh, &mut Vec::new());
    assert_eq!((r.status, r.body.as_slice()), (200, &b"ok"[..]));
    assert!(
        closed_within(&mut idle, Duration::from_secs(2)).is_some(),
        "the idle connection was closed"
    );
}

#[test]
fn a_proxy_full_of_busy_connections_refuses_clients_and_upstream_connections() {
    // The upstream holds its answer until told: the first request stays busy.
    let release = Arc::new(std::sync::Mutex::new(()));
    let held = release.lock().unwrap();
    let gate = release.clone();
    let (arrived_tx, arrived) = std::sync::mpsc::channel();
    let arrived_tx = std::sync::Mutex::new(arrived_tx);
    let upstream = FakeUpstream::start(move |mut s| {
        let _ = arrived_tx.lock().unwrap().send(());
        drop(gate.lock());
        let _ = s.write_all(OK);
    });
    let dir = tempfile::tempdir().unwrap();
    // Listener + busy client + its upstream + one more client: 4.
    let proxy = proxy_with_room(upstream.addr, 4, dir.path());
    let mut busy = connect(proxy.local_addr(), None);
    get(&mut busy, "Connection: close\r\n");
    // The fourth slot goes to this client; its upstream finds none: 500.
    arrived
        .recv_timeout(Duration::from_secs(10))
        .expect("the busy request upstream");
    let mut second = connect(proxy.local_addr(), None);
    get(&mut second, "Connection: close\r\n");
    let reply = read_reply(&mut second, &Reader::fast(), Instant::now());
    assert_eq!(reply.status, 500);
    // Now with the fourth slot taken by an open client, a fifth is closed
    // at once, before any request.
    let mut third = connect(proxy.local_addr(), None);
    // Accepted once the proxy answers on it; a whole request would end it.
    std::thread::sleep(Duration::from_millis(300));
    let mut fourth = connect(proxy.local_addr(), None);
    get(&mut fourth, "Connection: close\r\n");
    let refused = read_reply(&mut fourth, &Reader::fast(), Instant::now());
    assert_eq!(refused.status, 0, "no answer, the connection is closed");
    drop(held);
    let ok = read_reply(&mut busy, &Reader::fast(), Instant::now());
    assert_eq!(ok.status, 200);
    get(&mut third, "Connection: close\r\n");
    let later = read_reply(&mut third, &Reader::fast(), Instant::now());
    assert_eq!(later.status, 200, "served once the busy one is done");
    let rows = rows(&dir.path().join("stats.csv"), 3);
    assert!(
        rows.iter().any(|r| r.get("error") == "worker_connections"),
        "{rows:?}"
    );
}

#[test]
fn an_idle_connection_after_a_request_body_waits_as_idle() {
    // The body's last read takes exactly what was left, which leaves the
    // socket looking readable: the idle wait must still wait, and the stop
    // still end it at once.
    let upstream = SyncUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = proxy_config(upstream.addr, Buffering::On, dir.path());
    cfg.shutdown_grace = Duration::from_secs(5);
    let proxy = start_proxy(cfg);
    let mut s = connect(proxy.local_addr(), None);
    s.write_all(b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    s.write_all(b"hello").unwrap();
    assert_eq!(upstream.next().body, b"hello");
    let r = read_one(&mut s, &mut Vec::new());
    assert_eq!((r.status, r.connection().as_str()), (200, "keep-alive"));
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    drop(proxy);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "stop took {took:?}");
    assert!(closed_within(&mut s, Duration::from_secs(1)).is_some());
    let rows = rows(&dir.path().join("stats.csv"), 1);
    assert_eq!(rows[0].get("status"), "200", "{rows:?}");
}

#[test]
fn a_next_request_that_comes_in_pieces_is_read_whole() {
    // The idle wait reads the next request's first bytes (at most 4 KiB)
    // and the session parses them first: a head that comes in pieces must
    // still be read on to its end, whether the wait's read took its first
    // 5 bytes or filled its whole buffer with a head not yet complete.
    let (upstream, seen) = counting_upstream(OK);
    let dir = tempfile::tempdir().unwrap();
    let proxy = proxy(upstream.addr, KeepAlive::nginx_defaults(), dir.path());
    let mut s = connect(proxy.local_addr(), None);
    let mut pending = Vec::new();
    get(&mut s, "");
    assert_eq!(read_one(&mut s, &mut pending).status, 200);
    let long = format!("X-Long: {}\r\n", "a".repeat(6000));
    let next = format!("GET /fast HTTP/1.1\r\nHost: x\r\n{long}\r\n");
    for first in [5, 5000] {
        let (head, rest) = next.as_bytes().split_at(first);
        s.write_all(head).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        s.write_all(rest).unwrap();
        let r = read_one(&mut s, &mut pending);
        assert_eq!(
            (r.status, r.body.as_slice()),
            (200, &b"ok"[..]),
            "{first}: {}",
            r.head
        );
        assert_eq!(r.connection(), "keep-alive", "{first}: {}", r.head);
    }
    assert_eq!(seen.load(Ordering::SeqCst), 3);
}
