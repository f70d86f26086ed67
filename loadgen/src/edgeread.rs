//! Slow readers over TLS or HTTP/2 (`crate::edge`), on a runtime of their
//! own; cleartext HTTP/1.1 readers stay on the engine (`crate::slow`).
//!
//! The reader is `strict` at its own layer:
//! - **HTTP/2**: a download is a stream; the server may send only what
//!   the stream's window (`--h2-window`) and the connection's
//!   (`--h2-conn-window`) allow. At each pacing deadline the reader takes
//!   at most `--read-chunk` bytes of what has arrived and releases them
//!   (`FlowControl::release_capacity`): the window reopens at the paced
//!   rate, as a TCP receive buffer does for a strict reader's `recv`. The
//!   `h2` crate sends the `WINDOW_UPDATE` once half a window is released,
//!   as hyper and nghttp2 clients do. One connection carries
//!   `--streams-per-conn` downloads; the TCP socket itself is read as fast
//!   as frames come, so its `SO_RCVBUF` no longer holds the server back.
//!   Its `TCP_NODELAY` is set, as HTTP/2 clients set it: with Nagle, a
//!   `WINDOW_UPDATE` waited for the server's delayed ACK, and a reader
//!   whose window equals its read size took a third longer than its pace.
//! - **HTTP/1.1 over TLS**: one read of at most `--read-chunk` bytes of
//!   plaintext per deadline; rustls takes whole TLS records (up to 16 KiB)
//!   off the socket to give it.
//!
//! Records are those of the engine's readers (`large-responses.csv`), with
//! the protocol, the connection, the windows and, over HTTP/2, the most
//! bytes the server had sent that the reader had not yet consumed.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{oneshot, watch};

use crate::config::ReaderModel;
use crate::edge::Edge;
use crate::error::{ErrorKind, Failure};
use crate::fast::{ms, secs};
use crate::h2conn::{self, H2Conn};
use crate::record::{H2Stream, LargeRecord, Verified};
use crate::response::{self, BodySink, ResponseHead, ResponseReader};
use crate::slow::{Gauge, SlowContext};
use crate::verify::VerifySink;
use crate::{bind, net, pacing};

/// What every edge reader shares.
#[derive(Debug)]
pub struct EdgeContext {
    /// The address, request, rate, buffers, timeout and binds of a reader.
    pub slow: Arc<SlowContext>,
    pub edge: Edge,
    /// The HTTP/2 request's URI.
    pub uri: String,
}

/// The runtime the edge readers run on; shut down when the last handle
/// goes, without waiting (it may be dropped inside another runtime).
struct Runtime(Option<tokio::runtime::Runtime>);

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// Start and stop, shared by every reader of a run.
struct Control {
    start: watch::Sender<Option<Instant>>,
    stop: watch::Sender<bool>,
    _runtime: Runtime,
}

/// One slow download over the edge, as the runner holds it.
pub struct EdgeReader {
    pub gauge: Arc<Gauge>,
    record: oneshot::Receiver<LargeRecord>,
    control: Arc<Control>,
}

impl std::fmt::Debug for EdgeReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdgeReader").finish_non_exhaustive()
    }
}

impl EdgeReader {
    /// `n` downloads, `--streams-per-conn` to a connection (one over
    /// HTTP/1.1), each waiting for [`EdgeReader::start`].
    pub fn spawn_all(n: usize, ctx: Arc<EdgeContext>) -> anyhow::Result<Vec<EdgeReader>> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("slowlab-edge")
            .enable_all()
            .build()
            .context("starting the edge readers' runtime")?;
        let (start, started) = watch::channel(None);
        let (stop, stopped) = watch::channel(false);
        let per = ctx.edge.http2.map_or(1, |s| s.streams_per_conn);
        let mut readers = Vec::with_capacity(n);
        let mut slots = Vec::with_capacity(n);
        for client in 0..n {
            let gauge = Arc::new(Gauge::default());
            let (tx, rx) = oneshot::channel();
            slots.push(Slot {
                client,
                gauge: gauge.clone(),
                tx,
            });
            readers.push((gauge, rx));
        }
        let mut slots = slots.into_iter().peekable();
        let mut c = 0;
        while slots.peek().is_some() {
            let these: Vec<Slot> = slots.by_ref().take(per).collect();
            runtime.spawn(connection(
                c,
                these,
                ctx.clone(),
                started.clone(),
                stopped.clone(),
            ));
            c += 1;
        }
        let control = Arc::new(Control {
            start,
            stop,
            _runtime: Runtime(Some(runtime)),
        });
        Ok(readers
            .into_iter()
            .map(|(gauge, record)| EdgeReader {
                gauge,
                record,
                control: control.clone(),
            })
            .collect())
    }

    /// Lets every download of the run begin (t0 is the run's time zero).
    pub fn start(&self, t0: Instant) {
        self.control.start.send_replace(Some(t0));
    }

    /// Cuts every download of the run still running.
    pub fn stop(&self) {
        self.control.stop.send_replace(true);
    }

    /// Waits for the record, cutting the download once `stop` resolves.
    pub async fn record_when(
        mut self,
        stop: impl Future<Output = ()>,
    ) -> anyhow::Result<LargeRecord> {
        let received = tokio::select! {
            r = &mut self.record => r,
            () = stop => {
                self.stop();
                (&mut self.record).await
            }
        };
        received.context("an edge reader ended without its record")
    }
}

/// A download waiting for its connection.
struct Slot {
    client: usize,
    gauge: Arc<Gauge>,
    tx: oneshot::Sender<LargeRecord>,
}

/// What one connection saw.
#[derive(Debug, Clone, Copy)]
struct Conn {
    index: usize,
    t0: Instant,
    began: Instant,
    connected: Option<Instant>,
    granted: Option<usize>,
}

/// What one download saw, kept when it fails.
#[derive(Debug, Default)]
struct Seen {
    head: Option<Instant>,
    status: Option<u16>,
    content_length: Option<u64>,
    bytes: u64,
    consumed_all: Option<Instant>,
    first_read: Option<usize>,
    unconsumed_peak: u64,
    chunked: bool,
}

/// A wait bounded by the stall timeout and cut by a stop.
async fn guard<T>(
    f: impl Future<Output = Result<T, Failure>>,
    timeout: Duration,
    stop: &mut watch::Receiver<bool>,
    what: &str,
) -> Result<T, Failure> {
    tokio::select! {
        r = tokio::time::timeout(timeout, f) => r.unwrap_or_else(|_| Err(Failure::new(
            ErrorKind::Timeout,
            format!("no progress in {what} for {timeout:?}"),
        ))),
        () = stopped(stop) => Err(cut()),
    }
}

/// Resolves once the run stops the readers.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    if stop.wait_for(|s| *s).await.is_err() {
        std::future::pending::<()>().await;
    }
}

fn cut() -> Failure {
    Failure::new(ErrorKind::Cut, "still running when the run ended")
}

/// Sleeps until `due`, unless the run stops first.
async fn pace(due: Instant, stop: &mut watch::Receiver<bool>) -> Result<(), Failure> {
    tokio::select! {
        () = tokio::time::sleep_until(tokio::time::Instant::from_std(due)) => Ok(()),
        () = stopped(stop) => Err(cut()),
    }
}

/// One connection: connect, TLS, then its downloads.
async fn connection(
    index: usize,
    slots: Vec<Slot>,
    ctx: Arc<EdgeContext>,
    mut start: watch::Receiver<Option<Instant>>,
    mut stop: watch::Receiver<bool>,
) {
    let Ok(t0) = start
        .wait_for(Option::is_some)
        .await
        .map(|t| t.unwrap_or_else(Instant::now))
    else {
        return;
    };
    let mut conn = Conn {
        index,
        t0,
        began: Instant::now(),
        connected: None,
        granted: None,
    };
    let s = &ctx.slow;
    let tcp = guard(
        async {
            let socket = net::socket(s.addr).map_err(|e| Failure::local("socket", &e))?;
            bind::bind(&socket, s.bind.slow_client(index))
                .map_err(|e| Failure::local("bind", &e))?;
            // An HTTP/2 slow reader is its stream window, not a small
            // socket buffer: its connection, which every stream shares,
            // keeps the kernel's buffer, as h2load's and browsers' do.
            // Shrunk to `--rcvbuf` (16 KiB granted for 8 KiB), a connection
            // stalled behind `pingora-h2-off` (the `h2` preset, 2 streams
            // on one connection, after 4 MiB of each): every byte received
            // consumed, yet the proxy's socket saw a receive window of about
            // 6 KB (sock_diag's `snd_wnd`, `rwnd_limited`) with 100 KB
            // unsent, and each stream got about 16 KB a second until the
            // load's time limit. Over HTTP/1.1, TLS or not, the socket
            // buffer is the reader's, as ever.
            conn.granted = Some(
                match ctx.edge.http2 {
                    Some(_) => socket.recv_buffer_size(),
                    None => net::set_rcvbuf(&socket, s.reading.rcvbuf),
                }
                .map_err(|e| Failure::local("SO_RCVBUF", &e))?,
            );
            // As HTTP/2 and TLS clients do (h2load, browsers): a
            // WINDOW_UPDATE must not wait behind Nagle for an ACK the
            // server delays.
            socket
                .set_nodelay(true)
                .map_err(|e| Failure::local("TCP_NODELAY", &e))?;
            net::start_connect(&socket, s.addr).map_err(|e| Failure::connect(&e))?;
            net::finish_connect(socket).await
        },
        s.timeout,
        &mut stop,
        "the connect",
    )
    .await;
    let tcp = match tcp {
        Ok(tcp) => tcp,
        Err(f) => return fail_all(slots, &ctx, &conn, f),
    };
    conn.connected = Some(Instant::now());
    match &ctx.edge.tls {
        None => speak(tcp, slots, &ctx, conn, stop).await,
        Some(tls) => {
            match guard(
                tls.handshake(tcp),
                s.timeout,
                &mut stop,
                "the TLS handshake",
            )
            .await
            {
                Ok((stream, _)) => speak(stream, slots, &ctx, conn, stop).await,
                Err(f) => fail_all(slots, &ctx, &conn, f),
            }
        }
    }
}

fn fail_all(slots: Vec<Slot>, ctx: &EdgeContext, conn: &Conn, f: Failure) {
    for slot in slots {
        finish(slot, ctx, conn, Seen::default(), None, Err(f.clone()));
    }
}

/// The downloads of one connection, over HTTP/2 or HTTP/1.1.
async fn speak<S>(
    io: S,
    slots: Vec<Slot>,
    ctx: &Arc<EdgeContext>,
    conn: Conn,
    mut stop: watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let Some(settings) = ctx.edge.http2 else {
        // HTTP/1.1 over TLS: one download per connection.
        let Some(slot) = slots.into_iter().next() else {
            return;
        };
        let mut seen = Seen::default();
        let mut sink = VerifySink::new(ctx.slow.verify);
        let end = read_h1(io, &slot, ctx, &conn, &mut seen, &mut sink, &mut stop).await;
        finish(slot, ctx, &conn, seen, Some(sink), end);
        return;
    };
    let timeout = ctx.slow.timeout;
    let h2 = match guard(
        H2Conn::handshake(io, &settings),
        timeout,
        &mut stop,
        "the HTTP/2 handshake",
    )
    .await
    {
        Ok(h2) => h2,
        Err(f) => return fail_all(slots, ctx, &conn, f),
    };
    let mut tasks = Vec::with_capacity(slots.len());
    for slot in slots {
        let send = h2.send.clone();
        let ctx = ctx.clone();
        let mut stop = stop.clone();
        tasks.push(tokio::spawn(async move {
            let mut seen = Seen::default();
            let mut sink = VerifySink::new(ctx.slow.verify);
            let end = read_h2(send, &slot, &ctx, &conn, &mut seen, &mut sink, &mut stop).await;
            finish(slot, &ctx, &conn, seen, Some(sink), end);
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    drop(h2);
}

/// One HTTP/2 download: the request, then the body taken off the stream
/// in paced pieces, each releasing its bytes to the server's window.
#[allow(clippy::too_many_arguments)]
async fn read_h2(
    send: h2::client::SendRequest<Bytes>,
    slot: &Slot,
    ctx: &EdgeContext,
    conn: &Conn,
    seen: &mut Seen,
    sink: &mut VerifySink,
    stop: &mut watch::Receiver<bool>,
) -> Result<(), Failure> {
    let timeout = ctx.slow.timeout;
    let response = guard(
        async {
            let response = h2conn::get(send, &ctx.uri).await?;
            response.await.map_err(|e| h2conn::failure(&e))
        },
        timeout,
        stop,
        "the response head",
    )
    .await?;
    seen.head = Some(Instant::now());
    let head = ResponseHead {
        status: response.status().as_u16(),
        content_length: header(&response, http::header::CONTENT_LENGTH)
            .and_then(|v| v.parse().ok()),
        chunked: false,
        block: header(&response, "x-slowlab-block"),
    };
    seen.status = Some(head.status);
    seen.content_length = head.content_length;
    sink.head(&head)?;
    let mut body = response.into_body();
    let mut flow = body.flow_control().clone();
    let start = conn.connected.unwrap_or(conn.began);
    let chunk = ctx.slow.reading.read_chunk;
    let rate = ctx.slow.reading.rate;
    let mut pending = Bytes::new();
    loop {
        if pending.is_empty() {
            let next = guard(async { Ok(body.data().await) }, timeout, stop, "the body").await?;
            match next {
                None => break,
                Some(Err(e)) => return Err(h2conn::failure(&e)),
                Some(Ok(data)) => pending = data,
            }
        }
        let unconsumed = flow.used_capacity() as u64;
        seen.unconsumed_peak = seen.unconsumed_peak.max(unconsumed);
        slot.gauge
            .buffered
            .store(flow.used_capacity(), Ordering::Relaxed);
        let n = pending.len().min(chunk);
        let piece = pending.split_to(n);
        seen.first_read.get_or_insert(n);
        sink.data(&piece);
        seen.bytes += n as u64;
        // Taken: the window reopens by as much, as a `recv` frees a TCP
        // receive buffer.
        let _ = flow.release_capacity(n);
        slot.gauge
            .received
            .store(seen.bytes + pending.len() as u64, Ordering::Relaxed);
        pace(start + pacing::due(seen.bytes, rate), stop).await?;
        slot.gauge.consumed.store(seen.bytes, Ordering::Relaxed);
    }
    if let Some(len) = seen.content_length.filter(|l| *l != seen.bytes) {
        return Err(Failure::new(
            ErrorKind::ShortBody,
            format!("{} of {len} bytes", seen.bytes),
        ));
    }
    seen.consumed_all = Some(Instant::now());
    Ok(())
}

fn header<B>(
    response: &http::Response<B>,
    name: impl http::header::AsHeaderName,
) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// One HTTP/1.1 download over TLS: the request, then one read of at most
/// `--read-chunk` plaintext bytes per pacing deadline.
async fn read_h1<S>(
    mut io: S,
    slot: &Slot,
    ctx: &EdgeContext,
    conn: &Conn,
    seen: &mut Seen,
    sink: &mut VerifySink,
    stop: &mut watch::Receiver<bool>,
) -> Result<(), Failure>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let s = &ctx.slow;
    guard(
        async {
            io.write_all(&s.request)
                .await
                .map_err(|e| Failure::transfer("write", &e))
        },
        s.timeout,
        stop,
        "the request",
    )
    .await?;
    let start = conn.connected.unwrap_or(conn.began);
    let mut reader = ResponseReader::default();
    let mut buf = vec![0u8; s.reading.read_chunk];
    let mut counting = Counting { sink, seen };
    loop {
        let n = guard(
            async {
                io.read(&mut buf)
                    .await
                    .map_err(|e| response::read_failure(&e))
            },
            s.timeout,
            stop,
            "the body",
        )
        .await?;
        if n == 0 {
            reader.eof()?;
            break;
        }
        counting.seen.first_read.get_or_insert(n);
        let done = reader.feed(&buf[..n], &mut counting)?;
        counting.seen.head = counting.seen.head.or(reader.first_byte());
        let bytes = reader.body_bytes();
        counting.seen.bytes = bytes;
        slot.gauge.received.store(bytes, Ordering::Relaxed);
        pace(start + pacing::due(bytes, s.reading.rate), stop).await?;
        slot.gauge.consumed.store(bytes, Ordering::Relaxed);
        if done {
            break;
        }
    }
    counting.seen.chunked = matches!(reader.framing(), Some(response::Framing::UntilEof));
    counting.seen.consumed_all = Some(Instant::now());
    Ok(())
}

/// The verifying sink, noting the head's facts as they pass.
struct Counting<'a> {
    sink: &'a mut VerifySink,
    seen: &'a mut Seen,
}

impl BodySink for Counting<'_> {
    fn head(&mut self, head: &ResponseHead) -> Result<(), Failure> {
        self.seen.status = Some(head.status);
        self.seen.content_length = head.content_length;
        self.sink.head(head)
    }

    fn data(&mut self, payload: &[u8]) {
        self.sink.data(payload);
    }
}

/// Sends the download's record; every outcome is a row.
fn finish(
    slot: Slot,
    ctx: &EdgeContext,
    conn: &Conn,
    seen: Seen,
    sink: Option<VerifySink>,
    end: Result<(), Failure>,
) {
    let error = end
        .err()
        .or_else(|| sink.as_ref().and_then(VerifySink::verdict))
        .map(Failure::in_load);
    let checks_pattern = sink.as_ref().is_some_and(VerifySink::checks_pattern);
    let since = |t: Option<Instant>| t.map(|t| ms(conn.began, t));
    let record = LargeRecord {
        client: slot.client,
        started_s: secs(conn.t0, conn.began),
        connect_ms: since(conn.connected),
        first_byte_ms: since(seen.head),
        status: seen.status,
        bytes: seen.bytes,
        content_length: seen.content_length,
        receive_s: conn
            .connected
            .zip(seen.consumed_all)
            .map(|(a, b)| secs(a, b)),
        rcvbuf_requested_bytes: ctx.edge.http2.is_none().then_some(ctx.slow.reading.rcvbuf),
        rcvbuf_granted_bytes: conn.granted,
        first_read_bytes: seen.first_read,
        verified: match (&error, checks_pattern, seen.chunked) {
            (Some(_), _, _) => Verified::No,
            (None, true, _) => Verified::Pattern,
            (None, false, true) => Verified::Unchecked,
            (None, false, false) => Verified::Length,
        },
        error,
        reader: ReaderModel::Strict,
        loop_lag: None,
        protocol: ctx.edge.protocol(),
        connection: conn.index,
        h2: ctx.edge.http2.map(|settings| H2Stream {
            settings,
            unconsumed_peak_bytes: seen.unconsumed_peak,
        }),
    };
    slot.gauge.done.store(true, Ordering::Release);
    let _ = slot.tx.send(record);
}
