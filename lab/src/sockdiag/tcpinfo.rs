//! The fields of the kernel's `struct tcp_info` (`include/uapi/linux/tcp.h`)
//! that say why the kernel held what it held, read at their offsets.
//!
//! The struct only ever grows at its end, and the kernel sends as many bytes
//! as it has: a field past the end of what it sent is `None`, not zero
//! (`tcpi_snd_wnd` came in Linux 5.4, the `*_limited` times in 4.10). The
//! `netlink-packet-sock-diag` crate's own `TcpInfo` refuses a payload
//! shorter than its 5.4 layout, so the attribute is taken as raw bytes and
//! read here.

/// What the sampler keeps of one socket's `tcp_info`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TcpInfo {
    /// Sending MSS, bytes (`tcpi_snd_mss`).
    pub snd_mss: Option<u32>,
    /// Segments sent and not yet acknowledged (`tcpi_unacked`, the kernel's
    /// `packets_out`).
    pub unacked: Option<u32>,
    /// Segments in flight: unacked minus SACKed minus lost plus
    /// retransmitted, the kernel's `tcp_packets_in_flight`.
    pub in_flight: Option<u32>,
    pub rcv_ssthresh: Option<u32>,
    /// Smoothed RTT and its variation, microseconds.
    pub rtt_us: Option<u32>,
    pub rttvar_us: Option<u32>,
    /// Congestion window, segments.
    pub snd_cwnd: Option<u32>,
    /// The receive buffer autotuning's estimate of what the peer sends per
    /// RTT, bytes.
    pub rcv_space: Option<u32>,
    pub total_retrans: Option<u32>,
    pub bytes_acked: Option<u64>,
    pub bytes_received: Option<u64>,
    /// Written by the application and not yet sent, bytes.
    pub notsent_bytes: Option<u32>,
    /// Bytes per second.
    pub delivery_rate: Option<u64>,
    /// Microseconds with data to send, limited by the peer's receive window,
    /// and limited by the send buffer.
    pub busy_us: Option<u64>,
    pub rwnd_limited_us: Option<u64>,
    pub sndbuf_limited_us: Option<u64>,
    /// The peer's advertised receive window, scaled, bytes (Linux 5.4).
    pub snd_wnd: Option<u32>,
}

// Byte offsets in `struct tcp_info`: eight u8 fields, then u32 fields from
// `tcpi_rto` (8) on, u64 fields from `tcpi_pacing_rate` (104) on, and so on.
const SND_MSS: usize = 16;
const UNACKED: usize = 24;
const SACKED: usize = 28;
const LOST: usize = 32;
const RETRANS: usize = 36;
const RCV_SSTHRESH: usize = 64;
const RTT: usize = 68;
const RTTVAR: usize = 72;
const SND_CWND: usize = 80;
const RCV_SPACE: usize = 96;
const TOTAL_RETRANS: usize = 100;
const BYTES_ACKED: usize = 120;
const BYTES_RECEIVED: usize = 128;
const NOTSENT_BYTES: usize = 144;
const DELIVERY_RATE: usize = 160;
const BUSY_TIME: usize = 168;
const RWND_LIMITED: usize = 176;
const SNDBUF_LIMITED: usize = 184;
const SND_WND: usize = 228;

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let bytes = b.get(at..at + 4)?;
    // The slice is exactly 4 bytes long.
    Some(u32::from_ne_bytes(bytes.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let bytes = b.get(at..at + 8)?;
    Some(u64::from_ne_bytes(bytes.try_into().ok()?))
}

impl TcpInfo {
    /// Reads the `INET_DIAG_INFO` payload (or `getsockopt(TCP_INFO)`'s
    /// bytes), in the host's byte order like the kernel writes it.
    pub fn parse(b: &[u8]) -> TcpInfo {
        let unacked = u32_at(b, UNACKED);
        let in_flight = (|| {
            let left = unacked?.saturating_sub(u32_at(b, SACKED)? + u32_at(b, LOST)?);
            Some(left + u32_at(b, RETRANS)?)
        })();
        TcpInfo {
            snd_mss: u32_at(b, SND_MSS),
            unacked,
            in_flight,
            rcv_ssthresh: u32_at(b, RCV_SSTHRESH),
            rtt_us: u32_at(b, RTT),
            rttvar_us: u32_at(b, RTTVAR),
            snd_cwnd: u32_at(b, SND_CWND),
            rcv_space: u32_at(b, RCV_SPACE),
            total_retrans: u32_at(b, TOTAL_RETRANS),
            bytes_acked: u64_at(b, BYTES_ACKED),
            bytes_received: u64_at(b, BYTES_RECEIVED),
            notsent_bytes: u32_at(b, NOTSENT_BYTES),
            delivery_rate: u64_at(b, DELIVERY_RATE),
            busy_us: u64_at(b, BUSY_TIME),
            rwnd_limited_us: u64_at(b, RWND_LIMITED),
            sndbuf_limited_us: u64_at(b, SNDBUF_LIMITED),
            snd_wnd: u32_at(b, SND_WND),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    /// Writes `v` at `at` in a zeroed buffer of `len` bytes.
    fn put(buf: &mut [u8], at: usize, v: &[u8]) {
        buf[at..at + v.len()].copy_from_slice(v);
    }

    #[test]
    fn fields_sit_at_their_offsets_and_short_payloads_give_none() {
        let mut b = vec![0u8; 232];
        put(&mut b, SND_MSS, &1448u32.to_ne_bytes());
        put(&mut b, UNACKED, &10u32.to_ne_bytes());
        put(&mut b, SACKED, &2u32.to_ne_bytes());
        put(&mut b, LOST, &1u32.to_ne_bytes());
        put(&mut b, RETRANS, &3u32.to_ne_bytes());
        put(&mut b, SND_CWND, &42u32.to_ne_bytes());
        put(&mut b, BYTES_ACKED, &(5u64 << 32).to_ne_bytes());
        put(&mut b, SNDBUF_LIMITED, &777u64.to_ne_bytes());
        put(&mut b, SND_WND, &65535u32.to_ne_bytes());
        let t = TcpInfo::parse(&b);
        assert_eq!(t.snd_mss, Some(1448));
        assert_eq!((t.unacked, t.in_flight), (Some(10), Some(10)));
        assert_eq!(t.snd_cwnd, Some(42));
        assert_eq!(t.bytes_acked, Some(5 << 32));
        assert_eq!(t.sndbuf_limited_us, Some(777));
        assert_eq!(t.snd_wnd, Some(65535));
        // A 4.19 kernel sends 224 bytes: no send window, the rest intact.
        let old = TcpInfo::parse(&b[..224]);
        assert_eq!(old.snd_wnd, None);
        assert_eq!(old.sndbuf_limited_us, Some(777));
        // A 4.9 kernel stops before the busy times.
        let older = TcpInfo::parse(&b[..160]);
        assert_eq!((older.delivery_rate, older.busy_us), (None, None));
        assert_eq!(older.notsent_bytes, Some(0));
        assert_eq!(TcpInfo::parse(&[]), TcpInfo::default());
    }

    /// The layout against the running kernel: `getsockopt(TCP_INFO)` fills
    /// the same struct, and a connection whose bytes were all acknowledged
    /// has known counters.
    #[test]
    fn the_kernels_own_tcp_info_reads_back() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        client.write_all(&[7u8; 5000]).unwrap();
        let mut buf = [0u8; 5000];
        server.read_exact(&mut buf).unwrap();
        let info = |s: &TcpStream| {
            let mut raw = [0u8; 512];
            let mut len = raw.len() as libc::socklen_t;
            // SAFETY: raw is a writable buffer of len bytes, and the fd is open.
            let rc = unsafe {
                libc::getsockopt(
                    s.as_raw_fd(),
                    libc::IPPROTO_TCP,
                    libc::TCP_INFO,
                    raw.as_mut_ptr().cast(),
                    &mut len,
                )
            };
            assert_eq!(rc, 0);
            TcpInfo::parse(&raw[..len as usize])
        };
        let mut c = info(&client);
        for _ in 0..100 {
            if c.unacked == Some(0) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            c = info(&client);
        }
        let s = info(&server);
        assert_eq!(c.bytes_acked, Some(5001), "the SYN counts one");
        assert_eq!(s.bytes_received, Some(5000));
        assert_eq!(
            (c.unacked, c.in_flight, c.notsent_bytes),
            (Some(0), Some(0), Some(0))
        );
        assert!(c.snd_cwnd.is_some_and(|w| w >= 1));
        assert!(c.rtt_us.is_some_and(|r| r > 0));
        assert!(c.snd_mss.is_some_and(|m| m > 500));
        assert!(c.busy_us.is_some());
    }
}
