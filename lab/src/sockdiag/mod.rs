//! Every TCP socket of a network namespace through netlink `sock_diag`
//! (`inet_diag`, IPv4 and IPv6), with `tcp_info` and `sk_meminfo`: the
//! queues `/proc/net/tcp` shows, plus the buffers' sizes, the windows and
//! the times the sender was limited by each.
//!
//! # Layout
//! - [`message`]: the dump request and the decoding of the answer (pure).
//! - [`tcpinfo`]: the `tcp_info` fields, read at their offsets.
//! - [`netns`]: a process's network namespace, and a thread that joins it.

pub mod message;
pub mod netns;
pub mod tcpinfo;

use std::io;
use std::os::fd::AsRawFd;

use netlink_sys::protocols::NETLINK_SOCK_DIAG;
use netlink_sys::{Socket, SocketAddr};

pub use message::{DiagSocket, MemInfo};
pub use netns::NetNs;
pub use tcpinfo::TcpInfo;

/// A `NETLINK_SOCK_DIAG` socket, bound to the network namespace it was
/// created in.
#[derive(Debug)]
pub struct Diag {
    socket: Socket,
    seq: u32,
    buf: Vec<u8>,
}

/// How long a dump may wait for the kernel's next datagram.
const RECV_TIMEOUT: libc::timeval = libc::timeval {
    tv_sec: 1,
    tv_usec: 0,
};

impl Diag {
    /// A socket in the calling thread's namespace.
    pub fn open() -> io::Result<Diag> {
        let mut socket = Socket::new(NETLINK_SOCK_DIAG)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        // SAFETY: the fd is open and the option's value is a timeval.
        let rc = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&RECV_TIMEOUT as *const libc::timeval).cast(),
                size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Diag {
            socket,
            seq: 0,
            // The kernel fills dump datagrams up to 32 KiB.
            buf: vec![0; 64 * 1024],
        })
    }

    /// A socket in `ns`. The calling thread's own namespace needs no
    /// joining (and no privilege); another is joined on a short-lived
    /// thread.
    pub fn open_in(ns: &NetNs) -> io::Result<Diag> {
        if NetNs::current().is_ok_and(|own| own.inode == ns.inode) {
            return Diag::open();
        }
        ns.run_in(Diag::open)
    }

    /// Every TCP socket of the namespace, IPv4 then IPv6, in all states but
    /// `TIME_WAIT` and `SYN_RECV`.
    pub fn dump(&mut self) -> io::Result<Vec<DiagSocket>> {
        let mut out = Vec::new();
        for family in message::FAMILIES {
            self.seq = self.seq.wrapping_add(1);
            self.socket
                .send(&message::dump_request(family, self.seq), 0)?;
            loop {
                let n = self.socket.recv(&mut &mut self.buf[..], 0)?;
                let d = message::decode(&self.buf[..n])?;
                out.extend(d.sockets);
                if d.done || n == 0 {
                    break;
                }
            }
        }
        Ok(out)
    }
}
