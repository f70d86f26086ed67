//! A slow reader: one `/large` download with a small receive buffer, read in
//! bounded chunks and paced to a fixed rate, every byte verified.
//!
//! Each reader is a plain thread with a blocking socket. A paced download is
//! ~2,000 reads of ~8 KiB (what a 16 KiB `SO_RCVBUF` holds) each followed by
//! a sleep; on a thread that is one `recvfrom` and one `clock_nanosleep` per
//! read, where a tokio task also paid timer registration, a self-wake through
//! the event fd and extra `epoll_wait`s (about 3x the CPU time, measured).
//! Low CPU matters under a 0.2-core quota: a throttled process stalls the
//! `/fast` schedule too. The thread also sleeps with nanosecond resolution,
//! so pacing and `receive_s` are not rounded to tokio's millisecond.
//!
//! How the bytes leave the socket is the reader model (`--reader`): `strict`
//! reads here, one `recv` per pacing deadline; `streamreader` hands the
//! connected socket to [`crate::streamreader`]. Connect, request, timeouts
//! and the record are the same for both.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::Context;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::sync::oneshot;

use crate::config::{ReaderModel, VerifyMode};
use crate::error::{ErrorKind, Failure};
use crate::fast::{ms, secs};
use crate::latency;
use crate::net;
use crate::pacing;
use crate::record::{LargeRecord, Verified};
use crate::response::{self, Framing, ResponseReader};
use crate::verify::VerifySink;

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

/// Lets the sampler see a socket until it is dropped, which must happen
/// before the socket closes (declare it after the socket).
struct Watched<'a>(&'a Gauge);

impl<'a> Watched<'a> {
    fn new(gauge: &'a Gauge, fd: RawFd) -> Self {
        *gauge.socket() = Some(fd);
        Watched(gauge)
    }
}

impl Drop for Watched<'_> {
    fn drop(&mut self) {
        *self.0.socket() = None;
    }
}

/// Marks the gauge done however the download ends, even by a panic, so the
/// sampler never waits for a reader that is gone.
struct DoneOnDrop(Arc<Gauge>);

impl Drop for DoneOnDrop {
    fn drop(&mut self) {
        self.0.done.store(true, Ordering::Release);
    }
}

/// A reader's thread, started before t0 and waiting for it.
#[derive(Debug)]
pub struct SlowReader {
    pub gauge: Arc<Gauge>,
    go: mpsc::Sender<Instant>,
    record: oneshot::Receiver<LargeRecord>,
    thread: thread::JoinHandle<()>,
}

impl SlowReader {
    /// Starts the thread (its buffer allocated); it waits for
    /// [`SlowReader::start`].
    pub fn spawn(client: usize, ctx: Arc<SlowContext>) -> anyhow::Result<Self> {
        let read_chunk = ctx.reading.read_chunk;
        let gauge = Arc::new(Gauge::default());
        let (go, go_rx) = mpsc::channel::<Instant>();
        let (done, record) = oneshot::channel();
        let g = gauge.clone();
        let thread = thread::Builder::new()
            .name(format!("slowlab-slow{client}"))
            .spawn(move || {
                let _done = DoneOnDrop(g.clone());
                // Without it a sleep may end 50 µs late; failing costs only that.
                let _ = latency::set_timer_slack_ns(1);
                let mut buf = vec![0u8; read_chunk];
                // A closed channel means the run was abandoned before t0.
                let Ok(t0) = go_rx.recv() else { return };
                let record = download(client, &ctx, &g, &mut buf, t0);
                // The receiver is gone only if the run was abandoned.
                let _ = done.send(record);
            })
            .context("starting a slow reader thread")?;
        Ok(SlowReader {
            gauge,
            go,
            record,
            thread,
        })
    }

    /// Lets the download begin; t0 is the run's time zero.
    pub fn start(&self, t0: Instant) {
        // The thread only stops listening after it has received t0.
        let _ = self.go.send(t0);
    }

    /// Waits for the download's record without blocking the runtime.
    pub async fn record(self) -> anyhow::Result<LargeRecord> {
        let record = self
            .record
            .await
            .context("a slow reader thread stopped early")?;
        // It has sent its record, so it is at its end and joins at once.
        self.thread
            .join()
            .map_err(|_| anyhow::anyhow!("a slow reader thread panicked"))?;
        Ok(record)
    }
}

/// Instants and facts seen on the way, kept when the download fails.
#[derive(Debug, Default)]
struct Progress {
    granted: Option<usize>,
    connected: Option<Instant>,
    consumed_all: Option<Instant>,
    /// What the first `recv` after the request returned.
    first_read: Option<usize>,
    reader: ResponseReader,
}

/// The connected socket, remembering how many bytes its first `recv`
/// returned: the head alone, or the head with as much of the body as had
/// arrived (README, "The reader models": how a run begins can set its level).
struct FirstRead<'a> {
    stream: &'a TcpStream,
    first: &'a mut Option<usize>,
}

impl Read for FirstRead<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = (&mut &*self.stream).read(buf)?;
        if n > 0 {
            self.first.get_or_insert(n);
        }
        Ok(n)
    }
}

impl AsRawFd for FirstRead<'_> {
    fn as_raw_fd(&self) -> RawFd {
        self.stream.as_raw_fd()
    }
}

/// Downloads once and records it; never fails, every outcome is a row.
fn download(
    client: usize,
    ctx: &SlowContext,
    gauge: &Gauge,
    buf: &mut [u8],
    t0: Instant,
) -> LargeRecord {
    let began = Instant::now();
    let mut p = Progress::default();
    let mut sink = VerifySink::new(ctx.verify);
    let outcome = transfer(client, ctx, gauge, buf, &mut p, &mut sink);
    let error = outcome
        .err()
        .or_else(|| sink.verdict())
        .map(Failure::in_load);
    let since = |t: Option<Instant>| t.map(|t| ms(began, t));
    LargeRecord {
        client,
        started_s: secs(t0, began),
        connect_ms: since(p.connected),
        first_byte_ms: since(p.reader.first_byte()),
        status: sink.status,
        bytes: p.reader.body_bytes(),
        content_length: sink.content_length,
        receive_s: p.connected.zip(p.consumed_all).map(|(a, b)| secs(a, b)),
        rcvbuf_requested_bytes: ctx.reading.rcvbuf,
        rcvbuf_granted_bytes: p.granted,
        first_read_bytes: p.first_read,
        verified: match (&error, sink.checks_pattern(), p.reader.framing()) {
            (Some(_), _, _) => Verified::No,
            (None, true, _) => Verified::Pattern,
            (None, false, Some(Framing::UntilEof)) => Verified::Unchecked,
            (None, false, _) => Verified::Length,
        },
        error,
        reader: ctx.reading.reader,
        loop_lag: (ctx.reading.reader == ReaderModel::Streamreader).then_some(ctx.reading.loop_lag),
    }
}

fn transfer(
    client: usize,
    ctx: &SlowContext,
    gauge: &Gauge,
    buf: &mut [u8],
    p: &mut Progress,
    sink: &mut VerifySink,
) -> Result<(), Failure> {
    let socket = Socket::new(
        Domain::for_address(ctx.addr),
        Type::STREAM.cloexec(),
        Some(Protocol::TCP),
    )
    .map_err(|e| io_failure("socket", &e))?;
    p.granted = Some(
        net::set_rcvbuf(&socket, ctx.reading.rcvbuf).map_err(|e| io_failure("SO_RCVBUF", &e))?,
    );
    crate::bind::bind(&socket, ctx.bind.slow_client(client)).map_err(|e| io_failure("bind", &e))?;
    socket
        .connect_timeout(&ctx.addr.into(), ctx.timeout)
        .map_err(|e| Failure::connect(&e))?;
    let start = Instant::now();
    p.connected = Some(start);
    // Reads and writes fail with EAGAIN after this long without progress.
    socket
        .set_read_timeout(Some(ctx.timeout))
        .and_then(|()| socket.set_write_timeout(Some(ctx.timeout)))
        .map_err(|e| io_failure("SO_RCVTIMEO", &e))?;
    let mut stream = TcpStream::from(socket);
    let _watched = Watched::new(gauge, stream.as_raw_fd());
    stream
        .write_all(&ctx.request)
        .map_err(|e| Failure::transfer("write", &e))
        .map_err(stalled(ctx, "write"))?;
    let mut socket = FirstRead {
        stream: &stream,
        first: &mut p.first_read,
    };
    match ctx.reading.reader {
        // Each read is followed by a sleep to the paced deadline of every
        // byte read so far; at EOF everything read has been consumed at
        // that rate.
        ReaderModel::Strict => {
            response::read_blocking(&mut socket, buf, &mut p.reader, sink, |reader| {
                let bytes = reader.body_bytes();
                gauge.received.store(bytes, Ordering::Relaxed);
                latency::sleep_until(start + pacing::due(bytes, ctx.reading.rate));
                gauge.consumed.store(bytes, Ordering::Relaxed);
            })
        }
        ReaderModel::Streamreader => {
            let pace = crate::streamreader::Pace {
                start,
                rate: ctx.reading.rate,
                timeout: ctx.timeout,
                loop_lag: ctx.reading.loop_lag,
            };
            crate::streamreader::read(&mut socket, buf.len(), pace, &mut p.reader, sink, gauge)
        }
    }
    .map_err(stalled(ctx, "read"))?;
    p.consumed_all = Some(Instant::now());
    Ok(())
}

/// Says how long a socket timeout (EAGAIN under `SO_RCVTIMEO`) of `what`
/// waited; other failures pass unchanged.
fn stalled<'a>(ctx: &'a SlowContext, what: &'a str) -> impl FnOnce(Failure) -> Failure + 'a {
    move |f| match f.kind {
        ErrorKind::Timeout => Failure::new(
            ErrorKind::Timeout,
            format!("{what}: nothing for {:?}", ctx.timeout),
        ),
        _ => f,
    }
}

fn io_failure(what: &str, e: &io::Error) -> Failure {
    Failure::local(what, e)
}
