//! One open-loop `/fast` request, from a socket whose connect the scheduler
//! thread has started to the record of its outcome: over HTTP/1.1 or
//! HTTP/2, in the clear or over TLS (`crate::edge`). Each request has a
//! connection of its own, so a TLS handshake is part of every request; it
//! is timed apart (`tls_ms`) so that latency stays comparable with
//! cleartext runs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::Socket;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use crate::edge::Edge;
use crate::error::{ErrorKind, Failure};
use crate::h2conn::{self, H2Conn};
use crate::net;
use crate::record::FastRecord;
use crate::response::{self, Discard, ResponseReader};

/// What every request shares.
#[derive(Debug)]
pub struct FastContext {
    /// The HTTP/1.1 request's bytes.
    pub request: Vec<u8>,
    /// The HTTP/2 request's URI.
    pub uri: String,
    pub timeout: Duration,
    pub edge: Edge,
}

/// What an exchange saw, kept outside its timed future so that a timeout
/// still records how far the request got.
#[derive(Debug, Default)]
struct Seen {
    connected: Option<Instant>,
    tls_done: Option<Instant>,
    /// HTTP/2: the response head, its status, the body bytes.
    head: Option<Instant>,
    status: Option<u16>,
    bytes: u64,
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
    let mut seen = Seen::default();
    let mut reader = ResponseReader::default();
    let outcome = match launch.socket {
        Err(f) => Err(f),
        Ok(socket) => {
            let deadline = tokio::time::Instant::from_std(launch.started + ctx.timeout);
            let call = exchange(socket, &ctx, &mut seen, &mut reader);
            match tokio::time::timeout_at(deadline, call).await {
                Ok(r) => r,
                Err(_) => Err(Failure::new(
                    ErrorKind::Timeout,
                    format!("no whole response within {:?}", ctx.timeout),
                )),
            }
        }
    };
    let status = seen.status.or(reader.status());
    let (done, error) = match outcome {
        Ok(done) => (Some(done), Failure::of_status(status)),
        Err(f) => (None, Some(f.in_load())),
    };
    let since_start = |t: Option<Instant>| t.map(|t| ms(launch.started, t));
    FastRecord {
        seq: launch.seq,
        scheduled_s: secs(launch.t0, launch.scheduled),
        started_s: secs(launch.t0, launch.started),
        schedule_lag_ms: ms(launch.scheduled, launch.started),
        connect_ms: since_start(seen.connected),
        first_byte_ms: since_start(seen.head.or(reader.first_byte())),
        latency_ms: since_start(done).filter(|_| {
            error
                .as_ref()
                .is_none_or(|e| e.kind == ErrorKind::BadStatus)
        }),
        status,
        bytes: seen.bytes.max(reader.body_bytes()),
        error,
        tls_ms: seen.connected.zip(seen.tls_done).map(|(a, b)| ms(a, b)),
        protocol: ctx.edge.protocol(),
    }
}

/// Connects, shakes hands over TLS if the target is https, sends and
/// reads the whole response, whatever its status; returns when it ended.
async fn exchange(
    socket: Socket,
    ctx: &FastContext,
    seen: &mut Seen,
    reader: &mut ResponseReader,
) -> Result<Instant, Failure> {
    let tcp = net::finish_connect(socket).await?;
    seen.connected = Some(Instant::now());
    if ctx.edge.tls.is_some() || ctx.edge.http2.is_some() {
        // As TLS and HTTP/2 clients do: a handshake's or a frame's small
        // write must not wait behind Nagle for a delayed ACK.
        tcp.set_nodelay(true)
            .map_err(|e| Failure::local("TCP_NODELAY", &e))?;
    }
    match &ctx.edge.tls {
        None => speak(tcp, ctx, seen, reader).await,
        Some(tls) => {
            let (stream, done) = tls.handshake(tcp).await?;
            seen.tls_done = Some(done);
            speak(stream, ctx, seen, reader).await
        }
    }
}

/// The request and its whole response, in the load's HTTP version.
async fn speak<S>(
    mut stream: S,
    ctx: &FastContext,
    seen: &mut Seen,
    reader: &mut ResponseReader,
) -> Result<Instant, Failure>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    if let Some(settings) = &ctx.edge.http2 {
        let mut conn = H2Conn::handshake(stream, settings).await?;
        let response = conn.get(&ctx.uri).await?;
        let response = response.await.map_err(|e| h2conn::failure(&e))?;
        seen.head = Some(Instant::now());
        seen.status = Some(response.status().as_u16());
        let mut body = response.into_body();
        while let Some(data) = body.data().await {
            let data = data.map_err(|e| h2conn::failure(&e))?;
            seen.bytes += data.len() as u64;
            let _ = body.flow_control().release_capacity(data.len());
        }
        return Ok(Instant::now());
    }
    stream
        .write_all(&ctx.request)
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
