//! One session: `--calls-per-conn` sequential GETs, httperf style. The
//! session ends at its first failed request; later calls are not made.
//!
//! Requests ask for `Connection: keep-alive`. The experiment's servers
//! answer `Connection: close` and close, so the next call opens a new
//! connection, and every call pays for one, as the experiment's `/fast`
//! client did; a server or proxy that keeps the connection (Gunicorn
//! gthread, NGINX and `slowlab proxy` toward their clients) gets the next
//! call on it. After a
//! `close` answer the session waits for the server's FIN before dropping
//! the socket, so that the server closes first and TIME_WAIT stays on its
//! side, as with the experiment's client.
//!
//! Per request the work is the few system calls it needs and nothing
//! allocated: the request bytes are shared, the response is read into a
//! fixed buffer inside the task and parsed there by the crate's one
//! [`ResponseReader`] (which copies only a head split across reads), and a
//! new connection's request is sent
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

use super::step::StepStats;
use crate::error::{ErrorKind, Failure, Phase};
use crate::net;
use crate::response::{self, BodySink, ResponseHead, ResponseReader};

/// The response buffer of a session, the size of each read. A `/fast`
/// answer is about 150 bytes.
const BUF: usize = 2048;

/// What every session shares.
#[derive(Debug)]
pub struct SessionContext {
    pub addr: SocketAddr,
    pub request: Box<[u8]>,
    pub calls: u32,
    pub timeout: Duration,
    /// `--fast-bind`: the local address of every session's sockets.
    pub bind: Option<std::net::IpAddr>,
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
            Err(_) => Err(ErrorKind::Timeout),
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
            Err(kind) => {
                stats.error(kind);
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
) -> Result<Answer, ErrorKind> {
    let (stream, written) = match conn {
        Some(stream) => {
            stream
                .write_all(&ctx.request)
                .await
                .map_err(|e| ErrorKind::of_io(&e, Phase::Transfer))?;
            (stream, Instant::now())
        }
        None => {
            let socket = match fresh.take() {
                Some(s) => s,
                None => {
                    StepStats::add(&stats.connections);
                    connect(ctx.addr, ctx.bind).map_err(|e| ErrorKind::of_io(&e, Phase::Connect))?
                }
            };
            let (stream, written) = send_on_new(socket, &ctx.request).await?;
            (conn.insert(stream), written)
        }
    };
    let mut reader = ResponseReader::default();
    response::read_async(stream, buf, &mut reader, &mut OnlyOk)
        .await
        .map_err(|f| f.kind)?;
    Ok(Answer {
        written,
        done: Instant::now(),
        close: !reader.keeps_alive(),
    })
}

/// A non-blocking socket, bound to `bind` if any, with its connect
/// started.
pub fn connect(addr: SocketAddr, bind: Option<std::net::IpAddr>) -> io::Result<Socket> {
    let socket = net::socket(addr)?;
    crate::bind::bind(&socket, bind)?;
    net::start_connect(&socket, addr)?;
    Ok(socket)
}

/// Sends the request on a connecting socket: at once when the handshake is
/// done, else after tokio reports the socket writable.
async fn send_on_new(socket: Socket, request: &[u8]) -> Result<(TcpStream, Instant), ErrorKind> {
    let connecting = |e: io::Error| ErrorKind::of_io(&e, Phase::Connect);
    let sent = match socket.send(request) {
        Ok(n) => n,
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
        Err(e) => return Err(connecting(e)),
    };
    let mut stream = TcpStream::from_std(socket.into()).map_err(connecting)?;
    if sent < request.len() {
        // Still connecting: writable means the handshake ended either way,
        // and SO_ERROR says which.
        stream.writable().await.map_err(connecting)?;
        if let Some(e) = stream.take_error().map_err(connecting)? {
            return Err(connecting(e));
        }
        stream
            .write_all(&request[sent..])
            .await
            .map_err(|e| ErrorKind::of_io(&e, Phase::Transfer))?;
    }
    Ok((stream, Instant::now()))
}

/// Only a 200 is a reply: any other status fails the call at its head,
/// without waiting for its body.
struct OnlyOk;

impl BodySink for OnlyOk {
    fn head(&mut self, head: &ResponseHead) -> Result<(), Failure> {
        Failure::of_status(Some(head.status)).map_or(Ok(()), Err)
    }
    fn data(&mut self, _payload: &[u8]) {}
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
    use std::io::{Read, Write};
    use std::net::TcpListener;

    use super::*;
    use crate::error::SweepColumn;

    /// A server on loopback that answers each request with `answer`, then
    /// closes the connection if `close`.
    fn serve(answer: &'static [u8], close: bool) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        std::thread::spawn(move || {
            for mut s in listener.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    let mut pending = Vec::new();
                    while let Ok(n @ 1..) = s.read(&mut buf) {
                        pending.extend_from_slice(&buf[..n]);
                        while let Some(i) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                            pending.drain(..i + 4);
                            if s.write_all(answer).is_err() || close {
                                return;
                            }
                        }
                    }
                });
            }
        });
        addr
    }

    /// Runs one session of `calls` calls against `addr`; its step's counts.
    fn session(addr: SocketAddr, calls: u32) -> Arc<StepStats> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let ctx = Arc::new(SessionContext {
            addr,
            request: super::super::request("test", "/fast").into_boxed_slice(),
            calls,
            timeout: Duration::from_secs(5),
            bind: None,
        });
        let stats = Arc::new(StepStats::new(Instant::now(), 8));
        let first = Launched {
            started: Instant::now(),
            socket: connect(addr, None).expect("connect starts"),
        };
        rt.block_on(run(first, ctx, Running::new(stats.clone())));
        assert_eq!(stats.outstanding.load(Ordering::Acquire), 0);
        stats
    }

    fn load(c: &std::sync::atomic::AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }

    fn errors(stats: &StepStats) -> Vec<(&'static str, u64)> {
        SweepColumn::ALL
            .into_iter()
            .map(|c| (c.name(), stats.errors(c)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    #[test]
    fn a_kept_connection_carries_every_call() {
        let addr = serve(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false);
        let stats = session(addr, 3);
        assert_eq!(stats.take_replies().len(), 3);
        assert_eq!(load(&stats.requests), 3);
        assert_eq!(load(&stats.connections), 0, "no connection but the first");
        assert_eq!(errors(&stats), []);
    }

    #[test]
    fn a_closing_server_gets_a_new_connection_per_call() {
        let close = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
        let stats = session(serve(close, true), 3);
        assert_eq!(stats.take_replies().len(), 3);
        assert_eq!(load(&stats.connections), 2, "two more than the first");
        // HTTP/1.0 without keep-alive, and a body up to EOF, close too.
        let old = session(
            serve(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", true),
            2,
        );
        assert_eq!((old.take_replies().len(), load(&old.connections)), (2, 1));
        let eof = session(serve(b"HTTP/1.1 200 OK\r\n\r\nuntil eof", true), 2);
        assert_eq!((eof.take_replies().len(), load(&eof.connections)), (2, 1));
    }

    #[test]
    fn failed_calls_are_counted_in_their_column_and_end_the_session() {
        for (answer, column) in [
            (
                &b"HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\nbusy"[..],
                "err_other",
            ),
            (b"HTTP/1.1 204 No Content\r\n\r\n", "err_other"),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
                "err_other",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
                "err_reset",
            ),
            (b"", "err_reset"),
            (b"SSH-2.0-OpenSSH\r\n\r\n", "err_other"),
        ] {
            let stats = session(serve(answer, true), 3);
            assert_eq!(errors(&stats), [(column, 1)], "{answer:?}");
            assert_eq!(
                load(&stats.requests),
                1,
                "the session ends at its first error"
            );
            assert!(stats.take_replies().is_empty());
        }
    }
}
