//! `POST /upload`: read the request body, verify it against the pattern and
//! its length, answer `200` with `{"bytes": N, "pattern_ok": true}`, and log
//! one row to the receive log.
//!
//! The handler reads the body frame by frame as hyper delivers it (at most
//! its 8 KiB read buffer at a time, so never more than `--chunk-bytes` for
//! the experiment's 64 KiB). In the `sync` model the handler is the worker's
//! only future, so the worker is held for the whole upload, as a Gunicorn
//! sync worker is held in `wsgi.input.read()`.
//!
//! The pattern's block size is the request's `X-Slowlab-Block` (the load
//! generator sends it), else the experiment's 64 KiB.

use std::time::{Instant, SystemTime};

use common::pattern::{BLOCK_HEADER, DEFAULT_BLOCK, Verifier};
use http::header::CONTENT_LENGTH;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;

use crate::app::{AppBody, small_owned};
use crate::recv_log::{RecvLog, Upload};

/// The answer to a whole body: the bytes read and whether every byte held
/// the pattern, as the Python apps write it (`json.dumps`).
pub fn answer_body(bytes: u64, pattern_ok: bool) -> String {
    format!(r#"{{"bytes": {bytes}, "pattern_ok": {pattern_ok}}}"#)
}

/// Reads the body of `req`, logs it and answers. A body that ends short
/// (the client left) gets a 400 that nobody may read, and an incomplete row.
pub async fn receive(req: Request<Incoming>, log: Option<&RecvLog>) -> Response<AppBody> {
    let header = |name| req.headers().get(name).and_then(|v| v.to_str().ok());
    let block = header(BLOCK_HEADER)
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|b| *b > 0)
        .unwrap_or(DEFAULT_BLOCK);
    let content_length = header(CONTENT_LENGTH.as_str()).and_then(|v| v.trim().parse().ok());
    let worker = std::thread::current()
        .name()
        .unwrap_or("unnamed")
        .to_string();
    // The row is written when this guard is dropped: at the end, or when
    // the connection is cut and this future with it.
    let mut row = Row {
        log,
        upload: Upload {
            started: Instant::now(),
            started_wall: SystemTime::now(),
            content_length,
            bytes: 0,
            pattern_ok: true,
            done_at: None,
            worker,
        },
    };
    let mut verifier = Verifier::new(block);
    let mut body = req.into_body();
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            return small_owned(StatusCode::BAD_REQUEST, "text/plain", "incomplete body\n");
        };
        if let Ok(data) = frame.into_data() {
            verifier.update(&data);
            row.upload.bytes += data.len() as u64;
        }
    }
    row.upload.done_at = Some(Instant::now());
    row.upload.pattern_ok = verifier.first_bad().is_none();
    let text = answer_body(row.upload.bytes, row.upload.pattern_ok);
    small_owned(StatusCode::OK, "application/json", text)
}

struct Row<'a> {
    log: Option<&'a RecvLog>,
    upload: Upload,
}

impl Drop for Row<'_> {
    fn drop(&mut self) {
        let Some(log) = self.log else { return };
        if let Err(err) = log.record(&self.upload) {
            tracing::warn!(cause = %format!("{err:#}"), "receive log row lost");
        }
    }
}
