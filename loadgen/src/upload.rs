//! The request direction: slow uploaders (`--slow-upload`) that `POST` a
//! pattern body paced to a fixed rate, and slowloris clients
//! (`--slow-headers`) that send a request head one line at a time and never
//! finish it.
//!
//! Both are plain threads with blocking sockets, as the slow readers are
//! (see [`crate::slow`] for why). An uploader writes the body in
//! [`WRITE_PIECE`] pieces; piece *k* is written no earlier than the paced
//! deadline of the bytes before it, counted from the first body byte, so a
//! late wake-up delays one piece and not the whole body. `send_s` runs from
//! the first body byte to the return of the last write (the kernel has
//! accepted every byte); the answer is read with the one response reader.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::Context;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::sync::oneshot;

use crate::config::UploadConfig;
use crate::error::{ErrorKind, Failure};
use crate::fast::{ms, secs};
use crate::latency;
use crate::pacing;
use crate::record::{SlowHeaderRecord, UploadRecord};
use crate::response::{self, BodySink, Discard, ResponseHead, ResponseReader};
use crate::target::Target;

/// The largest single write of an uploader: 16 KiB, the slow readers'
/// default read, so a paced body is some 1,000 writes of 16 MiB.
pub const WRITE_PIECE: usize = 16 << 10;
/// The pattern block of an upload, announced in `X-Slowlab-Block`.
pub const UPLOAD_BLOCK: usize = common::pattern::DEFAULT_BLOCK;

/// Where a request-direction client goes and how long it waits: what
/// uploaders and slowloris clients share.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub addr: SocketAddr,
    pub authority: String,
    /// Full request path (base path included).
    pub path: String,
    /// The longest wait for the connect or any single write or read.
    pub timeout: Duration,
    /// Client `i` binds `bind.slow_client(i)` (`--slow-bind`).
    pub bind: crate::bind::Binds,
}

impl Endpoint {
    /// The endpoint of a run's checked flags.
    pub fn new(
        up: &UploadConfig,
        target: &Target,
        timeout: Duration,
        bind: crate::bind::Binds,
    ) -> Self {
        Endpoint {
            addr: target.addr,
            authority: target.parsed.authority.clone(),
            path: up.path.clone(),
            timeout,
            bind,
        }
    }

    /// Client `client`'s connection, `SO_SNDBUF` of `sndbuf` if asked
    /// ([`connect`]).
    fn connect(
        &self,
        client: usize,
        sndbuf: Option<usize>,
    ) -> Result<Connected, (Failure, Option<usize>)> {
        connect(
            self.addr,
            self.bind.slow_client(client),
            sndbuf,
            self.timeout,
        )
    }
}

/// What every uploader shares.
#[derive(Debug)]
pub struct UploadContext {
    pub to: Endpoint,
    pub bytes: u64,
    /// Bytes per second.
    pub rate: u64,
    pub sndbuf: usize,
}

impl UploadContext {
    /// The uploaders' context of a run's checked flags.
    pub fn new(to: Endpoint, up: &UploadConfig) -> Self {
        UploadContext {
            to,
            bytes: up.bytes,
            rate: up.rate,
            sndbuf: up.sndbuf,
        }
    }

    /// The request head of an upload.
    pub fn head(&self) -> Vec<u8> {
        format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: slowlab-load\r\nAccept: */*\r\n\
             Content-Type: application/octet-stream\r\nContent-Length: {}\r\n\
             X-Slowlab-Block: {UPLOAD_BLOCK}\r\nConnection: close\r\n\r\n",
            self.to.path, self.to.authority, self.bytes
        )
        .into_bytes()
    }
}

/// What every slowloris client shares.
#[derive(Debug)]
pub struct HeadersContext {
    pub to: Endpoint,
    /// One header line per interval.
    pub interval: Duration,
}

impl HeadersContext {
    /// The slowloris clients' context of a run's checked flags.
    pub fn new(to: Endpoint, up: &UploadConfig) -> Self {
        HeadersContext {
            to,
            interval: up.header_interval,
        }
    }
}

/// A client thread started before t0: it waits for t0 (and, for slowloris,
/// listens for the end of the run), then sends its one record.
#[derive(Debug)]
pub struct ClientThread<R> {
    go: mpsc::Sender<Instant>,
    stop: Option<mpsc::Sender<()>>,
    record: oneshot::Receiver<R>,
    thread: thread::JoinHandle<()>,
}

impl<R: Send + 'static> ClientThread<R> {
    fn spawn(
        name: String,
        body: impl FnOnce(Instant, mpsc::Receiver<()>) -> R + Send + 'static,
    ) -> anyhow::Result<Self> {
        let (go, go_rx) = mpsc::channel::<Instant>();
        let (stop, stop_rx) = mpsc::channel::<()>();
        let (done, record) = oneshot::channel();
        let thread = thread::Builder::new()
            .name(name)
            .spawn(move || {
                // Without it a sleep may end 50 µs late; failing costs only that.
                let _ = latency::set_timer_slack_ns(1);
                // A closed channel means the run was abandoned before t0.
                let Ok(t0) = go_rx.recv() else { return };
                // The receiver is gone only if the run was abandoned.
                let _ = done.send(body(t0, stop_rx));
            })
            .context("starting an upload client thread")?;
        Ok(ClientThread {
            go,
            stop: Some(stop),
            record,
            thread,
        })
    }

    /// Lets the client begin; t0 is the run's time zero.
    pub fn start(&self, t0: Instant) {
        let _ = self.go.send(t0);
    }

    /// Tells the client the run is over, then waits for its record.
    pub async fn record(self) -> anyhow::Result<R> {
        self.record_when(std::future::ready(())).await
    }

    /// Waits for the record of a client that ends by itself, telling it the
    /// run is over once `stop` resolves (a slowloris client then ends within
    /// a wake-up; an uploader finishes its upload first).
    pub async fn record_when(mut self, stop: impl Future<Output = ()>) -> anyhow::Result<R> {
        let received = tokio::select! {
            r = &mut self.record => r,
            () = stop => {
                drop(self.stop.take());
                (&mut self.record).await
            }
        };
        let record = received.context("an upload client thread stopped early")?;
        self.thread
            .join()
            .map_err(|_| anyhow::anyhow!("an upload client thread panicked"))?;
        Ok(record)
    }
}

/// Starts uploader `client`.
pub fn spawn_uploader(
    client: usize,
    ctx: Arc<UploadContext>,
) -> anyhow::Result<ClientThread<UploadRecord>> {
    ClientThread::spawn(format!("slowlab-up{client}"), move |t0, _stop| {
        upload(client, &ctx, t0)
    })
}

/// Starts slowloris client `client`; it sends header lines until the run is
/// over (its [`ClientThread::record`] is awaited) or the server closes.
pub fn spawn_slow_headers(
    client: usize,
    ctx: Arc<HeadersContext>,
) -> anyhow::Result<ClientThread<SlowHeaderRecord>> {
    ClientThread::spawn(format!("slowlab-hdr{client}"), move |t0, stop| {
        slow_headers(client, &ctx, t0, &stop)
    })
}

/// A connected stream, the `SO_SNDBUF` granted and when the connect ended.
type Connected = (TcpStream, Option<usize>, Instant);

/// A socket with `SO_SNDBUF` asked for (before connect), connected, with
/// read and write timeouts; returns it, what the kernel granted and when the
/// connect completed.
fn connect(
    addr: SocketAddr,
    bind: Option<std::net::IpAddr>,
    sndbuf: Option<usize>,
    timeout: Duration,
) -> Result<Connected, (Failure, Option<usize>)> {
    let socket = Socket::new(
        Domain::for_address(addr),
        Type::STREAM.cloexec(),
        Some(Protocol::TCP),
    )
    .map_err(|e| (Failure::local("socket", &e), None))?;
    crate::bind::bind(&socket, bind).map_err(|e| (Failure::local("bind", &e), None))?;
    let granted = match sndbuf {
        Some(n) => Some(
            crate::net::set_sndbuf(&socket, n)
                .map_err(|e| (Failure::local("SO_SNDBUF", &e), None))?,
        ),
        None => None,
    };
    socket
        .connect_timeout(&addr.into(), timeout)
        .map_err(|e| (Failure::connect(&e), granted))?;
    let connected = Instant::now();
    socket
        .set_read_timeout(Some(timeout))
        .and_then(|()| socket.set_write_timeout(Some(timeout)))
        .map_err(|e| (Failure::local("SO_SNDTIMEO", &e), granted))?;
    Ok((TcpStream::from(socket), granted, connected))
}

/// Keeps the small JSON answer of `/upload`.
#[derive(Debug, Default)]
struct Answer {
    body: Vec<u8>,
}

impl BodySink for Answer {
    fn head(&mut self, _head: &ResponseHead) -> Result<(), Failure> {
        Ok(())
    }
    fn data(&mut self, payload: &[u8]) {
        // The answer is some 40 bytes; anything past 4 KiB is not it.
        let room = 4096usize.saturating_sub(self.body.len());
        self.body
            .extend_from_slice(&payload[..payload.len().min(room)]);
    }
}

/// The answer's fields, as the apps write them.
#[derive(Debug, serde::Deserialize)]
struct Verdict {
    bytes: u64,
    pattern_ok: bool,
}

/// Uploads once and records it; never fails, every outcome is a row.
fn upload(client: usize, ctx: &UploadContext, t0: Instant) -> UploadRecord {
    let began = Instant::now();
    let mut r = UploadRecord {
        client,
        started_s: secs(t0, began),
        connect_ms: None,
        send_s: None,
        bytes_sent: 0,
        upload_bytes: ctx.bytes,
        first_byte_ms: None,
        status: None,
        server_bytes: None,
        pattern_ok: None,
        sndbuf_requested_bytes: ctx.sndbuf,
        sndbuf_granted_bytes: None,
        error: None,
    };
    let outcome = match ctx.to.connect(client, Some(ctx.sndbuf)) {
        Err((f, granted)) => {
            r.sndbuf_granted_bytes = granted;
            Err(f)
        }
        Ok((mut stream, granted, connected)) => {
            r.sndbuf_granted_bytes = granted;
            r.connect_ms = Some(ms(began, connected));
            send_and_read(ctx, &mut stream, began, &mut r)
        }
    };
    r.error = outcome.err().map(|f| stalled(f, ctx.to.timeout).in_load());
    r
}

fn send_and_read(
    ctx: &UploadContext,
    stream: &mut TcpStream,
    began: Instant,
    r: &mut UploadRecord,
) -> Result<(), Failure> {
    let write = |stream: &mut TcpStream, data: &[u8]| {
        stream
            .write_all(data)
            .map_err(|e| Failure::transfer("write", &e))
    };
    write(stream, &ctx.head())?;
    let block = common::pattern::block(UPLOAD_BLOCK);
    let first = Instant::now();
    let mut sent = 0u64;
    while sent < ctx.bytes {
        latency::sleep_until(first + pacing::due(sent, ctx.rate));
        let at = (sent % UPLOAD_BLOCK as u64) as usize;
        let n = (ctx.bytes - sent).min((WRITE_PIECE.min(UPLOAD_BLOCK - at)) as u64) as usize;
        write(stream, &block[at..at + n])?;
        sent += n as u64;
        r.bytes_sent = sent;
    }
    r.send_s = Some(secs(first, Instant::now()));
    let mut reader = ResponseReader::default();
    let mut answer = Answer::default();
    let mut buf = [0u8; 4096];
    let read = response::read_blocking(stream, &mut buf, &mut reader, &mut answer, |_| {});
    r.status = reader.status();
    r.first_byte_ms = reader.first_byte().map(|t| ms(began, t));
    read?;
    if let Some(f) = Failure::of_status(r.status) {
        return Err(f);
    }
    let verdict: Verdict = serde_json::from_slice(&answer.body).map_err(|e| {
        Failure::new(
            ErrorKind::Malformed,
            format!("the answer is not the upload JSON: {e}"),
        )
    })?;
    r.server_bytes = Some(verdict.bytes);
    r.pattern_ok = Some(verdict.pattern_ok);
    if !verdict.pattern_ok || verdict.bytes != ctx.bytes {
        return Err(Failure::new(
            ErrorKind::VerifyFailed,
            format!(
                "the server read {} of {} bytes, pattern_ok {}",
                verdict.bytes, ctx.bytes, verdict.pattern_ok
            ),
        ));
    }
    Ok(())
}

/// Says how long a socket timeout waited; other failures pass unchanged.
fn stalled(f: Failure, timeout: Duration) -> Failure {
    match f.kind {
        ErrorKind::Timeout => Failure::new(
            ErrorKind::Timeout,
            format!("{}: nothing for {timeout:?}", f.detail),
        ),
        _ => f,
    }
}

/// How a slowloris client's connection ended (the `ended` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HeadersEnd {
    /// Still open, the head unfinished, when the run ended.
    RunEnd,
    /// The server answered (a 408, say) or closed the connection.
    ServerClosed,
    /// Could not connect or write: the row's `error` says why.
    Failed,
}

impl HeadersEnd {
    pub fn as_str(self) -> &'static str {
        match self {
            HeadersEnd::RunEnd => "run_end",
            HeadersEnd::ServerClosed => "server_closed",
            HeadersEnd::Failed => "failed",
        }
    }
}

fn slow_headers(
    client: usize,
    ctx: &HeadersContext,
    t0: Instant,
    stop: &mpsc::Receiver<()>,
) -> SlowHeaderRecord {
    let began = Instant::now();
    let mut r = SlowHeaderRecord {
        client,
        started_s: secs(t0, began),
        connect_ms: None,
        header_lines: 0,
        held_s: None,
        ended: HeadersEnd::Failed,
        status: None,
        error: None,
    };
    let (mut stream, _, connected) = match ctx.to.connect(client, None) {
        Ok(c) => c,
        Err((f, _)) => {
            r.error = Some(f.in_load());
            return r;
        }
    };
    r.connect_ms = Some(ms(began, connected));
    let first = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: slowlab-load\r\n",
        ctx.to.path, ctx.to.authority
    );
    let mut line = first.into_bytes();
    let mut reader = ResponseReader::default();
    loop {
        if let Err(e) = stream.write_all(&line) {
            r.ended = HeadersEnd::ServerClosed;
            r.error = Some(Failure::transfer("write", &e));
            break;
        }
        r.header_lines += 1;
        line = format!("X-Slowlab-Wait-{}: {}\r\n", r.header_lines, r.header_lines).into_bytes();
        // Waits one interval, or less when the run ends.
        match stop.recv_timeout(ctx.interval) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            _ => {
                r.ended = HeadersEnd::RunEnd;
                break;
            }
        }
        if server_answered(&mut stream, &mut reader) {
            r.ended = HeadersEnd::ServerClosed;
            break;
        }
    }
    r.status = reader.status();
    r.held_s = Some(secs(connected, Instant::now()));
    r
}

/// Whether the server has answered or closed, without waiting.
fn server_answered(stream: &mut TcpStream, reader: &mut ResponseReader) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return false;
    }
    let mut buf = [0u8; 1024];
    let answered = match stream.read(&mut buf) {
        Ok(0) => true,
        Ok(n) => {
            // Only the status is wanted; a malformed answer is an answer too.
            let _ = reader.feed(&buf[..n], &mut Discard);
            true
        }
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => false,
        Err(_) => true,
    };
    let _ = stream.set_nonblocking(false);
    answered
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uploaders_and_slowloris_clients_share_one_endpoint_of_the_flags() {
        let target = Target::resolve("http://127.0.0.1:8000/app", false).unwrap();
        let up = UploadConfig {
            uploaders: 2,
            path: "/app/upload".into(),
            bytes: 1234,
            rate: 2 << 20,
            sndbuf: 8 << 10,
            slow_headers: 3,
            header_interval: Duration::from_millis(250),
        };
        let timeout = Duration::from_secs(3);
        let to = Endpoint::new(&up, &target, timeout, Default::default());
        let u = UploadContext::new(to.clone(), &up);
        let h = HeadersContext::new(to, &up);
        for e in [&u.to, &h.to] {
            assert_eq!(e.addr, target.addr);
            assert_eq!(
                (e.authority.as_str(), e.path.as_str()),
                ("127.0.0.1:8000", "/app/upload")
            );
            assert_eq!(e.timeout, timeout);
        }
        assert_eq!((u.bytes, u.rate, u.sndbuf), (1234, 2 << 20, 8 << 10));
        assert_eq!(h.interval, Duration::from_millis(250));
        let head = String::from_utf8(u.head()).unwrap();
        assert!(
            head.starts_with("POST /app/upload HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n"),
            "{head}"
        );
        assert!(head.contains("Content-Length: 1234\r\n"), "{head}");
    }
}
