//! The lab's loopback-only rule, shared by `serve`, `proxy` and `load`:
//! an address outside 127.0.0.0/8 and ::1 is refused before any socket
//! exists, unless the user passed `--allow-remote`.

use std::net::{IpAddr, SocketAddr};

/// Whether `ip` is in 127.0.0.0/8 or is ::1 (also as an IPv4-mapped address).
pub fn is_loopback(ip: IpAddr) -> bool {
    ip.to_canonical().is_loopback()
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

/// The first of `(flag, addr, meaning)` whose address is not loopback,
/// unless `allow_remote`.
pub fn check(
    allow_remote: bool,
    addrs: impl IntoIterator<Item = (&'static str, SocketAddr, &'static str)>,
) -> Result<(), RemoteRefused> {
    if allow_remote {
        return Ok(());
    }
    match addrs.into_iter().find(|(_, a, _)| !is_loopback(a.ip())) {
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
}
