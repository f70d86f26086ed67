//! `--fast-bind` and `--slow-bind`: the local addresses a load's sockets
//! are bound to before connect, shared by `slowlab load` and `slowlab
//! sweep-load`. The harness sets them in its namespaces: the `/fast`
//! client takes the unshaped second veth pair from its own address, and
//! with a per-client link (`--link rate=R,per=client`) slow client `i`
//! sits behind its own shaped class from address `first + i`. Both must
//! be IP addresses of the target's family, in 127.0.0.0/8 or ::1, or in
//! the lab's range inside a lab namespace, unless `--allow-remote`.

use std::ffi::OsString;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use anyhow::bail;
use socket2::Socket;

use crate::target::Target;

#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct BindArgs {
    /// Bind every /fast socket (load: the /fast client; sweep-load: its
    /// sessions) to this local address before connect (loopback, or the
    /// lab's range inside a lab namespace, unless --allow-remote). The
    /// harness sets it in its namespaces, so that /fast takes the unshaped
    /// veth pair.
    #[arg(long, value_name = "IP")]
    pub fast_bind: Option<IpAddr>,
    /// Bind slow client i (the i-th slow reader, uploader and slowloris
    /// client, counted from 0) to this address plus i, so that each sits
    /// behind its own per-client link (loopback, or the lab's range inside
    /// a lab namespace, unless --allow-remote; every address up to the
    /// last client's is checked). The harness sets it with
    /// --link ...,per=client.
    #[arg(long, value_name = "IP")]
    pub slow_bind: Option<IpAddr>,
}

impl BindArgs {
    /// The flags that parse back into these arguments.
    pub fn to_args(&self) -> Vec<OsString> {
        let BindArgs {
            fast_bind,
            slow_bind,
        } = self;
        let mut a: Vec<OsString> = vec![];
        for (flag, ip) in [("--fast-bind", fast_bind), ("--slow-bind", slow_bind)] {
            if let Some(ip) = ip {
                a.extend([flag.into(), ip.to_string().into()]);
            }
        }
        a
    }

    /// Checks both addresses for `slow` slow clients (of any kind) against
    /// `target`; the error is one line naming the flag.
    pub fn check(&self, target: &Target, allow_remote: bool, slow: usize) -> anyhow::Result<Binds> {
        let check = |flag: &str, ip: IpAddr| -> anyhow::Result<()> {
            if ip.is_ipv4() != target.addr.is_ipv4() {
                bail!(
                    "{flag} {ip} is not of the target's address family ({})",
                    target.addr.ip()
                );
            }
            if !allow_remote && !crate::target::is_allowed(ip) {
                bail!(
                    "{flag} {ip} is outside 127.0.0.0/8 and ::1 (and the lab's range inside its namespaces)"
                );
            }
            Ok(())
        };
        if let Some(ip) = self.fast_bind {
            check("--fast-bind", ip)?;
        }
        if let Some(first) = self.slow_bind {
            let Some(last) = nth(first, slow.saturating_sub(1)) else {
                bail!("--slow-bind {first} plus {slow} clients runs past the last address");
            };
            check("--slow-bind", first)?;
            if last != first {
                if let Err(e) = check("--slow-bind", last) {
                    bail!("the last slow client's address: {e:#}");
                }
            }
        }
        Ok(Binds {
            fast: self.fast_bind,
            slow: self.slow_bind,
        })
    }
}

/// The checked addresses of [`BindArgs`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Binds {
    pub fast: Option<IpAddr>,
    /// Slow client 0's address; client `i` binds this plus `i`.
    pub slow: Option<IpAddr>,
}

impl Binds {
    /// The address slow client `i` binds, if any.
    pub fn slow_client(&self, i: usize) -> Option<IpAddr> {
        self.slow.and_then(|first| nth(first, i))
    }
}

/// `first` plus `i`, none past the family's last address.
fn nth(first: IpAddr, i: usize) -> Option<IpAddr> {
    match first {
        IpAddr::V4(v4) => u32::try_from(i)
            .ok()
            .and_then(|i| u32::from(v4).checked_add(i))
            .map(|n| Ipv4Addr::from(n).into()),
        IpAddr::V6(v6) => u128::from(v6)
            .checked_add(i as u128)
            .map(|n| Ipv6Addr::from(n).into()),
    }
}

/// Binds `socket` to `ip` (any port) before its connect; nothing when
/// none. The one place a load's sockets get their local address.
pub fn bind(socket: &Socket, ip: Option<IpAddr>) -> io::Result<()> {
    match ip {
        Some(ip) => socket.bind(&SocketAddr::new(ip, 0).into()),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(fast: Option<&str>, slow: Option<&str>) -> BindArgs {
        BindArgs {
            fast_bind: fast.map(|s| s.parse().unwrap()),
            slow_bind: slow.map(|s| s.parse().unwrap()),
        }
    }

    #[test]
    fn the_addresses_are_checked() {
        let target = Target::resolve("http://127.0.0.1:9", false).unwrap();
        let ok = args(Some("127.0.0.2"), Some("127.0.0.10"))
            .check(&target, false, 3)
            .unwrap();
        assert_eq!(ok.fast, Some("127.0.0.2".parse().unwrap()));
        assert_eq!(ok.slow_client(2), Some("127.0.0.12".parse().unwrap()));
        assert_eq!(
            args(None, None).check(&target, false, 3).unwrap(),
            Binds::default()
        );
        for (a, needle) in [
            (args(Some("::1"), None), "address family"),
            (
                args(Some("192.0.2.1"), None),
                "--fast-bind 192.0.2.1 is outside",
            ),
            (
                args(None, Some("192.0.2.1")),
                "--slow-bind 192.0.2.1 is outside",
            ),
            // The first is loopback, the third is not.
            (args(None, Some("127.255.255.254")), "the last slow client"),
            (args(None, Some("255.255.255.255")), "past the last address"),
        ] {
            let e = a.check(&target, false, 3).unwrap_err().to_string();
            assert!(e.contains(needle) && !e.contains('\n'), "{a:?}: {e}");
        }
        assert!(
            args(Some("192.0.2.1"), Some("192.0.2.1"))
                .check(&target, true, 3)
                .is_ok()
        );
    }

    #[test]
    fn to_args_round_trips() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct P {
            #[command(flatten)]
            b: BindArgs,
        }
        for a in [
            args(None, None),
            args(Some("127.0.0.2"), Some("198.19.0.1")),
        ] {
            let argv = std::iter::once(OsString::from("p")).chain(a.to_args());
            assert_eq!(P::parse_from(argv).b, a);
        }
    }
}
