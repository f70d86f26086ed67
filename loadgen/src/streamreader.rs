//! The `streamreader` reader model: asyncio's `StreamReader` as the
//! original's client used it (`limit` 16 KiB, `read(16 KiB)`, then a sleep
//! to the pace), rebuilt as a state machine of the slow clients' engine
//! with a user-space buffer.
//!
//! What CPython 3.11 does, and where (`Lib/asyncio/`):
//! - `selector_events.py`, `_SelectorSocketTransport._read_ready__data_received`:
//!   whenever the socket is readable and the transport is reading, one
//!   `self._sock.recv(self.max_size)` with `max_size = 256 * 1024`
//!   (`_SelectorTransport.max_size`), handed to the protocol's
//!   `data_received` and on to `StreamReader.feed_data`; an empty read is
//!   EOF (`_read_ready__on_eof`, `feed_eof`).
//! - `streams.py`, `StreamReader.feed_data`: the bytes are appended to the
//!   buffer; then, if the transport is not paused and
//!   `len(self._buffer) > 2 * self._limit`, `transport.pause_reading()`
//!   (`selector_events.py`, `pause_reading`: the socket leaves the
//!   selector, so nothing is received until resumed).
//! - `streams.py`, `StreamReader.read(n)`: if the buffer is empty and no EOF,
//!   wait for data (`_wait_for_data`, which first resumes a paused
//!   transport); then take `bytes(self._buffer[:n])`, at most `n` bytes of
//!   what is there, and `_maybe_resume_transport`: if paused and
//!   `len(self._buffer) <= self._limit`, `transport.resume_reading()`.
//!
//! The application above it awaited `read(limit)` and then slept until the
//! paced deadline of everything read so far; while it slept the event loop
//! kept receiving. Its sleep ends on the event loop's clock:
//! - `base_events.py`, `BaseEventLoop._run_once`: the selector waits
//!   `when - self.time()` for the earliest timer, and a timer runs in the
//!   first turn that finds its `when` passed;
//! - `selectors.py`, `EpollSelector.select`: "epoll_wait() has a resolution
//!   of 1 millisecond, round away from zero": the wait is
//!   `math.ceil(timeout * 1e3) * 1e-3`.
//!
//! So a sleep ends up to 1 ms after its deadline (the deadlines stay
//! absolute, so the rate does not drift), and a transport resumed by the
//! application's next `read` resumes that much later. Here the engine's
//! loop is that event loop (one loop served all the original's readers
//! too): while the application sleeps and reading is not paused the
//! reader waits for its socket or its deadline (rounded up to the
//! millisecond from when it starts to wait), whichever comes first, and
//! receives when bytes arrive. Paused, it only waits for the deadline.
//! `limit` is `--read-chunk`, the original's 16 KiB for both.
//!
//! When it receives is the one thing the rules above do not fix. CPython
//! spends 30-250 µs (median 70-100 µs on this machine) between
//! `epoll_wait`'s return and the transport's `recv`, running the loop's
//! bookkeeping in the interpreter, and bytes keep arriving meanwhile: the
//! first `recv` of a response often finds the whole receive window where
//! an immediate one finds only the head. `--loop-lag` spends that time on
//! the CPU before each `recv` (0, the default, receives at once: the
//! kernel's queue is emptied within a wake-up of the bytes' arrival). The
//! reference client measures its own (`loop_lag_us_median`), so the lag is
//! taken from the interpreter it stands for, not fitted to a result.
//!
//! Cost, measured on this machine: see the book, "The load generator and the reader models".

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use socket2::Socket;

use crate::engine::io as eio;
use crate::engine::{Cx, Interest, Wait};
use crate::error::{ErrorKind, Failure};
use crate::pacing;
use crate::response::{self, BodySink, ResponseReader};
use crate::slow::Gauge;

/// `_SelectorTransport.max_size`: the size of every `recv`.
pub const MAX_SIZE: usize = 256 * 1024;

/// The pacing of one download.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    /// When the connection was established: deadlines count from here.
    pub start: Instant,
    /// Bytes per second.
    pub rate: u64,
    /// The longest wait for bytes while the application waits for them.
    pub timeout: Duration,
    /// The event loop's time from the socket's readiness to its `recv`
    /// (`--loop-lag`); zero receives at once.
    pub loop_lag: Duration,
}

/// The `StreamReader`'s buffer and its transport's pause flag.
#[derive(Debug)]
struct Buffer {
    bytes: Vec<u8>,
    /// Bytes before this offset have been read by the application.
    head: usize,
    limit: usize,
    paused: bool,
    eof: bool,
}

impl Buffer {
    fn len(&self) -> usize {
        self.bytes.len() - self.head
    }

    /// `StreamReader.feed_data`.
    fn feed_data(&mut self, data: &[u8]) {
        // Drop what was read before appending, so the vector stays about
        // as large as the buffer (Python's bytearray deletes at the front).
        if self.head > 0 {
            self.bytes.drain(..self.head);
            self.head = 0;
        }
        self.bytes.extend_from_slice(data);
        if !self.paused && self.len() > 2 * self.limit {
            self.paused = true;
        }
    }

    /// `StreamReader.read(n)` once data is there: up to `n` bytes, then
    /// `_maybe_resume_transport`.
    fn take(&mut self, n: usize) -> std::ops::Range<usize> {
        let taken = self.head..self.head + n.min(self.len());
        self.head = taken.end;
        if self.paused && self.len() <= self.limit {
            self.paused = false;
        }
        taken
    }
}

/// What woke the reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The request is written: the application awaits its first `read`.
    Begin,
    /// The socket is readable (or at EOF, or failed).
    Readable,
    /// The deadline it asked for.
    Timer,
}

/// What the reader does next.
pub(crate) enum Next {
    Wait(Wait),
    /// The response is whole and consumed (or failed).
    Done(Result<(), Failure>),
}

/// What the download lends the reader for one step.
pub struct Io<'a> {
    pub socket: &'a Socket,
    pub reader: &'a mut ResponseReader,
    /// Bytes the first `recv` returned (the download's record).
    pub first_read: &'a mut Option<usize>,
    pub sink: &'a mut dyn BodySink,
    pub gauge: &'a Gauge,
}

/// One download read as the original's client did: `read(chunk)` from a
/// `StreamReader` with limit `chunk`, then a sleep to the paced deadline of
/// every body byte read so far, until the response is complete and its
/// last byte consumed. The gauge follows the buffer.
#[derive(Debug)]
pub struct Reader {
    buf: Buffer,
    chunk: usize,
    pace: Pace,
    /// When the application's sleep ends; `None` while it waits in `read`.
    sleeping: Option<Instant>,
    /// The body is whole: the application's last sleep, then the end.
    last: bool,
    /// While the application waits in `read`: when it gives up.
    stall: Option<Instant>,
}

impl Reader {
    pub fn new(chunk: usize, pace: Pace) -> Reader {
        Reader {
            buf: Buffer {
                bytes: Vec::new(),
                head: 0,
                limit: chunk,
                paused: false,
                eof: false,
            },
            chunk,
            pace,
            sleeping: None,
            last: false,
            stall: None,
        }
    }

    /// Runs the model from `event` until it must wait.
    pub(crate) fn advance(&mut self, event: Event, mut io: Io<'_>, cx: &mut Cx) -> Next {
        match event {
            Event::Begin => {}
            Event::Readable => {
                if let Err(f) = self.receive(&mut io, cx) {
                    return Next::Done(Err(f));
                }
            }
            Event::Timer => {
                // Waiting in `read` with nothing arriving for --timeout.
                if self.sleeping.is_none() && self.stall.is_some_and(|t| Instant::now() >= t) {
                    return Next::Done(Err(Failure::new(
                        ErrorKind::Timeout,
                        "read: nothing arrived",
                    )));
                }
            }
        }
        self.run(io)
    }

    /// The transport's `_read_ready`: after the loop's own lag, one
    /// `recv(MAX_SIZE)` into the buffer.
    fn receive(&mut self, io: &mut Io<'_>, cx: &mut Cx) -> Result<(), Failure> {
        if self.buf.paused || self.buf.eof {
            return Ok(());
        }
        spin(self.pace.loop_lag);
        let scratch = cx.scratch(MAX_SIZE);
        match eio::recv(io.socket, scratch) {
            Ok(None) => {}
            Ok(Some(0)) => self.buf.eof = true,
            Ok(Some(n)) => {
                io.first_read.get_or_insert(n);
                self.buf.feed_data(&scratch[..n]);
            }
            Err(e) => return Err(response::read_failure(&e)),
        }
        publish(io.gauge, &self.buf);
        Ok(())
    }

    fn run(&mut self, io: Io<'_>) -> Next {
        loop {
            if self.sleeping.is_none() {
                if self.buf.len() > 0 {
                    let taken = self.buf.take(self.chunk);
                    let done = match io.reader.feed(&self.buf.bytes[taken], io.sink) {
                        Ok(done) => done,
                        Err(f) => return Next::Done(Err(f)),
                    };
                    let body = io.reader.body_bytes();
                    io.gauge.received.store(body, Ordering::Relaxed);
                    publish(io.gauge, &self.buf);
                    self.sleeping = Some(self.pace.start + pacing::due(body, self.pace.rate));
                    self.last = done;
                    self.stall = None;
                } else if self.buf.eof {
                    return Next::Done(io.reader.eof());
                } else if self.buf.paused {
                    // `_wait_for_data` resumes a paused transport.
                    self.buf.paused = false;
                    publish(io.gauge, &self.buf);
                }
            }
            let now = Instant::now();
            if let Some(due) = self.sleeping {
                if now >= due {
                    io.gauge
                        .consumed
                        .store(io.reader.body_bytes(), Ordering::Relaxed);
                    self.sleeping = None;
                    if self.last {
                        return Next::Done(Ok(()));
                    }
                    continue;
                }
                let wake = now + epoll_timeout(due - now);
                // Paused, ended or whole, only the application's timer is
                // left; else the loop also receives while it sleeps.
                if self.buf.paused || self.buf.eof || self.last {
                    return Next::Wait(Wait::until(wake));
                }
                return Next::Wait(Wait::io(Interest::Read, wake));
            }
            // The application waits in `read` for bytes.
            let stall = *self.stall.get_or_insert(now + self.pace.timeout);
            return Next::Wait(Wait::io(Interest::Read, stall));
        }
    }
}

/// The event loop's wait for a timer `wait` away: whole milliseconds,
/// rounded up (`EpollSelector.select`).
fn epoll_timeout(wait: Duration) -> Duration {
    let ms = wait.as_nanos().div_ceil(1_000_000);
    Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX))
}

/// The event loop's own time between the selector's return and the
/// transport's `recv`, spent on the CPU, as an interpreter spends it: a
/// sleep would hand the core to someone else and wake up to a timer's
/// slack late.
fn spin(lag: Duration) {
    if lag.is_zero() {
        return;
    }
    let start = Instant::now();
    while start.elapsed() < lag {
        std::hint::spin_loop();
    }
}

fn publish(gauge: &Gauge, buf: &Buffer) {
    gauge.buffered.store(buf.len(), Ordering::Relaxed);
    gauge.paused.store(buf.paused, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer(limit: usize) -> Buffer {
        Buffer {
            bytes: Vec::new(),
            head: 0,
            limit,
            paused: false,
            eof: false,
        }
    }

    #[test]
    fn the_event_loop_waits_in_whole_milliseconds_rounded_up() {
        // (wait in nanoseconds, the loop's wait in milliseconds)
        for (wait_ns, ms) in [
            (0, 0),
            (1, 1),
            (1_000_000, 1),
            (1_001_000, 2),
            (5_800_000, 6),
        ] {
            assert_eq!(
                epoll_timeout(Duration::from_nanos(wait_ns)),
                Duration::from_millis(ms),
                "a wait of {wait_ns} ns"
            );
        }
    }

    #[test]
    fn pauses_above_twice_the_limit_and_resumes_at_the_limit() {
        let mut b = buffer(16);
        b.feed_data(&[0; 32]);
        assert!(!b.paused, "32 bytes is not more than 2 x 16");
        b.feed_data(&[0; 1]);
        assert!(b.paused, "33 bytes is");
        // read(16) leaves 17: still paused.
        assert_eq!(b.take(16).len(), 16);
        assert!(b.paused);
        // read(16) leaves 1 <= 16: resumed.
        assert_eq!(b.take(16).len(), 16);
        assert!(!b.paused);
        // read(n) returns what is there, at most n.
        assert_eq!(b.take(16).len(), 1);
        assert_eq!(b.len(), 0);
    }

    #[test]
    fn a_large_receive_is_taken_whole_and_read_in_order() {
        let mut b = buffer(4);
        let data: Vec<u8> = (0..50).collect();
        b.feed_data(&data);
        assert!(b.paused);
        let mut out = Vec::new();
        while b.len() > 0 {
            let r = b.take(4);
            out.extend_from_slice(&b.bytes[r]);
            // Resumed only once no more than the limit is left.
            assert_eq!(b.paused, b.len() > 4);
        }
        assert_eq!(out, data);
        b.feed_data(&[7]);
        assert_eq!(
            b.bytes,
            vec![7],
            "what was read is dropped before appending"
        );
    }
}
