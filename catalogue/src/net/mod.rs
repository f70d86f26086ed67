//! The network of a run as a description: the two sides, the sysctls
//! written in their namespaces, the shaped link and the MTU. The lab's
//! `netns` module makes namespaces from a [`NetSpec`]; this is only what
//! one asks for, so that conditions, results and reports can speak of it.
//!
//! # Layout
//! - [`link`]: `--link`, a shaped path, and the slow-client kind.
//! - [`sysctl`]: `--sysctl`, a TCP sysctl for a namespace.

pub mod link;
pub mod sysctl;

use std::fmt;
use std::net::Ipv4Addr;

pub use link::{Link, Per, SlowKind};
pub use sysctl::{ALLOWED, Sysctl, parse as parse_sysctl, triple as parse_triple};

use crate::names::Direction;

/// One side of the lab's network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The app and the proxy.
    Server,
    /// The load generator.
    Client,
}

impl Side {
    pub const ALL: [Side; 2] = [Side::Server, Side::Client];

    pub fn name(self) -> &'static str {
        match self {
            Side::Server => "server",
            Side::Client => "client",
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a run asks of the namespaces: the sysctls to write in them, and
/// the shaped link, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetSpec {
    pub sysctls: Vec<Sysctl>,
    /// `--link`: a tbf on the server's veth end (the server-to-client
    /// direction), or with `per=client` an htb with a class per slow
    /// client.
    pub link: Option<Link>,
    /// The slow clients a per-client link makes room for (their addresses
    /// and classes; at most [`link::MAX_CLIENTS`]): set per run with
    /// `uploads` ([`NetSpec::for_load`]) to the most slow clients its loads
    /// have; nothing without a per-client link.
    pub clients: u32,
    /// The run's slow clients are slow uploaders: with a link, its
    /// client-to-server direction is shaped too, by a tbf on the client's
    /// veth end (set per run with `clients`, [`NetSpec::for_load`]).
    pub uploads: bool,
    /// `--mtu`: the MTU of both veth pairs' four ends; none: the veth
    /// default, 1500. The kernel grows a TCP send buffer from the
    /// congestion window counted in segments, so at 1500 an app's send
    /// buffer stops near 1 MiB whatever `tcp_wmem` allows; loopback's
    /// 65536 does not stop it.
    pub mtu: Option<u32>,
}

/// The sysctls that size the kernel buffers a blocked response fills:
/// every result records them, the host's and each namespace's.
pub const RECORDED_SYSCTLS: [&str; 9] = [
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_rmem",
    "net.core.wmem_max",
    "net.core.rmem_max",
    "net.core.wmem_default",
    "net.core.rmem_default",
    "net.ipv4.tcp_notsent_lowat",
    "net.ipv4.tcp_autocorking",
    "net.core.somaxconn",
];

/// The range of `--mtu`: IPv6's minimum to the veth's maximum.
pub const MTU_RANGE: std::ops::RangeInclusive<u32> = 1280..=65535;

/// A veth's MTU when nothing sets one.
pub const VETH_DEFAULT_MTU: u32 = 1500;

/// `--mtu N`, in [`MTU_RANGE`].
pub fn parse_mtu(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if MTU_RANGE.contains(&n) => Ok(n),
        _ => Err(format!(
            "`{s}` is not an MTU from {} to {} bytes",
            MTU_RANGE.start(),
            MTU_RANGE.end()
        )),
    }
}

/// How the slow clients of a run with `spec` are slow.
pub fn slow_kind(spec: Option<&NetSpec>) -> SlowKind {
    match spec.and_then(|s| s.link) {
        Some(_) => SlowKind::Link,
        None => SlowKind::Pace,
    }
}

/// The `--slow-rate` a run's readers (and the `--upload-rate` its
/// uploaders) get: `paced` without a link; with one, the loadgen's highest
/// rate, which means "unpaced", so that the link is the bottleneck.
pub fn reader_rate(spec: Option<&NetSpec>, paced: u64) -> u64 {
    match slow_kind(spec) {
        SlowKind::Pace => paced,
        SlowKind::Link => common::bounds::MAX_SLOW_RATE,
    }
}

impl NetSpec {
    /// The veth ends that carry a tbf: none without a link; the server's
    /// (server to client); and the client's too when the slow clients
    /// upload.
    pub fn shaped(&self) -> Vec<Side> {
        match (self.link, self.uploads) {
            (None, _) => vec![],
            (Some(_), false) => vec![Side::Server],
            (Some(_), true) => vec![Side::Server, Side::Client],
        }
    }

    /// This spec for a run whose loads have at most `slow` slow clients
    /// of `direction` at once: a per-client link makes room for them (at
    /// most [`link::MAX_CLIENTS`]), and slow uploaders are shaped at the
    /// client's end of the link too (they write unpaced behind it). The
    /// stack creates the namespaces before the load starts and knows no
    /// direction, so the spec carries both; `reproduce`, `sweep` and
    /// `check` set them here, together, so they cannot drift apart.
    pub fn for_load(&self, direction: Direction, slow: u32) -> NetSpec {
        NetSpec {
            clients: slow.min(link::MAX_CLIENTS),
            uploads: direction == Direction::Upload,
            ..self.clone()
        }
    }

    /// The addresses of the per-client link's slow clients (client `i`
    /// at [`link::client_addr`]`(i)`); none without a per-client link.
    pub fn client_addrs(&self) -> Vec<Ipv4Addr> {
        match self.link {
            Some(l) if l.per == Per::Client => (0..self.clients).map(link::client_addr).collect(),
            _ => vec![],
        }
    }

    /// The `runs.csv` `sysctls` cell: every `--sysctl` as given, `;`
    /// between them.
    pub fn sysctls_cell(&self) -> String {
        self.sysctls
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(";")
    }
}
