//! Stopping: dropping the handle ends the proxy within 2 s even with slow
//! downloads in flight, and their rows are still written.

mod support;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use proxy::Buffering;
use support::*;

#[test]
fn drop_stops_within_two_seconds_with_slow_downloads_in_flight() {
    let upstream = FakeUpstream::start(|mut s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 16777216\r\n\r\n");
        write_pattern(&mut s, 16 << 20);
    });
    for buffering in [Buffering::On, Buffering::Off] {
        let dir = tempfile::tempdir().unwrap();
        let proxy = start_proxy(proxy_config(upstream.addr, buffering, dir.path()));
        let mut clients = Vec::new();
        for _ in 0..2 {
            let mut c = connect(proxy.local_addr(), Some(8 * 1024));
            c.write_all(b"GET /large HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            let mut buf = [0u8; 4096];
            assert!(c.read(&mut buf).unwrap() > 0);
            clients.push(c);
        }
        let started = Instant::now();
        drop(proxy);
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(2),
            "{buffering:?}: stop took {took:?}"
        );
        let rows = rows(&dir.path().join("stats.csv"), 2);
        for row in rows {
            assert_eq!(row.get("error"), "shutdown", "{row:?}");
        }
        assert!(open_files_in(dir.path()).is_empty());
    }
}
