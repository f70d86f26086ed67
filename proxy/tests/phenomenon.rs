//! The phenomenon: in front of `sync --workers 2` with two slow readers of
//! the 16 MiB `/large`, a `/fast` through `--buffering on` is answered at
//! once, while through `--buffering off` it waits for a worker to come free.
//!
//! The slow readers read at the experiment's 2 MiB/s but are stopped as soon
//! as the verdict is in, so each test takes a few seconds, not eight.
//! `/fast` starts 1 s after the downloads rather than the experiment's
//! 250 ms: a debug build on a busy 2-core CI machine needs a few hundred ms
//! to take 2 x 16 MiB off the origin, and the test is about the workers
//! being free while the slow clients (8 s each) are still reading.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use proxy::Buffering;
use server::Model;
use support::*;

const LARGE: u64 = 16 * 1024 * 1024;
const RATE: f64 = 2.0 * 1024.0 * 1024.0;

/// Returns how long `/fast` took, and the stats rows.
fn fast_behind_two_slow_downloads(buffering: Buffering) -> (Duration, Vec<Row>) {
    let origin = origin(Model::Sync, Some(2), LARGE);
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = proxy_config(origin.local_addr(), buffering, dir.path());
    let gauge = dir.path().join("gauge.csv");
    cfg.gauge_log = Some(gauge.clone());
    cfg.gauge_interval = Duration::from_millis(50);
    let proxy = start_proxy(cfg);
    let addr = proxy.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let slow: Vec<_> = (0..2)
        .map(|_| {
            let reader = Reader {
                stop: Some(stop.clone()),
                ..Reader::slow(RATE)
            };
            std::thread::spawn(move || get(addr, "/large", &reader))
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let started = Instant::now();
    let fast = get(addr, "/fast", &Reader::fast());
    let took = started.elapsed();
    assert_eq!(fast.status, 200);
    assert_eq!(fast.body, br#"{"ok": true}"#);
    if buffering == Buffering::On {
        // Let both downloads finish reading the origin (the gauge log shows
        // it), so that their rows carry `upstream_done_s`.
        let done = eventually(PATIENCE, || upstream_reads_done(&gauge) >= 2);
        assert!(done, "origin not read whole");
    }
    stop.store(true, Ordering::Relaxed);
    for t in slow {
        let reply = t.join().expect("slow reader");
        assert_eq!(reply.status, 200);
        assert_eq!(reply.first_bad, None);
    }
    drop(proxy);
    let rows = rows(&dir.path().join("stats.csv"), 3);
    eprintln!("{buffering:?}: /fast took {took:?}; rows {rows:?}");
    (took, rows)
}

/// How many responses the gauge log shows with the whole body read from
/// the origin.
fn upstream_reads_done(gauge: &std::path::Path) -> usize {
    let text = std::fs::read_to_string(gauge).unwrap_or_default();
    let columns = schema::columns::<schema::GaugeCells>().len();
    let mut done: Vec<&str> = text
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let whole = f.len() == columns && f[2] == LARGE.to_string();
            whole.then_some(f[1])
        })
        .collect();
    done.sort();
    done.dedup();
    done.len()
}

#[test]
fn buffering_on_frees_the_workers() {
    let (took, rows) = fast_behind_two_slow_downloads(Buffering::On);
    assert!(took < Duration::from_millis(200), "/fast took {took:?}");
    // Both downloads were read from the origin whole, long before the
    // slow clients could have read them.
    let large: Vec<_> = rows.iter().filter(|r| r.num("bytes") != 12.0).collect();
    assert_eq!(large.len(), 2);
    for r in large {
        // Half of what a slow client needs for the whole body.
        assert!(r.num("upstream_done_s") < 4.0, "{r:?}");
        assert!(r.num("spilled_bytes") > 0.0, "{r:?}");
    }
}

#[test]
fn buffering_off_keeps_the_workers_stuck() {
    let (took, _) = fast_behind_two_slow_downloads(Buffering::Off);
    assert!(took > Duration::from_secs(1), "/fast took only {took:?}");
}
