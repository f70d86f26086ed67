//! `sync`: N workers, each serving one connection at a time from accept to
//! close, like Gunicorn's sync worker processes.
//!
//! Each worker is a thread with its own current-thread runtime and its own
//! clone of the one listening socket. A worker calls `accept` only between
//! connections, and awaits the whole connection (including every block of a
//! `/large` body) on its runtime before accepting again. The accept is a
//! blocking `accept4(2)`, outside the runtime: the kernel hands each new
//! connection to one waiting worker and wakes only that one, where every
//! worker's epoll would wake on it (and all but one find the queue empty).
//! The socket's receive timeout ([`ACCEPT_POLL`]) lets an idle worker see
//! that the server stops. While
//! the kernel does not take the next block, the only future of that runtime
//! is pending, so the worker is blocked just as a `sendall` would block it.
//! With every worker busy nobody accepts, and new connections wait in the
//! kernel's listen backlog.
//!
//! Gunicorn's sync worker has no timeout of its own on a connection: it
//! blocks in `recv` on the request head (and in `sendall` on the body) for
//! as long as the client likes. What ends it is the arbiter: a worker whose
//! heartbeat (touched only between connections) is older than `--timeout`
//! gets SIGABRT; `handle_abort` raises `SystemExit`, `handle` catches it as
//! a `BaseException` and writes a `500 Internal Server Error` without
//! blocking, closes the socket, and the process exits. So each worker here
//! gives one connection at most `worker_timeout` from accept, then writes
//! the same 500 bytes without blocking and closes; hyper's own head timeout
//! is off. Not modelled: the arbiter checks about once a second (Gunicorn's
//! cut comes 0 to 1 s later), and the replacement worker's boot.

use std::io;
use std::net::TcpListener as StdListener;
use std::os::fd::{AsRawFd as _, RawFd};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context as _;
use common::accept::{accept4, after_accept_error};
use socket2::SockRef;
use tokio_util::sync::CancellationToken;

use super::{OwnRuntime, current_thread_runtime, spawn_thread};
use crate::app::App;
use crate::conn;
use crate::stream::LazyStream;

/// Gunicorn's default `--timeout`, the default `--worker-timeout`.
pub const GUNICORN_TIMEOUT: Duration = Duration::from_secs(30);

/// What Gunicorn 23's `util.write_error` sends for the aborted worker's
/// `handle_error(..., SystemExit)`: a 500 with an empty message.
pub const ABORT_RESPONSE: &[u8] = b"HTTP/1.1 500 Internal Server Error\r\n\
Connection: close\r\n\
Content-Type: text/html\r\n\
Content-Length: 141\r\n\
\r\n\
<html>\n  <head>\n    <title>Internal Server Error</title>\n  </head>\n  <body>\n    \
<h1><p>Internal Server Error</p></h1>\n    \n  </body>\n</html>\n";

/// How long a blocked `accept` waits before its worker checks whether the
/// server stops: the most a stop waits for an idle worker.
pub const ACCEPT_POLL: Duration = Duration::from_millis(50);

/// Starts `workers` worker threads on `listener`, pushing them to `threads`.
pub fn start(
    listener: &StdListener,
    app: &Arc<App>,
    workers: usize,
    cancel: &CancellationToken,
    threads: &mut Vec<JoinHandle<()>>,
) -> anyhow::Result<()> {
    // The clones share one open socket, so this holds for every worker's.
    let sock = SockRef::from(listener);
    sock.set_nonblocking(false)
        .and_then(|()| sock.set_read_timeout(Some(ACCEPT_POLL)))
        .context("cannot make the listener's accept blocking")?;
    for i in 0..workers {
        let runtime = current_thread_runtime()?;
        let own = listener.try_clone().context("cannot clone the listener")?;
        let (app, cancel) = (app.clone(), cancel.clone());
        threads.push(spawn_thread(format!("sync-{i}"), move || {
            worker(&own, &runtime, &app, &cancel);
            runtime.finish(Duration::from_millis(100));
        })?);
    }
    Ok(())
}

fn worker(
    listener: &StdListener,
    runtime: &OwnRuntime,
    app: &Arc<App>,
    cancel: &CancellationToken,
) {
    while !cancel.is_cancelled() {
        match accept(listener) {
            // Not spawned: the worker does nothing else until it is closed.
            // Registered with this worker's runtime (not the caller's) if
            // it has to wait at all.
            Ok(Some(stream)) => runtime.block_on(serve_or_abort(stream, app, cancel)),
            // The receive timeout: look at `cancel` again.
            Ok(None) => {}
            Err(err) => runtime.block_on(after_accept_error(&err)),
        }
    }
}

/// Waits at most [`ACCEPT_POLL`] for the next connection; it comes
/// non-blocking, as tokio wants it, without a further system call.
fn accept(listener: &StdListener) -> io::Result<Option<std::net::TcpStream>> {
    match accept4(listener) {
        Ok(stream) => Ok(Some(stream)),
        Err(err)
            if matches!(
                err.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ) =>
        {
            Ok(None)
        }
        Err(err) => Err(err),
    }
}

/// Serves one connection for at most the app's worker timeout; past it the
/// connection gets what Gunicorn's aborted worker leaves it.
async fn serve_or_abort(stream: std::net::TcpStream, app: &Arc<App>, cancel: &CancellationToken) {
    let Some(limit) = app.worker_timeout else {
        return conn::serve(LazyStream::new(stream), app.clone(), cancel, None).await;
    };
    // The 500 is written through hyper's own descriptor while the timed-out
    // future still holds it (no spare descriptor: that was a dup(2) and a
    // close(2) on every connection); dropping the future then closes it.
    let fd = stream.as_raw_fd();
    let served = conn::serve(LazyStream::new(stream), app.clone(), cancel, None);
    tokio::pin!(served);
    if tokio::time::timeout(limit, served.as_mut()).await.is_ok() {
        return;
    }
    tracing::warn!(?limit, "worker timeout: connection aborted");
    write_abort(fd);
}

/// Writes [`ABORT_RESPONSE`] to `fd` without blocking, as `write_nonblock`
/// does: a full send buffer takes a part of it or none, and the close
/// follows either way.
fn write_abort(fd: RawFd) {
    // SAFETY: `fd` is the socket of the connection future the caller still
    // holds (it is dropped, and the descriptor closed, only after this
    // returns); the buffer is a static slice of the length given.
    let sent = unsafe {
        libc::send(
            fd,
            ABORT_RESPONSE.as_ptr().cast(),
            ABORT_RESPONSE.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    if sent < 0 {
        let err = std::io::Error::last_os_error();
        tracing::debug!(cause = %err, "the 500 was not written");
    }
}

#[cfg(test)]
mod tests {
    use super::ABORT_RESPONSE;

    #[test]
    fn the_abort_response_announces_its_own_length() {
        let text = std::str::from_utf8(ABORT_RESPONSE).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(
            head.contains(&format!("Content-Length: {}", body.len())),
            "{text}"
        );
    }
}
