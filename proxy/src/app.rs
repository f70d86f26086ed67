//! The proxy application on pingora's HTTP/1 sessions: a client
//! connection's requests, one at a time, each answered from a fresh
//! upstream connection through a [`Spool`].
//!
//! pingora parses the request and writes the response head and body to the
//! client ([`ServerSession`]); this module decides what to send: nothing
//! when the head is not whole within the header timeout (as NGINX), 400
//! for a malformed request (also one framed by both `Content-Length` and
//! `Transfer-Encoding`, as NGINX 1.22), 501 for a transfer coding other
//! than chunked, 400 for a request body that ends short, 413 for one
//! beyond the maximum body size, the body streamed or read whole first
//! ([`reqbody`]), 502/504 when the
//! upstream fails before its head arrived, nothing when the client left
//! before it (noticed by a peek every 200 ms while the head is awaited),
//! otherwise the upstream's head (minus hop-by-hop headers and
//! `X-Accel-Buffering`; pingora adds `Connection: keep-alive` or `close`)
//! and the body through [`pipe::run`]. A connection is kept open for its
//! next request only after a response delivered whole
//! ([`crate::keepalive`]); after an error page it closes.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime};

use pingora_core::protocols::http::{ReusableHttpStream, ServerSession};
use pingora_core::server::ShutdownWatch;
use pingora_error::ErrorType;
use tokio::sync::watch;

use crate::config::{Buffering, ProxyConfig};
use crate::connlimit::{Connections, Slot};
use crate::keepalive;
use crate::pipe::{self, PipeParams};
use crate::reqbody::{self, BodyError, Buffered};
use crate::spool::Spool;
use crate::stats::{Gauges, Progress, RequestStats, StatsLog, StatsRow, unix_s};
use crate::upstream::{self, BodyLength, NoHead};

/// The proxy as a pingora [`HttpServerApp`].
pub struct ProxyApp {
    cfg: Arc<ProxyConfig>,
    stats: Option<StatsLog>,
    /// `None` without `--gauge-log`: nobody samples, so no response is
    /// registered.
    gauges: Option<Arc<Gauges>>,
    /// `worker_connections`: client and upstream connections alike.
    conns: Arc<Connections>,
    next_conn: AtomicU64,
}

/// One accepted client connection.
struct Conn {
    /// Numbers the connections, for the log.
    id: u64,
    accepted: Instant,
}

/// When and how a request started, for its stats row.
struct Started {
    at: Instant,
    unix_s: f64,
    mode: Buffering,
}

impl ProxyApp {
    pub fn new(
        cfg: Arc<ProxyConfig>,
        stats: Option<StatsLog>,
        gauges: Option<Arc<Gauges>>,
        conns: Arc<Connections>,
    ) -> ProxyApp {
        ProxyApp {
            cfg,
            stats,
            gauges,
            conns,
            next_conn: AtomicU64::new(1),
        }
    }

    /// The stats log, if there is one.
    pub fn stats(&self) -> Option<&StatsLog> {
        self.stats.as_ref()
    }

    fn record(&self, row: StatsRow) {
        if let Some(log) = &self.stats {
            log.write(&row);
        }
    }

    /// Answers with a pingora-made error page (none when `status` is
    /// `None`: the client is gone, or NGINX would close without one) and
    /// records it.
    ///
    /// Boxed, and so allocated only when a request fails: pingora's
    /// `respond_error` alone is 1.3 KiB of state, which inline would be
    /// part of every connection's future (see [`Self::serve`]).
    fn fail<'a>(
        &'a self,
        session: &'a mut ServerSession,
        started: &'a Started,
        status: Option<u16>,
        label: &'static str,
        req: RequestStats,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            // The connection closes after an error page, and the page says
            // so.
            session.set_keepalive(None);
            let sent = match status {
                Some(status) => session.respond_error(status).await.is_ok(),
                None => false,
            };
            self.record(StatsRow {
                start_unix_s: started.unix_s,
                mode: started.mode.name(),
                status: status.filter(|_| sent),
                bytes: 0,
                mem_peak_bytes: 0,
                spilled_bytes: 0,
                upstream_done_s: None,
                client_done_s: sent.then(|| started.at.elapsed().as_secs_f64()),
                error: Some(label),
                req,
            });
            if status == Some(413) && sent {
                reqbody::linger(session).await;
            }
        })
    }

    /// Serves one accepted client connection: its requests one after the
    /// other, the connection kept open between them as NGINX keeps it
    /// (see [`crate::keepalive`]), until a response closes it, the client
    /// leaves or idles too long, or `stop` says the proxy is stopping.
    ///
    /// The accept loop calls this directly with pingora's HTTP/1 session
    /// rather than through `ServerApp::process_new`: that dispatch boxes the
    /// whole response future twice (two `async_trait` calls, each copying
    /// it) and peeks for an HTTP/2 preface only to find none.
    pub async fn serve_connection(
        &self,
        stream: pingora_core::protocols::Stream,
        mut slot: Slot,
        cut: &ShutdownWatch,
        stop: &mut watch::Receiver<bool>,
    ) {
        let conn = Conn {
            id: self.next_conn.fetch_add(1, Ordering::Relaxed),
            accepted: Instant::now(),
        };
        let mut session = keepalive::first_session(stream);
        let mut nth = 1;
        loop {
            let Some(reusable) = self.serve(session, &conn, nth, cut.clone()).await else {
                return;
            };
            let timeout = self.cfg.keepalive.timeout;
            match keepalive::next_session(reusable, slot, &self.conns, timeout, stop).await {
                Some((next, kept)) => (session, slot) = (next, kept),
                None => return,
            }
            nth += 1;
        }
    }

    /// The proxy's configuration.
    pub fn config(&self) -> &ProxyConfig {
        &self.cfg
    }

    /// Serves one request of a connection that is not kept open by
    /// [`crate::keepalive`]: an HTTP/2 stream, or the one request of an
    /// HTTP/1.1 connection over TLS ([`crate::edge`]).
    pub async fn serve_stream(&self, session: ServerSession, cut: ShutdownWatch) {
        let conn = Conn {
            id: self.next_conn.fetch_add(1, Ordering::Relaxed),
            accepted: Instant::now(),
        };
        let _ = self.serve(session, &conn, 1, cut).await;
    }

    /// Serves the `nth` request of a connection; returns the connection
    /// when it is to wait for another.
    async fn serve(
        &self,
        mut session: ServerSession,
        connection: &Conn,
        nth: u32,
        shutdown: ShutdownWatch,
    ) -> Option<ReusableHttpStream> {
        let conn = connection.id;
        let rc = &self.cfg.request;
        // NGINX's client_header_timeout: one deadline for the whole head
        // from the accept (on a connection kept open, from the next
        // request's first bytes), however slowly its lines come (a slowloris
        // client's one line every few seconds would reset a per-read
        // timer). pingora's per-read timers are off meanwhile, so the head
        // still costs one timer.
        session.set_keepalive(None);
        session.set_read_timeout(None);
        let read = pingora_timeout::timeout(rc.header_timeout, session.read_request()).await;
        let started = Started {
            at: Instant::now(),
            unix_s: unix_s(SystemTime::now()),
            mode: self.cfg.buffering,
        };
        let read = match read {
            Ok(read) => read,
            Err(_) => {
                // NGINX logs 408 and closes without an answer
                // (ngx_http_process_request_headers: "client timed out",
                // ngx_http_close_request); no upstream was ever involved.
                tracing::debug!(
                    conn,
                    "client sent no whole request head within the header timeout"
                );
                let none = RequestStats::default();
                self.fail(&mut session, &started, None, "client_header_timeout", none)
                    .await;
                return None;
            }
        };
        match read {
            Ok(true) => {}
            // The client connected (or finished its last request) and left
            // without another.
            Ok(false) => return None,
            Err(e) => {
                if matches!(
                    e.etype(),
                    ErrorType::ReadTimedout | ErrorType::ConnectionClosed | ErrorType::ReadError
                ) {
                    tracing::debug!(conn, cause = %e, "client left while sending its request");
                } else {
                    tracing::info!(conn, cause = %e, "malformed request");
                    let none = RequestStats::default();
                    let status = reqbody::refused_head_status(&e);
                    self.fail(&mut session, &started, Some(status), "bad_request", none)
                        .await;
                }
                return None;
            }
        }
        if reqbody::has_length_and_chunks(&session) {
            tracing::info!(
                conn,
                "client sent \"Content-Length\" and \"Transfer-Encoding\" headers at the same time"
            );
            let none = RequestStats::default();
            self.fail(&mut session, &started, Some(400), "bad_request", none)
                .await;
            return None;
        }
        // Reading the request set keep-alive from its version and
        // `Connection` header; NGINX's limits may still make this request
        // the connection's last, and its response then says so.
        if !self
            .cfg
            .keepalive
            .allows_another(nth, connection.accepted.elapsed())
        {
            session.set_keepalive(None);
        }
        session.set_write_timeout(Some(self.cfg.send_timeout));
        // client_body_timeout: pingora times each body read.
        session.set_read_timeout(Some(rc.body_timeout));

        let unlisted = Progress::default();
        let mut open = None;
        let mut req = RequestStats::default();
        let mut body = RequestBody::Empty;
        if !session.is_body_empty() {
            // Listed from here, so that the gauge shows the upload too.
            open = self.gauges.as_ref().map(|g| g.open(conn));
            let progress = open.as_ref().map_or(&unlisted, |o| &o.progress);
            match self
                .take_body(&mut session, &started, progress, &mut req)
                .await
            {
                Ok(b) => body = b,
                Err(e) => {
                    match &e {
                        BodyError::TempFile { .. } => {
                            tracing::warn!(conn, cause = %e, "request body not buffered")
                        }
                        _ => tracing::info!(conn, cause = %e, "request body refused or cut"),
                    }
                    self.fail(&mut session, &started, e.status(), e.label(), req)
                        .await;
                    return None;
                }
            }
        }

        let head_request = session.req_header().method == http::Method::HEAD;
        let opened = {
            let progress = open.as_ref().map_or(&unlisted, |o| &o.progress);
            let sent = Sent {
                body,
                progress,
                started: &started,
            };
            self.open_upstream(&mut session, head_request, sent, &mut req)
                .await
        };
        let (up, head) = match opened {
            Ok(v) => v,
            Err(e) => {
                match &e {
                    NoHead::Upstream(_) => {
                        tracing::warn!(conn, cause = %e, "upstream failed before its response head")
                    }
                    NoHead::ClientBody(_) => {
                        tracing::info!(conn, cause = %e, "client request body ended short")
                    }
                    NoHead::ClientClosed(_) => {
                        tracing::debug!(conn, cause = %e, "client gone before the response head")
                    }
                }
                self.fail(&mut session, &started, e.status(), e.label(), req)
                    .await;
                return None;
            }
        };
        let mode = head.accel.unwrap_or(self.cfg.buffering);
        let status = head.header.status.as_u16();
        let row = |bytes,
                   mem,
                   spilled,
                   up_done: Option<Instant>,
                   done: Option<Instant>,
                   error,
                   req: RequestStats| StatsRow {
            start_unix_s: started.unix_s,
            mode: mode.name(),
            status: Some(status),
            bytes,
            mem_peak_bytes: mem,
            spilled_bytes: spilled,
            upstream_done_s: up_done.map(|t| (t - started.at).as_secs_f64()),
            client_done_s: done.map(|t| (t - started.at).as_secs_f64()),
            error,
            req,
        };
        if head.body == BodyLength::UntilClose {
            // Its end is the close, and the head must say so (pingora
            // writes `Connection` before it sees the body has no length).
            session.set_keepalive(None);
        }
        if matches!(head.body, BodyLength::Exact(n) if n <= head.leftover.len() as u64) {
            // The whole body is in hand: head and body leave in one write.
            crate::client::cork(session.stream());
        }
        if let Err(e) = session.write_response_header(Box::new(head.header)).await {
            tracing::debug!(conn, cause = %e, "client gone before the response head");
            self.record(row(0, 0, 0, None, None, Some("client_closed"), req));
            return None;
        }

        if open.is_none() {
            open = self.gauges.as_ref().map(|g| g.open(conn));
        }
        let params = PipeParams {
            body: head.body,
            read_timeout: self.cfg.read_timeout,
            progress: open.as_ref().map_or(&unlisted, |o| &o.progress),
            shutdown,
            conn,
        };
        let spool = Spool::new(&self.cfg.buffers, mode);
        // The pipe and pingora's `finish` are boxed: their state (3.3 and
        // 3.7 KiB) inline would make the whole connection's future that
        // much larger, copied as a whole when it is spawned and, for each
        // request, when this function's future is made. Each is boxed in a
        // statement of its own: a temporary of the statement that awaits
        // lives across the await, and so keeps its place in the future
        // (which was 15 KiB while they were boxed that way; see the test
        // below).
        let pipe = Box::pin(pipe::run(session, up, head.leftover, spool, params));
        let (session, report) = pipe.await;
        drop(open);
        if let Some(e) = &report.error {
            match e {
                pipe::PipeError::Upstream(_) | pipe::PipeError::TempFile { .. } => {
                    tracing::warn!(conn, cause = %e, "response cut")
                }
                _ => tracing::debug!(conn, cause = %e, "response cut"),
            }
        }
        self.record(row(
            report.bytes,
            report.mem_peak,
            report.spilled,
            report.upstream_done,
            report.client_done,
            report.error.as_ref().map(pipe::PipeError::label),
            req,
        ));
        // Flushes; the connection comes back if it is to be kept open
        // (pingora shuts it down otherwise).
        let session = session?;
        let finish = Box::pin(session.finish());
        finish.await.ok().flatten()
    }

    /// Decides how a request's body goes upstream and, when it is to be
    /// buffered, reads it whole: no upstream connection exists yet. A
    /// `Content-Length` beyond `client_max_body_size` is refused before
    /// any body byte is read.
    async fn take_body(
        &self,
        session: &mut ServerSession,
        started: &Started,
        progress: &Progress,
        req: &mut RequestStats,
    ) -> Result<RequestBody, BodyError> {
        let rc = &self.cfg.request;
        let chunked = reqbody::is_chunked(session);
        if let Some(n) = reqbody::content_length(session).filter(|&n| rc.too_large(n)) {
            return Err(BodyError::TooLarge(n));
        }
        reqbody::continue_if_expected(session).await;
        // A chunked body is read whole even with request buffering off:
        // the HTTP/1.0 upstream needs its length (NGINX does the same).
        if !chunked && rc.buffering == Buffering::Off {
            req.mode = Some(Buffering::Off.name());
            return Ok(RequestBody::Streamed);
        }
        req.mode = Some(Buffering::On.name());
        let read = reqbody::read_whole(session, rc, &self.cfg.buffers.temp_path, progress).await;
        req.bytes = progress.req_read.load(Ordering::Relaxed);
        let body = read?;
        req.bytes = body.len();
        req.mem_peak_bytes = body.mem_peak();
        req.spilled_bytes = body.spilled();
        req.done_s = Some(started.at.elapsed().as_secs_f64());
        Ok(RequestBody::Buffered(body))
    }

    /// Connects, sends the request (and its body, if any) and reads the
    /// response head. On any error the upstream connection is dropped here,
    /// before the client is answered.
    async fn open_upstream(
        &self,
        session: &mut ServerSession,
        head_request: bool,
        sent: Sent<'_>,
        req: &mut RequestStats,
    ) -> Result<(upstream::Upstream, upstream::ResponseHead), NoHead> {
        let t = self.cfg.read_timeout;
        let Sent {
            body,
            progress,
            started,
        } = sent;
        req.upstream_start_s = Some(started.at.elapsed().as_secs_f64());
        // No pool: like NGINX without `keepalive` in its upstream block,
        // every request gets a fresh upstream connection.
        let mut conn = upstream::connect(self.cfg.upstream, t, &self.conns).await?;
        let up = &mut conn.stream;
        match body {
            RequestBody::Empty => {
                upstream::send(up, &upstream::request_wire(session.req_header(), None), t).await?
            }
            RequestBody::Buffered(b) => {
                let wire = upstream::request_wire(session.req_header(), Some(b.len()));
                b.send(up, wire, t, progress).await?;
            }
            RequestBody::Streamed => {
                upstream::send(up, &upstream::request_wire(session.req_header(), None), t).await?;
                loop {
                    match session.read_request_body().await {
                        Ok(Some(chunk)) => {
                            req.bytes += chunk.len() as u64;
                            Progress::set(&progress.req_read, req.bytes);
                            upstream::send(up, &chunk, t).await?;
                            Progress::set(&progress.req_sent, req.bytes);
                        }
                        Ok(None) => break,
                        // The client's fault, not the upstream's: NGINX
                        // answers 400 (or, on client_body_timeout, closes).
                        Err(e) => return Err(BodyError::from_read(&e).into()),
                    }
                }
                req.done_s = Some(started.at.elapsed().as_secs_f64());
            }
        }
        let client = session.stream().map(|s| s.id());
        let head =
            upstream::read_head(up, self.cfg.buffers.buffer_size, t, head_request, client).await?;
        Ok((conn, head))
    }
}

/// How a request's body goes upstream.
enum RequestBody {
    /// No body.
    Empty,
    /// Read from the client while it is sent (`--request-buffering off`).
    Streamed,
    /// Read whole before the upstream was connected.
    Buffered(Buffered),
}

/// What [`ProxyApp::open_upstream`] sends and where it reports.
struct Sent<'a> {
    body: RequestBody,
    progress: &'a Progress,
    started: &'a Started,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ClientIo;

    /// A connection's future is copied whole when its task is spawned, and
    /// a request's when it begins: the parts of kilobytes that only some
    /// requests need (an error page, the pipe) are boxed. A temporary of
    /// the statement that awaits lives across the await, so a box made
    /// there still leaves what it boxes in the future; this shows it (15
    /// KiB before that was found, under 6 KiB since).
    #[tokio::test]
    async fn a_connection_future_stays_small() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let _client = std::net::TcpStream::connect(addr).unwrap();
        let (tcp, _) = listener.accept().await.unwrap();
        let cfg = Arc::new(ProxyConfig::new(addr, Buffering::On));
        let conns = Connections::new(8);
        let app = ProxyApp::new(cfg, None, None, conns.clone());
        let slot = conns.acquire("client").unwrap();
        let (_cut_tx, cut) = watch::channel(false);
        let (_stop_tx, mut stop) = watch::channel(false);
        let stream: pingora_core::protocols::Stream = Box::new(ClientIo::new(tcp));
        let connection = app.serve_connection(stream, slot, &cut, &mut stop);
        let size = std::mem::size_of_val(&connection);
        println!("a connection's future: {size} bytes");
        assert!(size <= 6 * 1024, "a connection's future is {size} bytes");
    }
}
