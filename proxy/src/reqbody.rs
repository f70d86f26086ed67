//! The request body, the way NGINX's `proxy_request_buffering` moves it.
//!
//! - **Streamed** (`off`, a body with a `Content-Length`): each piece goes
//!   upstream as it arrives, so the upstream's handler waits as long as the
//!   client takes to send (see `ProxyApp::open_upstream`).
//! - **Buffered** (`on`, or any chunked body): [`read_whole`] reads the
//!   whole body before the upstream is connected, in memory up to
//!   `client_body_buffer_size`, then, as NGINX does, all of it in an
//!   unlinked `0600` temp file ([`SpillFile`]) written one full buffer at a
//!   time; [`Buffered::send`] then sends it at the speed of the upstream's
//!   socket with a `Content-Length` (a chunked body is de-chunked).
//!
//! `client_max_body_size` is checked on the `Content-Length` before any
//! body byte is read and on a chunked body as it arrives; beyond it the
//! client gets 413, and, as in NGINX's lingering close, the proxy stops
//! sending and reads (and drops) what the client still sends for a bounded
//! time so that the answer is not lost to a reset.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use pingora_core::protocols::http::ServerSession;
use pingora_error::ErrorType;
use tokio::net::TcpStream;

use crate::config::RequestConfig;
use crate::spillfile::SpillFile;
use crate::stats::Progress;
use crate::upstream::{self, UpstreamError};

/// NGINX's `lingering_timeout`: the longest wait between two reads while a
/// refused body is dropped.
const LINGERING_TIMEOUT: Duration = Duration::from_secs(5);
/// NGINX's `lingering_time`: the longest a refused body is read at all.
const LINGERING_TIME: Duration = Duration::from_secs(30);
/// Bytes per read from the temp file while the body goes upstream.
const SEND_PIECE: usize = 64 * 1024;

/// Why a request body did not arrive whole.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The body ended before its `Content-Length`, or its chunks were
    /// malformed (NGINX: 400).
    #[error("client request body ended short: {0}")]
    Short(String),
    /// No body byte for `client_body_timeout` (NGINX logs 408 and closes
    /// without an answer).
    #[error("client sent no body bytes within the client body timeout")]
    Timeout,
    /// Longer than `client_max_body_size` (NGINX: 413).
    #[error("client intended to send too large body: {0} bytes or more")]
    TooLarge(u64),
    /// The temp file could not be made or written (NGINX: 500).
    #[error("request body temp file in {dir}: {cause}")]
    TempFile { dir: String, cause: std::io::Error },
}

impl BodyError {
    /// The status to answer with; `None`: close without an answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            BodyError::Short(_) => Some(400),
            BodyError::Timeout => None,
            BodyError::TooLarge(_) => Some(413),
            BodyError::TempFile { .. } => Some(500),
        }
    }

    /// The short name in the stats log's `error` column.
    pub fn label(&self) -> &'static str {
        match self {
            BodyError::Short(_) => "client_body_short",
            BodyError::Timeout => "client_body_timeout",
            BodyError::TooLarge(_) => "body_too_large",
            BodyError::TempFile { .. } => "temp_file",
        }
    }

    /// From a failed body read of pingora's.
    pub fn from_read(e: &pingora_error::Error) -> BodyError {
        if *e.etype() == ErrorType::ReadTimedout {
            BodyError::Timeout
        } else {
            BodyError::Short(e.to_string())
        }
    }
}

/// A whole request body, in memory or in its temp file.
#[derive(Debug)]
pub struct Buffered {
    /// The body while it fits; once a file exists, the part not yet
    /// written to it.
    mem: BytesMut,
    file: Option<SpillFile>,
    len: u64,
    mem_peak: usize,
}

impl Buffered {
    /// Body bytes read from the client.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn mem_peak(&self) -> usize {
        self.mem_peak
    }

    /// Bytes in the temp file.
    pub fn spilled(&self) -> u64 {
        self.file.as_ref().map_or(0, SpillFile::len)
    }

    /// Sends `head` and the body to the upstream, the head and a body held
    /// in memory in one write; the temp file is closed when `self` drops.
    pub async fn send(
        self,
        up: &mut TcpStream,
        mut head: BytesMut,
        timeout: Duration,
        progress: &Progress,
    ) -> Result<(), UpstreamError> {
        let Some(file) = self.file else {
            head.extend_from_slice(&self.mem);
            upstream::send(up, &head, timeout).await?;
            Progress::set(&progress.req_sent, self.len);
            return Ok(());
        };
        upstream::send(up, &head, timeout).await?;
        let mut sent = 0u64;
        while sent < file.len() {
            let n = (file.len() - sent).min(SEND_PIECE as u64) as usize;
            let piece = file.read_at(sent, n).map_err(|e| {
                UpstreamError::Closed(format!("reading the request body's temp file: {e}"))
            })?;
            upstream::send(up, &piece, timeout).await?;
            sent += n as u64;
            Progress::set(&progress.req_sent, sent);
        }
        Ok(())
    }

    fn push(
        &mut self,
        mut data: Bytes,
        cfg: &RequestConfig,
        dir: &std::path::Path,
    ) -> std::io::Result<()> {
        let size = cfg.body_buffer_size;
        if self.file.is_none() && self.mem.len() + data.len() <= size {
            self.mem.extend_from_slice(&data);
            self.mem_peak = self.mem_peak.max(self.mem.len());
            return Ok(());
        }
        // As NGINX: once the body outgrows the buffer, all of it goes to
        // the file, one full buffer per write.
        if self.file.is_none() {
            let file = SpillFile::create(dir)?;
            tracing::warn!(file = %file.path().display(), "a client request body is buffered to a temporary file");
            self.file = Some(file);
        }
        while !data.is_empty() {
            let take = (size - self.mem.len()).min(data.len());
            self.mem.extend_from_slice(&data.split_to(take));
            self.mem_peak = self.mem_peak.max(self.mem.len());
            if self.mem.len() == size {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if let Some(file) = self.file.as_mut() {
            if !self.mem.is_empty() {
                file.append(&[self.mem.split().freeze()])?;
            }
        }
        Ok(())
    }
}

/// Reads the whole body of `session`'s request (which has one).
pub async fn read_whole(
    session: &mut ServerSession,
    cfg: &RequestConfig,
    dir: &std::path::Path,
    progress: &Progress,
) -> Result<Buffered, BodyError> {
    let mut body = Buffered {
        mem: BytesMut::new(),
        file: None,
        len: 0,
        mem_peak: 0,
    };
    let temp = |cause| BodyError::TempFile {
        dir: dir.display().to_string(),
        cause,
    };
    loop {
        match session.read_request_body().await {
            Ok(Some(chunk)) => {
                body.len += chunk.len() as u64;
                if cfg.too_large(body.len) {
                    // Only a chunked body gets here: a Content-Length was
                    // checked before reading.
                    return Err(BodyError::TooLarge(body.len));
                }
                body.push(chunk, cfg, dir).map_err(temp)?;
                Progress::set(&progress.req_read, body.len);
                Progress::set(&progress.req_mem, body.mem.len() as u64);
                Progress::set(&progress.req_file, body.spilled());
            }
            Ok(None) => break,
            Err(e) => return Err(BodyError::from_read(&e)),
        }
    }
    body.flush().map_err(temp)?;
    Progress::set(&progress.req_mem, body.mem.len() as u64);
    Progress::set(&progress.req_file, body.spilled());
    Ok(body)
}

/// The request's `Content-Length`, when it has one and no
/// `Transfer-Encoding` (pingora has checked that the value is sound).
pub fn content_length(session: &ServerSession) -> Option<u64> {
    let headers = &session.req_header().headers;
    if headers.contains_key(http::header::TRANSFER_ENCODING) {
        return None;
    }
    headers
        .get(http::header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Whether the request's head carried both `Content-Length` and
/// `Transfer-Encoding`. pingora drops the length and goes on with the
/// chunks; NGINX 1.22 answers 400 ("client sent "Content-Length" and
/// "Transfer-Encoding" headers at the same time"), and so does the proxy:
/// a request framed two ways is the shape of request smuggling.
pub fn has_length_and_chunks(session: &ServerSession) -> bool {
    if !session
        .req_header()
        .headers
        .contains_key(http::header::TRANSFER_ENCODING)
    {
        return false;
    }
    // The length is gone from the parsed head; the raw head still has it.
    let Some(h1) = session.as_http1() else {
        return false;
    };
    has_header_line(&h1.get_headers_raw_bytes(), b"content-length")
}

/// Whether a raw request head has a header line named `name` (any case;
/// the request line is skipped).
fn has_header_line(raw: &[u8], name: &[u8]) -> bool {
    raw.split(|&b| b == b'\n').skip(1).any(|line| {
        line.split(|&b| b == b':')
            .next()
            .is_some_and(|n| n.trim_ascii().eq_ignore_ascii_case(name))
            && line.contains(&b':')
    })
}

/// The status NGINX 1.22 gives a request head that pingora refused: 501
/// for a `Transfer-Encoding` other than chunked ("client sent unknown
/// "Transfer-Encoding""), 400 for anything else malformed.
pub fn refused_head_status(e: &pingora_error::Error) -> u16 {
    let said = e.to_string();
    if said.contains("non-chunked final Transfer-Encoding") {
        501
    } else {
        400
    }
}

/// Whether the request's body is chunked (pingora accepts no other
/// `Transfer-Encoding`).
pub fn is_chunked(session: &ServerSession) -> bool {
    session
        .req_header()
        .headers
        .contains_key(http::header::TRANSFER_ENCODING)
}

/// Answers `100 Continue` when an HTTP/1.1 client asks for it, as NGINX
/// does once it is ready to read the body.
pub async fn continue_if_expected(session: &mut ServerSession) {
    let req = session.req_header();
    let expects = req.version == http::Version::HTTP_11
        && req
            .headers
            .get(http::header::EXPECT)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    if expects {
        if let Ok(head) = pingora_http::ResponseHeader::build(100, None) {
            let _ = session.write_response_header(Box::new(head)).await;
        }
    }
}

/// After a refusal has been written: no more bytes to the client, and what
/// it still sends is read and dropped for at most [`LINGERING_TIME`]
/// (NGINX's lingering close), so that its kernel does not answer the
/// client's next segments with a reset that could destroy the refusal.
pub async fn linger(session: &mut ServerSession) {
    if let Some(fd) = session.stream().map(|s| s.id()) {
        // SAFETY: a shutdown of the write side of a socket this session
        // owns and keeps open for the duration of the call.
        unsafe { libc::shutdown(fd, libc::SHUT_WR) };
    }
    session.set_read_timeout(Some(LINGERING_TIMEOUT));
    session.set_total_drain_timeout(Some(LINGERING_TIME));
    let _ = session.drain_request_body().await;
}

#[cfg(test)]
mod tests {
    use super::has_header_line;

    #[test]
    fn a_header_line_is_found_by_name_in_any_case_and_not_in_the_request_line() {
        let raw = b"POST /content-length HTTP/1.1\r\nHost: x\r\ncOnTeNt-LeNgTh : 5\r\n\r\n";
        assert!(has_header_line(raw, b"content-length"));
        assert!(!has_header_line(raw, b"transfer-encoding"));
        let only_line = b"GET /content-length HTTP/1.1\r\nHost: x\r\n\r\n";
        assert!(!has_header_line(only_line, b"content-length"));
    }
}
