//! Reading one HTTP/1.1 response, for every client of the load generator
//! (the slow readers, the `/fast` client, the sweep's sessions): the head
//! with httparse, then the body by `Content-Length`, chunked framing, or up
//! to EOF.
//!
//! [`ResponseReader`] is a push parser without I/O: the caller does the
//! reads (so it can time each one and pace the slow readers) and feeds what
//! each read returned. It is the one place that decides how a response is
//! framed ([`Framing::answering`]) and whether the connection can carry
//! another request ([`ResponseReader::keeps_alive`]). [`read_blocking`] and
//! [`read_async`] are its drivers over a blocking and a tokio stream: one
//! read of the caller's buffer size, one feed, until the response ends.

use std::io;
use std::time::Instant;

use common::pattern::BLOCK_HEADER;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::chunked::ChunkedDecoder;
use crate::error::{ErrorKind, Failure, Phase};

/// The largest response head we accept before calling it malformed.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
const MAX_HEADERS: usize = 64;

/// What we keep of a response head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    pub status: u16,
    pub content_length: Option<u64>,
    pub chunked: bool,
    /// The raw `X-Slowlab-Block` value, if any (checked by the slow reader).
    pub block: Option<String>,
}

/// The method of the request a response answers: the answer to a HEAD has
/// no body, whatever its head announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Method {
    #[default]
    Get,
    Head,
}

/// A head and what the reader needs of it beyond [`ResponseHead`].
struct Parsed {
    head: ResponseHead,
    /// The head's length in bytes.
    len: usize,
    /// The server keeps the connection open after the response, as far as
    /// its version and `Connection` header say.
    keep_alive: bool,
}

/// Parses a head from the start of `buf`. `Ok(None)`: not complete yet.
fn parse(buf: &[u8]) -> Result<Option<Parsed>, Failure> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    let len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD_BYTES => {
            return Err(malformed(format!(
                "head longer than {MAX_HEAD_BYTES} bytes"
            )));
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(malformed(format!("response head: {e}"))),
    };
    // httparse fills these for every complete response.
    let status = resp.code.ok_or_else(|| malformed("no status code"))?;
    let mut head = ResponseHead {
        status,
        content_length: None,
        chunked: false,
        block: None,
    };
    // HTTP/1.0 closes unless asked not to; HTTP/1.1 keeps unless told.
    let mut keep_alive = resp.version == Some(1);
    for h in resp.headers.iter() {
        let value = std::str::from_utf8(h.value)
            .map_err(|_| malformed(format!("header {} is not UTF-8", h.name)))?
            .trim();
        if h.name.eq_ignore_ascii_case("content-length") {
            // Repeated headers, or one with a list, must all agree
            // (RFC 9112 6.3): a disagreement is a framing attack or a bug.
            for n in value.split(',').map(str::trim) {
                let n: u64 = n
                    .parse()
                    .map_err(|_| malformed(format!("Content-Length `{value}`")))?;
                if head.content_length.is_some_and(|seen| seen != n) {
                    return Err(malformed("conflicting Content-Length headers"));
                }
                head.content_length = Some(n);
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            // Chunked must be the last coding when present (RFC 9112 6.1).
            let last = value.rsplit(',').next().unwrap_or_default().trim();
            head.chunked = last.eq_ignore_ascii_case("chunked");
        } else if h.name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    keep_alive = false;
                } else if token.eq_ignore_ascii_case("keep-alive") {
                    keep_alive = true;
                }
            }
        } else if h.name.eq_ignore_ascii_case(BLOCK_HEADER) {
            head.block = Some(value.to_string());
        }
    }
    Ok(Some(Parsed {
        head,
        len,
        keep_alive,
    }))
}

/// How the body's end is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Length(u64),
    Chunked,
    UntilEof,
}

impl Framing {
    /// The framing of a response to `method` (RFC 9112 6.3): no body for a
    /// HEAD, a 1xx, 204 or 304; then chunked, which overrides any
    /// `Content-Length`; then the length; else up to EOF.
    pub fn answering(method: Method, head: &ResponseHead) -> Framing {
        let s = head.status;
        if method == Method::Head || s / 100 == 1 || s == 204 || s == 304 {
            Framing::Length(0)
        } else if head.chunked {
            Framing::Chunked
        } else if let Some(n) = head.content_length {
            Framing::Length(n)
        } else {
            Framing::UntilEof
        }
    }
}

/// Receives what the reader finds.
pub trait BodySink {
    /// Called once, when the head is complete, before any payload.
    fn head(&mut self, head: &ResponseHead) -> Result<(), Failure>;
    /// Called with body payload (chunk framing removed), in order.
    fn data(&mut self, payload: &[u8]);
}

/// A sink for callers that need only the status and the counts, which the
/// reader keeps itself.
#[derive(Debug, Default, Clone, Copy)]
pub struct Discard;

impl BodySink for Discard {
    fn head(&mut self, _head: &ResponseHead) -> Result<(), Failure> {
        Ok(())
    }
    fn data(&mut self, _payload: &[u8]) {}
}

/// Parser state of one response.
#[derive(Debug, Default)]
pub struct ResponseReader {
    method: Method,
    /// The head so far, when it came in more than one piece.
    head_buf: Vec<u8>,
    framing: Option<Framing>,
    status: Option<u16>,
    keep_alive: bool,
    chunked: ChunkedDecoder,
    body_bytes: u64,
    first_byte: Option<Instant>,
    done: bool,
}

impl ResponseReader {
    /// A reader of the answer to a `method` request (`default()` is a GET).
    pub fn new(method: Method) -> Self {
        ResponseReader {
            method,
            ..ResponseReader::default()
        }
    }

    /// Body payload bytes seen so far.
    pub fn body_bytes(&self) -> u64 {
        self.body_bytes
    }

    /// Known once the head is complete.
    pub fn framing(&self) -> Option<Framing> {
        self.framing
    }

    /// Known once the head is complete.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// When the first bytes of the response were fed.
    pub fn first_byte(&self) -> Option<Instant> {
        self.first_byte
    }

    /// The response is complete.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The connection can carry another request after this response: the
    /// head is complete, neither its version nor a `Connection: close` ends
    /// the connection, and the body does not end with it.
    pub fn keeps_alive(&self) -> bool {
        self.keep_alive && self.framing.is_some_and(|f| f != Framing::UntilEof)
    }

    /// Feeds the bytes of one read. Returns `true` once the body is complete.
    pub fn feed(&mut self, data: &[u8], sink: &mut dyn BodySink) -> Result<bool, Failure> {
        if self.done {
            return Err(malformed("bytes after the end of the response"));
        }
        if !data.is_empty() {
            self.first_byte.get_or_insert_with(Instant::now);
        }
        if self.framing.is_some() {
            return self.body(data, sink);
        }
        // A head that arrives in one read (the usual case) is parsed where
        // it lies, without copying.
        if self.head_buf.is_empty() {
            return match parse(data)? {
                Some(p) => self.start_body(p, data, sink),
                None => {
                    self.head_buf.extend_from_slice(data);
                    Ok(false)
                }
            };
        }
        self.head_buf.extend_from_slice(data);
        match parse(&self.head_buf)? {
            Some(p) => {
                let buf = std::mem::take(&mut self.head_buf);
                self.start_body(p, &buf, sink)
            }
            None => Ok(false),
        }
    }

    /// Takes a complete head found at the start of `buf`; the rest of `buf`
    /// is body.
    fn start_body(
        &mut self,
        p: Parsed,
        buf: &[u8],
        sink: &mut dyn BodySink,
    ) -> Result<bool, Failure> {
        self.framing = Some(Framing::answering(self.method, &p.head));
        self.status = Some(p.head.status);
        self.keep_alive = p.keep_alive;
        sink.head(&p.head)?;
        self.body(&buf[p.len..], sink)
    }

    fn body(&mut self, data: &[u8], sink: &mut dyn BodySink) -> Result<bool, Failure> {
        match self.framing {
            Some(Framing::Length(total)) => {
                let left = total - self.body_bytes;
                if data.len() as u64 > left {
                    return Err(malformed(format!(
                        "more than the {total} bytes of Content-Length"
                    )));
                }
                self.take(data, sink);
                self.done = self.body_bytes == total;
            }
            Some(Framing::Chunked) => {
                let mut payload = 0u64;
                let used = self.chunked.feed(data, &mut |p| {
                    payload += p.len() as u64;
                    sink.data(p);
                })?;
                self.body_bytes += payload;
                if used < data.len() {
                    return Err(malformed("bytes after the last chunk"));
                }
                self.done = self.chunked.is_done();
            }
            Some(Framing::UntilEof) | None => self.take(data, sink),
        }
        Ok(self.done)
    }

    fn take(&mut self, data: &[u8], sink: &mut dyn BodySink) {
        if !data.is_empty() {
            self.body_bytes += data.len() as u64;
            sink.data(data);
        }
    }

    /// Called when the peer closed the connection: a complete response or
    /// an error saying what was missing.
    pub fn eof(&mut self) -> Result<(), Failure> {
        match self.framing {
            _ if self.done => Ok(()),
            None if self.head_buf.is_empty() => Err(Failure::new(
                ErrorKind::ShortBody,
                "connection closed before any response",
            )),
            None => Err(malformed("connection closed inside the response head")),
            Some(Framing::UntilEof) => {
                self.done = true;
                Ok(())
            }
            Some(Framing::Length(total)) => Err(Failure::new(
                ErrorKind::ShortBody,
                format!("closed after {} of {total} body bytes", self.body_bytes),
            )),
            Some(Framing::Chunked) => Err(Failure::new(
                ErrorKind::ShortBody,
                format!(
                    "closed inside the chunked body after {} bytes",
                    self.body_bytes
                ),
            )),
        }
    }
}

/// Reads one response from a blocking stream into `reader`: each read asks
/// for `buf.len()` bytes, and `after_read` runs after each read's bytes are
/// fed (the slow readers pace themselves there). An interrupted read is
/// retried; a read timing out (`SO_RCVTIMEO`) is a [`ErrorKind::Timeout`].
pub fn read_blocking(
    stream: &mut impl io::Read,
    buf: &mut [u8],
    reader: &mut ResponseReader,
    sink: &mut dyn BodySink,
    mut after_read: impl FnMut(&ResponseReader),
) -> Result<(), Failure> {
    loop {
        let n = match stream.read(buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_failure(&e)),
        };
        if n == 0 {
            return reader.eof();
        }
        let done = reader.feed(&buf[..n], sink)?;
        after_read(reader);
        if done {
            return Ok(());
        }
    }
}

/// Reads one response from a tokio stream into `reader`, with reads of up
/// to `buf.len()` bytes. What the reader has seen stays in it if the future
/// is dropped (by a timeout).
pub async fn read_async(
    stream: &mut (impl AsyncRead + Unpin),
    buf: &mut [u8],
    reader: &mut ResponseReader,
    sink: &mut (impl BodySink + Send),
) -> Result<(), Failure> {
    loop {
        let n = stream.read(buf).await.map_err(|e| read_failure(&e))?;
        if n == 0 {
            return reader.eof();
        }
        if reader.feed(&buf[..n], sink)? {
            return Ok(());
        }
    }
}

pub fn read_failure(e: &io::Error) -> Failure {
    Failure::new(ErrorKind::of_io(e, Phase::Transfer), format!("read: {e}"))
}

fn malformed(what: impl Into<String>) -> Failure {
    Failure::new(ErrorKind::Malformed, what)
}

#[cfg(test)]
#[path = "response_tests.rs"]
mod tests;
