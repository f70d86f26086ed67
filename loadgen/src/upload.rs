//! The request direction's slow uploaders (`--slow-upload`): each `POST`s
//! a pattern body paced to a fixed rate. The slowloris clients
//! (`--slow-headers`) are in [`crate::slowloris`]; both share the
//! [`Endpoint`] of the flags.
//!
//! An uploader is a state machine of the slow clients' engine
//! ([`crate::engine`]), as the slow readers are. It writes the body in
//! pieces of at most [`WRITE_PIECE`] and at most [`PIECE_SPAN`] of the
//! rate's bytes (so that a body smaller than one piece is paced too: 8 KiB
//! at 2 KiB/s takes 4 s, not one write); piece *k* is written no earlier
//! than the paced
//! deadline of the bytes before it, counted from the first body byte, so a
//! late wake-up delays one piece and not the whole body, and a piece the
//! socket does not take at once is finished as it drains (a blocking
//! `write_all`). `send_s` runs from the first body byte to the last write
//! (the kernel has accepted every byte); the answer is read with the one
//! response reader.
//!
//! Any server's answer counts: the upload is ok when every byte was sent
//! and the status is one of `--upload-ok` (any 2xx by default). When the
//! answer is the lab's own JSON (`{"bytes": N, "pattern_ok": B}`, what its
//! servers and apps answer) the server's count and pattern check are
//! recorded and held to the body sent.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::Socket;
use tokio::sync::oneshot;

use crate::config::UploadConfig;
use crate::engine::io::{self as eio, Buffers};
use crate::engine::{Client, Cx, Engine, Interest, Machine, Wait};
use crate::error::{ErrorKind, Failure};
use crate::fast::{ms, secs};
use crate::pacing;
use crate::record::UploadRecord;
use crate::response::{self, BodySink, ResponseHead, ResponseReader};
use crate::target::Target;
use crate::upload_args::OkStatuses;

/// The largest single write of an uploader: 16 KiB, the slow readers'
/// default read, so a paced body is some 1,000 writes of 16 MiB.
pub const WRITE_PIECE: usize = 16 << 10;
/// The most of a second's bytes one piece carries: 10 ms of the rate, so
/// a slow rate writes small pieces often (2 KiB/s: 20 bytes every 10 ms)
/// and a fast one 16 KiB pieces (from 1.6 MiB/s up).
pub const PIECE_SPAN: std::time::Duration = std::time::Duration::from_millis(10);
/// The pattern block of an upload, announced in `X-Slowlab-Block`.
pub const UPLOAD_BLOCK: usize = common::pattern::DEFAULT_BLOCK;
/// The most pieces an uploader writes in one turn of its loop when its
/// deadlines are already past (a fast rate): then it yields to the others.
const PIECES_PER_TURN: usize = 16;

/// Where a request-direction client goes and how long it waits: what
/// uploaders and slowloris clients share.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub addr: SocketAddr,
    pub authority: String,
    /// Full request path (base path included).
    pub path: String,
    /// The longest wait for the connect or any single write or read.
    pub timeout: Duration,
    /// Client `i` binds `bind.slow_client(i)` (`--slow-bind`).
    pub bind: crate::bind::Binds,
}

impl Endpoint {
    /// The endpoint of a run's checked flags.
    pub fn new(
        up: &UploadConfig,
        target: &Target,
        timeout: Duration,
        bind: crate::bind::Binds,
    ) -> Self {
        Endpoint {
            addr: target.addr,
            authority: target.parsed.authority.clone(),
            path: up.path.clone(),
            timeout,
            bind,
        }
    }

    /// Client `client`'s socket, `SO_SNDBUF` of `sndbuf` if asked, its
    /// connect started.
    pub(crate) fn connect(
        &self,
        client: usize,
        sndbuf: Option<usize>,
    ) -> Result<eio::Connecting, (Failure, Buffers)> {
        let buffers = Buffers {
            rcvbuf: None,
            sndbuf,
        };
        eio::connect(self.addr, self.bind.slow_client(client), buffers)
    }
}

/// What every uploader shares.
#[derive(Debug)]
pub struct UploadContext {
    pub to: Endpoint,
    pub bytes: u64,
    /// Bytes per second.
    pub rate: u64,
    pub sndbuf: usize,
    /// The answers that make an upload ok.
    pub ok: OkStatuses,
    /// One pattern block, the source of every piece.
    block: Vec<u8>,
    /// The most bytes of one piece at this rate ([`piece_bytes`]).
    piece_bytes: usize,
}

impl UploadContext {
    /// The uploaders' context of a run's checked flags.
    pub fn new(to: Endpoint, up: &UploadConfig) -> Self {
        UploadContext {
            to,
            bytes: up.bytes,
            rate: up.rate,
            sndbuf: up.sndbuf,
            ok: up.ok.clone(),
            block: common::pattern::block(UPLOAD_BLOCK),
            piece_bytes: piece_bytes(up.rate),
        }
    }

    /// The request head of an upload.
    pub fn head(&self) -> Vec<u8> {
        format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: slowlab-load\r\nAccept: */*\r\n\
             Content-Type: application/octet-stream\r\nContent-Length: {}\r\n\
             X-Slowlab-Block: {UPLOAD_BLOCK}\r\nConnection: close\r\n\r\n",
            self.to.path, self.to.authority, self.bytes
        )
        .into_bytes()
    }

    /// The piece that starts at body byte `sent`: within one block, at most
    /// [`piece_bytes`] of the rate.
    fn piece(&self, sent: u64) -> &[u8] {
        let at = (sent % UPLOAD_BLOCK as u64) as usize;
        let n = (self.bytes - sent).min((self.piece_bytes.min(UPLOAD_BLOCK - at)) as u64) as usize;
        &self.block[at..at + n]
    }
}

/// The most bytes of one piece at `rate` bytes a second: [`PIECE_SPAN`]
/// of it, at least one byte, at most [`WRITE_PIECE`].
fn piece_bytes(rate: u64) -> usize {
    let span = (u128::from(rate) * PIECE_SPAN.as_nanos() / 1_000_000_000) as u64;
    span.clamp(1, WRITE_PIECE as u64) as usize
}

/// Hands uploader `client` to the engine; it begins at [`Client::start`].
pub fn spawn_uploader(
    engine: &Arc<Engine>,
    client: usize,
    ctx: Arc<UploadContext>,
) -> Client<UploadRecord> {
    let (tx, rx) = oneshot::channel();
    let r = UploadRecord {
        client,
        started_s: 0.0,
        connect_ms: None,
        send_s: None,
        bytes_sent: 0,
        upload_bytes: ctx.bytes,
        first_byte_ms: None,
        status: None,
        server_bytes: None,
        pattern_ok: None,
        sndbuf_requested_bytes: ctx.sndbuf,
        sndbuf_granted_bytes: None,
        error: None,
    };
    let machine = Upload {
        client,
        head: ctx.head(),
        ctx,
        tx: Some(tx),
        began: None,
        r,
        socket: None,
        step: Step::Idle,
        reader: ResponseReader::default(),
        answer: Answer::default(),
    };
    engine.add(Box::new(machine), rx)
}

/// Keeps the start of the answer of the upload path.
#[derive(Debug, Default)]
struct Answer {
    body: Vec<u8>,
}

impl BodySink for Answer {
    fn head(&mut self, _head: &ResponseHead) -> Result<(), Failure> {
        Ok(())
    }
    fn data(&mut self, payload: &[u8]) {
        // The lab's answer is some 40 bytes; anything past 4 KiB is not it.
        let room = 4096usize.saturating_sub(self.body.len());
        self.body
            .extend_from_slice(&payload[..payload.len().min(room)]);
    }
}

/// The lab's answer, as its servers and apps write it.
#[derive(Debug, serde::Deserialize)]
struct Verdict {
    bytes: u64,
    pattern_ok: bool,
}

/// Judges a whole answer: its status against `ok`, and, when it is the
/// lab's JSON, the server's count and pattern check against `sent`.
fn judge(
    status: Option<u16>,
    body: &[u8],
    ok: &OkStatuses,
    sent: u64,
    r: &mut UploadRecord,
) -> Result<(), Failure> {
    let Some(status) = status else {
        return Err(Failure::new(ErrorKind::Malformed, "no status"));
    };
    if !ok.contains(status) {
        return Err(Failure::new(
            ErrorKind::BadStatus,
            format!("status {status} (--upload-ok {ok})"),
        ));
    }
    let Ok(verdict) = serde_json::from_slice::<Verdict>(body) else {
        return Ok(());
    };
    r.server_bytes = Some(verdict.bytes);
    r.pattern_ok = Some(verdict.pattern_ok);
    if !verdict.pattern_ok || verdict.bytes != sent {
        return Err(Failure::new(
            ErrorKind::VerifyFailed,
            format!(
                "the server read {} of {sent} bytes, pattern_ok {}",
                verdict.bytes, verdict.pattern_ok
            ),
        ));
    }
    Ok(())
}

/// Where an upload is.
enum Step {
    Idle,
    Connecting {
        until: Instant,
    },
    /// Writing the head; `at` bytes of it are written.
    Head {
        at: usize,
        until: Instant,
    },
    /// The body from `first`: `sent` bytes accepted; `at` bytes of the
    /// current piece written. `room`: waiting for the socket to take more
    /// (until the stall timeout), else for the next piece's deadline.
    Body {
        first: Instant,
        sent: u64,
        at: usize,
        room: bool,
    },
    /// Reading the answer (until the stall timeout).
    Answer,
    Over,
}

struct Upload {
    client: usize,
    ctx: Arc<UploadContext>,
    head: Vec<u8>,
    tx: Option<oneshot::Sender<UploadRecord>>,
    began: Option<Instant>,
    r: UploadRecord,
    socket: Option<Socket>,
    step: Step,
    reader: ResponseReader,
    answer: Answer,
}

impl Upload {
    fn timeout(&self) -> Instant {
        Instant::now() + self.ctx.to.timeout
    }

    fn finish(&mut self, outcome: Result<(), Failure>) -> Wait {
        self.step = Step::Over;
        self.socket = None;
        self.r.status = self.reader.status();
        let began = self.began.unwrap_or_else(Instant::now);
        self.r.first_byte_ms = self.reader.first_byte().map(|t| ms(began, t));
        self.r.error = outcome.err().map(|f| f.in_load());
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(self.r.clone());
        }
        Wait::Done
    }

    fn stalled(&mut self, what: &str) -> Wait {
        let f = Failure::new(
            ErrorKind::Timeout,
            format!("{what}: nothing for {:?}", self.ctx.to.timeout),
        );
        self.finish(Err(f))
    }

    fn write_head(&mut self, mut at: usize, until: Instant) -> Wait {
        let Some(socket) = &self.socket else {
            return self.finish(Err(Failure::new(ErrorKind::Io, "no socket")));
        };
        match eio::send(socket, &self.head, &mut at) {
            Ok(true) => self.body(Instant::now(), 0, 0),
            Ok(false) => {
                let until = if at > 0 { self.timeout() } else { until };
                self.step = Step::Head { at, until };
                Wait::io(Interest::Write, until)
            }
            Err(e) => self.finish(Err(Failure::transfer("write", &e))),
        }
    }

    /// Writes what is due of the body from `sent` (the current piece `at`
    /// bytes in), then waits for the next deadline or for room.
    fn body(&mut self, first: Instant, mut sent: u64, mut at: usize) -> Wait {
        for _ in 0..PIECES_PER_TURN {
            if sent == self.ctx.bytes {
                self.r.send_s = Some(secs(first, Instant::now()));
                return self.answer();
            }
            let due = first + pacing::due(sent, self.ctx.rate);
            if at == 0 && Instant::now() < due {
                self.step = Step::Body {
                    first,
                    sent,
                    at,
                    room: false,
                };
                return Wait::until(due);
            }
            let Some(socket) = &self.socket else {
                return self.finish(Err(Failure::new(ErrorKind::Io, "no socket")));
            };
            let piece = self.ctx.piece(sent);
            let len = piece.len();
            match eio::send(socket, piece, &mut at) {
                Ok(true) => {
                    sent += len as u64;
                    at = 0;
                    self.r.bytes_sent = sent;
                }
                Ok(false) => {
                    self.step = Step::Body {
                        first,
                        sent,
                        at,
                        room: true,
                    };
                    return Wait::io(Interest::Write, self.timeout());
                }
                Err(e) => {
                    self.r.bytes_sent = sent + at as u64;
                    return self.finish(Err(Failure::transfer("write", &e)));
                }
            }
        }
        self.step = Step::Body {
            first,
            sent,
            at,
            room: false,
        };
        Wait::until(Instant::now())
    }

    /// Reads the answer, one `recv` of up to 4 KiB at a time.
    fn answer(&mut self) -> Wait {
        loop {
            let Some(socket) = &self.socket else {
                return self.finish(Err(Failure::new(ErrorKind::Io, "no socket")));
            };
            let mut buf = [0u8; 4096];
            let n = match eio::recv(socket, &mut buf) {
                Ok(Some(n)) => n,
                Ok(None) => {
                    self.step = Step::Answer;
                    return Wait::io(Interest::Read, self.timeout());
                }
                Err(e) => return self.finish(Err(response::read_failure(&e))),
            };
            let whole = if n == 0 {
                self.reader.eof().map(|()| true)
            } else {
                self.reader.feed(&buf[..n], &mut self.answer)
            };
            match whole {
                Err(f) => return self.finish(Err(f)),
                Ok(false) => continue,
                Ok(true) => {
                    let status = self.reader.status();
                    let sent = self.r.bytes_sent;
                    let verdict = judge(status, &self.answer.body, &self.ctx.ok, sent, &mut self.r);
                    return self.finish(verdict);
                }
            }
        }
    }
}

impl Machine for Upload {
    fn start(&mut self, t0: Instant, _cx: &mut Cx) -> Wait {
        let began = Instant::now();
        self.began = Some(began);
        self.r.started_s = secs(t0, began);
        match self.ctx.to.connect(self.client, Some(self.ctx.sndbuf)) {
            Err((f, granted)) => {
                self.r.sndbuf_granted_bytes = granted.sndbuf;
                self.finish(Err(f))
            }
            Ok(c) => {
                self.r.sndbuf_granted_bytes = c.sndbuf;
                self.socket = Some(c.socket);
                if c.done {
                    self.r.connect_ms = Some(ms(began, Instant::now()));
                    return self.write_head(0, self.timeout());
                }
                let until = began + self.ctx.to.timeout;
                self.step = Step::Connecting { until };
                Wait::io(Interest::Write, until)
            }
        }
    }

    fn ready(&mut self, _cx: &mut Cx) -> Wait {
        match self.step {
            Step::Connecting { until } => match self.socket.as_ref().map(eio::connected) {
                Some(Ok(true)) => {
                    let began = self.began.unwrap_or_else(Instant::now);
                    self.r.connect_ms = Some(ms(began, Instant::now()));
                    self.write_head(0, self.timeout())
                }
                Some(Ok(false)) => Wait::io(Interest::Write, until),
                Some(Err(e)) => self.finish(Err(Failure::connect(&e))),
                None => self.finish(Err(Failure::new(ErrorKind::Io, "no socket"))),
            },
            Step::Head { at, until } => self.write_head(at, until),
            Step::Body {
                first, sent, at, ..
            } => self.body(first, sent, at),
            Step::Answer => self.answer(),
            Step::Idle | Step::Over => Wait::Done,
        }
    }

    fn timer(&mut self, _cx: &mut Cx) -> Wait {
        match self.step {
            Step::Connecting { .. } => self.finish(Err(Failure::new(
                ErrorKind::Timeout,
                format!("connect: not established in {:?}", self.ctx.to.timeout),
            ))),
            Step::Head { .. } => self.stalled("write"),
            Step::Body { room: true, .. } => self.stalled("write"),
            Step::Body {
                first, sent, at, ..
            } => self.body(first, sent, at),
            Step::Answer => self.stalled("read"),
            Step::Idle | Step::Over => Wait::Done,
        }
    }

    fn stop(&mut self, _cx: &mut Cx) -> Wait {
        let f = Failure::new(
            ErrorKind::Cut,
            format!("the run ended after {} body bytes sent", self.r.bytes_sent),
        );
        self.finish(Err(f))
    }

    fn fd(&self) -> Option<RawFd> {
        self.socket.as_ref().map(AsRawFd::as_raw_fd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slowloris::HeadersContext;

    #[test]
    fn uploaders_and_slowloris_clients_share_one_endpoint_of_the_flags() {
        let target = Target::resolve("http://127.0.0.1:8000/app", false).unwrap();
        let up = UploadConfig {
            uploaders: 2,
            path: "/app/upload".into(),
            bytes: 1234,
            rate: 2 << 20,
            sndbuf: 8 << 10,
            slow_headers: 3,
            header_interval: Duration::from_millis(250),
            ok: OkStatuses::success(),
        };
        let timeout = Duration::from_secs(3);
        let to = Endpoint::new(&up, &target, timeout, Default::default());
        let u = UploadContext::new(to.clone(), &up);
        let h = HeadersContext::new(to, &up);
        for e in [&u.to, &h.to] {
            assert_eq!(e.addr, target.addr);
            assert_eq!(
                (e.authority.as_str(), e.path.as_str()),
                ("127.0.0.1:8000", "/app/upload")
            );
            assert_eq!(e.timeout, timeout);
        }
        assert_eq!((u.bytes, u.rate, u.sndbuf), (1234, 2 << 20, 8 << 10));
        assert_eq!(h.interval, Duration::from_millis(250));
        let head = String::from_utf8(u.head()).unwrap();
        assert!(
            head.starts_with("POST /app/upload HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n"),
            "{head}"
        );
        assert!(head.contains("Content-Length: 1234\r\n"), "{head}");
        // 16 KiB pieces at 2 MiB/s; 10 ms of a slow rate, so that a body
        // smaller than 16 KiB is paced too.
        assert_eq!(u.piece(0).len(), 1234);
        let big = UploadContext::new(
            u.to.clone(),
            &UploadConfig {
                bytes: 64 << 10,
                ..up.clone()
            },
        );
        assert_eq!(big.piece(0).len(), WRITE_PIECE);
        let slow = UploadContext::new(
            u.to.clone(),
            &UploadConfig {
                bytes: 8 << 10,
                rate: 2 << 10,
                ..up.clone()
            },
        );
        assert_eq!(slow.piece(0).len(), 20);
        let crawl = UploadContext::new(u.to, &UploadConfig { rate: 1, ..up });
        assert_eq!(crawl.piece(0).len(), 1);
    }
}
