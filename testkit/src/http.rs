//! One blocking HTTP/1.1 client for every test: exact bytes out, the whole
//! answer in (until the server closes), a deadline on everything so that
//! no test can hang.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// A generous bound for anything that should take milliseconds.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// A parsed response: status line, headers (names lower-cased) and body.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status_line: String,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    /// The first value of header `name` (lower case), if any.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The only value of header `name`; panics if absent or repeated.
    pub fn only(&self, name: &str) -> &str {
        let values: Vec<&str> = self
            .headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(values.len(), 1, "header {name} in {:?}", self.headers);
        values[0]
    }

    /// Parses a whole response as read up to the server's close.
    pub fn parse(data: &[u8]) -> Reply {
        let end = data
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no head in {:?}", String::from_utf8_lossy(data)));
        let head = String::from_utf8_lossy(&data[..end]).to_string();
        let mut lines = head.split("\r\n");
        let status_line = lines.next().expect("status line").to_string();
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        Reply {
            status_line,
            status,
            headers,
            body: data[end + 4..].to_vec(),
        }
    }
}

/// Sends `request` as is and reads until the server closes the connection
/// (or `timeout` passes, which panics).
pub fn exchange(addr: SocketAddr, request: &[u8], timeout: Duration) -> Reply {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.write_all(request).expect("send request");
    read_reply(&mut stream, timeout).unwrap_or_else(|| panic!("no reply within {timeout:?}"))
}

/// `GET path` that asks the server to close, within [`PATIENCE`].
pub fn get(addr: SocketAddr, path: &str) -> Reply {
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
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
            Err(e) if e.kind() == ErrorKind::ConnectionReset && !data.is_empty() => break,
            Err(e) => panic!("read failed: {e}"),
        }
    }
    Some(Reply::parse(&data))
}

/// A request with `body` (its `Content-Length` said) that closes the
/// connection; `block` is sent as `X-Slowlab-Block` when given.
pub fn request_with_body(method: &str, path: &str, block: Option<usize>, body: &[u8]) -> Vec<u8> {
    let block = block.map_or(String::new(), |b| format!("X-Slowlab-Block: {b}\r\n"));
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: test\r\nContent-Length: {}\r\n{block}Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(body);
    req
}

/// A complete response with a `Content-Length` that closes the connection.
pub fn response(status: &str, extra_headers: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\n{extra_headers}Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

/// Waits until `addr` accepts a connection, or panics after `patience`.
pub fn wait_listening(addr: SocketAddr, patience: Duration) {
    let start = Instant::now();
    while TcpStream::connect(addr).is_err() {
        assert!(start.elapsed() < patience, "{addr} does not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
}
