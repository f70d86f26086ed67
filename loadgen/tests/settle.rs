//! `--fast-settle`: the `/fast` schedule waits for the slow readers' first
//! bytes (a server answering them one by one), ends the wait when the rest
//! get none (readers beyond a server's handlers), and says why.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use loadgen::settle::Settled;
use support::{Reply, ScriptedServer, response};

/// A server that answers its k-th `/large` (k from 0) after `delay(k)`,
/// or never when that is `None`, and `/fast` at once.
fn staggered(delay: impl Fn(u64) -> Option<Duration> + Send + Sync + 'static) -> ScriptedServer {
    let seen = Arc::new(AtomicU64::new(0));
    ScriptedServer::start(move |path| {
        if path != "/large" {
            return Reply::Bytes(response("200 OK", "", b"ok"));
        }
        let k = seen.fetch_add(1, Ordering::SeqCst);
        match delay(k) {
            Some(d) => Reply::After(d, response("200 OK", "", &[7u8; 4096])),
            None => Reply::Silent(Duration::from_secs(3)),
        }
    })
}

fn run(url: &str, settle: &str) -> loadgen::Report {
    support::run(&[
        "--target",
        url,
        "--slow",
        "8",
        "--slow-rate",
        "1KiB",
        "--fast-rate",
        "20",
        "--fast-duration",
        "200ms",
        "--fast-start",
        "50ms",
        "--fast-settle",
        settle,
        "--timeout",
        "5s",
        "--end-with-fast",
    ])
}

#[test]
fn the_schedule_begins_once_every_reader_has_its_first_byte() {
    // The k-th reader answered after 100 ms x k: the last at 0.7 s.
    let server = staggered(|k| Some(Duration::from_millis(100 * k)));
    let r = run(&server.url(), "250ms");
    assert_eq!(r.settled, Settled::FirstBytes);
    assert!(
        (0.65..1.5).contains(&r.fast_began_s),
        "began at {} s",
        r.fast_began_s
    );
    let first = r.fast.first().expect("a fast call").scheduled_s;
    assert!(
        first >= 0.65 && (first - r.fast_began_s).abs() < 1e-3,
        "{first}"
    );
    assert_eq!(r.fast.len(), 4, "the schedule keeps its length");
    // Without the wait, at --fast-start.
    let server = staggered(|k| Some(Duration::from_millis(100 * k)));
    let r = run(&server.url(), "0s");
    assert_eq!((r.settled, r.fast_began_s), (Settled::Start, 0.05));
}

#[test]
fn readers_that_get_no_answer_end_the_wait_after_the_quiet_window() {
    // Two handlers: two readers answered at once, six never.
    let server = staggered(|k| (k < 2).then_some(Duration::ZERO));
    let r = run(&server.url(), "300ms");
    assert_eq!(r.settled, Settled::Quiet);
    assert!(
        (0.29..1.0).contains(&r.fast_began_s),
        "began at {} s",
        r.fast_began_s
    );
}
