//! Reading one HTTP/1.1 response: the head with httparse, then the body by
//! `Content-Length`, chunked framing, or up to EOF.
//!
//! The reader is a push parser: the caller does the I/O (so it can time every
//! read and pace the slow readers) and feeds whatever each read returned.

use crate::chunked::ChunkedDecoder;
use crate::error::{ErrorKind, Failure};

/// The largest response head we accept before calling it malformed.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Header naming the `/large` block size; sent by our servers only.
pub const BLOCK_HEADER: &str = "x-slowlab-block";
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

/// Parses a head from the start of `buf`. `Ok(None)`: not complete yet.
/// On success also returns the head's length in bytes.
pub fn parse_head(buf: &[u8]) -> Result<Option<(ResponseHead, usize)>, Failure> {
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
    for h in resp.headers.iter() {
        let value = std::str::from_utf8(h.value)
            .map_err(|_| malformed(format!("header {} is not UTF-8", h.name)))?
            .trim();
        if h.name.eq_ignore_ascii_case("content-length") {
            let n: u64 = value
                .parse()
                .map_err(|_| malformed(format!("Content-Length `{value}`")))?;
            if head.content_length.is_some_and(|seen| seen != n) {
                return Err(malformed("conflicting Content-Length headers"));
            }
            head.content_length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            // Chunked must be the last coding when present (RFC 9112 6.1).
            let last = value.rsplit(',').next().unwrap_or_default().trim();
            head.chunked = last.eq_ignore_ascii_case("chunked");
        } else if h.name.eq_ignore_ascii_case(BLOCK_HEADER) {
            head.block = Some(value.to_string());
        }
    }
    Ok(Some((head, len)))
}

/// How the body's end is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Length(u64),
    Chunked,
    UntilEof,
}

impl Framing {
    /// The framing of a response to a GET (RFC 9112 6.3).
    pub fn of(head: &ResponseHead) -> Framing {
        if head.status / 100 == 1 || head.status == 204 || head.status == 304 {
            Framing::Length(0)
        } else if head.chunked {
            // Transfer-Encoding overrides Content-Length.
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

/// Parser state of one response.
#[derive(Debug, Default)]
pub struct ResponseReader {
    head_buf: Vec<u8>,
    framing: Option<Framing>,
    chunked: ChunkedDecoder,
    body_bytes: u64,
    done: bool,
}

impl ResponseReader {
    /// Body payload bytes seen so far.
    pub fn body_bytes(&self) -> u64 {
        self.body_bytes
    }

    pub fn framing(&self) -> Option<Framing> {
        self.framing
    }

    /// Feeds the bytes of one read. Returns `true` once the body is complete.
    pub fn feed(&mut self, data: &[u8], sink: &mut dyn BodySink) -> Result<bool, Failure> {
        if self.done {
            return Err(malformed("bytes after the end of the response"));
        }
        let Some(framing) = self.framing else {
            self.head_buf.extend_from_slice(data);
            let Some((head, len)) = parse_head(&self.head_buf)? else {
                return Ok(false);
            };
            let framing = Framing::of(&head);
            self.framing = Some(framing);
            sink.head(&head)?;
            let rest = std::mem::take(&mut self.head_buf).split_off(len);
            return self.body(framing, &rest, sink);
        };
        self.body(framing, data, sink)
    }

    fn body(
        &mut self,
        framing: Framing,
        data: &[u8],
        sink: &mut dyn BodySink,
    ) -> Result<bool, Failure> {
        match framing {
            Framing::Length(total) => {
                let left = total - self.body_bytes;
                if data.len() as u64 > left {
                    return Err(malformed(format!(
                        "more than the {total} bytes of Content-Length"
                    )));
                }
                self.take(data, sink);
                self.done = self.body_bytes == total;
            }
            Framing::Chunked => {
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
            Framing::UntilEof => self.take(data, sink),
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

fn malformed(what: impl Into<String>) -> Failure {
    Failure::new(ErrorKind::Malformed, what)
}

#[cfg(test)]
#[path = "response_tests.rs"]
mod tests;
