//! The listening socket, `accept` itself and the accept loop's error policy.
//!
//! `sync` and `threads` accept with [`accept4`] (`async` with tokio's own
//! accept): the connection comes non-blocking
//! and close-on-exec without a further system call, and without the peer's
//! address (nothing here needs it). It is a plain [`TcpStream`], not yet
//! registered with any runtime: [`crate::stream`] registers it only if it
//! must wait.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd as _, FromRawFd as _};
use std::time::Duration;

use anyhow::Context as _;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// Gunicorn's default `backlog`: connections beyond the busy workers wait
/// here, in the kernel, which is the whole point of the sync model.
const BACKLOG: i32 = 2048;

/// Binds `addr` like Gunicorn does (`SO_REUSEADDR`, backlog 2048), in
/// non-blocking mode so that tokio can adopt it.
pub fn bind(addr: SocketAddr) -> anyhow::Result<std::net::TcpListener> {
    let bind = || -> io::Result<std::net::TcpListener> {
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        // Lets a restarted server bind while old connections sit in
        // TIME_WAIT; it does not allow two listeners on one port.
        socket.set_reuse_address(true)?;
        socket.bind(&addr.into())?;
        socket.listen(BACKLOG)?;
        socket.set_nonblocking(true)?;
        Ok(socket.into())
    };
    bind().with_context(|| format!("cannot listen on {addr}"))
}

/// One `accept4(2)` on `listener`; blocks or not as the listener does, and
/// fails with `WouldBlock` when a non-blocking listener has nobody waiting.
pub fn accept4(listener: &TcpListener) -> io::Result<TcpStream> {
    // SAFETY: `accept4` on a listening socket the caller holds, without an
    // address buffer; a descriptor it returns is new and ours alone.
    let fd = unsafe {
        libc::accept4(
            listener.as_raw_fd(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: see above; the stream takes over closing it.
    Ok(unsafe { TcpStream::from_raw_fd(fd) })
}

/// The next connection of a non-blocking `listener` registered with the
/// current runtime (readable interest), awaited without a thread.
pub async fn accept(listener: &AsyncFd<TcpListener>) -> io::Result<TcpStream> {
    listener.async_io(Interest::READABLE, accept4).await
}

/// What an accept loop should do after a failed `accept`.
pub async fn after_accept_error(err: &io::Error) {
    // Out of descriptors or memory: retrying at once would spin, and the
    // connection stays in the backlog meanwhile.
    let exhausted = matches!(
        err.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    );
    if exhausted {
        tracing::warn!(cause = %err, "accept failed; pausing 100 ms");
        tokio::time::sleep(Duration::from_millis(100)).await;
    } else {
        // For example a connection reset while it waited in the backlog.
        tracing::debug!(cause = %err, "accept failed");
    }
}
