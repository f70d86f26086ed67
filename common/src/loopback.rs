//! The lab's loopback-only rule, shared by `serve`, `proxy` and `load`:
//! an address outside 127.0.0.0/8 and ::1 is refused before any socket
//! exists, unless the user passed `--allow-remote`.
//!
//! The one exception is the lab's own network namespaces (the harness's
//! `--netns`): an address in [`LAB_RANGE`] (198.18.0.0/15, RFC 2544's
//! benchmarking range) is accepted when the process itself runs in a
//! namespace that the lab created, which [`in_lab_netns`] checks from the
//! kernel's own facts rather than from a flag anyone could pass: the
//! process's network namespace (the inode of `/proc/thread-self/ns/net`)
//! is not the host's initial one (`/proc/1/ns/net`, where readable), and it is one of the
//! namespaces named `slowlab-*` under `/run/netns` (the same inode).
//! Those namespaces hold only loopback and the lab's veth, with no default
//! route, so an address of the range can only reach the lab's other side.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::unix::fs::MetadataExt;

/// Whether `ip` is in 127.0.0.0/8 or is ::1 (also as an IPv4-mapped address).
pub fn is_loopback(ip: IpAddr) -> bool {
    ip.to_canonical().is_loopback()
}

/// The lab's namespace range, 198.18.0.0/15: its network and prefix.
pub const LAB_RANGE: (Ipv4Addr, u8) = (Ipv4Addr::new(198, 18, 0, 0), 15);

/// Whether `ip` is in [`LAB_RANGE`].
pub fn in_lab_range(ip: IpAddr) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(v4) => {
            let (net, bits) = LAB_RANGE;
            u32::from(v4) >> (32 - bits) == u32::from(net) >> (32 - bits)
        }
        IpAddr::V6(_) => false,
    }
}

/// Where `ip netns` names its namespaces.
const RUN_NETNS: &str = "/run/netns";

/// Whether the calling thread runs in a network namespace the lab created
/// (see the module's doc). Anything it cannot read makes the answer no.
pub fn in_lab_netns() -> bool {
    let id = |path: &str| std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
    let Some(own) = id("/proc/thread-self/ns/net") else {
        return false;
    };
    // pid 1's namespace may be unreadable (a container without ptrace
    // access to it); then the name under /run/netns decides alone.
    if id("/proc/1/ns/net") == Some(own) {
        return false;
    }
    let Ok(entries) = std::fs::read_dir(RUN_NETNS) else {
        return false;
    };
    entries.flatten().any(|e| {
        e.file_name().to_string_lossy().starts_with("slowlab-")
            && std::fs::metadata(e.path()).ok().map(|m| (m.dev(), m.ino())) == Some(own)
    })
}

/// Whether a component may use `ip` without `--allow-remote`: loopback,
/// or the lab's range inside a lab namespace.
pub fn is_allowed(ip: IpAddr) -> bool {
    is_loopback(ip) || (in_lab_range(ip) && in_lab_netns())
}

/// A `--listen` or `--upstream` address outside loopback without
/// `--allow-remote`: bad input (exit status 2), refused before any socket
/// exists.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "refusing --{flag} {addr}: it is outside 127.0.0.0/8 and ::1; pass --allow-remote if you really mean {meaning}"
)]
pub struct RemoteRefused {
    /// The flag without its dashes (`listen`, `upstream`).
    pub flag: &'static str,
    pub addr: SocketAddr,
    /// What the user would mean by it ("to accept connections from other
    /// hosts").
    pub meaning: &'static str,
}

/// The first of `(flag, addr, meaning)` whose address is not allowed
/// ([`is_allowed`]), unless `allow_remote`.
pub fn check(
    allow_remote: bool,
    addrs: impl IntoIterator<Item = (&'static str, SocketAddr, &'static str)>,
) -> Result<(), RemoteRefused> {
    if allow_remote {
        return Ok(());
    }
    match addrs.into_iter().find(|(_, a, _)| !is_allowed(a.ip())) {
        Some((flag, addr, meaning)) => Err(RemoteRefused {
            flag,
            addr,
            meaning,
        }),
        None => Ok(()),
    }
}

/// What a listening socket on another interface would mean.
pub const LISTEN_MEANING: &str = "to accept connections from other hosts";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_passes() {
        for ip in ["127.0.0.1", "127.9.8.7", "::1", "::ffff:127.0.0.1"] {
            assert!(is_loopback(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["0.0.0.0", "::", "10.0.0.1", "192.0.2.1", "2001:db8::1"] {
            assert!(!is_loopback(ip.parse().unwrap()), "{ip}");
        }
        let any: SocketAddr = "0.0.0.0:0".parse().unwrap();
        let err = check(false, [("listen", any, LISTEN_MEANING)]).expect_err("refused");
        assert_eq!(err.flag, "listen");
        assert!(err.to_string().starts_with("refusing --listen 0.0.0.0:0"));
        assert!(err.to_string().contains("--allow-remote"));
        assert_eq!(check(true, [("listen", any, LISTEN_MEANING)]), Ok(()));
    }

    #[test]
    fn the_lab_range_passes_only_inside_a_lab_namespace() {
        for ip in ["198.18.0.1", "198.19.255.254", "::ffff:198.18.0.2"] {
            assert!(in_lab_range(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["198.17.255.255", "198.20.0.0", "10.0.0.1", "2001:db8::1"] {
            assert!(!in_lab_range(ip.parse().unwrap()), "{ip}");
        }
        // The tests run in the host's namespace (or in one that is not the
        // lab's), so the range is refused here like any other address.
        assert!(!in_lab_netns());
        let lab: SocketAddr = "198.18.0.1:80".parse().unwrap();
        assert!(check(false, [("listen", lab, LISTEN_MEANING)]).is_err());
    }
}
