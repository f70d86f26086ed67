//! Socket-level accounting of one connection: which body bytes the kernel has
//! accepted, and when it accepted the last one.
//!
//! [`MeteredIo`] wraps the connection's stream below hyper. Every successful
//! `write` is a moment the kernel took bytes into its send buffer; that is the
//! only place where "the last byte was written" can be observed. Hyper's body
//! stream ends as soon as hyper has *taken* the last frame, while up to a
//! whole block (and the response head) may still sit in hyper's write buffer
//! waiting for the socket to drain, so timing the body stream would make a
//! stuck worker look finished. The original measured the same moment with
//! Gunicorn: the WSGI iterable is closed only after the last `sendall`
//! returned.
//!
//! The [`Meter`] is shared by the wrapper, the `/large` body (which waits on
//! it before producing the next block, see [`crate::large`]) and the
//! connection guard that writes the send-log row.
//!
//! Only `/large` needs any of this, so the meter is armed by
//! [`Meter::start_large`], which runs before hyper writes the response head;
//! until then a write costs one atomic load. Arming also turns on
//! `TCP_NODELAY`, before the head: a streamed body must not wait for delayed
//! ACKs, while a small response leaves in one write that Nagle's algorithm
//! never holds (nothing is in flight on a fresh connection), so it does not
//! need the system call.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Instant, SystemTime};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What the send log needs about one `/large` response.
#[derive(Debug, Clone, PartialEq)]
pub struct LargeSend {
    /// Monotonic start of the response body.
    pub started: Instant,
    /// Wall clock at the same moment.
    pub started_wall: SystemTime,
    /// The body size the response announced.
    pub total: u64,
    /// Body bytes the kernel accepted.
    pub written: u64,
    /// When the kernel accepted the last body byte; `None` while (or if) the
    /// body was not completely written.
    pub last_byte_at: Option<Instant>,
    /// The thread that started the body.
    pub worker: String,
}

/// Shared accounting of one connection.
#[derive(Debug, Default)]
pub struct Meter {
    /// A `/large` body started: writes are accounted from now on.
    armed: AtomicBool,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    head: HeadScan,
    body_written: u64,
    large: Option<LargeSend>,
    /// The `/large` body waiting for its previous block to be accepted.
    waker: Option<Waker>,
}

impl Meter {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock leaves plain counters behind, which
        // are still meaningful, so a poisoned lock is used as is.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Marks the start of a `/large` body of `total` bytes.
    pub fn start_large(&self, total: u64, worker: String) {
        let now = Instant::now();
        let mut state = self.lock();
        state.large = Some(LargeSend {
            started: now,
            started_wall: SystemTime::now(),
            total,
            written: 0,
            // An empty body is complete the moment it starts.
            last_byte_at: (total == 0).then_some(now),
            worker,
        });
        self.armed.store(true, Ordering::Release);
    }

    /// True once a `/large` body has started on this connection.
    pub fn is_armed(&self) -> bool {
        self.armed.load(Ordering::Acquire)
    }

    /// True when the kernel has accepted at least `produced` body bytes;
    /// otherwise remembers `waker` to be woken by the next body write.
    pub fn body_caught_up(&self, produced: u64, waker: &Waker) -> bool {
        let mut state = self.lock();
        if state.body_written >= produced {
            return true;
        }
        state.waker = Some(waker.clone());
        false
    }

    /// Body bytes the kernel has accepted so far.
    pub fn body_written(&self) -> u64 {
        self.lock().body_written
    }

    /// The `/large` record, if this connection served `/large`.
    pub fn large(&self) -> Option<LargeSend> {
        self.lock().large.clone()
    }

    /// Accounts for `n` bytes the kernel accepted from the front of `bufs`.
    fn record_write<'a>(&self, bufs: impl Iterator<Item = &'a [u8]>, n: usize) {
        // Unarmed, nothing on this connection is a `/large` body.
        if n == 0 || !self.is_armed() {
            return;
        }
        let now = Instant::now();
        let mut state = self.lock();
        let body = state.head.feed(bufs, n) as u64;
        if body == 0 {
            return;
        }
        state.body_written += body;
        let written = state.body_written;
        if let Some(large) = state.large.as_mut() {
            large.written = written.min(large.total);
            if written >= large.total && large.last_byte_at.is_none() {
                large.last_byte_at = Some(now);
            }
        }
        if let Some(waker) = state.waker.take() {
            waker.wake();
        }
    }
}

/// Finds the end of the response head (`\r\n\r\n`) in the outgoing bytes, so
/// that everything after it counts as body. One response per connection
/// (`Connection: close`) makes this exact.
#[derive(Debug, Default, Clone)]
struct HeadScan {
    /// How many bytes of `\r\n\r\n` the latest bytes matched.
    matched: u8,
    done: bool,
}

impl HeadScan {
    const END: &'static [u8; 4] = b"\r\n\r\n";

    /// Consumes the first `n` bytes of `bufs`; returns how many were body.
    fn feed<'a>(&mut self, bufs: impl Iterator<Item = &'a [u8]>, n: usize) -> usize {
        if self.done {
            return n;
        }
        let mut left = n;
        for buf in bufs {
            let take = buf.len().min(left);
            for (i, &b) in buf[..take].iter().enumerate() {
                self.matched = if b == Self::END[usize::from(self.matched)] {
                    self.matched + 1
                } else {
                    // `\r` is the only prefix of the pattern, so a mismatch
                    // restarts at one or zero matched bytes.
                    u8::from(b == b'\r')
                };
                if usize::from(self.matched) == Self::END.len() {
                    self.done = true;
                    return left - (i + 1);
                }
            }
            left -= take;
            if left == 0 {
                break;
            }
        }
        0
    }
}

/// A socket whose `TCP_NODELAY` can be turned on.
pub trait NoDelay {
    fn set_nodelay(&self) -> io::Result<()>;
}

/// The connection's stream, with every accepted write accounted in a
/// [`Meter`] once it is armed. Reads pass through untouched.
#[derive(Debug)]
pub struct MeteredIo<T> {
    inner: T,
    meter: std::sync::Arc<Meter>,
    nodelay: bool,
}

impl<T: NoDelay> MeteredIo<T> {
    pub fn new(inner: T, meter: std::sync::Arc<Meter>) -> Self {
        MeteredIo {
            inner,
            meter,
            nodelay: false,
        }
    }

    /// Before a write: an armed meter means a `/large` body, which gets
    /// `TCP_NODELAY` before its first byte (the head) is written.
    fn before_write(&mut self) {
        if !self.nodelay && self.meter.is_armed() {
            self.nodelay = true;
            if let Err(err) = self.inner.set_nodelay() {
                tracing::debug!(cause = %err, "TCP_NODELAY not set");
            }
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for MeteredIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + NoDelay + Unpin> AsyncWrite for MeteredIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.before_write();
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = result {
            self.meter.record_write(std::iter::once(buf), n);
        }
        result
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.before_write();
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = result {
            self.meter.record_write(bufs.iter().map(|b| &**b), n);
        }
        result
    }

    /// Forwarded so that hyper keeps its queued (`writev`) strategy: the
    /// head and each block go out in one system call, without copying.
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    /// Flushes only: hyper shuts a connection down right before it is
    /// dropped, and the `close(2)` that follows sends the same FIN as
    /// `shutdown(2)` would, one system call fewer.
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_all(scan: &mut HeadScan, pieces: &[&[u8]]) -> usize {
        pieces
            .iter()
            .map(|p| scan.feed(std::iter::once(*p), p.len()))
            .sum()
    }

    #[test]
    fn head_end_found_across_writes() {
        let mut scan = HeadScan::default();
        let body = feed_all(
            &mut scan,
            &[b"HTTP/1.1 200 OK\r\nA: b\r", b"\n\r", b"\nBODY", b"MORE"],
        );
        assert_eq!(body, 8);
    }

    #[test]
    fn head_end_needs_the_exact_sequence() {
        let mut scan = HeadScan::default();
        assert_eq!(feed_all(&mut scan, &[b"x\r\n\r\r\n\r\nab"]), 2);
        let mut scan = HeadScan::default();
        assert_eq!(feed_all(&mut scan, &[b"x\r\n\n\r\n"]), 0);
    }

    #[test]
    fn partial_vectored_write_counts_only_accepted_bytes() {
        let mut scan = HeadScan::default();
        let head: &[u8] = b"H\r\n\r\n";
        let block = [7u8; 100];
        // The kernel took the head and 30 body bytes.
        let n = scan.feed([head, &block[..]].into_iter(), head.len() + 30);
        assert_eq!(n, 30);
        assert_eq!(scan.feed(std::iter::once(&block[30..]), 70), 70);
    }

    #[test]
    fn an_unarmed_meter_accounts_nothing() {
        let meter = Meter::default();
        meter.record_write(std::iter::once(b"H\r\n\r\nbody".as_slice()), 9);
        assert!(!meter.is_armed());
        assert_eq!(meter.body_written(), 0);
        assert!(meter.large().is_none());
        meter.start_large(4, "w".into());
        assert!(meter.is_armed());
    }

    #[test]
    fn meter_times_the_write_of_the_last_byte() {
        let meter = Meter::default();
        meter.start_large(10, "w".into());
        meter.record_write([b"H\r\n\r\n".as_slice(), &[0; 4]].into_iter(), 9);
        let large = meter.large().expect("started");
        assert_eq!((large.written, large.last_byte_at), (4, None));
        meter.record_write(std::iter::once([0u8; 6].as_slice()), 6);
        let large = meter.large().expect("started");
        assert_eq!(large.written, 10);
        assert!(large.last_byte_at.is_some());
        assert_eq!(meter.body_written(), 10);
    }
}
