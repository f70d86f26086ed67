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

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(parts: &[&str]) -> Vec<u8> {
        let h: String = parts.concat();
        (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Captured from Linux 6.18 (x86_64): the IPv4 dump request, then one
    /// established loopback socket that had sent 3000 bytes, all
    /// acknowledged, and the `NLMSG_DONE` that ended the dump. `ss -tinme`
    /// on the same socket printed `skmem:(r0,rb131072,t0,tb3939840,f0,w0,o0,
    /// bl0,d0) … rtt:0.022/0.012 mss:50176 … cwnd:11 … bytes_acked:3001 …
    /// delivery_rate 50176000000bps … rcv_space:65495 rcv_ssthresh:65495 …
    /// snd_wnd:100352` and `ino:35905289`.
    const REQUEST: &[&str] = &[
        "4800000014000103070000000000000002064200b60f000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000000",
    ];
    const SOCKET: &[&str] = &[
        "c00100001400020007000000d10b000002010000b328a0ad7f000001000000000000000000000000",
        "7f000001000000000000000000000000000000000700000000000000000000000000000000000000",
        "0000000009df2302050008000000000008000f00000000000c001500010000000000000006001600",
        "5200000028000700000000000000020000000000001e3c0000000000000000000000000000000000",
        "000000001c010200010000000007aa01e01c03000000000000c40000180200000000000000000000",
        "00000000000000000000000030000000000000003000000030000000ffff0000d7ff000016000000",
        "0c000000ffffff7f0b000000cbff00000300000000000000d7ff000000000000ac51dbb608000000",
        "ffffffffffffffffb90b000000000000000000000000000003000000020000000000000008000000",
        "00000000010000000020d77501000000000000000000000000000000000000000000000000000000",
        "0200000000000000b80b000000000000000000000000000000000000000000000000000000880100",
        "00000100000000000000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000",
    ];
    const DONE: &str = "140000000300020007000000d10b000000000000";

    #[test]
    fn the_request_is_the_one_the_kernel_answered() {
        assert_eq!(dump_request(AF_INET, 7), hex(REQUEST));
    }

    #[test]
    fn a_captured_dump_decodes_to_what_ss_printed() {
        let mut bytes = hex(SOCKET);
        bytes.extend(hex(&[DONE]));
        let d = decode(&bytes).unwrap();
        assert!(d.done);
        assert_eq!(d.sockets.len(), 1);
        let s = &d.sockets[0];
        assert_eq!(s.inode, 35_905_289);
        assert_eq!(s.state, 1);
        assert_eq!(s.local, "127.0.0.1:45864".parse().unwrap());
        assert_eq!(s.remote, "127.0.0.1:41133".parse().unwrap());
        assert_eq!((s.rqueue, s.wqueue), (0, 0));
        let m = s.mem.unwrap();
        assert_eq!(
            (
                m.rmem_alloc,
                m.rcvbuf,
                m.wmem_alloc,
                m.sndbuf,
                m.fwd_alloc,
                m.wmem_queued,
                m.drops
            ),
            (0, 131_072, 0, 3_939_840, 0, 0, 0)
        );
        let t = s.tcp.unwrap();
        assert_eq!((t.rtt_us, t.rttvar_us), (Some(22), Some(12)));
        assert_eq!((t.snd_mss, t.snd_cwnd), (Some(50_176), Some(11)));
        assert_eq!(t.bytes_acked, Some(3001));
        assert_eq!(t.delivery_rate, Some(50_176_000_000 / 8));
        assert_eq!((t.rcv_space, t.rcv_ssthresh), (Some(65_495), Some(65_495)));
        assert_eq!(t.snd_wnd, Some(100_352));
        assert_eq!(
            (t.unacked, t.in_flight, t.notsent_bytes),
            (Some(0), Some(0), Some(0))
        );
    }

    #[test]
    fn a_datagram_without_done_asks_for_more_and_an_error_is_the_errno() {
        let d = decode(&hex(SOCKET)).unwrap();
        assert!(!d.done && d.sockets.len() == 1);
        // NLMSG_ERROR carrying -EPERM, with the request's header after it.
        let mut err = hex(&["24000000020000000700000000000000", "ffffffff"]);
        err.extend(&hex(REQUEST)[..16]);
        let e = decode(&err).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EPERM));
        assert!(decode(&[1, 2, 3]).is_err());
    }
}
