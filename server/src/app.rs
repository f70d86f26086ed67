//! The routes, byte-identical to `lab/python/slowlab_app.py`.
//!
//! - `GET /fast`: 200, `application/json`, body `{"ok": true}` (12 bytes).
//! - `GET /large`: 200, `application/octet-stream`, the pattern body, and
//!   `X-Slowlab-Block: <block size>` so a reader knows how to verify it.
//! - `POST /upload`: reads and verifies the body (see [`crate::upload`]),
//!   200 `application/json` `{"bytes": N, "pattern_ok": true}`.
//! - other path: 404 `not found\n`; other method on a known path: 405
//!   `method not allowed\n` with `Allow: GET` (`Allow: POST` for `/upload`).
//!
//! Every response says `Connection: close`; hyper then closes the connection
//! after it, as Gunicorn's sync worker does.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::pattern::BLOCK_HEADER;
use http::header::{ALLOW, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{Either, Full};
use hyper::body::Incoming;

use crate::ServerConfig;
use crate::large::LargeBody;
use crate::meter::Meter;
use crate::recv_log::RecvLog;
use crate::send_log::SendLog;

pub const FAST_BODY: &[u8] = br#"{"ok": true}"#;
pub const NOT_FOUND: &[u8] = b"not found\n";
pub const NOT_ALLOWED: &[u8] = b"method not allowed\n";
/// The path that takes a request body.
pub const UPLOAD_PATH: &str = "/upload";

/// A response body: small and fixed, or the streamed `/large` pattern.
pub type AppBody = Either<Full<Bytes>, LargeBody>;

/// What every connection of one server shares.
#[derive(Debug)]
pub struct App {
    /// One block of the pattern, shared (not copied) by every response.
    block: Bytes,
    /// The configured block size, announced in `X-Slowlab-Block` even when
    /// the body is shorter than one block (as the WSGI app does).
    chunk_bytes: usize,
    large_bytes: u64,
    pub send_log: Option<SendLog>,
    pub recv_log: Option<RecvLog>,
    /// See [`ServerConfig::worker_timeout`] (read by the sync model only).
    pub worker_timeout: Option<Duration>,
}

impl App {
    /// Builds the block and opens the send log.
    pub fn new(config: &ServerConfig, server_start: Instant) -> anyhow::Result<Self> {
        // A block longer than the body is never sent whole, so do not build it.
        let block_len = usize::try_from(config.large_bytes)
            .map_or(config.chunk_bytes, |total| total.min(config.chunk_bytes));
        let send_log = match &config.send_log {
            Some(path) => Some(SendLog::open(path, server_start)?),
            None => None,
        };
        let recv_log = match &config.recv_log {
            Some(path) => Some(RecvLog::open(path, server_start)?),
            None => None,
        };
        Ok(App {
            block: Bytes::from(common::pattern::block(block_len)),
            chunk_bytes: config.chunk_bytes,
            large_bytes: config.large_bytes,
            send_log,
            recv_log,
            worker_timeout: config.worker_timeout,
        })
    }

    /// Answers one request: `/upload` reads its body, every other route is
    /// answered by [`App::respond`].
    pub async fn handle(&self, req: Request<Incoming>, meter: &Arc<Meter>) -> Response<AppBody> {
        if req.uri().path() != UPLOAD_PATH {
            return self.respond(&req, meter);
        }
        if req.method() != Method::POST {
            return not_allowed("POST");
        }
        crate::upload::receive(req, self.recv_log.as_ref()).await
    }

    /// Answers one request that has no body to read. `meter` is the connection's, so a `/large` body
    /// can pace itself by what the kernel accepted.
    pub fn respond<B>(&self, req: &Request<B>, meter: &Arc<Meter>) -> Response<AppBody> {
        let path = req.uri().path();
        if path != "/fast" && path != "/large" {
            return small(StatusCode::NOT_FOUND, "text/plain", NOT_FOUND);
        }
        if req.method() != Method::GET {
            return not_allowed("GET");
        }
        if path == "/fast" {
            return small(StatusCode::OK, "application/json", FAST_BODY);
        }
        let body = LargeBody::start(self.block.clone(), self.large_bytes, meter.clone());
        let mut resp = Response::new(Either::Right(body));
        let headers = resp.headers_mut();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        );
        headers.insert(CONTENT_LENGTH, HeaderValue::from(self.large_bytes));
        headers.insert(BLOCK_HEADER, HeaderValue::from(self.chunk_bytes));
        headers.insert(CONNECTION, HeaderValue::from_static("close"));
        resp
    }
}

fn not_allowed(allow: &'static str) -> Response<AppBody> {
    let mut resp = small(StatusCode::METHOD_NOT_ALLOWED, "text/plain", NOT_ALLOWED);
    resp.headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    resp
}

fn small(status: StatusCode, content_type: &'static str, body: &'static [u8]) -> Response<AppBody> {
    small_bytes(status, content_type, Bytes::from_static(body))
}

/// A small response with a body made at run time.
pub(crate) fn small_owned(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<String>,
) -> Response<AppBody> {
    small_bytes(status, content_type, Bytes::from(body.into()))
}

fn small_bytes(status: StatusCode, content_type: &'static str, body: Bytes) -> Response<AppBody> {
    let len = body.len();
    let mut resp = Response::new(Either::Left(Full::new(body)));
    *resp.status_mut() = status;
    let headers = resp.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
    headers.insert(CONNECTION, HeaderValue::from_static("close"));
    resp
}
