//! Sockets: created with socket2 so that options can be set before connect,
//! connected without blocking, then handed to tokio.

use std::io;
use std::net::SocketAddr;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::TcpStream;

use crate::error::Failure;

/// The request line and headers of a GET that closes the connection.
pub fn request(authority: &str, path: &str) -> Vec<u8> {
    format!(
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: slowlab-load\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    )
    .into_bytes()
}

/// A non-blocking TCP socket for `addr`, one system call.
pub fn socket(addr: SocketAddr) -> io::Result<Socket> {
    Socket::new(
        Domain::for_address(addr),
        Type::STREAM.nonblocking().cloexec(),
        Some(Protocol::TCP),
    )
}

/// Asks for `SO_RCVBUF = requested` (must happen before connect, so that the
/// window scale is chosen for it) and returns what the kernel granted
/// (Linux doubles the value for its own bookkeeping).
pub fn set_rcvbuf(socket: &Socket, requested: usize) -> io::Result<usize> {
    socket.set_recv_buffer_size(requested)?;
    socket.recv_buffer_size()
}

/// Asks for `SO_SNDBUF = requested` before connect and returns what the
/// kernel granted (Linux doubles it, as for `SO_RCVBUF`).
pub fn set_sndbuf(socket: &Socket, requested: usize) -> io::Result<usize> {
    socket.set_send_buffer_size(requested)?;
    socket.send_buffer_size()
}

/// Starts a connect. `Ok(())` means it is under way (EINPROGRESS) or done;
/// completion is awaited by [`finish_connect`].
pub fn start_connect(socket: &Socket, addr: SocketAddr) -> io::Result<()> {
    match socket.connect(&addr.into()) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Registers a connecting socket with tokio and waits until the connection
/// is established or has failed. Must run inside the runtime.
pub async fn finish_connect(socket: Socket) -> Result<TcpStream, Failure> {
    let stream =
        TcpStream::from_std(socket.into()).map_err(|e| Failure::transfer("register", &e))?;
    // A connecting socket becomes writable when the handshake completes
    // either way; SO_ERROR tells which.
    stream.writable().await.map_err(|e| Failure::connect(&e))?;
    if let Some(e) = stream.take_error().map_err(|e| Failure::connect(&e))? {
        return Err(Failure::connect(&e));
    }
    // Writable can also mean a peer that reset at once; getpeername tells
    // whether we are actually connected.
    stream.peer_addr().map_err(|e| Failure::connect(&e))?;
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_closes_the_connection() {
        let r = String::from_utf8(request("127.0.0.1:8000", "/fast")).expect("utf8");
        assert!(r.starts_with("GET /fast HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n"));
        assert!(r.contains("\r\nConnection: close\r\n"));
        assert!(r.ends_with("\r\n\r\n"));
    }

    #[test]
    fn rcvbuf_is_set_and_read_back() {
        let addr: SocketAddr = "127.0.0.1:9".parse().expect("addr");
        let s = socket(addr).expect("socket");
        let granted = set_rcvbuf(&s, 8192).expect("rcvbuf");
        // Linux doubles the request; other kernels may not, but never shrink it.
        assert!(granted >= 8192, "{granted}");
    }
}
