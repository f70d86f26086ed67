//! The listening socket.
//!
//! Every model accepts with `common::accept` (`sync` blocking in its
//! `accept4`, `threads` and `async` through its `accept`): the connection
//! comes non-blocking and close-on-exec without a further system call, and
//! without the peer's address (nothing here needs it). It is a plain
//! [`std::net::TcpStream`], not yet registered with any runtime:
//! [`crate::stream`] registers it only if it must wait (`async`: at its
//! first read when it was accepted right after its handshake).

use std::io;
use std::net::SocketAddr;

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
    // A port in use or an address not ours is the caller's input: exit
    // status 2, as every value that parses but cannot work.
    bind().map_err(|e| common::exit::BadInput::new(format!("cannot listen on {addr}: {e}")).into())
}
