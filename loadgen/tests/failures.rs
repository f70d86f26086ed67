//! Every way a request or download can go wrong ends as a row with its
//! error kind; and a refused target is refused before anything is sent.

mod support;

use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::time::Duration;

use loadgen::{ErrorKind, LoadConfig, Summary, Verified};
use support::{Reply, ScriptedServer, pattern_body, response};

const FAST_BODY: &[u8] = br#"{"ok": true}"#;

/// A short load: one fast download, five /fast requests.
fn quick(url: &str, extra: &[&str]) -> loadgen::Report {
    let mut words = vec![
        "--target",
        url,
        "--slow",
        "1",
        "--slow-rate",
        "64MiB",
        "--fast-rate",
        "20",
        "--fast-duration",
        "250ms",
        "--fast-start",
        "0ms",
    ];
    words.extend_from_slice(extra);
    support::run(&words)
}

/// Our servers' /large with one wrong byte, and a good /fast.
fn corrupt_large(path: &str) -> Reply {
    if path == "/fast" {
        return Reply::Bytes(response("200 OK", "", FAST_BODY));
    }
    let mut body = pattern_body(300_000, 1024);
    body[123_456] ^= 0x40;
    Reply::Bytes(response("200 OK", "X-Slowlab-Block: 1024\r\n", &body))
}

#[test]
fn a_wrong_byte_is_a_verify_failure() {
    let server = ScriptedServer::start(corrupt_large);
    let report = quick(&server.url(), &[]);
    let large = &report.large[0];
    let err = large.error.as_ref().expect("an error");
    assert_eq!(err.kind, ErrorKind::VerifyFailed);
    assert!(err.detail.contains("123456"), "{}", err.detail);
    assert_eq!(large.verified, Verified::No);
    assert_eq!(large.bytes, 300_000);
    assert!(report.fast.iter().all(|r| r.ok()));
    assert_eq!(
        Summary::of(&report).errors.get(&ErrorKind::VerifyFailed),
        Some(&1)
    );
}

#[test]
fn verification_follows_the_header_and_the_flag() {
    // A foreign server: the pattern with 64 KiB blocks, but no header.
    let server = ScriptedServer::start(|path| match path {
        "/fast" => Reply::Bytes(response("200 OK", "", FAST_BODY)),
        _ => Reply::Bytes(response("200 OK", "", &pattern_body(200_000, 65536))),
    });
    let auto = quick(&server.url(), &[]);
    assert_eq!(
        (auto.large[0].verified, auto.large[0].error.as_ref()),
        (Verified::Length, None)
    );
    let forced = quick(&server.url(), &["--verify", "pattern"]);
    assert_eq!(forced.large[0].verified, Verified::Pattern);
    // With the header but --verify length, a wrong byte goes unnoticed.
    let corrupt = ScriptedServer::start(corrupt_large);
    let length = quick(&corrupt.url(), &["--verify", "length"]);
    assert_eq!(
        (length.large[0].verified, length.large[0].error.as_ref()),
        (Verified::Length, None)
    );
}

#[test]
fn chunked_and_eof_framed_bodies_are_read() {
    let server = ScriptedServer::start(|path| {
        let body = pattern_body(100_000, 4096);
        if path == "/fast" {
            return Reply::Bytes(b"HTTP/1.0 200 OK\r\n\r\n{\"ok\": true}".to_vec());
        }
        let mut raw =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Slowlab-Block: 4096\r\n\r\n"
                .to_vec();
        for chunk in body.chunks(7000) {
            raw.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
            raw.extend_from_slice(chunk);
            raw.extend_from_slice(b"\r\n");
        }
        raw.extend_from_slice(b"0\r\n\r\n");
        Reply::Bytes(raw)
    });
    let report = quick(&server.url(), &[]);
    let large = &report.large[0];
    assert_eq!(
        (large.verified, large.bytes, large.content_length),
        (Verified::Pattern, 100_000, None)
    );
    assert!(report.fast.iter().all(|r| r.ok() && r.bytes == 12));
}

#[test]
fn short_bodies_resets_and_bad_statuses_are_recorded() {
    let server = ScriptedServer::start(|path| match path {
        "/fast" => Reply::Bytes(response("500 Internal Server Error", "", b"oops")),
        _ => {
            let mut r = response("200 OK", "", &pattern_body(1000, 65536));
            r.truncate(r.len() - 400);
            Reply::Bytes(r)
        }
    });
    let report = quick(&server.url(), &[]);
    assert_eq!(
        report.large[0].error.as_ref().map(|e| e.kind),
        Some(ErrorKind::ShortBody)
    );
    assert_eq!(report.large[0].bytes, 600);
    assert_eq!(report.large[0].receive_s, None);
    for r in &report.fast {
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::BadStatus));
        assert_eq!(r.status, Some(500));
        assert!(r.latency_ms.is_some(), "a whole 500 still has a latency");
    }
    let summary = Summary::of(&report);
    assert_eq!((summary.fast.ok, summary.fast.latency_ms.p50), (0, None));

    let resets = ScriptedServer::start(|_| {
        Reply::Reset(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc".to_vec())
    });
    let report = quick(&resets.url(), &[]);
    assert_eq!(
        report.large[0].error.as_ref().map(|e| e.kind),
        Some(ErrorKind::Reset)
    );
    assert!(
        report
            .fast
            .iter()
            .all(|r| r.error.as_ref().map(|e| e.kind) == Some(ErrorKind::Reset))
    );
}

#[test]
fn unanswered_requests_time_out_and_stay_in_the_file() {
    let server = ScriptedServer::start(|_| Reply::Silent(Duration::from_secs(3)));
    let report = quick(&server.url(), &["--timeout", "300ms"]);
    assert_eq!(report.fast.len(), 5);
    for r in &report.fast {
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::Timeout));
        assert!(r.connect_ms.is_some());
        assert_eq!(
            (r.latency_ms, r.first_byte_ms, r.status),
            (None, None, None)
        );
    }
    assert_eq!(
        report.large[0].error.as_ref().map(|e| e.kind),
        Some(ErrorKind::Timeout)
    );
}

#[test]
fn a_closed_port_is_recorded_as_refused_connections() {
    let url = format!("http://127.0.0.1:{}", support::closed_port());
    let report = quick(&url, &[]);
    assert_eq!(report.fast.len(), 5);
    assert!(
        report
            .fast
            .iter()
            .all(|r| r.error.as_ref().map(|e| e.kind) == Some(ErrorKind::ConnectRefused))
    );
    assert_eq!(
        report.large[0].error.as_ref().map(|e| e.kind),
        Some(ErrorKind::ConnectRefused)
    );
    let summary = Summary::of(&report);
    assert_eq!(
        (
            summary.fast.ok,
            summary.errors.get(&ErrorKind::ConnectRefused)
        ),
        (0, Some(&6))
    );
}

/// A local address that is not loopback, if this machine has one: the
/// source address of a route to a documentation network (a UDP "connect"
/// sends nothing).
fn non_loopback_local_ip() -> Option<std::net::IpAddr> {
    let probe = UdpSocket::bind("0.0.0.0:0").ok()?;
    probe.connect("192.0.2.1:9").ok()?;
    let ip = probe.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[test]
fn a_remote_target_is_refused_before_anything_is_sent() {
    let Some(ip) = non_loopback_local_ip() else {
        let err = LoadConfig::from_args(&support::args(&["--target", "http://192.0.2.1:80"]))
            .expect_err("refused");
        assert!(format!("{err:#}").contains("--allow-remote"));
        return;
    };
    // A listener on a non-loopback address of this machine: reachable, but
    // the load generator must not connect to it.
    let listener = TcpListener::bind(SocketAddr::new(ip, 0)).expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let err = LoadConfig::from_args(&support::args(&["--target", &url])).expect_err("refused");
    assert!(format!("{err:#}").contains("--allow-remote"), "{err:#}");
    std::thread::sleep(Duration::from_millis(100));
    assert!(listener.accept().is_err(), "a connection arrived");
    // With --allow-remote it is used (proving the listener would have seen it).
    let server = ScriptedServer::bind(SocketAddr::new(ip, 0), std::sync::Arc::new(corrupt_large));
    let url = server.url();
    let report = quick(&url, &["--allow-remote"]);
    assert!(report.fast.iter().all(|r| r.ok()));
    assert!(server.connections() >= 6);
}
