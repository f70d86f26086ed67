//! The WSGI app under real Gunicorn 23.0.0 and `slowlab serve` answer with
//! the same bytes: same statuses, the headers that matter, same bodies.

use crate::support;

use catalogue::Server;
use support::{get, stacks};

#[test]
fn gunicorn_and_slowlab_serve_send_identical_bytes() {
    let tools = stacks::tools();
    if let Err(e) = &tools.gunicorn {
        panic!("gunicorn is needed for this test (run `slowlab prepare`): {e}");
    }
    let dir = tempfile::tempdir().unwrap();
    let gunicorn = stacks::start(
        &stacks::launcher(&tools, dir.path()),
        Server::GunicornSync2,
        dir.path(),
    );
    let (_rust, rust_addr) = stacks::serve(dir.path(), &[]);

    support::assert_same_answers("gunicorn", gunicorn.addr, rust_addr);
    let fast = get(rust_addr, "/fast");
    assert_eq!(fast.body, br#"{"ok": true}"#);
    let large = get(gunicorn.addr, "/large");
    assert_eq!(large.body.len(), 16 << 20);
    let mut v = common::pattern::Verifier::new(65536);
    v.update(&large.body);
    assert_eq!(v.first_bad(), None);

    let up = |addr, block, body: &[u8]| {
        let req = support::request_with_body("POST", "/upload", block, body);
        support::raw_request_bytes(addr, &req)
    };
    let good: Vec<u8> = (0..3000u64)
        .map(|i| common::pattern::byte_at(i, 1000))
        .collect();
    for addr in [gunicorn.addr, rust_addr] {
        let r = up(addr, Some(1000), &good);
        assert_eq!(r.status, 200);
        assert_eq!(r.body, br#"{"bytes": 3000, "pattern_ok": true}"#);
        let r = up(addr, Some(999), &good);
        assert_eq!(r.body, br#"{"bytes": 3000, "pattern_ok": false}"#);
    }

    // Gunicorn wrote one receive-log row per POST /upload: the five of
    // assert_same_answers and the two above, every one whole.
    let log = std::fs::read_to_string(dir.path().join("recv-log.csv")).unwrap();
    let mut lines = log.lines();
    assert_eq!(
        lines.next(),
        Some(schema::child::header_line::<schema::RecvLogCells>().trim_end())
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 6, "{log}");
    assert!(rows.iter().all(|r| r.ends_with(",true")), "{log}");
    let bad = rows.iter().filter(|r| r.contains(",false,")).count();
    assert_eq!(bad, 2, "the two wrong bodies say so: {log}");
    assert!(rows.iter().any(|r| r.contains(",3000,3000,true,")), "{log}");

    // Gunicorn wrote one send-log row per /large, with the shared columns.
    let log = std::fs::read_to_string(dir.path().join("send-log.csv")).unwrap();
    let mut lines = log.lines();
    assert_eq!(
        lines.next(),
        Some("start_unix_s,start_s,app_send_s,bytes,worker,complete")
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 2, "{log}");
    assert!(
        rows.iter()
            .all(|r| r.contains(",16777216,") && r.ends_with(",true"))
    );
}
