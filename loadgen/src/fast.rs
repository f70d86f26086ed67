//! One open-loop `/fast` request, from a socket whose connect the scheduler
//! thread has started to the record of its outcome.

use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::Socket;
use tokio::io::AsyncWriteExt;

use crate::error::{ErrorKind, Failure};
use crate::net;
use crate::record::FastRecord;
use crate::response::{self, Discard, ResponseReader};

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

/// Completes a launched request and records it; never fails, every outcome
/// is a row.
pub async fn complete(launch: Launch, ctx: Arc<FastContext>) -> FastRecord {
    // Outside the timed future, so that a timeout still records how far
    // the request got.
    let mut connected = None;
    let mut reader = ResponseReader::default();
    let outcome = match launch.socket {
        Err(f) => Err(f),
        Ok(socket) => {
            let deadline = tokio::time::Instant::from_std(launch.started + ctx.timeout);
            let call = exchange(socket, &ctx.request, &mut connected, &mut reader);
            match tokio::time::timeout_at(deadline, call).await {
                Ok(r) => r,
                Err(_) => Err(Failure::new(
                    ErrorKind::Timeout,
                    format!("no whole response within {:?}", ctx.timeout),
                )),
            }
        }
    };
    let (done, error) = match outcome {
        Ok(done) => (Some(done), Failure::of_status(reader.status())),
        Err(f) => (None, Some(f.in_load())),
    };
    let since_start = |t: Option<Instant>| t.map(|t| ms(launch.started, t));
    FastRecord {
        seq: launch.seq,
        scheduled_s: secs(launch.t0, launch.scheduled),
        started_s: secs(launch.t0, launch.started),
        schedule_lag_ms: ms(launch.scheduled, launch.started),
        connect_ms: since_start(connected),
        first_byte_ms: since_start(reader.first_byte()),
        latency_ms: since_start(done).filter(|_| {
            error
                .as_ref()
                .is_none_or(|e| e.kind == ErrorKind::BadStatus)
        }),
        status: reader.status(),
        bytes: reader.body_bytes(),
        error,
    }
}

/// Connects, sends and reads the whole response, whatever its status;
/// returns when it ended.
async fn exchange(
    socket: Socket,
    request: &[u8],
    connected: &mut Option<Instant>,
    reader: &mut ResponseReader,
) -> Result<Instant, Failure> {
    let mut stream = net::finish_connect(socket).await?;
    *connected = Some(Instant::now());
    stream
        .write_all(request)
        .await
        .map_err(|e| Failure::transfer("write", &e))?;
    let mut buf = vec![0u8; 4096];
    response::read_async(&mut stream, &mut buf, reader, &mut Discard).await?;
    Ok(Instant::now())
}

/// Seconds from `from` to `to` (0 if `to` is earlier).
pub fn secs(from: Instant, to: Instant) -> f64 {
    to.saturating_duration_since(from).as_secs_f64()
}

/// Milliseconds from `from` to `to` (0 if `to` is earlier).
pub fn ms(from: Instant, to: Instant) -> f64 {
    secs(from, to) * 1000.0
}
