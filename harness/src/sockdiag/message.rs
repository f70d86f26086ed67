//! The sock_diag messages, pure: the dump request for one address family,
//! and the sockets in one datagram of the kernel's answer. Framing is the
//! `netlink-packet-sock-diag` crate's; `tcp_info` is ours (`tcpinfo.rs`).

use std::io;
use std::net::SocketAddr;

use netlink_packet_core::{
    NLM_F_DUMP, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload,
};
use netlink_packet_sock_diag::SockDiagMessage;
use netlink_packet_sock_diag::constants::{AF_INET, AF_INET6, IPPROTO_TCP};
use netlink_packet_sock_diag::inet::nlas::Nla;
use netlink_packet_sock_diag::inet::{ExtensionFlags, InetRequest, SocketId, StateFlags};

use super::tcpinfo::TcpInfo;

/// `struct sk_meminfo` (`INET_DIAG_SKMEMINFO`), bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct MemInfo {
    /// Bytes in the receive queue (`SK_MEMINFO_RMEM_ALLOC`).
    pub rmem_alloc: u32,
    /// The receive buffer's size, `SO_RCVBUF` or autotuned.
    pub rcvbuf: u32,
    /// Bytes of sent data still held, in the qdisc or driver included.
    pub wmem_alloc: u32,
    /// The send buffer's size, `SO_SNDBUF` or autotuned up to `tcp_wmem` max.
    pub sndbuf: u32,
    /// Memory reserved for the socket and not yet used.
    pub fwd_alloc: u32,
    /// Bytes queued for sending: written and not yet acknowledged.
    pub wmem_queued: u32,
    pub drops: u32,
}

/// One socket of a dump.
#[derive(Debug, Clone, PartialEq)]
pub struct DiagSocket {
    pub inode: u64,
    /// The kernel's TCP state number (1 `ESTABLISHED` … 10 `LISTEN`).
    pub state: u8,
    pub local: SocketAddr,
    pub remote: SocketAddr,
    /// For a listening socket: connections waiting and the backlog's limit;
    /// else bytes not read yet, and bytes written and not acknowledged.
    pub rqueue: u32,
    pub wqueue: u32,
    pub tcp: Option<TcpInfo>,
    pub mem: Option<MemInfo>,
}

/// The states asked for: all but `TIME_WAIT` and `SYN_RECV` (and
/// `NEW_SYN_RECV`, which the crate's flags leave out), which belong to no
/// process (their inode is 0) and, after a sweep, number thousands; the
/// kernel skips them without building a message.
pub fn states() -> StateFlags {
    StateFlags::all() - StateFlags::TIME_WAIT - StateFlags::SYN_RECV
}

/// The bytes of a dump request for every TCP socket of `family`
/// (`AF_INET` or `AF_INET6`) with `tcp_info` and `sk_meminfo`.
pub fn dump_request(family: u8, seq: u32) -> Vec<u8> {
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | NLM_F_DUMP;
    header.sequence_number = seq;
    let socket_id = if family == AF_INET6 {
        SocketId::new_v6()
    } else {
        SocketId::new_v4()
    };
    let mut packet = NetlinkMessage::new(
        header,
        SockDiagMessage::InetRequest(InetRequest {
            family,
            protocol: IPPROTO_TCP,
            extensions: ExtensionFlags::INFO | ExtensionFlags::SKMEMINFO,
            states: states(),
            socket_id,
        })
        .into(),
    );
    packet.finalize();
    let mut buf = vec![0; packet.buffer_len()];
    packet.serialize(&mut buf);
    buf
}

/// What one datagram of the answer held.
#[derive(Debug, Default, PartialEq)]
pub struct Datagram {
    pub sockets: Vec<DiagSocket>,
    /// The dump ended (`NLMSG_DONE`).
    pub done: bool,
}

/// Decodes one datagram of the kernel's answer. A kernel error (`NLMSG_ERROR`)
/// is returned as its errno.
pub fn decode(mut bytes: &[u8]) -> io::Result<Datagram> {
    let mut out = Datagram::default();
    while !bytes.is_empty() {
        let msg = NetlinkMessage::<SockDiagMessage>::deserialize(bytes)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        let len = msg.header.length as usize;
        match msg.payload {
            NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(r)) => {
                let h = &r.header;
                let id = &h.socket_id;
                let mut s = DiagSocket {
                    inode: u64::from(h.inode),
                    state: h.state,
                    local: SocketAddr::new(id.source_address, id.source_port),
                    remote: SocketAddr::new(id.destination_address, id.destination_port),
                    rqueue: h.recv_queue,
                    wqueue: h.send_queue,
                    tcp: None,
                    mem: None,
                };
                for nla in &r.nlas {
                    match nla {
                        Nla::TcpInfo(raw) => s.tcp = Some(TcpInfo::parse(raw)),
                        // The crate's names follow the order of
                        // `SK_MEMINFO_*`: its `send_queue` is slot 5
                        // (`WMEM_QUEUED`), `bottom_send_queues` slot 2
                        // (`WMEM_ALLOC`), `cache` slot 4 (`FWD_ALLOC`).
                        Nla::MemInfo(m) => {
                            s.mem = Some(MemInfo {
                                rmem_alloc: m.receive_queue,
                                rcvbuf: m.receive_queue_max,
                                wmem_alloc: m.bottom_send_queues,
                                sndbuf: m.send_queue_max,
                                fwd_alloc: m.cache,
                                wmem_queued: m.send_queue,
                                drops: m.drops,
                            })
                        }
                        _ => {}
                    }
                }
                out.sockets.push(s);
            }
            NetlinkPayload::Done(_) => {
                out.done = true;
                return Ok(out);
            }
            NetlinkPayload::Error(e) => return Err(e.to_io()),
            _ => {}
        }
        if len == 0 || len > bytes.len() {
            break;
        }
        // Messages are aligned to 4 bytes.
        bytes = &bytes[((len + 3) & !3).min(bytes.len())..];
    }
    Ok(out)
}

/// `AF_INET` and `AF_INET6`, the families dumped.
pub const FAMILIES: [u8; 2] = [AF_INET, AF_INET6];
