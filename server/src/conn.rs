//! Serving one accepted connection with hyper, whatever the worker model.
//!
//! The future returned by [`serve`] ends when the connection is closed, so a
//! worker that awaits it is busy for exactly the life of the connection. When
//! it ends (also when it is cut short by shutdown) the `/large` row goes to
//! the send log.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio_util::sync::CancellationToken;

use crate::app::App;
use crate::meter::{Meter, MeteredIo};
use crate::stream::LazyStream;

/// How long a shutdown lets responses in flight finish before cutting them.
/// Short enough that a stop with slow downloads stays well within 2 s.
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);

/// How long the threads and async models wait for a complete request head
/// (hyper's default, stated). The sync model waits without a limit of its
/// own: its worker timeout ends the connection instead, as in Gunicorn.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The smallest buffer hyper accepts. Request heads are bounded by it (about
/// Gunicorn's 8190-byte field limit), and hyper never holds more than this
/// on top of the one body frame the `/large` body lets out at a time.
const MAX_BUF: usize = 8192;

/// Serves `stream` (see [`crate::stream`]: registered with the current
/// runtime only once it has to wait) until the connection closes or `cancel` fires (then
/// after [`SHUTDOWN_GRACE`] at most). `header_timeout` closes a connection whose
/// request head is not complete by then; `None`: never.
pub async fn serve(
    stream: LazyStream,
    app: Arc<App>,
    cancel: &CancellationToken,
    header_timeout: Option<Duration>,
) {
    // Only the debug lines below name the peer: no getpeername(2) otherwise.
    let peer = tracing::enabled!(tracing::Level::DEBUG)
        .then(|| stream.peer_addr().ok())
        .flatten();
    // TCP_NODELAY (Gunicorn sets it too) is turned on by the meter for a
    // `/large` body; small responses are written in one piece.
    let meter = Arc::new(Meter::default());
    // Declared before the connection so that it is dropped after it: the row
    // is written once the socket is closed, even if this future is dropped.
    let _row = SendRow {
        app: app.clone(),
        meter: meter.clone(),
    };
    let io = TokioIo::new(MeteredIo::new(stream, meter.clone()));
    let service = service_fn(move |req| {
        let (app, meter) = (app.clone(), meter.clone());
        async move { Ok::<_, Infallible>(app.handle(req, &meter).await) }
    });
    let conn = http1::Builder::new()
        .keep_alive(false)
        // A client may shut down its sending side after the request (as
        // `nc -N` does); Gunicorn still sends the whole response, whereas
        // hyper's default would take the EOF for a disconnect and cut it.
        .half_close(true)
        .writev(true)
        .max_buf_size(MAX_BUF)
        .title_case_headers(true)
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .serve_connection(io, service);
    tokio::pin!(conn);
    // Biased, connection first: no random pick per poll, and a connection
    // served in one poll (a `/fast` request in hand) never registers with
    // the token. Whenever the connection waits, the token is polled, so a
    // shutdown is seen as before.
    let result = tokio::select! {
        biased;
        result = conn.as_mut() => result,
        () = cancel.cancelled() => {
            conn.as_mut().graceful_shutdown();
            match tokio::time::timeout(SHUTDOWN_GRACE, conn.as_mut()).await {
                Ok(result) => result,
                Err(_) => {
                    tracing::debug!(?peer, "connection cut by shutdown");
                    return;
                }
            }
        }
    };
    // Clients that go away mid-response or send garbage are the normal life
    // of this server (hyper has already answered garbage with 400).
    if let Err(err) = result {
        tracing::debug!(?peer, cause = %err, "connection ended with an error");
    }
}

/// Writes the send-log row of a `/large` response when dropped.
struct SendRow {
    app: Arc<App>,
    meter: Arc<Meter>,
}

impl Drop for SendRow {
    fn drop(&mut self) {
        let (Some(log), Some(send)) = (&self.app.send_log, self.meter.large()) else {
            return;
        };
        if let Err(err) = log.record(&send) {
            tracing::warn!(cause = %format!("{err:#}"), "send log row lost");
        }
    }
}
