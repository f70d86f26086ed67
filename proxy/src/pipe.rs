//! Moves one response body from the upstream to the client through a
//! [`Spool`]: the only place that decides when the upstream is read.
//!
//! One task, one loop. Each turn it starts the next client write if none is
//! in flight, asks the spool how much the next upstream read may take
//! (spilling to the temp file first when memory is full), and then waits for
//! whichever comes first: the write finishing, the read returning, the read
//! timing out, or a stop. The write future owns the client session and hands
//! it back when done, so a write that is still in flight simply stays pending
//! across turns; reads are cancel-safe, so a read that loses the race loses
//! no bytes. With buffering on, reading therefore runs as fast as the
//! upstream sends until memory and file are full; with buffering off the
//! spool has one buffer and reading waits for each write.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use pingora_core::protocols::http::ServerSession;
use pingora_core::server::ShutdownWatch;
use pingora_error::ErrorType;
use tokio::io::AsyncReadExt;
use tokio::time::{Interval, MissedTickBehavior};

use crate::spool::Spool;
use crate::stats::Progress;
use crate::upstream::{BodyLength, Upstream, UpstreamError};

/// Why a body did not reach the client whole.
#[derive(Debug, thiserror::Error)]
pub enum PipeError {
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    #[error("client closed the connection: {0}")]
    ClientClosed(String),
    #[error("client stopped reading for longer than the send timeout")]
    SendTimeout,
    #[error("temp file in {dir}: {cause}")]
    TempFile { dir: String, cause: std::io::Error },
    #[error("proxy stopping")]
    Shutdown,
}

impl PipeError {
    /// The short name in the stats log's `error` column.
    pub fn label(&self) -> &'static str {
        match self {
            PipeError::Upstream(e) => e.label(),
            PipeError::ClientClosed(_) => "client_closed",
            PipeError::SendTimeout => "send_timeout",
            PipeError::TempFile { .. } => "temp_file",
            PipeError::Shutdown => "shutdown",
        }
    }
}

/// What happened to one body.
#[derive(Debug)]
pub struct PipeReport {
    pub bytes: u64,
    pub upstream_done: Option<Instant>,
    pub client_done: Option<Instant>,
    pub mem_peak: usize,
    pub spilled: u64,
    pub error: Option<PipeError>,
}

/// The timeouts and identity of one body transfer.
pub struct PipeParams<'a> {
    pub body: BodyLength,
    pub read_timeout: Duration,
    pub progress: &'a Progress,
    pub shutdown: ShutdownWatch,
    pub conn: u64,
}

type WriteFuture =
    Pin<Box<dyn Future<Output = (ServerSession, pingora_error::Result<()>, usize)> + Send>>;

/// Resolves once the proxy is told to cut in-flight responses.
pub async fn stopped(watch: &mut ShutdownWatch) {
    loop {
        if *watch.borrow_and_update() {
            return;
        }
        if watch.changed().await.is_err() {
            return;
        }
    }
}

/// Runs the transfer. Returns the session when the body was delivered whole
/// (so the caller can finish it); on any error the session is dropped here,
/// which closes the client connection, and the upstream connection, memory
/// and temp file go with it.
pub async fn run(
    session: ServerSession,
    upstream: Upstream,
    first: Bytes,
    mut spool: Spool<'_>,
    p: PipeParams<'_>,
) -> (Option<ServerSession>, PipeReport) {
    let mut report = PipeReport {
        bytes: 0,
        upstream_done: None,
        client_done: None,
        mem_peak: 0,
        spilled: 0,
        error: None,
    };
    let mut remaining = match p.body {
        BodyLength::Exact(n) => Some(n),
        BodyLength::UntilClose => None,
    };
    let mut upstream = Some(upstream);
    let first = clip(first, &mut remaining);
    Progress::set(&p.progress.upstream_read, first.len() as u64);
    let mut upstream_read = first.len() as u64;
    spool.push(first);
    if remaining == Some(0) {
        upstream = None;
        report.upstream_done = Some(Instant::now());
    }
    let mut session = Some(session);
    let mut write: Option<WriteFuture> = None;
    let mut shutdown = p.shutdown;
    let mut rbuf = BytesMut::new();
    let mut read_deadline = tokio::time::Instant::now() + p.read_timeout;
    // While nothing is being written to the client (the spool is empty and
    // the origin is slow), a client that goes away would otherwise be
    // noticed only at the next write. Like NGINX's check for a broken
    // client connection, peek at its socket now and then. The timer is made
    // the first time the loop waits with nothing to write (a response
    // written whole at once never needs it); as an `Interval` its first
    // tick is immediate either way.
    let client_fd = session.as_ref().and_then(|s| s.stream()).map(|s| s.id());
    let mut idle_check: Option<Interval> = None;

    let outcome: Result<(), PipeError> = loop {
        if write.is_none() {
            match spool.take_out() {
                Err(cause) => break Err(temp_error(&spool, cause)),
                Ok(Some(piece)) if upstream.is_none() => {
                    // Nothing is left to read: the write is all there is to
                    // wait for (beside a stop), so it borrows the session in
                    // place instead of taking it into a boxed future (one
                    // allocation and two copies of the session fewer; a body
                    // whole at once, such as `/fast`, only ever goes here).
                    Progress::set(&p.progress.mem, spool.mem_bytes() as u64);
                    Progress::set(&p.progress.file, spool.file_bytes());
                    let s = session.as_mut().expect("session is idle");
                    let len = piece.len();
                    let r = tokio::select! {
                        biased;
                        _ = stopped(&mut shutdown) => break Err(PipeError::Shutdown),
                        r = s.write_response_body(piece, false) => r,
                    };
                    if let Err(e) = r {
                        break Err(write_error(&e));
                    }
                    spool.out_done();
                    report.bytes += len as u64;
                    Progress::set(&p.progress.client_written, report.bytes);
                    continue;
                }
                Ok(Some(piece)) => {
                    // The session is home whenever no write is in flight.
                    let mut s = session.take().expect("session is idle");
                    write = Some(Box::pin(async move {
                        let len = piece.len();
                        let r = s.write_response_body(piece, false).await;
                        (s, r, len)
                    }));
                }
                Ok(None) if upstream.is_none() && spool.is_drained() => break Ok(()),
                Ok(None) => {}
            }
        }
        let mut room = 0;
        if upstream.is_some() {
            match spool.make_room() {
                Err(cause) => break Err(temp_error(&spool, cause)),
                Ok(Some(path)) => tracing::warn!(
                    conn = p.conn,
                    file = %path.display(),
                    "an upstream response is buffered to a temporary file"
                ),
                Ok(None) => {}
            }
            room = spool.read_room();
        }
        Progress::set(&p.progress.mem, spool.mem_bytes() as u64);
        Progress::set(&p.progress.file, spool.file_bytes());
        if room == 0 {
            // As in NGINX, the read timeout runs only while we wait to read.
            read_deadline = tokio::time::Instant::now() + p.read_timeout;
        }
        if room > 0 && rbuf.capacity() < room {
            rbuf.reserve(room);
        }
        let idle = write.is_none() && client_fd.is_some();
        if idle && idle_check.is_none() {
            let mut ticks = tokio::time::interval(IDLE_CHECK);
            ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
            idle_check = Some(ticks);
        }

        // select! builds every branch's future even when its condition is
        // false, so the `expect`s sit inside async blocks: they run only when
        // polled, that is only when the condition holds.
        tokio::select! {
            biased;
            _ = stopped(&mut shutdown) => break Err(PipeError::Shutdown),
            (s, r, len) = async { write.as_mut().expect("write in flight").await }, if write.is_some() => {
                write = None;
                session = Some(s);
                if let Err(e) = r {
                    break Err(write_error(&e));
                }
                spool.out_done();
                report.bytes += len as u64;
                Progress::set(&p.progress.client_written, report.bytes);
            }
            r = async {
                // room > 0 only while the upstream is open (see above).
                let stream = &mut upstream.as_mut().expect("reading needs an upstream").stream;
                stream.take(room as u64).read_buf(&mut rbuf).await
            }, if room > 0 => {
                match r {
                    Ok(0) if remaining.is_some() => break Err(UpstreamError::Closed(
                        "upstream prematurely closed connection while reading upstream".into(),
                    ).into()),
                    Ok(0) => remaining = Some(0),
                    Ok(n) => {
                        // A full read keeps its buffer; a short one is copied
                        // out, so that a trickling upstream cannot pin one
                        // whole buffer per few bytes behind the accounting.
                        let data = if n == room {
                            rbuf.split().freeze()
                        } else {
                            let copy = Bytes::copy_from_slice(&rbuf);
                            rbuf.clear();
                            copy
                        };
                        let data = clip(data, &mut remaining);
                        upstream_read += data.len() as u64;
                        Progress::set(&p.progress.upstream_read, upstream_read);
                        spool.push(data);
                        read_deadline = tokio::time::Instant::now() + p.read_timeout;
                    }
                    Err(e) => break Err(UpstreamError::Closed(e.to_string()).into()),
                }
                if remaining == Some(0) {
                    // Release the origin at once: this is what frees a sync
                    // worker while the client is still reading.
                    upstream = None;
                    report.upstream_done = Some(Instant::now());
                }
            }
            _ = tokio::time::sleep_until(read_deadline), if room > 0 => {
                break Err(UpstreamError::Timeout(
                    "upstream timed out while reading upstream".into(),
                ).into());
            }
            _ = async { idle_check.as_mut().expect("made when idle").tick().await }, if idle => {
                if let Some(why) = client_fd.and_then(client_gone) {
                    break Err(PipeError::ClientClosed(why));
                }
            }
        }
    };

    report.mem_peak = spool.mem_peak();
    report.spilled = spool.file_bytes();
    match outcome {
        Ok(()) => {
            // No write is in flight here, so the session is home.
            let mut s = session.take().expect("session is idle");
            match s.finish_body().await {
                Ok(()) => {
                    report.client_done = Some(Instant::now());
                    (Some(s), report)
                }
                Err(e) => {
                    report.error = Some(PipeError::ClientClosed(e.to_string()));
                    (None, report)
                }
            }
        }
        Err(e) => {
            report.error = Some(e);
            (None, report)
        }
    }
}

/// How often an idle client connection is checked.
pub(crate) const IDLE_CHECK: Duration = Duration::from_millis(200);

/// Why the client's socket is closed, if it is: a peek that reads the end
/// of the stream (the client sent FIN) or fails with anything but "no data
/// yet". Pipelined bytes are only peeked at, never consumed. NGINX treats a
/// FIN from the client the same way (`proxy_ignore_client_abort off`).
pub(crate) fn client_gone(fd: i32) -> Option<String> {
    let mut byte = 0u8;
    // SAFETY: a one-byte peek into a local buffer on a socket this session
    // owns and keeps open for the duration of the call.
    let n = unsafe {
        libc::recv(
            fd,
            (&mut byte as *mut u8).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    match n {
        0 => Some("client closed the connection while the proxy waited for the upstream".into()),
        n if n > 0 => None,
        _ => {
            let e = std::io::Error::last_os_error();
            match e.kind() {
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted => None,
                _ => Some(e.to_string()),
            }
        }
    }
}

/// Drops bytes past the declared body length (an upstream that sends more
/// than it announced) and counts down what is left.
fn clip(mut data: Bytes, remaining: &mut Option<u64>) -> Bytes {
    if let Some(left) = remaining.as_mut() {
        if data.len() as u64 > *left {
            data.truncate(*left as usize);
        }
        *left -= data.len() as u64;
    }
    data
}

/// What a failed client write means for the report.
fn write_error(e: &pingora_error::Error) -> PipeError {
    if *e.etype() == ErrorType::WriteTimedout {
        PipeError::SendTimeout
    } else {
        PipeError::ClientClosed(e.to_string())
    }
}

fn temp_error(spool: &Spool, cause: std::io::Error) -> PipeError {
    PipeError::TempFile {
        dir: spool.temp_dir().display().to_string(),
        cause,
    }
}
