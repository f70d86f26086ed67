//! A client connection between two requests: NGINX's keep-alive state.
//!
//! When a response was delivered whole and pingora's session says the
//! connection may be reused (the client asked for it, the body had a
//! length, [`KeepAlive`](crate::config::KeepAlive) allowed another
//! request), the connection waits here for its next request: at most
//! `keepalive_timeout`, and not at all once the proxy is stopping (NGINX
//! closes idle connections at once on a graceful stop) or a new connection
//! needs its place among `worker_connections` ([`crate::connlimit`]).
//! Bytes of a next
//! request that arrived with the previous one (pipelining) are handed to
//! the next session, which then starts without waiting.

use std::time::Duration;

use pingora_core::protocols::Stream;
use pingora_core::protocols::http::{ReusableHttpStream, ServerSession};
use tokio::sync::watch;

use crate::client::ClientIo;
use crate::connlimit::{Connections, Slot};
use crate::pipe::stopped;

/// A session for the connection's first request, ready for pipelining.
pub fn first_session(stream: Stream) -> ServerSession {
    let mut session = ServerSession::new_http1(stream);
    session.set_pipelining_enabled(true);
    session
}

/// Waits for the connection's next request; `None` when it should close
/// instead: the client closed or stayed idle for `timeout`, the proxy is
/// stopping, or the connection's `slot` went to a new connection.
pub async fn next_session(
    reusable: ReusableHttpStream,
    slot: Slot,
    conns: &Connections,
    timeout: Duration,
    stop: &mut watch::Receiver<bool>,
) -> Option<(ServerSession, Slot)> {
    if *stop.borrow() {
        return None;
    }
    let (stream, pipelined) = reusable.into_parts();
    let Ok(mut io) = stream.into_any().downcast::<ClientIo>() else {
        // Every client stream is a ClientIo; anything else is not kept.
        return None;
    };
    io.next_response();
    let pipelined = pipelined.filter(|p| !p.is_empty());
    let slot = match pipelined {
        Some(_) => slot,
        None => {
            let mut idle = conns.park(slot);
            tokio::select! {
                biased;
                () = stopped(stop) => return None,
                _ = &mut idle.drained => return None,
                ready = pingora_timeout::timeout(timeout, io.readable()) => {
                    // Readable covers a close too: the session's first read
                    // then finds no request and the connection ends quietly.
                    if !matches!(ready, Ok(Ok(()))) {
                        return None;
                    }
                }
            }
            idle.unpark()?
        }
    };
    let mut session = first_session(io);
    if let Some(bytes) = pipelined {
        session.set_pipelined_prefix(bytes);
    }
    Some((session, slot))
}
