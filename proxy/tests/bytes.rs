//! Byte-exact proxying of `/large` (every byte checked) and `/fast`, in both
//! modes, through fast and through paced readers.

mod support;

use proxy::Buffering;
use server::Model;
use support::*;

const LARGE: u64 = 16 * 1024 * 1024;

fn check_large(buffering: Buffering, reader: &Reader) {
    let origin = origin(Model::Async, Some(2), LARGE);
    let dir = tempfile::tempdir().unwrap();
    let proxy = start_proxy(proxy_config(origin.local_addr(), buffering, dir.path()));
    let reply = get(proxy.local_addr(), "/large", reader);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body_len, LARGE, "whole body");
    assert_eq!(reply.first_bad, None, "every byte in order");
    assert!(reply.clean_eof, "closed cleanly after the body");
    assert_eq!(reply.header("content-length"), Some("16777216"));
    assert_eq!(reply.header("connection"), Some("close"));
    assert_eq!(reply.header("x-slowlab-block"), Some("65536"));
    let row = &rows(&dir.path().join("stats.csv"), 1)[0];
    assert_eq!(row.get("mode"), buffering.name());
    assert_eq!(row.get("status"), "200");
    assert_eq!(row.num("bytes"), LARGE as f64);
    assert_eq!(row.get("error"), "");
    assert!(row.num("upstream_done_s") <= row.num("client_done_s"));
    drop(proxy);
    assert!(open_files_in(dir.path()).is_empty(), "temp file closed");
}

#[test]
fn large_on_fast_reader() {
    check_large(Buffering::On, &Reader::fast());
}

#[test]
fn large_off_fast_reader() {
    check_large(Buffering::Off, &Reader::fast());
}

#[test]
fn large_on_paced_reader() {
    // 16 MiB at 16 MiB/s: about one second, through an 8 KiB receive buffer.
    check_large(Buffering::On, &Reader::slow(16.0 * 1024.0 * 1024.0));
}

#[test]
fn large_off_paced_reader() {
    check_large(Buffering::Off, &Reader::slow(16.0 * 1024.0 * 1024.0));
}

#[test]
fn fast_route_passes_through_in_both_modes() {
    let origin = origin(Model::Async, Some(2), LARGE);
    for buffering in [Buffering::On, Buffering::Off] {
        let dir = tempfile::tempdir().unwrap();
        let proxy = start_proxy(proxy_config(origin.local_addr(), buffering, dir.path()));
        let reply = get(proxy.local_addr(), "/fast", &Reader::fast());
        assert_eq!(reply.status, 200);
        assert_eq!(reply.body, br#"{"ok": true}"#);
        assert_eq!(reply.header("content-length"), Some("12"));
        assert_eq!(reply.header("content-type"), Some("application/json"));
        assert_eq!(reply.header("connection"), Some("close"));
        let missing = get(proxy.local_addr(), "/nope", &Reader::fast());
        assert_eq!(missing.status, 404, "statuses pass through");
        let rows = rows(&dir.path().join("stats.csv"), 2);
        assert_eq!(rows[0].num("bytes"), 12.0);
        assert_eq!(rows[0].num("spilled_bytes"), 0.0);
    }
}
