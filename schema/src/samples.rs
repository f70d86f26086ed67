//! The sampler's rows: `resource-samples.csv` (one row per component per
//! sample) and `socket-samples.csv` (one row per TCP socket per sample),
//! with `t_s` relative to the run's time zero.

use serde::{Deserialize, Serialize};

use super::cell;
use catalogue::{ComponentName, RouteName, ServerName};

/// A row of `resource-samples.csv` (one component at one instant).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceRow {
    pub run_id: String,
    pub server: ServerName,
    pub route: RouteName,
    pub slow_clients: u32,
    pub repetition: u32,
    #[serde(serialize_with = "cell::d3")]
    pub t_s: f64,
    pub component: ComponentName,
    #[serde(default)]
    pub procs: u64,
    /// Cumulative CPU time.
    #[serde(default, serialize_with = "cell::d6")]
    pub cpu_s: Option<f64>,
    /// `cgroup` or `procfs`.
    #[serde(default)]
    pub cpu_source: String,
    /// Cumulative.
    #[serde(default, serialize_with = "cell::d3")]
    pub throttled_ms: Option<f64>,
    #[serde(default)]
    pub nr_throttled: Option<u64>,
    pub memory_bytes: Option<u64>,
    #[serde(default)]
    pub rss_bytes: Option<u64>,
    pub temp_files: Option<u64>,
    pub temp_logical_bytes: Option<u64>,
    pub temp_allocated_bytes: Option<u64>,
    #[serde(default)]
    pub sockets: u64,
    #[serde(default)]
    pub send_queue_bytes: u64,
    #[serde(default)]
    pub recv_queue_bytes: u64,
    /// Connections waiting in the component's listening sockets.
    #[serde(default)]
    pub accept_backlog: Option<u64>,
    /// Descriptors the component's processes held, and the smallest of
    /// their limits; empty in files before the columns (and the limit when
    /// unlimited).
    #[serde(default)]
    pub fds: Option<u64>,
    #[serde(default)]
    pub fd_limit: Option<u64>,
}

/// A row of `socket-samples.csv` (one TCP socket of one component).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SocketRow {
    pub run_id: String,
    pub server: ServerName,
    pub route: RouteName,
    pub slow_clients: u32,
    pub repetition: u32,
    #[serde(serialize_with = "cell::d3")]
    pub t_s: f64,
    pub component: ComponentName,
    pub local: String,
    pub remote: String,
    pub state: String,
    pub tx_queue_bytes: u64,
    pub rx_queue_bytes: u64,
    /// `sock_diag` or `procfs` (the fallback: queues only, the rest empty).
    #[serde(default)]
    pub source: String,
    /// The inode of the network namespace the socket was read in.
    #[serde(default)]
    pub netns: Option<u64>,
    // From `tcp_info`.
    #[serde(default)]
    pub snd_cwnd_segs: Option<u64>,
    #[serde(default)]
    pub snd_mss_bytes: Option<u64>,
    #[serde(default)]
    pub snd_wnd_bytes: Option<u64>,
    #[serde(default)]
    pub rtt_us: Option<u64>,
    #[serde(default)]
    pub rttvar_us: Option<u64>,
    #[serde(default)]
    pub unacked_segs: Option<u64>,
    #[serde(default)]
    pub in_flight_segs: Option<u64>,
    #[serde(default)]
    pub total_retrans_segs: Option<u64>,
    #[serde(default)]
    pub notsent_bytes: Option<u64>,
    #[serde(default)]
    pub bytes_acked: Option<u64>,
    #[serde(default)]
    pub bytes_received: Option<u64>,
    #[serde(default)]
    pub delivery_rate_bytes_per_s: Option<u64>,
    #[serde(default)]
    pub busy_us: Option<u64>,
    #[serde(default)]
    pub rwnd_limited_us: Option<u64>,
    #[serde(default)]
    pub sndbuf_limited_us: Option<u64>,
    #[serde(default)]
    pub rcv_space_bytes: Option<u64>,
    #[serde(default)]
    pub rcv_ssthresh_bytes: Option<u64>,
    // From `sk_meminfo`.
    #[serde(default)]
    pub rmem_alloc_bytes: Option<u64>,
    #[serde(default)]
    pub rcvbuf_bytes: Option<u64>,
    #[serde(default)]
    pub wmem_alloc_bytes: Option<u64>,
    #[serde(default)]
    pub sndbuf_bytes: Option<u64>,
    #[serde(default)]
    pub wmem_queued_bytes: Option<u64>,
    #[serde(default)]
    pub fwd_alloc_bytes: Option<u64>,
    #[serde(default)]
    pub drops: Option<u64>,
}

/// A row of `qdisc-samples.csv`: one shaped qdisc (a `--link`'s tbf, or a
/// per-client link's htb) at one sample, and with a per-client link a row
/// per htb class (its leaf `bfifo`) besides. Only runs with a link have
/// rows. The root's row (`class` empty) counts the whole veth end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QdiscRow {
    pub run_id: String,
    pub server: ServerName,
    pub route: RouteName,
    pub slow_clients: u32,
    pub repetition: u32,
    #[serde(serialize_with = "cell::d3")]
    pub t_s: f64,
    /// The veth end it sits on: `server` (shapes server to client) or
    /// `client` (client to server, with slow uploaders).
    pub side: String,
    pub dev: String,
    /// `tbf` or `htb` (the root), `bfifo` (a class's leaf).
    pub kind: String,
    /// Bytes and packets the qdisc has sent since the run's namespaces
    /// were made (cumulative).
    pub sent_bytes: u64,
    pub sent_packets: u64,
    /// Packets dropped because the queue was full (cumulative).
    pub drops: u64,
    /// Times a packet had to wait for tokens (cumulative).
    pub overlimits: u64,
    /// Bytes and packets queued in it now.
    pub backlog_bytes: u64,
    pub backlog_packets: u64,
    /// The htb class a per-client row counts (`1:1`, the default class;
    /// `1:10` slow client 0, `1:11` client 1, ... in hexadecimal); empty
    /// for the root's row.
    #[serde(default)]
    pub class: String,
    /// The slow-client address that class shapes; empty for the root and
    /// the default class.
    #[serde(default)]
    pub client_addr: String,
}

impl QdiscRow {
    /// The row of the root qdisc, which counts the whole veth end.
    pub fn is_root(&self) -> bool {
        self.class.is_empty()
    }
}

impl SocketRow {
    pub fn listening(&self) -> bool {
        self.state == "LISTEN"
    }

    pub fn local_port(&self) -> Option<u16> {
        port(&self.local)
    }

    pub fn remote_port(&self) -> Option<u16> {
        port(&self.remote)
    }
}

/// The port of `ip:port` (IPv6 addresses keep their colons before it).
fn port(addr: &str) -> Option<u16> {
    addr.rsplit_once(':').and_then(|(_, p)| p.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports() {
        assert_eq!(port("127.0.0.1:8080"), Some(8080));
        assert_eq!(port("[::1]:443"), Some(443));
        assert_eq!(port("nonsense"), None);
    }
}
