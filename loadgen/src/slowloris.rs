//! Slowloris clients (`--slow-headers`): each sends a request head one
//! header line per `--header-interval` and never finishes it, until the
//! run ends or the server answers or closes.
//!
//! A state machine of the slow clients' engine ([`crate::engine`]), as the
//! slow readers and uploaders are: it writes a line, waits one interval,
//! looks (without waiting) whether the server has answered or closed, and
//! writes the next.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::Socket;
use tokio::sync::oneshot;

use crate::config::UploadConfig;
use crate::engine::io as eio;
use crate::engine::{Client, Cx, Engine, Interest, Machine, Wait};
use crate::error::{ErrorKind, Failure};
use crate::fast::{ms, secs};
use crate::record::SlowHeaderRecord;
use crate::response::{Discard, ResponseReader};
use crate::upload::Endpoint;

/// What every slowloris client shares.
#[derive(Debug)]
pub struct HeadersContext {
    pub to: Endpoint,
    /// One header line per interval.
    pub interval: Duration,
}

impl HeadersContext {
    /// The slowloris clients' context of a run's checked flags.
    pub fn new(to: Endpoint, up: &UploadConfig) -> Self {
        HeadersContext {
            to,
            interval: up.header_interval,
        }
    }
}

/// How a slowloris client's connection ended (the `ended` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HeadersEnd {
    /// Still open, the head unfinished, when the run ended.
    RunEnd,
    /// The server answered (a 408, say) or closed the connection.
    ServerClosed,
    /// Could not connect or write: the row's `error` says why.
    Failed,
}

impl HeadersEnd {
    pub fn as_str(self) -> &'static str {
        match self {
            HeadersEnd::RunEnd => "run_end",
            HeadersEnd::ServerClosed => "server_closed",
            HeadersEnd::Failed => "failed",
        }
    }
}

/// Hands slowloris client `client` to the engine; it sends header lines
/// from [`Client::start`] until [`Client::stop`] or the server answers.
pub fn spawn_slow_headers(
    engine: &Arc<Engine>,
    client: usize,
    ctx: Arc<HeadersContext>,
) -> Client<SlowHeaderRecord> {
    let (tx, rx) = oneshot::channel();
    let line = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: slowlab-load\r\n",
        ctx.to.path, ctx.to.authority
    )
    .into_bytes();
    let machine = Headers {
        r: SlowHeaderRecord {
            client,
            started_s: 0.0,
            connect_ms: None,
            header_lines: 0,
            held_s: None,
            ended: HeadersEnd::Failed,
            status: None,
            error: None,
        },
        ctx,
        tx: Some(tx),
        began: None,
        connected: None,
        socket: None,
        step: Step::Idle,
        line,
        reader: ResponseReader::default(),
    };
    engine.add(Box::new(machine), rx)
}

enum Step {
    Idle,
    Connecting {
        until: Instant,
    },
    /// Writing the current line; `at` bytes of it are written.
    Writing {
        at: usize,
        until: Instant,
    },
    /// Between two lines: the next at `next`.
    Waiting {
        next: Instant,
    },
    Over,
}

struct Headers {
    ctx: Arc<HeadersContext>,
    r: SlowHeaderRecord,
    tx: Option<oneshot::Sender<SlowHeaderRecord>>,
    began: Option<Instant>,
    connected: Option<Instant>,
    socket: Option<Socket>,
    step: Step,
    /// The line being written.
    line: Vec<u8>,
    reader: ResponseReader,
}

impl Headers {
    fn finish(&mut self, ended: HeadersEnd, error: Option<Failure>) -> Wait {
        self.step = Step::Over;
        self.socket = None;
        self.r.ended = ended;
        self.r.error = error.map(Failure::in_load);
        self.r.status = self.reader.status();
        self.r.held_s = self.connected.map(|c| secs(c, Instant::now()));
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(self.r.clone());
        }
        Wait::Done
    }

    fn connected(&mut self) -> Wait {
        let now = Instant::now();
        self.connected = Some(now);
        self.r.connect_ms = self.began.map(|b| ms(b, now));
        self.write(0, now + self.ctx.to.timeout)
    }

    /// Writes the current line; once written, waits one interval.
    fn write(&mut self, mut at: usize, until: Instant) -> Wait {
        let Some(socket) = &self.socket else {
            return self.finish(HeadersEnd::Failed, None);
        };
        match eio::send(socket, &self.line, &mut at) {
            Ok(true) => {
                self.r.header_lines += 1;
                let n = self.r.header_lines;
                self.line = format!("X-Slowlab-Wait-{n}: {n}\r\n").into_bytes();
                let next = Instant::now() + self.ctx.interval;
                self.step = Step::Waiting { next };
                Wait::until(next)
            }
            Ok(false) => {
                let until = if at > 0 {
                    Instant::now() + self.ctx.to.timeout
                } else {
                    until
                };
                self.step = Step::Writing { at, until };
                Wait::io(Interest::Write, until)
            }
            Err(e) => self.finish(
                HeadersEnd::ServerClosed,
                Some(Failure::transfer("write", &e)),
            ),
        }
    }

    /// Whether the server has answered or closed, without waiting.
    fn server_answered(&mut self, cx: &mut Cx) -> bool {
        let Some(socket) = &self.socket else {
            return true;
        };
        let buf = cx.scratch(1024);
        match eio::recv(socket, buf) {
            Ok(None) => false,
            Ok(Some(0)) | Err(_) => true,
            Ok(Some(n)) => {
                // Only the status is wanted; a malformed answer is an
                // answer too.
                let _ = self.reader.feed(&buf[..n], &mut Discard);
                true
            }
        }
    }
}

impl Machine for Headers {
    fn start(&mut self, t0: Instant, _cx: &mut Cx) -> Wait {
        let began = Instant::now();
        self.began = Some(began);
        self.r.started_s = secs(t0, began);
        match self.ctx.to.connect(self.r.client, None) {
            Err((f, _)) => self.finish(HeadersEnd::Failed, Some(f)),
            Ok(c) => {
                self.socket = Some(c.socket);
                if c.done {
                    return self.connected();
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
                Some(Ok(true)) => self.connected(),
                Some(Ok(false)) => Wait::io(Interest::Write, until),
                Some(Err(e)) => self.finish(HeadersEnd::Failed, Some(Failure::connect(&e))),
                None => self.finish(HeadersEnd::Failed, None),
            },
            Step::Writing { at, until } => self.write(at, until),
            // It does not watch its socket between lines.
            Step::Waiting { next } => Wait::until(next),
            Step::Idle | Step::Over => Wait::Done,
        }
    }

    fn timer(&mut self, cx: &mut Cx) -> Wait {
        match self.step {
            Step::Connecting { .. } => {
                let f = Failure::new(
                    ErrorKind::Timeout,
                    format!("connect: not established in {:?}", self.ctx.to.timeout),
                );
                self.finish(HeadersEnd::Failed, Some(f))
            }
            Step::Writing { .. } => {
                let f = Failure::new(
                    ErrorKind::Timeout,
                    format!("write: nothing for {:?}", self.ctx.to.timeout),
                );
                self.finish(HeadersEnd::ServerClosed, Some(f))
            }
            Step::Waiting { .. } => {
                if self.server_answered(cx) {
                    return self.finish(HeadersEnd::ServerClosed, None);
                }
                self.write(0, Instant::now() + self.ctx.to.timeout)
            }
            Step::Idle | Step::Over => Wait::Done,
        }
    }

    fn stop(&mut self, _cx: &mut Cx) -> Wait {
        match self.step {
            // Never connected: its record says why already, or it is cut
            // while connecting.
            Step::Idle | Step::Connecting { .. } => self.finish(
                HeadersEnd::Failed,
                Some(Failure::new(
                    ErrorKind::Cut,
                    "the run ended before it connected",
                )),
            ),
            _ => self.finish(HeadersEnd::RunEnd, None),
        }
    }

    fn fd(&self) -> Option<RawFd> {
        self.socket.as_ref().map(AsRawFd::as_raw_fd)
    }
}
