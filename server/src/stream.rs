//! The connection's socket, registered with the runtime only once it has to
//! wait.
//!
//! A `/fast` request may be in the socket's receive queue by the time it is
//! accepted, and its response fits the send buffer: read, write and close
//! succeed at once. Registering such a socket with epoll (`EPOLL_CTL_ADD`)
//! and deregistering it before the close (tokio's `EPOLL_CTL_DEL`) would be
//! two system calls, and tokio's registration an allocation, for nothing.
//! So [`LazyStream`] starts as a plain non-blocking socket and tries each
//! read and write directly; the first one that would block registers it with
//! the current runtime, and from then on it is an ordinary tokio
//! [`TcpStream`](tokio::net::TcpStream) waiting for readiness. Nothing
//! waits without being registered: `Pending` only ever comes from tokio.
//!
//! The other case is a connection accepted as its handshake completed (the
//! accept loop found nobody else waiting, `common::accept::Accepted`'s
//! `caught_up`): a client sends its request only after the handshake, so a
//! first read there most often finds nothing, an `EAGAIN` `recvfrom` (on
//! about three in four such connections under bench-serve's wrk load, and
//! on two in three of the others).
//! [`LazyStream::fresh`] registers such a socket at its first read without
//! trying it, as NGINX reads only once epoll says the socket is readable:
//! a socket registered through `TcpStream::from_std` starts with no
//! readiness, so tokio reads it only after epoll's first event (tokio's own
//! `TcpListener::accept`, by contrast, marks what it accepts ready and
//! reads at once).
//!
//! What a connection does (its bytes, and when it blocks its worker) is the
//! same either way; only the system calls around it differ.

use std::io::{self, Write as _};
use std::net::{Shutdown, SocketAddr};
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use common::accept::Accepted;
use socket2::SockRef;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::meter::NoDelay;

/// An accepted connection, registered with the runtime on its first
/// `WouldBlock`.
#[derive(Debug)]
pub struct LazyStream {
    state: State,
    /// Whether a read is tried on the plain socket before registering.
    try_read: bool,
}

#[derive(Debug)]
enum State {
    /// Not registered: every call goes straight to the socket.
    Plain(std::net::TcpStream),
    Registered(TcpStream),
    /// Registration failed; the socket is closed.
    Failed,
}

impl LazyStream {
    /// Takes a non-blocking accepted socket (see `common::accept::accept4`).
    pub fn new(stream: std::net::TcpStream) -> Self {
        LazyStream {
            state: State::Plain(stream),
            try_read: true,
        }
    }

    /// Takes a non-blocking socket accepted right after its handshake, whose
    /// first bytes are most likely still to come: the first read registers
    /// it and waits for epoll instead of trying the socket. Writes are tried
    /// directly as with [`LazyStream::new`].
    pub fn fresh(stream: std::net::TcpStream) -> Self {
        LazyStream {
            state: State::Plain(stream),
            try_read: false,
        }
    }

    /// A connection as the async accept loop took it: [`LazyStream::fresh`]
    /// when the loop had caught up with the queue (taken as its handshake
    /// completed, so its request has most likely not arrived yet),
    /// [`LazyStream::new`] otherwise.
    pub fn accepted(accepted: Accepted) -> Self {
        if accepted.caught_up {
            LazyStream::fresh(accepted.stream)
        } else {
            LazyStream::new(accepted.stream)
        }
    }

    /// True once the socket had to wait and is registered with the runtime.
    pub fn is_registered(&self) -> bool {
        matches!(self.state, State::Registered(_))
    }

    /// The peer's address (`getpeername(2)`).
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        match &self.state {
            State::Plain(s) => s.peer_addr(),
            State::Registered(s) => s.peer_addr(),
            State::Failed => Err(closed()),
        }
    }

    /// The registered stream, registering the plain one with the current
    /// runtime; called after an operation on it would have blocked, or at a
    /// fresh stream's first read. Tokio
    /// starts it with no readiness, so the caller's next poll waits for
    /// epoll (which reports at once what is already ready).
    fn register(&mut self) -> io::Result<&mut TcpStream> {
        if let State::Plain(_) = self.state {
            let State::Plain(plain) = std::mem::replace(&mut self.state, State::Failed) else {
                unreachable!("matched above");
            };
            self.state = State::Registered(TcpStream::from_std(plain)?);
        }
        match &mut self.state {
            State::Registered(s) => Ok(s),
            _ => Err(closed()),
        }
    }
}

fn closed() -> io::Error {
    io::Error::new(
        io::ErrorKind::NotConnected,
        "connection closed after a failed registration",
    )
}

/// Retries `op` on `EINTR`; `Ok(None)` when it would block.
fn attempt<R>(mut op: impl FnMut() -> io::Result<R>) -> io::Result<Option<R>> {
    loop {
        match op() {
            Ok(r) => return Ok(Some(r)),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(err) => return Err(err),
        }
    }
}

impl AsRawFd for LazyStream {
    /// The same descriptor before and after registration (`-1` once closed).
    fn as_raw_fd(&self) -> RawFd {
        match &self.state {
            State::Plain(s) => s.as_raw_fd(),
            State::Registered(s) => s.as_raw_fd(),
            State::Failed => -1,
        }
    }
}

impl NoDelay for LazyStream {
    fn set_nodelay(&self) -> io::Result<()> {
        match &self.state {
            State::Plain(s) => s.set_nodelay(true),
            State::Registered(s) => s.set_nodelay(true),
            State::Failed => Err(closed()),
        }
    }
}

impl AsyncRead for LazyStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let State::Plain(s) = &self.state
            && self.try_read
        {
            // SAFETY: `recv` only writes initialised bytes into the slice,
            // and `assume_init` below covers exactly the `n` it wrote.
            let unfilled = unsafe { buf.unfilled_mut() };
            if let Some(n) = attempt(|| SockRef::from(s).recv(unfilled))? {
                // SAFETY: see above.
                unsafe { buf.assume_init(n) };
                buf.advance(n);
                return Poll::Ready(Ok(()));
            }
        }
        Pin::new(self.register()?).poll_read(cx, buf)
    }
}

impl AsyncWrite for LazyStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if let State::Plain(s) = &self.state
            && let Some(n) = attempt(|| (&*s).write(buf))?
        {
            return Poll::Ready(Ok(n));
        }
        Pin::new(self.register()?).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if let State::Plain(s) = &self.state
            && let Some(n) = attempt(|| (&*s).write_vectored(bufs))?
        {
            return Poll::Ready(Ok(n));
        }
        Pin::new(self.register()?).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.state {
            State::Registered(s) => Pin::new(s).poll_flush(cx),
            // A socket has nothing of its own to flush.
            State::Plain(_) | State::Failed => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.state {
            State::Plain(s) => Poll::Ready(s.shutdown(Shutdown::Write)),
            State::Registered(s) => {
                ready!(Pin::new(s).poll_shutdown(cx))?;
                Poll::Ready(Ok(()))
            }
            State::Failed => Poll::Ready(Err(closed())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// An accepted non-blocking socket and its client.
    fn sockets() -> (std::net::TcpStream, std::net::TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        server.set_nonblocking(true).unwrap();
        (server, client)
    }

    /// The client sends `ping` and lets it reach the server's receive queue;
    /// the server reads it.
    async fn ping_in_hand(server: &mut LazyStream, client: &mut std::net::TcpStream) {
        client.write_all(b"ping").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut got = [0u8; 4];
        server.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"ping");
    }

    fn pair() -> (LazyStream, std::net::TcpStream) {
        let (server, client) = sockets();
        (LazyStream::new(server), client)
    }

    #[tokio::test]
    async fn data_in_hand_is_served_without_registering() {
        let (mut server, mut client) = pair();
        ping_in_hand(&mut server, &mut client).await;
        server.write_all(b"pong").await.unwrap();
        assert!(!server.is_registered());
        drop(server);
        let mut back = Vec::new();
        std::io::Read::read_to_end(&mut client, &mut back).unwrap();
        assert_eq!(back, b"pong");
    }

    #[tokio::test]
    async fn a_read_that_would_block_registers_and_waits() {
        let (mut server, mut client) = pair();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            client.write_all(b"late").unwrap();
            client
        });
        let mut got = [0u8; 4];
        server.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"late");
        assert!(server.is_registered());
        assert!(server.peer_addr().is_ok());
        drop(writer.join().unwrap());
    }

    #[tokio::test]
    async fn a_fresh_stream_registers_at_its_first_read() {
        let (server, mut client) = sockets();
        let mut server = LazyStream::fresh(server);
        // In hand already, yet read through tokio: the socket was not tried.
        ping_in_hand(&mut server, &mut client).await;
        assert!(server.is_registered());
        server.write_all(b"pong").await.unwrap();
        drop(server);
        let mut back = Vec::new();
        std::io::Read::read_to_end(&mut client, &mut back).unwrap();
        assert_eq!(back, b"pong");
    }

    /// The accept loop's choice: a connection taken as the loop caught up
    /// is fresh (read through tokio), any other is tried first.
    #[tokio::test]
    async fn an_accepted_stream_is_fresh_only_when_the_loop_caught_up() {
        for caught_up in [true, false] {
            let (server, mut client) = sockets();
            let mut server = LazyStream::accepted(Accepted {
                stream: server,
                caught_up,
            });
            ping_in_hand(&mut server, &mut client).await;
            assert_eq!(server.is_registered(), caught_up, "caught_up {caught_up}");
        }
    }

    #[tokio::test]
    async fn a_full_send_buffer_registers_and_waits_for_the_reader() {
        let (mut server, mut client) = pair();
        let total = 8 << 20;
        let reader = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            let mut n = 0;
            let mut buf = vec![0u8; 65536];
            loop {
                match client.read(&mut buf).unwrap() {
                    0 => return n,
                    k => n += k,
                }
            }
        });
        server.write_all(&vec![7u8; total]).await.unwrap();
        assert!(server.is_registered());
        server.shutdown().await.unwrap();
        assert_eq!(reader.join().unwrap(), total);
    }
}
