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
//! request that arrived with the previous one (pipelining), or that the
//! wait read when they came, are handed to the next session, which parses
//! them before it reads again.

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
    // The next request's first bytes: pipelined with the last one, or read
    // when they come (see `ClientIo::read_next`).
    let (prefix, slot) = match pipelined.filter(|p| !p.is_empty()) {
        Some(bytes) => (bytes, slot),
        None => {
            let mut idle = conns.park(slot);
            let bytes = tokio::select! {
                biased;
                () = stopped(stop) => return None,
                _ = &mut idle.drained => return None,
                read = pingora_timeout::timeout(timeout, io.read_next()) => match read {
                    // Nothing read: the client closed, and the connection
                    // ends quietly.
                    Ok(Ok(bytes)) if !bytes.is_empty() => bytes,
                    _ => return None,
                },
            };
            (bytes, idle.unpark()?)
        }
    };
    let mut session = first_session(io);
    session.set_pipelined_prefix(prefix);
    Some((session, slot))
}
