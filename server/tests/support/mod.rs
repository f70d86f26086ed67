//! The server tests' clients, over `testkit`'s one HTTP client: exact
//! bytes, stalled downloads, and deadlines on everything so that no test
//! can hang.

#![allow(dead_code)] // each test file uses a different subset

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};

/// A generous bound for anything that should take milliseconds.
pub const PATIENCE: Duration = Duration::from_secs(10);

pub use testkit::http::{Reply, exchange, read_reply};

/// `GET path` with `Connection: keep-alive`, so that a reply read to the
/// end proves the server closes the connection on its own.
pub fn get(addr: SocketAddr, path: &str) -> Reply {
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: keep-alive\r\n\r\n");
    exchange(addr, request.as_bytes(), PATIENCE)
}

/// A client that asks for `/large` and never reads, with a small receive
/// buffer so the kernel's buffers fill soon. Returns once a worker has
/// started answering it (the head is visible with `MSG_PEEK`, nothing is
/// consumed), so the caller knows which connections are being served.
pub fn stalled_large(addr: SocketAddr) -> TcpStream {
    let socket = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).expect("socket");
    // Set before connect, as the original's slow clients did, so the window
    // the client advertises stays small.
    socket.set_recv_buffer_size(4096).expect("SO_RCVBUF");
    socket.connect(&addr.into()).expect("connect");
    let stream: TcpStream = socket.into();
    let request = format!("GET /large HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    (&stream).write_all(request.as_bytes()).expect("send");
    stream
        .set_read_timeout(Some(PATIENCE))
        .expect("set timeout");
    let mut peek = [0u8; 1];
    let n = stream.peek(&mut peek).expect("response starts");
    assert_eq!(n, 1, "server closed the stalled download");
    stream
}

/// Sends `GET /fast` on a new connection and returns the stream, to be
/// answered later; the connect itself succeeds through the listen backlog.
pub fn send_fast(addr: SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .write_all(format!("GET /fast HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .expect("send");
    stream
}

/// Time for one complete `GET /fast` on a new connection, or `None` if it
/// did not finish within `limit`.
pub fn time_fast(addr: SocketAddr, limit: Duration) -> Option<Duration> {
    let start = Instant::now();
    let mut stream = send_fast(addr);
    let reply = read_reply(&mut stream, limit)?;
    assert_eq!(reply.body, br#"{"ok": true}"#);
    Some(start.elapsed())
}
