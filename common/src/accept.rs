//! Taking connections off a listening socket: the one accept of every accept
//! loop in the lab (`serve`'s worker models and `proxy`'s).
//!
//! [`accept4`] takes a connection non-blocking and close-on-exec without a
//! further system call, and without the peer's address (nothing here needs
//! it). It is a plain std [`TcpStream`], registered with no runtime: the
//! caller decides when to register it (the proxy at once, `serve` only when
//! it must wait). [`accept`] awaits the next connection of a listener
//! registered with the current runtime ([`register`]) without ever making
//! an `accept4` that finds nobody; [`after_accept_error`] is what every loop
//! does when an accept fails. [`until`] is an accept loop's one step: the
//! next connection, or the end once the loop is told to stop.
//!
//! Binding stays with each component, which has its own backlog (Gunicorn's
//! for `serve`, NGINX's for `proxy`).

use std::future::Future;
use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd as _, FromRawFd as _};
use std::pin::Pin;
use std::time::Duration;

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// One `accept4(2)` on `listener`; blocks or not as the listener does, and
/// fails with `WouldBlock` when a non-blocking listener has nobody waiting.
pub fn accept4(listener: &TcpListener) -> io::Result<TcpStream> {
    // SAFETY: `accept4` on a listening socket the caller holds, without an
    // address buffer; a descriptor it returns is new and ours alone.
    let fd = unsafe {
        libc::accept4(
            listener.as_raw_fd(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: see above; the stream takes over closing it.
    Ok(unsafe { TcpStream::from_raw_fd(fd) })
}

/// Registers a non-blocking `listener` with the current runtime (readable
/// interest) for [`accept`]. Must be called within a runtime.
pub fn register(listener: TcpListener) -> io::Result<AsyncFd<TcpListener>> {
    // SAFETY: the listener owns its descriptor, which stays open and the same
    // until the `AsyncFd` (its owner from here on) drops it.
    unsafe { AsyncFd::register_with_interest(listener, Interest::READABLE) }
        .map_err(io::Error::from)
}

/// A connection taken by [`accept`].
#[derive(Debug)]
pub struct Accepted {
    pub stream: TcpStream,
    /// Nobody was left in the accept queue once this connection was taken:
    /// the loop is keeping up, so it most likely took the connection as its
    /// handshake completed, before the client's first bytes could arrive.
    /// False when others were waiting behind it (the loop is behind, and
    /// the connection may have waited long enough for its request to come),
    /// or when the queue could not be read.
    pub caught_up: bool,
}

/// The next connection of a non-blocking `listener` registered with the
/// current runtime ([`register`]), awaited without a thread.
///
/// An `accept4` that finds the queue empty is not cheap: the kernel
/// allocates the new socket and its file before it looks, and frees them
/// again (the free runs on the way back to user space). Under a load of one
/// connection at a time, trying once more after every connection paid that
/// for 0.6 of the requests (`perf stat`, bench-serve's `/fast` load). So
/// after a connection is taken, the accept queue's length, which the kernel
/// reports for a listening socket without a lock, says whether to try again
/// at once or to wait for epoll: tokio's readiness is cleared only if no
/// event came meanwhile, and every connection queued later raises a new
/// one. Which connection is accepted, and when, stays the same. The same
/// length is [`Accepted::caught_up`].
pub async fn accept(listener: &AsyncFd<TcpListener>) -> io::Result<Accepted> {
    loop {
        let mut ready = listener.readable().await?;
        // `try_io` clears the readiness itself on `WouldBlock`.
        let Ok(accepted) = ready.try_io(|l| accept4(l.get_ref())) else {
            continue;
        };
        let stream = accepted?;
        let caught_up = accept_queue_len(listener.get_ref()) == Some(0);
        if caught_up {
            ready.clear_ready();
        }
        return Ok(Accepted { stream, caught_up });
    }
}

/// The next connection of `listener` ([`accept`]), or `None` once `stop`
/// resolves. `stop` is polled first, so a busy queue never hides it, and it
/// is the caller's one future for the whole loop: a new wait per
/// connection would join and leave its waiter list every time. A failed
/// accept gets [`after_accept_error`] and the wait goes on.
pub async fn until<S: Future<Output = ()>>(
    listener: &AsyncFd<TcpListener>,
    mut stop: Pin<&mut S>,
) -> Option<Accepted> {
    loop {
        let accepted = tokio::select! {
            biased;
            () = stop.as_mut() => return None,
            accepted = accept(listener) => accepted,
        };
        match accepted {
            Ok(accepted) => return Some(accepted),
            Err(err) => after_accept_error(&err).await,
        }
    }
}

/// `TCP_LISTEN` in Linux's `include/net/tcp_states.h` (not in `libc`).
const TCP_LISTEN: u8 = 10;

/// Connections waiting in `listener`'s accept queue: `tcp_info`'s
/// `tcpi_unacked`, which a listening socket reports as its backlog
/// (`tcp_get_info` in Linux's `net/ipv4/tcp.c`). `None` if it cannot be
/// read, and then the caller simply tries `accept` again.
fn accept_queue_len(listener: &TcpListener) -> Option<u32> {
    // SAFETY: `tcp_info` is plain integers, valid when zeroed.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = libc::socklen_t::try_from(std::mem::size_of::<libc::tcp_info>()).ok()?;
    // SAFETY: `info` and `len` outlive the call, and `len` is `info`'s size;
    // the kernel writes at most that many bytes.
    let rc = unsafe {
        libc::getsockopt(
            listener.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            std::ptr::from_mut(&mut info).cast(),
            &mut len,
        )
    };
    (rc == 0 && info.tcpi_state == TCP_LISTEN).then_some(info.tcpi_unacked)
}

/// What an accept loop does after a failed `accept` (or a failed
/// registration of the connection it took), the same for `serve` and
/// `proxy`: out of descriptors or memory (`EMFILE`, `ENFILE`, `ENOBUFS`,
/// `ENOMEM`) it pauses 100 ms; any other error (a connection reset while it
/// waited in the backlog, say) is logged at debug level and the loop goes
/// on at once. This is `serve`'s policy; the proxy paused 50 ms after every
/// error before it shared this accept.
pub async fn after_accept_error(err: &io::Error) {
    // Out of descriptors or memory: retrying at once would spin, and the
    // connection stays in the backlog meanwhile.
    let exhausted = matches!(
        err.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    );
    if exhausted {
        tracing::warn!(cause = %err, "accept failed; pausing 100 ms");
        tokio::time::sleep(Duration::from_millis(100)).await;
    } else {
        // For example a connection reset while it waited in the backlog.
        tracing::debug!(cause = %err, "accept failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Connections queued before the first accept are all taken: the queue
    /// length is read right, readiness is cleared only once it is empty, and
    /// only the last one taken is `caught_up`.
    #[tokio::test]
    async fn every_queued_connection_is_accepted_and_then_accept_waits() {
        let std_listener = TcpListener::bind("127.0.0.1:0").unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let addr = std_listener.local_addr().unwrap();
        assert_eq!(accept_queue_len(&std_listener), Some(0));
        let clients: Vec<_> = (0..3).map(|_| TcpStream::connect(addr).unwrap()).collect();
        // The handshakes complete in the kernel; let them reach the queue.
        for _ in 0..100 {
            if accept_queue_len(&std_listener) == Some(3) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(accept_queue_len(&std_listener), Some(3));
        let listener = register(std_listener).unwrap();
        for left in (0..3).rev() {
            let accepted = tokio::time::timeout(Duration::from_secs(2), accept(&listener)).await;
            let accepted = accepted
                .expect("a queued connection was not accepted")
                .unwrap();
            assert_eq!(accept_queue_len(listener.get_ref()), Some(left));
            assert_eq!(accepted.caught_up, left == 0);
        }
        // Empty now: accept waits, and takes a connection that comes later.
        let waiting = tokio::time::timeout(Duration::from_millis(100), accept(&listener)).await;
        assert!(waiting.is_err(), "accept returned with an empty queue");
        let late = TcpStream::connect(addr).unwrap();
        let accepted = tokio::time::timeout(Duration::from_secs(2), accept(&listener)).await;
        let accepted = accepted
            .expect("a later connection was not accepted")
            .unwrap();
        assert!(accepted.caught_up);
        drop((clients, late));
    }

    /// `until` gives the queued connection while its stop is pending, and
    /// nothing once the stop has come, even with a connection queued.
    #[tokio::test]
    async fn until_returns_connections_until_its_stop_comes() {
        let std_listener = TcpListener::bind("127.0.0.1:0").unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let addr = std_listener.local_addr().unwrap();
        let listener = register(std_listener).unwrap();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let stop = async move {
            let _ = stop_rx.await;
        };
        tokio::pin!(stop);
        let first = TcpStream::connect(addr).unwrap();
        let got = tokio::time::timeout(Duration::from_secs(2), until(&listener, stop.as_mut()))
            .await
            .expect("a queued connection was not accepted");
        assert!(got.is_some());
        stop_tx.send(()).unwrap();
        let second = TcpStream::connect(addr).unwrap();
        let got = tokio::time::timeout(Duration::from_secs(2), until(&listener, stop.as_mut()))
            .await
            .expect("until did not see its stop");
        assert!(got.is_none(), "a connection was taken after the stop");
        drop((first, second));
    }
}
