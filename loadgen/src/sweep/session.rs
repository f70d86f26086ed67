//! One session: `--calls-per-conn` sequential GETs, httperf style. The
//! session ends at its first failed request; later calls are not made.
//!
//! Requests ask for `Connection: keep-alive`. The experiment's servers
//! answer `Connection: close` and close, so the next call opens a new
//! connection, and every call pays for one, as the experiment's `/fast`
//! client did; a server or proxy that keeps the connection (Gunicorn
//! gthread, NGINX toward its clients) gets the next call on it. After a
//! `close` answer the session waits for the server's FIN before dropping
//! the socket, so that the server closes first and TIME_WAIT stays on its
//! side, as with the experiment's client.
//!
//! Per request the work is the few system calls it needs and nothing
//! allocated: the request bytes are shared, the response is parsed in a
//! fixed buffer inside the task, and a new connection's request is sent
//! with a plain `send` before the socket is registered with tokio, which
//! saves a reactor round trip when (as on loopback) the handshake is
//! already done.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use socket2::Socket;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::step::{ErrorClass, StepStats};
use crate::chunked::ChunkedDecoder;
use crate::net;

/// The response buffer of a session. A `/fast` answer is about 150 bytes;
/// a head that does not fit is malformed for our purposes.
const BUF: usize = 2048;
const MAX_HEADERS: usize = 32;

/// What every session shares.
#[derive(Debug)]
pub struct SessionContext {
    pub addr: SocketAddr,
    pub request: Box<[u8]>,
    pub calls: u32,
    pub timeout: Duration,
}

/// A session whose first connect the scheduler thread has started.
#[derive(Debug)]
pub struct Launched {
    /// Just before `connect(2)`: the first request's start.
    pub started: Instant,
    pub socket: Socket,
}

/// A session counted in its step's `outstanding`, until dropped: when the
/// session ends however it ends, or with a task that never ran (a runtime
/// shutting down drops it unpolled, with the arguments it holds).
#[derive(Debug)]
pub struct Running(Arc<StepStats>);

impl Running {
    pub fn new(stats: Arc<StepStats>) -> Running {
        stats.outstanding.fetch_add(1, Ordering::AcqRel);
        Running(stats)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.outstanding.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs a session to its end. The caller has counted it in `sessions` and
/// `connections`.
pub async fn run(first: Launched, ctx: Arc<SessionContext>, running: Running) {
    let stats = &running.0;
    let mut buf = [0u8; BUF];
    let mut conn: Option<TcpStream> = None;
    let mut fresh = Some(first.socket);
    let mut started = first.started;
    for call in 0..ctx.calls {
        if call > 0 {
            started = Instant::now();
        }
        StepStats::add(&stats.requests);
        let deadline = tokio::time::Instant::from_std(started + ctx.timeout);
        let call = exchange(&mut conn, &mut fresh, &ctx, stats, &mut buf);
        let outcome = match tokio::time::timeout_at(deadline, call).await {
            Ok(r) => r,
            Err(_) => Err(ErrorClass::Timeout),
        };
        match outcome {
            Ok(answer) => {
                stats.reply(answer.written, answer.done);
                if answer.close {
                    if let Some(s) = conn.take() {
                        wait_for_close(s, deadline, &mut buf).await;
                    }
                }
            }
            Err(class) => {
                stats.error(class);
                return;
            }
        }
    }
}

/// A complete 200 answer.
struct Answer {
    written: Instant,
    done: Instant,
    /// The server will close the connection (or already has).
    close: bool,
}

async fn exchange(
    conn: &mut Option<TcpStream>,
    fresh: &mut Option<Socket>,
    ctx: &SessionContext,
    stats: &StepStats,
    buf: &mut [u8; BUF],
) -> Result<Answer, ErrorClass> {
    let (stream, written) = match conn {
        Some(stream) => {
            stream
                .write_all(&ctx.request)
                .await
                .map_err(|e| ErrorClass::of_io(&e))?;
            (stream, Instant::now())
        }
        None => {
            let socket = match fresh.take() {
                Some(s) => s,
                None => {
                    StepStats::add(&stats.connections);
                    connect(ctx.addr).map_err(|e| ErrorClass::of_io(&e))?
                }
            };
            let (stream, written) = send_on_new(socket, &ctx.request).await?;
            (conn.insert(stream), written)
        }
    };
    let (close, done) = read_answer(stream, buf).await?;
    Ok(Answer {
        written,
        done,
        close,
    })
}

/// A non-blocking socket with its connect started.
pub fn connect(addr: SocketAddr) -> io::Result<Socket> {
    let socket = net::socket(addr)?;
    net::start_connect(&socket, addr)?;
    Ok(socket)
}

/// Sends the request on a connecting socket: at once when the handshake is
/// done, else after tokio reports the socket writable.
async fn send_on_new(socket: Socket, request: &[u8]) -> Result<(TcpStream, Instant), ErrorClass> {
    let sent = match socket.send(request) {
        Ok(n) => n,
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
        Err(e) => return Err(ErrorClass::of_io(&e)),
    };
    let mut stream = TcpStream::from_std(socket.into()).map_err(|e| ErrorClass::of_io(&e))?;
    if sent < request.len() {
        // Still connecting: writable means the handshake ended either way,
        // and SO_ERROR says which.
        stream.writable().await.map_err(|e| ErrorClass::of_io(&e))?;
        if let Some(e) = stream.take_error().map_err(|e| ErrorClass::of_io(&e))? {
            return Err(ErrorClass::of_io(&e));
        }
        stream
            .write_all(&request[sent..])
            .await
            .map_err(|e| ErrorClass::of_io(&e))?;
    }
    Ok((stream, Instant::now()))
}

/// How the body of an answer ends.
enum Framing {
    Length(u64),
    Chunked(ChunkedDecoder),
    UntilEof,
}

/// The facts of a response head that the session needs.
struct Head {
    len: usize,
    status: u16,
    framing: Framing,
    close: bool,
}

fn parse_head(bytes: &[u8]) -> Result<Option<Head>, ErrorClass> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    let len = match resp.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(ErrorClass::Other),
    };
    let status = resp.code.ok_or(ErrorClass::Other)?;
    // HTTP/1.0 closes unless asked not to; HTTP/1.1 keeps unless told.
    let mut close = resp.version != Some(1);
    let (mut length, mut chunked) = (None, false);
    for h in resp.headers.iter() {
        let value = std::str::from_utf8(h.value)
            .map_err(|_| ErrorClass::Other)?
            .trim();
        if h.name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<u64>().map_err(|_| ErrorClass::Other)?);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            let last = value.rsplit(',').next().unwrap_or_default().trim();
            chunked = last.eq_ignore_ascii_case("chunked");
        } else if h.name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    close = true;
                } else if token.eq_ignore_ascii_case("keep-alive") {
                    close = false;
                }
            }
        }
    }
    let framing = match (chunked, length) {
        (true, _) => Framing::Chunked(ChunkedDecoder::default()),
        (false, Some(n)) => Framing::Length(n),
        (false, None) => Framing::UntilEof,
    };
    close |= matches!(framing, Framing::UntilEof);
    Ok(Some(Head {
        len,
        status,
        framing,
        close,
    }))
}

/// Reads one whole response; `(close, done)` when it is a 200.
async fn read_answer(
    stream: &mut TcpStream,
    buf: &mut [u8; BUF],
) -> Result<(bool, Instant), ErrorClass> {
    let io = |e: io::Error| ErrorClass::of_io(&e);
    let mut filled = 0;
    let head = loop {
        if filled == buf.len() {
            return Err(ErrorClass::Other);
        }
        let n = stream.read(&mut buf[filled..]).await.map_err(io)?;
        if n == 0 {
            // Closed before a whole head: httperf's "connection reset".
            return Err(ErrorClass::Reset);
        }
        filled += n;
        if let Some(head) = parse_head(&buf[..filled])? {
            break head;
        }
    };
    if head.status != 200 {
        return Err(ErrorClass::Other);
    }
    let close = head.close;
    let mut framing = head.framing;
    let mut start = head.len;
    loop {
        let data = &buf[start..filled];
        let done = match &mut framing {
            Framing::Length(left) => {
                let n = data.len() as u64;
                if n > *left {
                    // More than announced: not a response we understand.
                    return Err(ErrorClass::Other);
                }
                *left -= n;
                *left == 0
            }
            Framing::Chunked(dec) => {
                let used = dec.feed(data, &mut |_| {}).map_err(|_| ErrorClass::Other)?;
                if used < data.len() {
                    return Err(ErrorClass::Other);
                }
                dec.is_done()
            }
            Framing::UntilEof => false,
        };
        if done {
            return Ok((close, Instant::now()));
        }
        let n = stream.read(&mut buf[..]).await.map_err(io)?;
        if n == 0 {
            return match framing {
                Framing::UntilEof => Ok((true, Instant::now())),
                _ => Err(ErrorClass::Reset),
            };
        }
        (start, filled) = (0, n);
    }
}

/// Waits (until `deadline` at most) for the server to close a connection it
/// said it would close, then drops it. Nothing here fails the request.
async fn wait_for_close(mut s: TcpStream, deadline: tokio::time::Instant, buf: &mut [u8; BUF]) {
    let drain = async {
        // Bytes after a whole answer are ignored: the connection is done.
        while let Ok(n) = s.read(&mut buf[..]).await {
            if n == 0 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout_at(deadline, drain).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(raw: &str) -> Head {
        parse_head(raw.as_bytes())
            .expect("valid")
            .expect("complete")
    }

    #[test]
    fn heads_say_how_the_connection_goes_on() {
        let h = head("HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\n");
        assert!(h.close && h.status == 200 && matches!(h.framing, Framing::Length(12)));
        let h = head("HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabc");
        assert!(!h.close);
        assert_eq!(h.len, 38);
        let h = head("HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\n");
        assert!(h.close);
        let h = head("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 3\r\n\r\n");
        assert!(!h.close);
        let h = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert!(!h.close && matches!(h.framing, Framing::Chunked(_)));
        let h = head("HTTP/1.1 503 Busy\r\n\r\n");
        assert!(h.close && h.status == 503 && matches!(h.framing, Framing::UntilEof));
        assert!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-")
                .expect("valid")
                .is_none()
        );
        assert!(parse_head(b"garbage\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").is_err());
    }
}
