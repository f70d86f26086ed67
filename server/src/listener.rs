//! The listening socket and the accept loop's error policy.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use socket2::{Domain, Protocol, Socket, Type};

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
