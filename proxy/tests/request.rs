//! The request direction: `--request-buffering on|off`, the body temp
//! file, 413, chunked bodies, the header and body timeouts, and a slow
//! uploader in front of a one-handler upstream.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use proxy::{Buffering, ProxyHandle};
use support::*;

fn proxy_with(upstream: std::net::SocketAddr, request: Buffering, dir: &Path) -> ProxyHandle {
    let mut cfg = proxy_config(upstream, Buffering::On, dir);
    cfg.request.buffering = request;
    start_proxy(cfg)
}

fn post_head(len: usize) -> String {
    format!(
        "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
    )
}

/// Sends a `len`-byte pattern body at `rate` through `addr`; returns the
/// client's socket (the reply unread) and when its last byte was accepted.
fn slow_upload(addr: std::net::SocketAddr, len: usize, rate: f64) -> (TcpStream, Instant) {
    let mut s = connect(addr, None);
    s.write_all(post_head(len).as_bytes()).unwrap();
    let last = paced_write(&mut s, &pattern(len), 16 * 1024, rate);
    (s, last)
}

#[test]
fn buffering_on_reads_the_whole_body_before_the_upstream_sees_a_connection() {
    let upstream = SyncUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let proxy = proxy_with(upstream.addr, Buffering::On, dir.path());
    // 256 KiB at 512 KiB/s: half a second, and beyond the 16 KiB buffer.
    let len = 256 * 1024;
    let (mut client, last_byte) = slow_upload(proxy.local_addr(), len, 512.0 * 1024.0);
    let got = upstream.next();
    assert!(
        got.accepted >= last_byte,
        "the upstream was connected {:?} before the client's last byte",
        last_byte - got.accepted
    );
    assert_eq!(got.body, pattern(len), "every byte, in order");
    assert_eq!(got.header("content-length"), Some(len.to_string()));
    let reply = read_reply(&mut client, &Reader::fast(), Instant::now());
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, format!("{{\"bytes\": {len}}}").as_bytes());
    let row = &rows(&dir.path().join("stats.csv"), 1)[0];
    assert_eq!(row.get("req_mode"), "on");
    assert_eq!(row.num("req_bytes") as usize, len);
    assert_eq!(
        row.num("req_spilled_bytes") as usize,
        len,
        "all of it in the file"
    );
    assert!(row.num("req_mem_peak_bytes") <= 16.0 * 1024.0);
    assert!(row.num("upstream_start_s") >= row.num("req_done_s"));
    assert!(open_files_in(dir.path()).is_empty(), "temp file closed");
}

#[test]
fn buffering_off_streams_the_body_as_it_arrives() {
    let upstream = SyncUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let proxy = proxy_with(upstream.addr, Buffering::Off, dir.path());
    let len = 256 * 1024;
    let (mut client, last_byte) = slow_upload(proxy.local_addr(), len, 512.0 * 1024.0);
    let got = upstream.next();
    assert!(
        got.accepted + Duration::from_millis(250) < last_byte,
        "streamed: the upstream is connected while the client still sends"
    );
    assert_eq!(got.body, pattern(len));
    assert_eq!(
        read_reply(&mut client, &Reader::fast(), Instant::now()).status,
        200
    );
    let row = &rows(&dir.path().join("stats.csv"), 1)[0];
    assert_eq!(row.get("req_mode"), "off");
    assert_eq!(row.num("req_spilled_bytes"), 0.0);
    assert!(row.num("upstream_start_s") < row.num("req_done_s"));
}

#[test]
fn a_small_buffered_body_stays_in_memory() {
    let upstream = SyncUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let proxy = proxy_with(upstream.addr, Buffering::On, dir.path());
    let (mut client, _) = slow_upload(proxy.local_addr(), 1000, 1e9);
    assert_eq!(upstream.next().body, pattern(1000));
    assert_eq!(
        read_reply(&mut client, &Reader::fast(), Instant::now()).status,
        200
    );
    let row = &rows(&dir.path().join("stats.csv"), 1)[0];
    assert_eq!(row.num("req_mem_peak_bytes"), 1000.0);
    assert_eq!(row.num("req_spilled_bytes"), 0.0);
}

#[test]
fn a_body_beyond_the_maximum_is_413_and_never_reaches_the_upstream() {
    let upstream = SyncUpstream::start();
    for request in [Buffering::On, Buffering::Off] {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = proxy_config(upstream.addr, Buffering::On, dir.path());
        cfg.request.buffering = request;
        cfg.request.max_body_size = 64 * 1024;
        let proxy = start_proxy(cfg);
        // By its Content-Length: answered before any body byte is sent.
        let mut s = connect(proxy.local_addr(), None);
        s.write_all(post_head(64 * 1024 + 1).as_bytes()).unwrap();
        let reply = read_reply(&mut s, &Reader::fast(), Instant::now());
        assert_eq!(reply.status, 413, "{request:?}");
        // Chunked: answered once it grows past the limit.
        let mut s = connect(proxy.local_addr(), None);
        s.write_all(b"POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
            .unwrap();
        let chunk = format!("{:x}\r\n{}\r\n", 40_000, "a".repeat(40_000));
        for _ in 0..2 {
            s.write_all(chunk.as_bytes()).unwrap();
        }
        let reply = read_reply(&mut s, &Reader::fast(), Instant::now());
        assert_eq!(reply.status, 413, "{request:?} chunked");
        let rows = rows(&dir.path().join("stats.csv"), 2);
        assert!(rows.iter().all(|r| r.get("error") == "body_too_large"));
        assert!(rows.iter().all(|r| r.get("upstream_start_s").is_empty()));
        assert!(upstream.idle_for(Duration::from_millis(300)), "{request:?}");
        assert!(open_files_in(dir.path()).is_empty());
    }
}

#[test]
fn a_chunked_body_goes_upstream_de_chunked_with_a_content_length() {
    let upstream = SyncUpstream::start();
    for request in [Buffering::On, Buffering::Off] {
        let dir = tempfile::tempdir().unwrap();
        let proxy = proxy_with(upstream.addr, request, dir.path());
        let mut s = connect(proxy.local_addr(), None);
        s.write_all(b"POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
            .unwrap();
        let body = pattern(50_000);
        for piece in body.chunks(7_000) {
            s.write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                .unwrap();
            s.write_all(piece).unwrap();
            s.write_all(b"\r\n").unwrap();
        }
        s.write_all(b"0\r\n\r\n").unwrap();
        let got = upstream.next();
        assert_eq!(got.body, body, "{request:?}");
        assert_eq!(got.header("content-length"), Some("50000".into()));
        assert_eq!(got.header("transfer-encoding"), None, "{}", got.head);
        let reply = read_reply(&mut s, &Reader::fast(), Instant::now());
        assert_eq!(reply.status, 200, "{request:?}: no 411 any more");
        let row = &rows(&dir.path().join("stats.csv"), 1)[0];
        assert_eq!(row.get("req_mode"), "on", "{request:?}: read whole");
    }
}

#[test]
fn a_client_that_leaves_mid_upload_leaves_no_file_and_no_upstream_connection() {
    let upstream = SyncUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let proxy = proxy_with(upstream.addr, Buffering::On, dir.path());
    let mut s = connect(proxy.local_addr(), None);
    s.write_all(post_head(1 << 20).as_bytes()).unwrap();
    s.write_all(&pattern(100 * 1024)).unwrap();
    assert!(
        eventually(PATIENCE, || !open_files_in(dir.path()).is_empty()),
        "the body spills to a temp file"
    );
    let fds = open_files_in(dir.path());
    assert!(fds.iter().all(|f| f.ends_with("(deleted)")), "{fds:?}");
    drop(s);
    assert!(
        eventually(Duration::from_secs(5), || open_files_in(dir.path())
            .is_empty()),
        "temp file still open"
    );
    let row = &rows(&dir.path().join("stats.csv"), 1)[0];
    assert_eq!(row.get("error"), "client_body_short");
    assert_eq!(row.get("upstream_start_s"), "", "never connected");
    assert!(row.num("req_bytes") >= 100.0 * 1024.0);
    assert!(upstream.idle_for(Duration::from_millis(300)));
}

#[test]
fn an_incomplete_head_is_closed_without_an_answer_after_the_header_timeout() {
    let upstream = SyncUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = proxy_config(upstream.addr, Buffering::On, dir.path());
    cfg.request.header_timeout = Duration::from_millis(400);
    let proxy = start_proxy(cfg);
    let mut s = connect(proxy.local_addr(), None);
    let started = Instant::now();
    s.write_all(b"GET /fast HTTP/1.1\r\n").unwrap();
    // Slowloris: a line every 100 ms, never the blank line. A per-read
    // timer would never fire; NGINX's whole-head deadline does.
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    let closed = loop {
        assert!(started.elapsed() < Duration::from_secs(10), "never closed");
        let _ = s.write_all(b"X-Slow: 1\r\n");
        match s.read(&mut buf) {
            Ok(0) => break started.elapsed(),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => break started.elapsed(),
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(got.is_empty(), "no answer, as NGINX: {got:?}");
    assert!(closed >= Duration::from_millis(400), "{closed:?}");
    assert!(closed < Duration::from_secs(3), "{closed:?}");
    let row = &rows(&dir.path().join("stats.csv"), 1)[0];
    assert_eq!(row.get("error"), "client_header_timeout");
    assert_eq!(row.get("status"), "");
    assert!(upstream.idle_for(Duration::from_millis(100)));
}

#[test]
fn a_stalled_body_is_closed_without_an_answer_after_the_body_timeout() {
    let upstream = SyncUpstream::start();
    for request in [Buffering::On, Buffering::Off] {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = proxy_config(upstream.addr, Buffering::On, dir.path());
        cfg.request.buffering = request;
        cfg.request.body_timeout = Duration::from_millis(300);
        let proxy = start_proxy(cfg);
        let mut s = connect(proxy.local_addr(), None);
        s.write_all(post_head(10_000).as_bytes()).unwrap();
        s.write_all(&pattern(1_000)).unwrap();
        let reply = read_reply(&mut s, &Reader::fast(), Instant::now());
        assert_eq!(reply.status, 0, "{request:?}: closed without an answer");
        let row = &rows(&dir.path().join("stats.csv"), 1)[0];
        assert_eq!(row.get("error"), "client_body_timeout", "{request:?}");
        if request == Buffering::Off {
            // The streamed part reached the upstream, which saw it end short.
            let _ = upstream.next();
        }
    }
}

/// One slow upload and then a `GET /fast` while it runs: the time the GET
/// takes, with the upstream's single handler behind the proxy.
fn fast_call_during_a_slow_upload(request: Buffering) -> Duration {
    let upstream = SyncUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let proxy = proxy_with(upstream.addr, request, dir.path());
    let addr = proxy.local_addr();
    // 1 MiB at 768 KiB/s: about 1.3 s of sending (the default 1m limit).
    let uploader = std::thread::spawn(move || {
        let (mut s, _) = slow_upload(addr, 1 << 20, 768.0 * 1024.0);
        read_reply(&mut s, &Reader::fast(), Instant::now()).status
    });
    std::thread::sleep(Duration::from_millis(300));
    let reply = get(addr, "/fast", &Reader::fast());
    assert_eq!(reply.status, 200, "{request:?}");
    assert_eq!(uploader.join().unwrap(), 200, "{request:?}");
    reply.elapsed
}

#[test]
fn a_slow_uploader_holds_a_one_handler_upstream_only_without_request_buffering() {
    let on = fast_call_during_a_slow_upload(Buffering::On);
    let off = fast_call_during_a_slow_upload(Buffering::Off);
    eprintln!("GET /fast during a slow upload: request buffering on {on:?}, off {off:?}");
    assert!(on < Duration::from_millis(500), "on: {on:?}");
    assert!(off > Duration::from_millis(700), "off: {off:?}");
}

#[test]
fn a_request_framed_two_ways_or_in_an_unknown_coding_is_refused_as_nginx_refuses_it() {
    // NGINX 1.22.1, asked the same: 400 for Content-Length with
    // Transfer-Encoding, 501 for a coding other than chunked, 400 for a
    // chunked HTTP/1.0 request and for two different lengths.
    let upstream = SyncUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let proxy = proxy_with(upstream.addr, Buffering::On, dir.path());
    for (head, status) in [
        (
            "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            400,
        ),
        (
            "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\ncontent-length: 5\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            400,
        ),
        (
            "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
            501,
        ),
        (
            "POST /upload HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            400,
        ),
        (
            "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
            400,
        ),
    ] {
        let mut s = connect(proxy.local_addr(), None);
        s.write_all(head.as_bytes()).unwrap();
        let reply = read_reply(&mut s, &Reader::fast(), Instant::now());
        assert_eq!(reply.status, status, "{head:?}");
    }
    assert!(upstream.idle_for(Duration::from_millis(300)));
    // A chunked request alone still goes through.
    let mut s = connect(proxy.local_addr(), None);
    s.write_all(b"POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        .unwrap();
    let reply = read_reply(&mut s, &Reader::fast(), Instant::now());
    assert_eq!(reply.status, 200);
}
