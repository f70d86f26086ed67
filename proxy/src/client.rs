//! The client connection as pingora sees it: a tokio `TcpStream` that
//! implements pingora's `IO`, with two costs of pingora's own L4 stream
//! removed from every request.
//!
//! - **One write for a response that is whole at once.** pingora writes the
//!   response head and the body with separate calls. When the proxy already
//!   holds the whole body (a small response such as `/fast`), [`ClientIo::cork`]
//!   makes the head wait in memory for the body, and both leave in one
//!   `writev(2)`: one segment, one wake-up of the client, as NGINX sends it.
//!   Anything else is written as pingora asks, at once.
//! - **`TCP_NODELAY` only where it matters.** On a fresh connection nothing
//!   is in flight, so Nagle's algorithm never holds the first write (Linux
//!   holds a partial segment only while an earlier small one is unacknowledged).
//!   The option is therefore set before the first write that is not a corked
//!   response's only write: a streamed body gets it exactly as before, a
//!   response sent in one write never needs it.
//!
//! Between two requests on a connection kept open, [`ClientIo::next_response`]
//! sets `TCP_NODELAY` as NGINX does, and [`ClientIo::read_next`] is the idle
//! wait for the next request and its first read.
//!
//! Shutdown does not call `shutdown(2)`: pingora shuts a connection down
//! only to close it, and the `close(2)` that follows at once sends the same
//! FIN.

use std::io::{self, IoSlice};
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use async_trait::async_trait;
use bytes::BytesMut;
use pingora_core::protocols::{Shutdown, UniqueID, UniqueIDType};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// How much of a kept-open connection's next request one read takes: the
/// size of pingora's first header read (`INIT_HEADER_BUF_SIZE`), which this
/// read stands in for; a longer head is read on by the session.
const NEXT_REQUEST_READ: usize = 4096;

/// An accepted client connection.
#[derive(Debug)]
pub struct ClientIo {
    stream: TcpStream,
    fd: RawFd,
    /// Set through a shared reference (pingora owns the stream): the next
    /// write is a response head whose body follows in full.
    cork: AtomicBool,
    /// The corked head, not yet written.
    held: Vec<u8>,
    /// Nothing of the current response was written yet.
    fresh: bool,
    nodelay: bool,
}

impl ClientIo {
    pub fn new(stream: TcpStream) -> ClientIo {
        let fd = stream.as_raw_fd();
        ClientIo {
            stream,
            fd,
            cork: AtomicBool::new(false),
            held: Vec::new(),
            fresh: true,
            nodelay: false,
        }
    }

    /// The next write (the response head) waits for the one after it (the
    /// whole body), and both go out in one system call. Only for a response
    /// whose body is entirely in hand, so that the head never waits for the
    /// upstream.
    pub fn cork(&self) {
        self.cork.store(true, Ordering::Relaxed);
    }

    /// Between two responses on a connection kept open: like NGINX, which
    /// sets `TCP_NODELAY` as a connection enters keep-alive (`tcp_nodelay
    /// on`), so that a small response is not held behind an unacknowledged
    /// segment of the previous one; the next response's head may be corked
    /// again.
    pub fn next_response(&mut self) {
        self.streaming();
        self.fresh = true;
    }

    /// Waits for the client's next request on a kept-open connection and
    /// reads what has come of it, at most pingora's first header read: the
    /// wait of an idle connection, which reads as NGINX's keep-alive
    /// handler does (a header buffer allocated only once the socket is
    /// readable, so that an idle connection holds none, and the request
    /// then parsed from it without another read). Empty when the client
    /// closed. The read is tokio's `poll_read`, which clears the
    /// readiness after a short read, so that the next wait does not begin
    /// with a read that finds nothing; a readiness left set by a read that
    /// took exactly what there was (the last of a request body) is
    /// cleared by that read finding the socket empty, and the wait goes
    /// on.
    pub async fn read_next(&mut self) -> io::Result<BytesMut> {
        self.stream.readable().await?;
        let mut buf = BytesMut::with_capacity(NEXT_REQUEST_READ);
        self.stream.read_buf(&mut buf).await?;
        Ok(buf)
    }

    /// Before a write that is not the only write of a corked response.
    fn streaming(&mut self) {
        if !self.nodelay {
            self.nodelay = true;
            // Small writes (a head, then a short body piece) must not wait
            // for delayed ACKs.
            if let Err(e) = self.stream.set_nodelay(true) {
                tracing::debug!(cause = %e, "TCP_NODELAY not set");
            }
        }
    }

    /// Writes what is held, then `buf`; the count returned is of `buf`'s
    /// bytes, so a partly written head stays held and `buf` is offered again.
    fn poll_held(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        loop {
            if !self.fresh {
                self.streaming();
            }
            self.fresh = false;
            let slices = [IoSlice::new(&self.held), IoSlice::new(buf)];
            let n = match Pin::new(&mut self.stream).poll_write_vectored(cx, &slices) {
                Poll::Ready(Ok(n)) => n,
                other => return other,
            };
            if n == 0 {
                return Poll::Ready(Ok(0));
            }
            if n < self.held.len() {
                self.held.drain(..n);
                continue;
            }
            let of_buf = n - self.held.len();
            self.held.clear();
            if of_buf > 0 || buf.is_empty() {
                return Poll::Ready(Ok(of_buf));
            }
        }
    }

    fn poll_write_held(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.held.is_empty() {
            match self.poll_held(cx, &[]) {
                Poll::Ready(Ok(_)) if !self.held.is_empty() => {
                    return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                }
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for ClientIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for ClientIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        // A cork applies to a response's first write only.
        let corked = this.cork.swap(false, Ordering::Relaxed);
        if corked && this.fresh && this.held.is_empty() {
            this.held.extend_from_slice(buf);
            return Poll::Ready(Ok(buf.len()));
        }
        if !this.held.is_empty() {
            return this.poll_held(cx, buf);
        }
        this.streaming();
        this.fresh = false;
        Pin::new(&mut this.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if !this.held.is_empty() || this.cork.load(Ordering::Relaxed) {
            // Rare (pingora writes slices one by one): take them singly.
            let first = bufs
                .iter()
                .find(|b| !b.is_empty())
                .map_or(&[][..], |b| &**b);
            return Pin::new(this).poll_write(cx, first);
        }
        this.streaming();
        this.fresh = false;
        Pin::new(&mut this.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // A head flushed on its own (a response without a body) is still
        // the connection's only write.
        let this = self.get_mut();
        match this.poll_write_held(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut this.stream).poll_flush(cx),
            other => other,
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // pingora shuts down only a connection it then closes; close(2)
        // sends the FIN.
        self.poll_flush(cx)
    }
}

#[async_trait]
impl Shutdown for ClientIo {
    async fn shutdown(&mut self) {
        let _ = std::future::poll_fn(|cx| Pin::new(&mut *self).poll_flush(cx)).await;
    }
}

impl UniqueID for ClientIo {
    fn id(&self) -> UniqueIDType {
        // The descriptor, as pingora's own TCP stream reports it; the peek
        // at the client's socket relies on that.
        self.fd as UniqueIDType
    }
}

/// pingora's `IO` traits that a client stream of this crate answers with
/// nothing: no TLS details, digests or peeking.
macro_rules! no_digests {
    ($t:ty) => {
        impl pingora_core::protocols::Ssl for $t {}

        impl pingora_core::protocols::GetTimingDigest for $t {
            fn get_timing_digest(&self) -> Vec<Option<pingora_core::protocols::TimingDigest>> {
                Vec::new()
            }
        }

        impl pingora_core::protocols::GetProxyDigest for $t {
            fn get_proxy_digest(
                &self,
            ) -> Option<std::sync::Arc<pingora_core::protocols::raw_connect::ProxyDigest>> {
                None
            }
        }

        impl pingora_core::protocols::GetSocketDigest for $t {
            fn get_socket_digest(
                &self,
            ) -> Option<std::sync::Arc<pingora_core::protocols::SocketDigest>> {
                None
            }
        }

        impl pingora_core::protocols::Peek for $t {}
    };
}
pub(crate) use no_digests;

no_digests!(ClientIo);

/// Marks the next write of `session`'s connection as a corked head (see
/// [`ClientIo::cork`]); a connection of another type is left alone.
pub fn cork(stream: Option<&pingora_core::protocols::Stream>) {
    if let Some(io) = stream.and_then(|s| s.as_any().downcast_ref::<ClientIo>()) {
        io.cork();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn pair() -> (ClientIo, TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let peer = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        (ClientIo::new(server), peer)
    }

    #[tokio::test]
    async fn a_corked_head_leaves_with_the_body_and_without_nodelay() {
        let (mut io, mut peer) = pair().await;
        io.cork();
        io.write_all(b"HEAD\r\n\r\n").await.unwrap();
        assert_eq!(io.held, b"HEAD\r\n\r\n", "the head waits for the body");
        io.write_all(b"body").await.unwrap();
        assert!(io.held.is_empty());
        assert!(
            !io.stream.nodelay().unwrap(),
            "one write needs no TCP_NODELAY"
        );
        AsyncWriteExt::shutdown(&mut io).await.unwrap();
        drop(io);
        let mut got = Vec::new();
        peer.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"HEAD\r\n\r\nbody");
    }

    #[tokio::test]
    async fn streamed_writes_get_nodelay_and_a_head_alone_is_flushed() {
        let (mut io, mut peer) = pair().await;
        io.write_all(b"a").await.unwrap();
        assert!(io.stream.nodelay().unwrap());
        io.cork();
        // Not fresh any more: a cork now is ignored, the write goes out.
        io.write_all(b"b").await.unwrap();
        assert!(io.held.is_empty());
        drop(io);
        let mut got = Vec::new();
        peer.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"ab");

        let (mut io, mut peer) = pair().await;
        io.cork();
        io.write_all(b"304 head").await.unwrap();
        io.flush().await.unwrap();
        drop(io);
        let mut got = Vec::new();
        peer.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"304 head");
    }
}
