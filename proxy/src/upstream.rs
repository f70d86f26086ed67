//! The upstream side: connect, send the request as HTTP/1.0 with
//! `Connection: close`, and read the response head into one
//! `proxy_buffer_size` buffer.
//!
//! We speak HTTP/1.0 upstream because NGINX does by default
//! (`proxy_http_version 1.0`): the origin then frames the body with
//! `Content-Length` or by closing, never with chunks, and the connection is
//! not reused, exactly as in the experiment. Reading the head ourselves
//! (rather than through pingora's client session) keeps every byte after the
//! head in our own buffer, so the body is read in `proxy_buffers`-sized reads
//! and only when the spool has room; pingora's client reads bodies in 64 KiB
//! pieces into a buffer of its own.
//!
//! The connection is a plain tokio `TcpStream`, made the way NGINX makes its
//! upstream connections (`socket`, `connect`, one readiness wait, `SO_ERROR`):
//! pingora's connector adds per connection a `setsockopt` for
//! `IP_BIND_ADDRESS_NO_PORT`, a `getsockname`, `TCP_NODELAY` (the request
//! leaves in one write, so Nagle never holds it), a socket digest and two
//! buffering layers, none of which a fresh loopback connection per request
//! uses.

use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use pingora_http::{RequestHeader, ResponseHeader};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::config::Buffering;
use crate::connlimit::{Connections, Slot};
use crate::pipe::{IDLE_CHECK, client_gone};
use crate::reqbody::BodyError;

/// Why talking to the upstream failed; decides between 502 and 504.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("upstream refused or failed the connection: {0}")]
    Connect(String),
    #[error("upstream timed out: {0}")]
    Timeout(String),
    #[error("upstream closed the connection: {0}")]
    Closed(String),
    #[error("upstream sent an invalid response: {0}")]
    Invalid(String),
    /// No connection free under `worker_connections` (NGINX answers 500).
    #[error("no connection free for the upstream: worker_connections are not enough")]
    NoConnection,
}

impl UpstreamError {
    /// The status NGINX would answer with when no header was sent yet.
    pub fn status(&self) -> u16 {
        match self {
            UpstreamError::Timeout(_) => 504,
            UpstreamError::NoConnection => 500,
            _ => 502,
        }
    }

    /// The short name in the stats log's `error` column.
    pub fn label(&self) -> &'static str {
        match self {
            UpstreamError::Connect(_) => "upstream_connect",
            UpstreamError::Timeout(_) => "upstream_timeout",
            UpstreamError::Closed(_) => "upstream_closed",
            UpstreamError::Invalid(_) => "upstream_invalid",
            UpstreamError::NoConnection => "worker_connections",
        }
    }
}

/// Why a request got no response head: the upstream failed, or the client
/// did its part wrong or left. Decides what (if anything) the client is sent.
#[derive(Debug, thiserror::Error)]
pub enum NoHead {
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// The streamed request body ended before its `Content-Length` (NGINX:
    /// "client prematurely closed connection", 400) or stalled.
    #[error(transparent)]
    ClientBody(#[from] BodyError),
    /// The client left while the proxy waited for the upstream's head.
    #[error("{0}")]
    ClientClosed(String),
}

impl NoHead {
    /// The status to answer with; `None` when the client is gone.
    pub fn status(&self) -> Option<u16> {
        match self {
            NoHead::Upstream(e) => Some(e.status()),
            NoHead::ClientBody(e) => e.status(),
            NoHead::ClientClosed(_) => None,
        }
    }

    /// The short name in the stats log's `error` column.
    pub fn label(&self) -> &'static str {
        match self {
            NoHead::Upstream(e) => e.label(),
            NoHead::ClientBody(e) => e.label(),
            NoHead::ClientClosed(_) => "client_closed",
        }
    }
}

/// How the body of a response ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyLength {
    Exact(u64),
    UntilClose,
}

/// A parsed response head, ready to send to the client.
#[derive(Debug)]
pub struct ResponseHead {
    /// Hop-by-hop headers and `X-Accel-Buffering` removed.
    pub header: ResponseHeader,
    pub body: BodyLength,
    /// The upstream's `X-Accel-Buffering`, if it sent a valid one.
    pub accel: Option<Buffering>,
    /// Body bytes that arrived in the head's buffer.
    pub leftover: Bytes,
}

/// Headers that describe one hop and so are not forwarded.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "expect",
];

/// An upstream connection and its place among `worker_connections`,
/// released together.
#[derive(Debug)]
pub struct Upstream {
    pub stream: TcpStream,
    _slot: Slot,
}

/// Connects to `addr` within `timeout`, in a slot of `conns`.
///
/// This timeout and the head wait's use pingora's timer (10 ms resolution,
/// fired by its own thread): arming a tokio timer takes the time driver's
/// lock and, whenever it is the earliest, wakes the driver through its
/// eventfd, a system call and an extra `epoll_wait` per request here.
pub async fn connect(
    addr: SocketAddr,
    timeout: Duration,
    conns: &Arc<Connections>,
) -> Result<Upstream, UpstreamError> {
    let slot = conns
        .acquire("upstream")
        .ok_or(UpstreamError::NoConnection)?;
    match pingora_timeout::timeout(timeout, TcpStream::connect(addr)).await {
        Ok(Ok(stream)) => Ok(Upstream {
            stream,
            _slot: slot,
        }),
        Ok(Err(e)) => Err(UpstreamError::Connect(format!("connecting to {addr}: {e}"))),
        Err(_) => Err(UpstreamError::Timeout(format!(
            "connecting to {addr} took longer than {timeout:?}"
        ))),
    }
}

/// The request as it goes upstream: HTTP/1.0, hop-by-hop headers dropped,
/// `Connection: close`. The header lines keep the client's spelling of the
/// names (pingora's wire form); the request itself is not copied.
/// `length` is the body's length when the proxy frames it (a buffered
/// body, de-chunked): the client's `Content-Length` gives way to it.
pub fn request_wire(req: &RequestHeader, length: Option<u64>) -> BytesMut {
    let mut buf = BytesMut::with_capacity(512 + req.raw_path().len());
    buf.extend_from_slice(req.method.as_str().as_bytes());
    buf.extend_from_slice(b" ");
    buf.extend_from_slice(req.raw_path());
    buf.extend_from_slice(b" HTTP/1.0\r\n");
    // The header lines go straight into the same buffer; the ones not
    // forwarded are then squeezed out in place (no second buffer).
    let lines = buf.len();
    req.header_to_h1_wire(&mut buf);
    let (mut kept, mut at) = (lines, lines);
    while at < buf.len() {
        // Every line ends with CRLF, the last one included.
        let end = buf[at..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(buf.len(), |i| at + i + 1);
        let line = &buf[at..end];
        let name = line.split(|&b| b == b':').next().unwrap_or(line);
        let hop = HOP_BY_HOP
            .iter()
            .any(|h| h.as_bytes().eq_ignore_ascii_case(name));
        let framed_here = length.is_some() && name.eq_ignore_ascii_case(b"content-length");
        if !hop && !framed_here {
            buf.copy_within(at..end, kept);
            kept += end - at;
        }
        at = end;
    }
    buf.truncate(kept);
    if let Some(n) = length {
        buf.extend_from_slice(format!("Content-Length: {n}\r\n").as_bytes());
    }
    buf.extend_from_slice(b"Connection: close\r\n\r\n");
    buf
}

/// Writes `data` to the upstream within `timeout`. The socket has no
/// buffer of its own to flush.
pub async fn send(
    stream: &mut TcpStream,
    data: &[u8],
    timeout: Duration,
) -> Result<(), UpstreamError> {
    match tokio::time::timeout(timeout, stream.write_all(data)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(UpstreamError::Closed(format!("sending the request: {e}"))),
        Err(_) => Err(UpstreamError::Timeout("sending the request".into())),
    }
}

/// Reads and parses the response head. `buffer_size` bounds the head, as
/// NGINX's "upstream sent too big header"; `head_request` means no body.
///
/// `timeout` runs from each read, as `proxy_read_timeout` does. While it
/// runs, the socket `client` is peeked at every [`IDLE_CHECK`] so that a
/// client that leaves is noticed at once (NGINX's broken-connection check).
/// The wait is cut into slices of one timer each, so a head that arrives
/// within the first slice costs what a plain timeout costs.
pub async fn read_head(
    stream: &mut TcpStream,
    buffer_size: usize,
    timeout: Duration,
    head_request: bool,
    client: Option<RawFd>,
) -> Result<ResponseHead, NoHead> {
    let mut pooled = HeadBuffer::take(buffer_size);
    let buf = &mut pooled.0;
    loop {
        if let Some(head) = parse_head(buf, head_request)? {
            return Ok(head);
        }
        if buf.len() >= buffer_size {
            return Err(UpstreamError::Invalid(format!(
                "upstream sent too big header (more than {buffer_size} bytes)"
            ))
            .into());
        }
        let room = (buffer_size - buf.len()) as u64;
        let start = Instant::now();
        // A timeout too large to add is as good as none (tokio's `timeout`
        // does the same).
        let deadline = start
            .checked_add(timeout)
            .unwrap_or_else(|| start + Duration::from_secs(86_400 * 365 * 30));
        let mut slice_end = match client {
            Some(_) => deadline.min(start + IDLE_CHECK),
            None => deadline,
        };
        let read = loop {
            // Reads are cancel-safe: a slice that ends loses no bytes.
            let mut limited = (&mut *stream).take(room);
            let wait = slice_end.saturating_duration_since(Instant::now());
            match pingora_timeout::timeout(wait, limited.read_buf(buf)).await {
                Ok(read) => break read,
                Err(_) if slice_end >= deadline => {
                    return Err(UpstreamError::Timeout(
                        "upstream timed out while reading response header".into(),
                    )
                    .into());
                }
                Err(_) => {
                    if let Some(why) = client.and_then(client_gone) {
                        return Err(NoHead::ClientClosed(why));
                    }
                    slice_end = deadline.min(slice_end + IDLE_CHECK);
                }
            }
        };
        match read {
            Ok(0) => {
                return Err(UpstreamError::Closed(
                    "upstream prematurely closed connection while reading response header".into(),
                )
                .into());
            }
            Ok(_) => {}
            Err(e) => {
                return Err(UpstreamError::Closed(format!("reading response header: {e}")).into());
            }
        }
    }
}

/// Head buffers kept per thread for the next response: a 16 KiB `malloc`
/// and `free` per request (and glibc's consolidation that large requests
/// trigger) is what buffer reuse avoids.
struct HeadBuffer(BytesMut);

/// The most buffers a thread keeps.
const POOLED: usize = 8;

thread_local! {
    static HEAD_BUFFERS: RefCell<Vec<BytesMut>> = const { RefCell::new(Vec::new()) };
}

impl HeadBuffer {
    fn take(size: usize) -> HeadBuffer {
        let reused = HEAD_BUFFERS.with(|p| p.borrow_mut().pop());
        match reused {
            Some(buf) if buf.capacity() >= size => HeadBuffer(buf),
            _ => HeadBuffer(BytesMut::with_capacity(size)),
        }
    }
}

impl Drop for HeadBuffer {
    fn drop(&mut self) {
        let mut buf = std::mem::take(&mut self.0);
        buf.clear();
        // A thread that is going away has no pool left to return it to.
        let _ = HEAD_BUFFERS.try_with(|p| {
            let mut pool = p.borrow_mut();
            if pool.len() < POOLED {
                pool.push(buf);
            }
        });
    }
}

/// Parses a complete head at the start of `buf`, skipping 1xx heads.
/// `Ok(None)` when more bytes are needed.
fn parse_head(
    buf: &mut BytesMut,
    head_request: bool,
) -> Result<Option<ResponseHead>, UpstreamError> {
    loop {
        // Left uninitialised: zeroing 100 headers (3.2 KiB) per parse costs
        // more than parsing the few an origin sends.
        let mut headers = [const { MaybeUninit::<httparse::Header>::uninit() }; 100];
        let mut resp = httparse::Response::new(&mut []);
        let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
            &mut resp,
            buf,
            &mut headers,
        );
        let len = match parsed {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => return Err(UpstreamError::Invalid(e.to_string())),
        };
        // Complete parses always carry a code.
        let code = resp.code.unwrap_or(0);
        if (100..200).contains(&code) {
            if code == 101 {
                return Err(UpstreamError::Invalid(
                    "protocol upgrades are not proxied".into(),
                ));
            }
            // An informational head has no body; the real one follows.
            let _ = buf.split_to(len);
            continue;
        }
        let mut header = ResponseHeader::build(code, Some(resp.headers.len()))
            .map_err(|e| UpstreamError::Invalid(e.to_string()))?;
        header.set_version(http::Version::HTTP_11);
        if let Some(reason) = resp.reason.filter(|r| !r.is_empty()) {
            // An odd reason phrase is not worth failing the response for.
            let _ = header.set_reason_phrase(Some(reason));
        }
        // One copy of the head, which every header's name and value then
        // point into: no allocation per header (pingora keeps the name as
        // written, and `HeaderValue` takes a `Bytes` as it is).
        let head = Bytes::copy_from_slice(&buf[..len]);
        let piece = |part: &[u8]| {
            let at = part.as_ptr() as usize - buf.as_ptr() as usize;
            head.slice(at..at + part.len())
        };
        let mut accel = None;
        let mut length: Option<u64> = None;
        for h in resp.headers.iter() {
            // Compared in place: no lower-cased copy per header.
            let is = |n: &str| h.name.eq_ignore_ascii_case(n);
            if is("x-accel-buffering") {
                accel = parse_accel(h.value);
                continue;
            }
            if is("transfer-encoding") {
                return Err(UpstreamError::Invalid(
                    "Transfer-Encoding in an answer to HTTP/1.0 is not supported".into(),
                ));
            }
            if HOP_BY_HOP.iter().any(|n| is(n)) {
                continue;
            }
            if is("content-length") {
                let v = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .ok_or_else(|| UpstreamError::Invalid("bad Content-Length".into()))?;
                if length.is_some_and(|l| l != v) {
                    return Err(UpstreamError::Invalid("conflicting Content-Length".into()));
                }
                if length.is_some() {
                    continue;
                }
                length = Some(v);
            }
            let value = http::HeaderValue::from_maybe_shared(piece(h.value))
                .map_err(|e| UpstreamError::Invalid(e.to_string()))?;
            header
                .append_header(piece(h.name.as_bytes()), value)
                .map_err(|e| UpstreamError::Invalid(e.to_string()))?;
        }
        let no_body = head_request || code == 204 || code == 304;
        let body = match (no_body, length) {
            (true, _) => BodyLength::Exact(0),
            (false, Some(n)) => BodyLength::Exact(n),
            (false, None) => BodyLength::UntilClose,
        };
        // Copied out, so that the buffer goes back to the pool; a piece
        // that pinned the whole buffer would also hold more memory than the
        // spool accounts for.
        let leftover = Bytes::copy_from_slice(&buf[len..]);
        buf.clear();
        return Ok(Some(ResponseHead {
            header,
            body,
            accel,
            leftover,
        }));
    }
}

/// `X-Accel-Buffering: yes|no`, case-insensitive as in NGINX.
fn parse_accel(value: &[u8]) -> Option<Buffering> {
    let v = std::str::from_utf8(value).ok()?.trim();
    if v.eq_ignore_ascii_case("yes") {
        Some(Buffering::On)
    } else if v.eq_ignore_ascii_case("no") {
        Some(Buffering::Off)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(raw: &[u8], head: bool) -> Result<Option<ResponseHead>, UpstreamError> {
        let mut buf = BytesMut::from(raw);
        parse_head(&mut buf, head)
    }

    #[test]
    fn head_keeps_end_to_end_headers_and_the_body_start() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\
X-Accel-Buffering: No\r\nX-Slowlab-Block: 65536\r\n\r\nhel";
        let head = parse(raw, false).unwrap().unwrap();
        assert_eq!(head.header.status, 200);
        assert_eq!(head.body, BodyLength::Exact(5));
        assert_eq!(head.accel, Some(Buffering::Off));
        assert_eq!(&head.leftover[..], b"hel");
        let h = &head.header.headers;
        assert!(h.get("connection").is_none());
        assert!(h.get("x-accel-buffering").is_none());
        assert_eq!(h.get("x-slowlab-block").unwrap(), "65536");
        assert_eq!(h.get("content-length").unwrap(), "5");
    }

    #[test]
    fn head_goes_on_as_the_upstream_wrote_it() {
        // After an informational head (the buffer's start moves), names keep
        // their spelling, repeated headers their order, values their bytes.
        let raw = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nX-Mixed-CASE: a b\r\n\
set-cookie: a=1\r\nConnection: close\r\nSet-Cookie: b=2\r\nContent-Length: 2\r\n\r\nok";
        let head = parse(raw, false).unwrap().unwrap();
        let mut wire = BytesMut::new();
        head.header.header_to_h1_wire(&mut wire);
        assert_eq!(
            std::str::from_utf8(&wire).unwrap(),
            "X-Mixed-CASE: a b\r\nset-cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 2\r\n"
        );
        assert_eq!(&head.leftover[..], b"ok");
    }

    #[test]
    fn head_framing_rules() {
        let partial = parse(b"HTTP/1.0 200 OK\r\nContent-Le", false).unwrap();
        assert!(partial.is_none());
        let close = parse(b"HTTP/1.0 200 OK\r\n\r\n", false).unwrap().unwrap();
        assert_eq!(close.body, BodyLength::UntilClose);
        let head = parse(b"HTTP/1.0 200 OK\r\nContent-Length: 9\r\n\r\n", true)
            .unwrap()
            .unwrap();
        assert_eq!(head.body, BodyLength::Exact(0));
        let info = parse(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No\r\n\r\n",
            false,
        )
        .unwrap()
        .unwrap();
        assert_eq!(info.header.status, 204);
        assert!(
            parse(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                false
            )
            .is_err()
        );
        assert!(
            parse(
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                false
            )
            .is_err()
        );
        assert!(parse(b"garbage\r\n\r\n", false).is_err());
    }

    #[test]
    fn request_goes_upstream_as_http10_with_close() {
        let mut req = RequestHeader::build("GET", b"/large?x=1", None).unwrap();
        req.insert_header("Host", "example").unwrap();
        req.insert_header("Connection", "keep-alive").unwrap();
        let wire = request_wire(&req, None);
        let text = std::str::from_utf8(&wire).unwrap();
        assert!(text.starts_with("GET /large?x=1 HTTP/1.0\r\n"), "{text}");
        assert!(text.contains("Host: example\r\n"));
        assert!(!text.contains("keep-alive"));
        assert!(text.ends_with("Connection: close\r\n\r\n"));

        let mut post = RequestHeader::build("POST", b"/upload", None).unwrap();
        post.insert_header("Transfer-Encoding", "chunked").unwrap();
        post.insert_header("content-length", "99").unwrap();
        let wire = request_wire(&post, Some(5));
        let text = std::str::from_utf8(&wire).unwrap();
        assert!(!text.to_ascii_lowercase().contains("chunked"), "{text}");
        assert!(!text.contains("99"), "{text}");
        assert!(
            text.ends_with("Content-Length: 5\r\nConnection: close\r\n\r\n"),
            "{text}"
        );
    }
}
