//! The engine's system calls: epoll with nanosecond waits, the eventfd
//! that wakes a loop, and the non-blocking socket steps every slow client
//! shares (connect, a write that may not fit, a `recv`).

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

use super::Interest;

/// An epoll instance.
pub(crate) struct Epoll(OwnedFd);

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: no pointers; a new descriptor or -1.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor owned by nobody else.
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, events: u32, data: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: data };
        // SAFETY: a valid epoll descriptor and event for the call.
        let rc = unsafe { libc::epoll_ctl(self.0.as_raw_fd(), op, fd, &mut ev) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Watches `fd` for input, level-triggered, for good (the eventfd).
    pub fn watch(&self, fd: RawFd, data: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, libc::EPOLLIN as u32, data)
    }

    /// Arms one report of `interest` on `fd` (`EPOLLONESHOT`), adding it
    /// first unless `registered`.
    pub fn arm(
        &self,
        fd: RawFd,
        data: u64,
        interest: Interest,
        registered: bool,
    ) -> io::Result<()> {
        let events = libc::EPOLLONESHOT as u32
            | match interest {
                Interest::Read => libc::EPOLLIN as u32 | libc::EPOLLRDHUP as u32,
                Interest::Write => libc::EPOLLOUT as u32,
            };
        let (first, second) = if registered {
            (libc::EPOLL_CTL_MOD, libc::EPOLL_CTL_ADD)
        } else {
            (libc::EPOLL_CTL_ADD, libc::EPOLL_CTL_MOD)
        };
        // A descriptor number reused after a close may be in either state.
        self.ctl(first, fd, events, data)
            .or_else(|_| self.ctl(second, fd, events, data))
    }

    /// Waits up to `timeout` (none: for ever), to the nanosecond, for
    /// events; returns how many were stored (0 on a signal).
    pub fn wait(&self, events: &mut [libc::epoll_event], timeout: Option<Duration>) -> usize {
        let ts = timeout.map(|t| libc::timespec {
            tv_sec: libc::time_t::try_from(t.as_secs()).unwrap_or(libc::time_t::MAX),
            tv_nsec: libc::c_long::from(t.subsec_nanos()),
        });
        let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const _);
        let max = libc::c_int::try_from(events.len()).unwrap_or(libc::c_int::MAX);
        // SAFETY: `events` holds `max` entries; `tsp` is null or points to
        // a timespec that outlives the call; no signal mask.
        let n = unsafe {
            libc::epoll_pwait2(
                self.0.as_raw_fd(),
                events.as_mut_ptr(),
                max,
                tsp,
                std::ptr::null(),
            )
        };
        usize::try_from(n).unwrap_or(0)
    }
}

/// An eventfd: any thread wakes the loop that watches it.
pub(crate) struct EventFd(OwnedFd);

impl EventFd {
    pub fn new() -> io::Result<EventFd> {
        // SAFETY: no pointers; a new descriptor or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor owned by nobody else.
        Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    pub fn notify(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: 8 bytes from a live buffer. It fails only when the
        // counter would overflow, and then the loop is awake anyway.
        let _ = unsafe { libc::write(self.fd(), one.as_ptr().cast(), one.len()) };
    }

    pub fn drain(&self) {
        let mut buf = [0u8; 8];
        // SAFETY: 8 bytes into a live buffer; EAGAIN when already drained.
        let _ = unsafe { libc::read(self.fd(), buf.as_mut_ptr().cast(), buf.len()) };
    }
}

/// The buffer sizes a client asks for before it connects (what the kernel
/// granted comes back from [`connect`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Buffers {
    pub rcvbuf: Option<usize>,
    pub sndbuf: Option<usize>,
}

/// What [`connect`] set up.
pub(crate) struct Connecting {
    pub socket: Socket,
    pub rcvbuf: Option<usize>,
    pub sndbuf: Option<usize>,
    /// Loopback often connects at once; otherwise wait for writability
    /// and [`connected`].
    pub done: bool,
}

/// A non-blocking socket with its buffers asked for and its local address
/// bound, its connect started. The failure says which step failed, and
/// the buffers granted before it.
pub(crate) fn connect(
    addr: SocketAddr,
    bind: Option<IpAddr>,
    buffers: Buffers,
) -> Result<Connecting, (crate::error::Failure, Buffers)> {
    use crate::error::Failure;
    let mut granted = Buffers::default();
    let socket = Socket::new(
        Domain::for_address(addr),
        Type::STREAM.nonblocking().cloexec(),
        Some(Protocol::TCP),
    )
    .map_err(|e| (Failure::local("socket", &e), granted))?;
    if let Some(n) = buffers.rcvbuf {
        granted.rcvbuf = Some(
            crate::net::set_rcvbuf(&socket, n)
                .map_err(|e| (Failure::local("SO_RCVBUF", &e), granted))?,
        );
    }
    if let Some(n) = buffers.sndbuf {
        granted.sndbuf = Some(
            crate::net::set_sndbuf(&socket, n)
                .map_err(|e| (Failure::local("SO_SNDBUF", &e), granted))?,
        );
    }
    crate::bind::bind(&socket, bind).map_err(|e| (Failure::local("bind", &e), granted))?;
    let done = match socket.connect(&addr.into()) {
        Ok(()) => true,
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => false,
        Err(e) => return Err((Failure::connect(&e), granted)),
    };
    Ok(Connecting {
        socket,
        rcvbuf: granted.rcvbuf,
        sndbuf: granted.sndbuf,
        done,
    })
}

/// After writability: whether the connect succeeded (`Ok(false)`: still
/// under way, a spurious wake-up).
pub(crate) fn connected(socket: &Socket) -> io::Result<bool> {
    if let Some(e) = socket.take_error()? {
        return Err(e);
    }
    match socket.peer_addr() {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => Ok(false),
        Err(e) => Err(e),
    }
}

/// One `recv` of up to `buf.len()` bytes; `Ok(None)` when nothing is
/// there (`EAGAIN`). `Ok(Some(0))` is EOF.
pub(crate) fn recv(socket: &Socket, buf: &mut [u8]) -> io::Result<Option<usize>> {
    loop {
        match (&mut &*socket).read(buf) {
            Ok(n) => return Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) => return Err(e),
        }
    }
}

/// Writes as much of `data[*at..]` as the socket takes, advancing `at`;
/// `Ok(true)` once all is written.
pub(crate) fn send(socket: &Socket, data: &[u8], at: &mut usize) -> io::Result<bool> {
    while *at < data.len() {
        match (&mut &*socket).write(&data[*at..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => *at += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_wait_ends_on_time_or_on_the_eventfd() {
        let ep = Epoll::new().unwrap();
        let wake = EventFd::new().unwrap();
        ep.watch(wake.fd(), 7).unwrap();
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 4];
        let t = Instant::now();
        assert_eq!(ep.wait(&mut events, Some(Duration::from_micros(1500))), 0);
        let waited = t.elapsed();
        assert!(waited >= Duration::from_micros(1500), "{waited:?}");
        wake.notify();
        assert_eq!(ep.wait(&mut events, None), 1);
        assert_eq!({ events[0].u64 }, 7);
        wake.drain();
        assert_eq!(ep.wait(&mut events, Some(Duration::ZERO)), 0, "drained");
    }

    #[test]
    fn a_loopback_connect_is_sent_to_and_read_from_without_blocking() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let c = connect(
            addr,
            None,
            Buffers {
                rcvbuf: Some(4096),
                sndbuf: None,
            },
        )
        .unwrap_or_else(|(f, _)| panic!("{f}"));
        assert!(c.rcvbuf.is_some_and(|g| g >= 4096));
        let (mut peer, _) = listener.accept().unwrap();
        while !connected(&c.socket).unwrap() {}
        let mut buf = [0u8; 16];
        assert_eq!(recv(&c.socket, &mut buf).unwrap(), None, "nothing yet");
        let mut at = 0;
        assert!(send(&c.socket, b"ping", &mut at).unwrap());
        assert_eq!(at, 4);
        let mut got = [0u8; 4];
        peer.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"ping");
        peer.write_all(b"pong").unwrap();
        drop(peer);
        let mut read = Vec::new();
        loop {
            match recv(&c.socket, &mut buf).unwrap() {
                Some(0) => break,
                Some(n) => read.extend_from_slice(&buf[..n]),
                None => std::thread::yield_now(),
            }
        }
        assert_eq!(read, b"pong");
    }
}
