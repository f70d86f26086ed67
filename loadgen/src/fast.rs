//! One open-loop `/fast` request, from a socket whose connect the scheduler
//! thread has started to the record of its outcome.

use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::Socket;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::error::{ErrorKind, Failure};
use crate::net;
use crate::record::FastRecord;
use crate::response::{BodySink, ResponseHead, ResponseReader};

/// What every request shares.
#[derive(Debug)]
pub struct FastContext {
    pub request: Vec<u8>,
    pub timeout: Duration,
}

/// A request as the scheduler thread launched it.
#[derive(Debug)]
pub struct Launch {
    pub seq: usize,
    pub t0: Instant,
    pub scheduled: Instant,
    /// Just before `connect(2)`: the actual start.
    pub started: Instant,
    /// The connecting socket, or why socket/connect failed at once.
    pub socket: Result<Socket, Failure>,
}

/// Instants seen on the way; kept outside the timed future so that a
/// timeout still records how far the request got.
#[derive(Debug, Default)]
struct Progress {
    connected: Option<Instant>,
    first_byte: Option<Instant>,
    done: Option<Instant>,
    status: Option<u16>,
    bytes: u64,
}

/// Completes a launched request and records it; never fails, every outcome
/// is a row.
pub async fn complete(launch: Launch, ctx: Arc<FastContext>) -> FastRecord {
    let mut p = Progress::default();
    let outcome = match launch.socket {
        Err(f) => Err(f),
        Ok(socket) => {
            let deadline = tokio::time::Instant::from_std(launch.started + ctx.timeout);
            match tokio::time::timeout_at(deadline, exchange(socket, &ctx.request, &mut p)).await {
                Ok(r) => r,
                Err(_) => Err(Failure::new(
                    ErrorKind::Timeout,
                    format!("no whole response within {:?}", ctx.timeout),
                )),
            }
        }
    };
    let since_start = |t: Option<Instant>| t.map(|t| ms(launch.started, t));
    let error = outcome.err();
    FastRecord {
        seq: launch.seq,
        scheduled_s: secs(launch.t0, launch.scheduled),
        started_s: secs(launch.t0, launch.started),
        schedule_lag_ms: ms(launch.scheduled, launch.started),
        connect_ms: since_start(p.connected),
        first_byte_ms: since_start(p.first_byte),
        latency_ms: since_start(p.done).filter(|_| {
            error
                .as_ref()
                .is_none_or(|e| e.kind == ErrorKind::BadStatus)
        }),
        status: p.status,
        bytes: p.bytes,
        error,
    }
}

struct StatusSink(Option<u16>);

impl BodySink for StatusSink {
    fn head(&mut self, head: &ResponseHead) -> Result<(), Failure> {
        self.0 = Some(head.status);
        Ok(())
    }
    fn data(&mut self, _payload: &[u8]) {}
}

async fn exchange(socket: Socket, request: &[u8], p: &mut Progress) -> Result<(), Failure> {
    let mut stream = net::finish_connect(socket).await?;
    p.connected = Some(Instant::now());
    stream
        .write_all(request)
        .await
        .map_err(|e| Failure::transfer("write", &e))?;
    let mut reader = ResponseReader::default();
    let mut sink = StatusSink(None);
    let mut buf = vec![0u8; 4096];
    loop {
        let n = stream
            .read(&mut buf)
            .await
            .map_err(|e| Failure::transfer("read", &e))?;
        if n == 0 {
            reader.eof()?;
            break;
        }
        p.first_byte.get_or_insert_with(Instant::now);
        let fed = reader.feed(&buf[..n], &mut sink);
        p.status = sink.0;
        p.bytes = reader.body_bytes();
        if fed? {
            break;
        }
    }
    p.done = Some(Instant::now());
    match p.status {
        Some(200) => Ok(()),
        Some(s) => Err(Failure::new(ErrorKind::BadStatus, format!("status {s}"))),
        None => Err(Failure::new(ErrorKind::Malformed, "no status")),
    }
}

/// Seconds from `from` to `to` (0 if `to` is earlier).
pub fn secs(from: Instant, to: Instant) -> f64 {
    to.saturating_duration_since(from).as_secs_f64()
}

/// Milliseconds from `from` to `to` (0 if `to` is earlier).
pub fn ms(from: Instant, to: Instant) -> f64 {
    secs(from, to) * 1000.0
}
