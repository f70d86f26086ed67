//! The experiment's finding, per worker model: two downloads that stop
//! reading take both sync workers, and an unrelated `/fast` waits; a thread
//! pool with spare handlers, or tasks, answer it at once.
//!
//! Margins are wide on purpose (this runs on small, busy machines): "blocked"
//! means no answer in a whole second, "answered" means within 200 ms on the
//! best of three tries, and recovery may take up to 5 s.

mod support;

use std::time::{Duration, Instant};

use server::{Model, ServerConfig};
use support::{read_reply, send_fast, stalled_large, time_fast};

fn start(model: Model, workers: usize) -> server::ServerHandle {
    server::spawn(ServerConfig::new(model, Some(workers))).expect("server starts")
}

/// The best of three `/fast` round trips; one slow try on a loaded machine
/// is noise, but a server that cannot answer fails all three.
fn best_fast(addr: std::net::SocketAddr) -> Duration {
    (0..3)
        .map(|_| time_fast(addr, Duration::from_secs(5)).expect("/fast answered"))
        .min()
        .expect("three tries")
}

#[test]
fn sync_two_workers_block_fast_until_readers_close() {
    let server = start(Model::Sync, 2);
    let addr = server.local_addr();
    let readers = [stalled_large(addr), stalled_large(addr)];
    // Both workers are now writing into full buffers; this connection can
    // only wait in the listen backlog.
    let mut fast = send_fast(addr);
    assert!(
        read_reply(&mut fast, Duration::from_secs(1)).is_none(),
        "/fast was answered while both sync workers were stuck"
    );
    let closed = Instant::now();
    drop(readers);
    let reply = read_reply(&mut fast, Duration::from_secs(5))
        .expect("/fast answered within 5 s after the readers closed");
    assert_eq!(reply.body, br#"{"ok": true}"#);
    eprintln!(
        "/fast answered {:?} after the readers closed",
        closed.elapsed()
    );
}

#[test]
fn sync_workers_come_back_when_readers_drain() {
    let server = start(Model::Sync, 2);
    let addr = server.local_addr();
    let readers = [stalled_large(addr), stalled_large(addr)];
    let mut fast = send_fast(addr);
    assert!(read_reply(&mut fast, Duration::from_secs(1)).is_none());
    // The readers now read everything; the workers finish and accept again.
    let drains: Vec<_> = readers
        .into_iter()
        .map(|mut r| std::thread::spawn(move || read_reply(&mut r, Duration::from_secs(20))))
        .collect();
    let reply = read_reply(&mut fast, Duration::from_secs(10)).expect("/fast answered");
    assert_eq!(reply.body, br#"{"ok": true}"#);
    for drain in drains {
        let reply = drain.join().expect("reader").expect("download finished");
        assert_eq!(reply.body.len(), 16 * 1024 * 1024);
    }
}

/// A connection that sends a request line and one header, then nothing: a
/// slowloris client between two of its lines.
fn unfinished_head(addr: std::net::SocketAddr) -> std::net::TcpStream {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.write_all(b"GET /fast HTTP/1.1\r\nHost: lab\r\nX-Slow: 1\r\n")
        .expect("write the head's start");
    s
}

#[test]
fn unfinished_heads_hold_sync_workers_as_gunicorn_s_do() {
    // A Gunicorn sync worker reads the whole head itself before it can
    // answer anything, so two slowloris clients take both workers; the
    // replica reads heads on its workers the same way (the `headers`
    // preset's replica runs rely on it).
    let server = start(Model::Sync, 2);
    let addr = server.local_addr();
    let heads = [unfinished_head(addr), unfinished_head(addr)];
    std::thread::sleep(Duration::from_millis(100));
    let mut fast = send_fast(addr);
    assert!(
        read_reply(&mut fast, Duration::from_secs(1)).is_none(),
        "/fast was answered while both workers read unfinished heads"
    );
    drop(heads);
    let reply = read_reply(&mut fast, Duration::from_secs(5))
        .expect("/fast answered once the slowloris clients left");
    assert_eq!(reply.body, br#"{"ok": true}"#);
}

#[test]
fn sync_with_a_spare_worker_answers_fast() {
    let server = start(Model::Sync, 3);
    let addr = server.local_addr();
    let _readers = [stalled_large(addr), stalled_large(addr)];
    let best = best_fast(addr);
    assert!(
        best < Duration::from_millis(200),
        "best /fast took {best:?}"
    );
}

#[test]
fn threads_four_handlers_answer_fast() {
    let server = start(Model::Threads, 4);
    let addr = server.local_addr();
    let _readers = [stalled_large(addr), stalled_large(addr)];
    let best = best_fast(addr);
    assert!(
        best < Duration::from_millis(200),
        "best /fast took {best:?}"
    );
}

#[test]
fn threads_queue_fast_behind_busy_handlers() {
    // With as many stuck downloads as handlers, the pool is exhausted too:
    // the connection is accepted but waits in the queue.
    let server = start(Model::Threads, 2);
    let addr = server.local_addr();
    let readers = [stalled_large(addr), stalled_large(addr)];
    let mut fast = send_fast(addr);
    assert!(read_reply(&mut fast, Duration::from_secs(1)).is_none());
    drop(readers);
    assert!(read_reply(&mut fast, Duration::from_secs(5)).is_some());
}

#[test]
fn async_answers_fast_with_stuck_downloads() {
    // One runtime thread on purpose: a stuck download must not hold it.
    for workers in [1, 2] {
        let server = start(Model::Async, workers);
        let addr = server.local_addr();
        let _readers = [
            stalled_large(addr),
            stalled_large(addr),
            stalled_large(addr),
        ];
        let best = best_fast(addr);
        assert!(
            best < Duration::from_millis(200),
            "best /fast took {best:?}"
        );
    }
}

#[test]
fn stop_is_quick_with_stuck_downloads() {
    for model in [Model::Sync, Model::Threads, Model::Async] {
        let server = start(model, 2);
        let addr = server.local_addr();
        let _readers = [stalled_large(addr), stalled_large(addr)];
        let started = Instant::now();
        server.shutdown();
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(2),
            "{model:?} took {took:?} to stop"
        );
    }
}
