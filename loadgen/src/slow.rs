//! A slow reader: one `/large` download with a small receive buffer, read in
//! bounded chunks and paced to a fixed rate, every byte verified.
//!
//! Each reader is a state machine of the slow clients' engine
//! ([`crate::engine`]): a paced download is ~2,000 reads of ~8 KiB (what a
//! 16 KiB `SO_RCVBUF` holds), each at its deadline `start + consumed /
//! rate`, to the nanosecond. Low CPU matters: a load generator that uses
//! the host's CPU starves the server it measures, and under a CPU quota a
//! throttled process stalls the `/fast` schedule too.
//!
//! How the bytes leave the socket is the reader model (`--reader`): `strict`
//! reads here, one `recv` of at most `--read-chunk` per pacing deadline (at
//! the deadline it reads what is there, or waits for the first bytes to
//! arrive, as a blocking `recv` would); `streamreader` hands the connected
//! socket to [`crate::streamreader`]. Connect, request, timeouts and the
//! record are the same for both.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use socket2::Socket;
use tokio::sync::oneshot;

use crate::config::{ReaderModel, VerifyMode};
use crate::engine::io::{self as eio, Buffers};
use crate::engine::{Client, Cx, Engine, Interest, Machine, Wait};
use crate::error::{ErrorKind, Failure};
use crate::fast::{ms, secs};
use crate::pacing;
use crate::record::{LargeRecord, Verified};
use crate::response::{self, Framing, ResponseReader};
use crate::streamreader;
use crate::verify::VerifySink;

/// The most reads a strict reader makes in one turn of its loop when its
/// deadlines are already past (a fast rate): then it yields to the others.
const READS_PER_TURN: usize = 16;

/// What every slow reader shares.
#[derive(Debug)]
pub struct SlowContext {
    pub addr: std::net::SocketAddr,
    pub request: Vec<u8>,
    /// The longest wait for the connect or any single read or write.
    pub timeout: Duration,
    pub verify: VerifyMode,
    /// How each reader reads (its rate, buffers and model).
    pub reading: crate::config::SlowReading,
    /// Reader `i` binds `bind.slow_client(i)` (`--slow-bind`).
    pub bind: crate::bind::Binds,
}

/// Live counters for the progress sampler.
#[derive(Debug, Default)]
pub struct Gauge {
    pub received: AtomicU64,
    pub consumed: AtomicU64,
    /// `streamreader`: bytes in the user-space buffer.
    pub buffered: AtomicUsize,
    /// `streamreader`: the transport's reading is paused.
    pub paused: AtomicBool,
    pub done: AtomicBool,
    /// The connected socket while the download holds it, so that the
    /// sampler can ask the kernel for its receive queue. The download
    /// clears it under the lock before it closes the socket, so the sampler
    /// never asks about a descriptor that was closed (or reused).
    socket: Mutex<Option<RawFd>>,
}

impl Gauge {
    fn socket(&self) -> MutexGuard<'_, Option<RawFd>> {
        // A panic elsewhere cannot leave an `Option<RawFd>` inconsistent.
        self.socket.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Lets the sampler see `fd` until [`Gauge::unwatch`], which must come
    /// before the socket closes.
    fn watch(&self, fd: RawFd) {
        *self.socket() = Some(fd);
    }

    fn unwatch(&self) {
        *self.socket() = None;
    }

    /// Bytes in the socket's kernel receive queue now (`SIOCINQ`, the same
    /// request as `FIONREAD`): received, not yet read by the process. `None`
    /// while no socket is connected.
    pub fn socket_queue(&self) -> Option<u64> {
        let socket = self.socket();
        let fd = (*socket)?;
        let mut queued: libc::c_int = 0;
        // SAFETY: the descriptor stays open while the lock is held (see
        // `socket`), and FIONREAD writes one int to the pointer given.
        let rc = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut queued) };
        (rc == 0).then(|| u64::try_from(queued).unwrap_or(0))
    }
}

/// A slow reader in the engine, with the gauge its progress is sampled by.
#[derive(Debug)]
pub struct SlowReader {
    pub gauge: Arc<Gauge>,
    client: Client<LargeRecord>,
}

impl SlowReader {
    /// Hands reader `client` to the engine; it begins at
    /// [`SlowReader::start`].
    pub fn spawn(engine: &Arc<Engine>, client: usize, ctx: Arc<SlowContext>) -> Self {
        let gauge = Arc::new(Gauge::default());
        let (tx, rx) = oneshot::channel();
        let machine = Download {
            client,
            ctx,
            gauge: gauge.clone(),
            tx: Some(tx),
            t0: None,
            began: None,
            p: Progress::default(),
            sink: None,
            socket: None,
            step: Step::Idle,
        };
        SlowReader {
            gauge,
            client: engine.add(Box::new(machine), rx),
        }
    }

    /// Lets the download begin; t0 is the run's time zero.
    pub fn start(&self, t0: Instant) {
        self.client.start(t0);
    }

    /// Cuts the download if it is still running: its record says `cut`.
    pub fn stop(&self) {
        self.client.stop();
    }

    /// Waits for the download's record without blocking the runtime.
    pub async fn record(self) -> anyhow::Result<LargeRecord> {
        self.client.record().await
    }

    /// [`SlowReader::record`], cutting the download once `stop` resolves.
    pub async fn record_when(
        self,
        stop: impl std::future::Future<Output = ()>,
    ) -> anyhow::Result<LargeRecord> {
        self.client.record_when(stop).await
    }
}

/// Instants and facts seen on the way, kept when the download fails.
#[derive(Debug, Default)]
struct Progress {
    granted: Option<usize>,
    connected: Option<Instant>,
    consumed_all: Option<Instant>,
    /// What the first `recv` after the request returned: the head alone,
    /// or the head with as much of the body as had arrived (the book, "The load
    /// generator and the reader models": how a run begins can set its level).
    first_read: Option<usize>,
    reader: ResponseReader,
}

/// Where a download is.
enum Step {
    /// Not started.
    Idle,
    Connecting {
        until: Instant,
    },
    /// Writing the request; `at` bytes of it are written.
    Requesting {
        at: usize,
        until: Instant,
    },
    /// `strict`: sleeping to the deadline of what it has read (`last`: the
    /// body is whole, the download ends there).
    Sleeping {
        due: Instant,
        last: bool,
    },
    /// `strict`: at its deadline nothing was there; waiting for bytes
    /// (until the stall timeout).
    Waiting,
    /// `streamreader`: asyncio's buffer and transport.
    Stream(streamreader::Reader),
    /// Ended.
    Over,
}

/// One download as a machine of the engine.
struct Download {
    client: usize,
    ctx: Arc<SlowContext>,
    gauge: Arc<Gauge>,
    tx: Option<oneshot::Sender<LargeRecord>>,
    t0: Option<Instant>,
    began: Option<Instant>,
    p: Progress,
    sink: Option<VerifySink>,
    socket: Option<Socket>,
    step: Step,
}

impl Download {
    fn timeout(&self) -> Instant {
        Instant::now() + self.ctx.timeout
    }

    /// The request is written: reading begins.
    fn requested(&mut self, cx: &mut Cx) -> Wait {
        let start = self.p.connected.unwrap_or_else(Instant::now);
        match self.ctx.reading.reader {
            ReaderModel::Strict => self.read(cx),
            ReaderModel::Streamreader => {
                let pace = streamreader::Pace {
                    start,
                    rate: self.ctx.reading.rate,
                    timeout: self.ctx.timeout,
                    loop_lag: self.ctx.reading.loop_lag,
                };
                self.step =
                    Step::Stream(streamreader::Reader::new(self.ctx.reading.read_chunk, pace));
                self.stream(cx, streamreader::Event::Begin)
            }
        }
    }

    fn write_request(&mut self, mut at: usize, until: Instant, cx: &mut Cx) -> Wait {
        let Some(socket) = &self.socket else {
            return self.finish(Err(Failure::new(ErrorKind::Io, "no socket")));
        };
        match eio::send(socket, &self.ctx.request, &mut at) {
            Ok(true) => self.requested(cx),
            Ok(false) => {
                // A write that made progress restarts the stall timeout.
                let until = if at > 0 { self.timeout() } else { until };
                self.step = Step::Requesting { at, until };
                Wait::io(Interest::Write, until)
            }
            Err(e) => self.finish(Err(Failure::transfer("write", &e))),
        }
    }

    fn connected(&mut self, cx: &mut Cx) -> Wait {
        let now = Instant::now();
        self.p.connected = Some(now);
        if let Some(s) = &self.socket {
            self.gauge.watch(s.as_raw_fd());
        }
        self.write_request(0, now + self.ctx.timeout, cx)
    }

    /// `strict`: one `recv` of at most `--read-chunk` now, then the sleep to
    /// the deadline of every byte read so far; at EOF everything read has
    /// been consumed at that rate.
    fn read(&mut self, cx: &mut Cx) -> Wait {
        let start = self.p.connected.unwrap_or_else(Instant::now);
        for _ in 0..READS_PER_TURN {
            let Some(socket) = &self.socket else {
                return self.finish(Err(Failure::new(ErrorKind::Io, "no socket")));
            };
            let buf = cx.scratch(self.ctx.reading.read_chunk);
            let n = match eio::recv(socket, buf) {
                Ok(Some(n)) => n,
                Ok(None) => {
                    self.step = Step::Waiting;
                    return Wait::io(Interest::Read, self.timeout());
                }
                Err(e) => return self.finish(Err(response::read_failure(&e))),
            };
            let sink = self
                .sink
                .get_or_insert_with(|| VerifySink::new(self.ctx.verify));
            if n == 0 {
                let end = self.p.reader.eof();
                if end.is_ok() {
                    self.p.consumed_all = Some(Instant::now());
                }
                return self.finish(end);
            }
            self.p.first_read.get_or_insert(n);
            let done = match self.p.reader.feed(&buf[..n], sink) {
                Ok(done) => done,
                Err(f) => return self.finish(Err(f)),
            };
            let bytes = self.p.reader.body_bytes();
            self.gauge.received.store(bytes, Ordering::Relaxed);
            let due = start + pacing::due(bytes, self.ctx.reading.rate);
            if Instant::now() < due {
                self.step = Step::Sleeping { due, last: done };
                return Wait::until(due);
            }
            self.gauge.consumed.store(bytes, Ordering::Relaxed);
            if done {
                self.p.consumed_all = Some(Instant::now());
                return self.finish(Ok(()));
            }
        }
        // Deadlines already past: the next read comes in the next turn.
        let now = Instant::now();
        self.step = Step::Sleeping {
            due: now,
            last: false,
        };
        Wait::until(now)
    }

    fn stream(&mut self, cx: &mut Cx, event: streamreader::Event) -> Wait {
        let (Step::Stream(r), Some(socket)) = (&mut self.step, &self.socket) else {
            return self.finish(Err(Failure::new(ErrorKind::Io, "no socket")));
        };
        let sink = self
            .sink
            .get_or_insert_with(|| VerifySink::new(self.ctx.verify));
        let io = streamreader::Io {
            socket,
            reader: &mut self.p.reader,
            first_read: &mut self.p.first_read,
            sink,
            gauge: &self.gauge,
        };
        match r.advance(event, io, cx) {
            streamreader::Next::Wait(w) => w,
            streamreader::Next::Done(end) => {
                if end.is_ok() {
                    self.p.consumed_all = Some(Instant::now());
                }
                self.finish(end)
            }
        }
    }

    /// Ends the download with its record; every outcome is a row.
    fn finish(&mut self, outcome: Result<(), Failure>) -> Wait {
        self.step = Step::Over;
        self.gauge.unwatch();
        // Unwatched first: the sampler never asks about a closed socket.
        self.socket = None;
        let mut sink = self
            .sink
            .take()
            .unwrap_or_else(|| VerifySink::new(self.ctx.verify));
        let p = &self.p;
        let error = outcome
            .err()
            .or_else(|| sink.verdict())
            .map(Failure::in_load);
        let began = self.began.unwrap_or_else(Instant::now);
        let since = |t: Option<Instant>| t.map(|t| ms(began, t));
        let record = LargeRecord {
            client: self.client,
            started_s: secs(self.t0.unwrap_or(began), began),
            connect_ms: since(p.connected),
            first_byte_ms: since(p.reader.first_byte()),
            status: std::mem::take(&mut sink.status),
            bytes: p.reader.body_bytes(),
            content_length: sink.content_length,
            receive_s: p.connected.zip(p.consumed_all).map(|(a, b)| secs(a, b)),
            rcvbuf_requested_bytes: Some(self.ctx.reading.rcvbuf),
            rcvbuf_granted_bytes: p.granted,
            first_read_bytes: p.first_read,
            verified: match (&error, sink.checks_pattern(), p.reader.framing()) {
                (Some(_), _, _) => Verified::No,
                (None, true, _) => Verified::Pattern,
                (None, false, Some(Framing::UntilEof)) => Verified::Unchecked,
                (None, false, _) => Verified::Length,
            },
            error,
            reader: self.ctx.reading.reader,
            loop_lag: (self.ctx.reading.reader == ReaderModel::Streamreader)
                .then_some(self.ctx.reading.loop_lag),
            protocol: catalogue::Edge::CLEARTEXT_HTTP1,
            connection: self.client,
            h2: None,
        };
        self.gauge.done.store(true, Ordering::Release);
        if let Some(tx) = self.tx.take() {
            // The receiver is gone only if the run was abandoned.
            let _ = tx.send(record);
        }
        Wait::Done
    }

    fn stalled(&mut self, what: &str) -> Wait {
        let f = Failure::new(
            ErrorKind::Timeout,
            format!("{what}: nothing for {:?}", self.ctx.timeout),
        );
        self.finish(Err(f))
    }
}

impl Machine for Download {
    fn start(&mut self, t0: Instant, cx: &mut Cx) -> Wait {
        let began = Instant::now();
        self.t0 = Some(t0);
        self.began = Some(began);
        // `--rcvbuf 0` leaves the buffer to the kernel's autotuning (asking
        // for 0 would get the kernel's minimum, 2304 bytes).
        let rcvbuf = self.ctx.reading.rcvbuf;
        let buffers = Buffers {
            rcvbuf: (rcvbuf > 0).then_some(rcvbuf),
            sndbuf: None,
        };
        match eio::connect(
            self.ctx.addr,
            self.ctx.bind.slow_client(self.client),
            buffers,
        ) {
            Err((f, granted)) => {
                self.p.granted = granted.rcvbuf;
                self.finish(Err(f))
            }
            Ok(c) => {
                self.p.granted = c.rcvbuf;
                self.socket = Some(c.socket);
                if c.done {
                    return self.connected(cx);
                }
                let until = began + self.ctx.timeout;
                self.step = Step::Connecting { until };
                Wait::io(Interest::Write, until)
            }
        }
    }

    fn ready(&mut self, cx: &mut Cx) -> Wait {
        match &self.step {
            Step::Connecting { until } => {
                let until = *until;
                match self.socket.as_ref().map(eio::connected) {
                    Some(Ok(true)) => self.connected(cx),
                    Some(Ok(false)) => Wait::io(Interest::Write, until),
                    Some(Err(e)) => self.finish(Err(Failure::connect(&e))),
                    None => self.finish(Err(Failure::new(ErrorKind::Io, "no socket"))),
                }
            }
            Step::Requesting { at, until } => self.write_request(*at, *until, cx),
            Step::Waiting => self.read(cx),
            Step::Sleeping { due, .. } => Wait::until(*due),
            Step::Stream(_) => self.stream(cx, streamreader::Event::Readable),
            Step::Idle | Step::Over => Wait::Done,
        }
    }

    fn timer(&mut self, cx: &mut Cx) -> Wait {
        match &self.step {
            Step::Connecting { .. } => self.finish(Err(Failure::new(
                ErrorKind::Timeout,
                format!("connect: not established in {:?}", self.ctx.timeout),
            ))),
            Step::Requesting { .. } => self.stalled("write"),
            Step::Waiting => self.stalled("read"),
            Step::Sleeping { last, .. } => {
                let last = *last;
                let bytes = self.p.reader.body_bytes();
                self.gauge.consumed.store(bytes, Ordering::Relaxed);
                if last {
                    self.p.consumed_all = Some(Instant::now());
                    return self.finish(Ok(()));
                }
                self.read(cx)
            }
            Step::Stream(_) => self.stream(cx, streamreader::Event::Timer),
            Step::Idle | Step::Over => Wait::Done,
        }
    }

    fn stop(&mut self, _cx: &mut Cx) -> Wait {
        let f = Failure::new(
            ErrorKind::Cut,
            format!(
                "the run ended after {} body bytes",
                self.p.reader.body_bytes()
            ),
        );
        self.finish(Err(f))
    }

    fn fd(&self) -> Option<RawFd> {
        self.socket.as_ref().map(AsRawFd::as_raw_fd)
    }
}

impl Drop for Download {
    /// An abandoned download (the engine stopped first) leaves its gauge
    /// done and unwatched before its socket closes.
    fn drop(&mut self) {
        self.gauge.unwatch();
        self.gauge.done.store(true, Ordering::Release);
    }
}
