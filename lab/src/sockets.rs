//! The TCP sockets a component's processes can hold, as the sampler reads
//! them: from netlink `sock_diag` in the component's own network namespace
//! (found from its root process), else from that process's view of
//! `/proc/net/tcp{,6}`. Which one answered is recorded with each socket.
//!
//! One `NETLINK_SOCK_DIAG` socket is kept per distinct namespace for the
//! sampler's life (a sock_diag socket holds its namespace, so the inode
//! cannot be reused meanwhile); each namespace is dumped once per sample
//! however many components live in it.

use std::collections::HashMap;
use std::net::SocketAddr;

use ::procfs::net::{TcpNetEntry, TcpState};

use crate::procfs;
use crate::sockdiag::{Diag, DiagSocket, MemInfo, NetNs, TcpInfo};

/// Where a socket's figures came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    SockDiag,
    Procfs,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::SockDiag => "sock_diag",
            Source::Procfs => "procfs",
        }
    }
}

/// One TCP socket.
#[derive(Debug, Clone, PartialEq)]
pub struct TcpEntry {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub state: &'static str,
    /// Bytes written and not acknowledged (0 for a listening socket).
    pub tx_queue: u64,
    /// Bytes not read yet; for a listening socket, connections waiting.
    pub rx_queue: u64,
    pub tcp: Option<TcpInfo>,
    pub mem: Option<MemInfo>,
}

impl TcpEntry {
    pub fn listening(&self) -> bool {
        self.state == "LISTEN"
    }

    fn from_proc(e: &TcpNetEntry) -> TcpEntry {
        TcpEntry {
            local: e.local_address,
            remote: e.remote_address,
            state: procfs::tcp_state_name(&e.state),
            tx_queue: u64::from(e.tx_queue),
            rx_queue: u64::from(e.rx_queue),
            tcp: None,
            mem: None,
        }
    }

    fn from_diag(s: &DiagSocket) -> TcpEntry {
        let state = TcpState::from_u8(s.state)
            .map(|st| procfs::tcp_state_name(&st))
            .unwrap_or("UNKNOWN");
        // For a listening socket the kernel's write queue field is the
        // backlog's limit; `/proc/net/tcp` shows 0 there, and so do we.
        let listening = state == "LISTEN";
        TcpEntry {
            local: s.local,
            remote: s.remote,
            state,
            tx_queue: if listening { 0 } else { u64::from(s.wqueue) },
            rx_queue: u64::from(s.rqueue),
            tcp: s.tcp,
            mem: s.mem,
        }
    }
}

/// The sockets of one namespace at one instant, keyed by inode.
#[derive(Debug, Clone)]
pub struct Table {
    /// The namespace's inode; `None` when the process was gone and the
    /// sampler's own namespace was read instead.
    pub netns: Option<u64>,
    pub source: Source,
    pub entries: HashMap<u64, TcpEntry>,
}

/// The sampler's socket tables: a sock_diag socket per namespace, and this
/// sample's tables.
#[derive(Debug)]
pub struct SocketTables {
    use_sock_diag: bool,
    /// Per namespace inode: its socket, or why there is none (said once).
    diag: HashMap<u64, Option<Diag>>,
    round: HashMap<Option<u64>, Table>,
}

impl Default for SocketTables {
    fn default() -> Self {
        SocketTables::new()
    }
}

impl SocketTables {
    pub fn new() -> SocketTables {
        SocketTables {
            use_sock_diag: true,
            diag: HashMap::new(),
            round: HashMap::new(),
        }
    }

    /// Tables that never use netlink: what a kernel without sock_diag, or
    /// a sandbox that forbids netlink sockets, leaves.
    pub fn procfs_only() -> SocketTables {
        SocketTables {
            use_sock_diag: false,
            ..SocketTables::new()
        }
    }

    /// Starts a new sample: tables are read again on first use.
    pub fn next_round(&mut self) {
        self.round.clear();
    }

    /// The sockets of `pid`'s network namespace in this sample.
    pub fn of_pid(&mut self, pid: u32) -> &Table {
        let ns = NetNs::of_pid(pid).ok();
        let key = ns.as_ref().map(|n| n.inode);
        if !self.round.contains_key(&key) {
            let table = self.read(ns, pid);
            self.round.insert(key, table);
        }
        &self.round[&key]
    }

    fn read(&mut self, ns: Option<NetNs>, pid: u32) -> Table {
        let netns = ns.as_ref().map(|n| n.inode);
        if let (Some(ns), true) = (&ns, self.use_sock_diag) {
            let slot = self.diag.entry(ns.inode).or_insert_with(|| {
                Diag::open_in(ns)
                    .inspect_err(|e| {
                        tracing::warn!(netns = ns.inode, cause = %e, "sock_diag unavailable, sampling /proc/net/tcp")
                    })
                    .ok()
            });
            if let Some(diag) = slot {
                match diag.dump() {
                    Ok(sockets) => {
                        return Table {
                            netns,
                            source: Source::SockDiag,
                            entries: sockets
                                .iter()
                                .map(|s| (s.inode, TcpEntry::from_diag(s)))
                                .collect(),
                        };
                    }
                    Err(e) => {
                        tracing::warn!(netns = ns.inode, cause = %e, "sock_diag dump failed, sampling /proc/net/tcp from now on");
                        *slot = None;
                    }
                }
            }
        }
        let proc = procfs::tcp_table_of(pid);
        let (netns, proc) = match proc {
            Some(t) => (netns, t),
            None => (None, procfs::tcp_table()),
        };
        Table {
            netns,
            source: Source::Procfs,
            entries: proc
                .iter()
                .map(|(inode, e)| (*inode, TcpEntry::from_proc(e)))
                .collect(),
        }
    }
}
