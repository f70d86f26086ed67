//! Blocking HTTP/1.1 clients for the server tests: exact bytes, stalled
//! downloads, and deadlines on everything so that no test can hang.

#![allow(dead_code)] // each test file uses a different subset

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};

/// A generous bound for anything that should take milliseconds.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// A parsed response: status line, headers (names lower-cased) and body.
#[derive(Debug)]
pub struct Reply {
    pub status_line: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// True when the server closed the connection after the response.
    pub closed: bool,
}

impl Reply {
    pub fn status(&self) -> u16 {
        self.status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }

    /// The only value of header `name`; panics if absent or repeated.
    pub fn header(&self, name: &str) -> &str {
        let values: Vec<&str> = self
            .headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(values.len(), 1, "header {name} in {:?}", self.headers);
        values[0]
    }
}

/// Sends `request` as is and reads until the server closes the connection
/// (or `timeout` passes, which panics).
pub fn exchange(addr: SocketAddr, request: &[u8], timeout: Duration) -> Reply {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.write_all(request).expect("send request");
    read_reply(&mut stream, timeout).unwrap_or_else(|| panic!("no reply within {timeout:?}"))
}

/// `GET path` with `Connection: keep-alive`, so that a closed connection
/// proves the server closes it on its own.
pub fn get(addr: SocketAddr, path: &str) -> Reply {
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: keep-alive\r\n\r\n");
    exchange(addr, request.as_bytes(), PATIENCE)
}

/// Reads a whole response up to EOF; `None` if `timeout` passes first.
pub fn read_reply(stream: &mut TcpStream, timeout: Duration) -> Option<Reply> {
    let deadline = Instant::now() + timeout;
    let mut data = Vec::new();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .expect("set timeout");
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => data.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return None;
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => panic!("read failed: {e}"),
        }
    }
    Some(parse(&data))
}

fn parse(data: &[u8]) -> Reply {
    let end = data
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no head in {:?}", String::from_utf8_lossy(data)));
    let head = std::str::from_utf8(&data[..end]).expect("ascii head");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("status line").to_string();
    let headers = lines
        .map(|l| {
            let (n, v) = l.split_once(':').expect("header line");
            (n.trim().to_ascii_lowercase(), v.trim().to_string())
        })
        .collect();
    Reply {
        status_line,
        headers,
        body: data[end + 4..].to_vec(),
        closed: true,
    }
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
