//! The slow clients' engine: many clients on a few loop threads keep their
//! pace; `--end-with-fast` cuts what is still running; an upload endpoint's
//! own answers (201 with its own JSON, 204) count as uploads that went well.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;

use loadgen::{ErrorKind, Summary, Verified};
use server::{Model, ServerConfig};
use testkit::fake::FakeServer;

fn async_server(large: u64) -> (server::ServerHandle, String) {
    let mut config = ServerConfig::new(Model::Async, Some(2));
    config.large_bytes = large;
    let s = server::spawn(config).expect("server starts");
    let url = format!("http://{}", s.local_addr());
    (s, url)
}

#[test]
fn three_hundred_readers_keep_their_pace_on_one_loop() {
    // 300 readers of 64 KiB at 128 KiB/s: half a second each, 37.5 MiB/s in
    // all, little enough that a busy 2-core machine's server keeps up.
    let (_server, url) = async_server(64 << 10);
    let report = support::run(&[
        "--target",
        &url,
        "--slow",
        "300",
        "--slow-rate",
        "128KiB",
        "--fast-rate",
        "4",
        "--fast-duration",
        "500ms",
        "--fast-start",
        "0ms",
    ]);
    assert_eq!(report.engine_threads, 1, "300 clients fit one loop");
    assert_eq!(report.large.len(), 300);
    let mut took = Vec::new();
    for r in &report.large {
        assert_eq!(r.error, None, "{r:?}");
        assert_eq!(r.verified, Verified::Pattern, "{r:?}");
        assert_eq!(r.bytes, 64 << 10);
        let s = r.receive_s.expect("whole");
        // Never ahead of the pace.
        assert!(s >= 0.5, "{s} s: {r:?}");
        took.push(s);
    }
    took.sort_by(f64::total_cmp);
    // Late by less than a loaded machine's scheduling hiccup: the median
    // within 5%, the worst within half the time again.
    let median = took[took.len() / 2];
    assert!(median < 0.5 * 1.05, "median {median} s");
    assert!(
        took[took.len() - 1] < 0.75,
        "worst {} s",
        took[took.len() - 1]
    );
}

#[test]
fn the_last_fast_request_ends_the_run_and_cuts_the_rest() {
    // 16 MiB at 256 KiB/s would take 64 s; the run ends with /fast.
    let (_server, url) = async_server(16 << 20);
    let started = std::time::Instant::now();
    let report = support::run(&[
        "--target",
        &url,
        "--slow",
        "3",
        "--slow-rate",
        "256KiB",
        "--slow-upload",
        "2",
        "--upload-rate",
        "256KiB",
        "--fast-rate",
        "10",
        "--fast-duration",
        "1s",
        "--end-with-fast",
    ]);
    let took = started.elapsed().as_secs_f64();
    assert!(took < 5.0, "the run took {took} s");
    assert!(report.fast.iter().all(|f| f.ok()));
    for r in &report.large {
        let e = r.error.as_ref().expect("cut");
        assert_eq!(e.kind, ErrorKind::Cut, "{r:?}");
        assert!((200_000..4 << 20).contains(&r.bytes), "{r:?}");
        assert_eq!(r.verified, Verified::No);
    }
    for u in &report.uploads {
        assert_eq!(
            u.error.as_ref().map(|e| e.kind),
            Some(ErrorKind::Cut),
            "{u:?}"
        );
        assert!(u.bytes_sent > 100_000 && u.send_s.is_none(), "{u:?}");
    }
    let s = Summary::of(&report);
    assert_eq!(s.slow.errors.get(&ErrorKind::Cut), Some(&3));
    assert_eq!(s.uploads.errors.get(&ErrorKind::Cut), Some(&2));
}

/// An upload endpoint that reads the whole body, then answers with
/// `status` and `body`.
fn endpoint(status: &'static str, body: &'static str) -> FakeServer {
    FakeServer::start(move |mut conn: TcpStream, head: &str| {
        let len: usize = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .unwrap_or(0);
        let mut left = len;
        let mut buf = [0u8; 65536];
        while left > 0 {
            match conn.read(&mut buf[..left.min(65536)]) {
                Ok(0) | Err(_) => return,
                Ok(n) => left -= n,
            }
        }
        let length = if status.starts_with("204") {
            String::new()
        } else {
            format!("Content-Length: {}\r\n", body.len())
        };
        let _ = conn.write_all(
            format!("HTTP/1.1 {status}\r\n{length}Connection: close\r\n\r\n{body}").as_bytes(),
        );
    })
}

fn upload_to(url: &str, extra: &[&str]) -> loadgen::Report {
    let mut args = vec![
        "--target",
        url,
        "--slow",
        "0",
        "--slow-upload",
        "2",
        "--upload-bytes",
        "256KiB",
        "--upload-rate",
        "4MiB",
        "--fast-rate",
        "0",
    ];
    args.extend(extra);
    support::run(&args)
}

#[test]
fn an_endpoints_own_answers_are_uploads_that_went_well() {
    for (status, body) in [
        ("201 Created", r#"{"saved": 262144}"#),
        ("204 No Content", ""),
    ] {
        let server = endpoint(status, body);
        let report = upload_to(&server.url(), &[]);
        for u in &report.uploads {
            assert_eq!(u.error, None, "{status}: {u:?}");
            assert_eq!(u.bytes_sent, 256 << 10);
            assert_eq!(
                (u.server_bytes, u.pattern_ok),
                (None, None),
                "not the lab's JSON"
            );
        }
    }
    // The lab's own JSON is held to what was sent.
    let liar = endpoint("200 OK", r#"{"bytes": 5, "pattern_ok": true}"#);
    let report = upload_to(&liar.url(), &[]);
    for u in &report.uploads {
        assert_eq!(
            u.error.as_ref().map(|e| e.kind),
            Some(ErrorKind::VerifyFailed)
        );
        assert_eq!(u.server_bytes, Some(5));
    }
    // A status outside --upload-ok is a bad status; inside, it is fine.
    let redirect = endpoint("303 See Other", "");
    let report = upload_to(&redirect.url(), &[]);
    assert!(
        report
            .uploads
            .iter()
            .all(|u| u.error.as_ref().map(|e| e.kind) == Some(ErrorKind::BadStatus))
    );
    let report = upload_to(&redirect.url(), &["--upload-ok", "2xx,303"]);
    assert!(report.uploads.iter().all(|u| u.error.is_none()));
}
