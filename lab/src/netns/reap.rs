//! Our names, and the namespaces of a harness that died: `slowlab-<pid>-
//! <n>-server|client` under `/run/netns`, veths `sl<pid>-<n>s|c` and, for
//! the `/fast` path, `sl<pid>-<n>f|g` (at most
//! 15 characters: a pid has at most 7 digits, `n` at most 4). The veths
//! are created inside the namespaces and go with them; one found in the
//! host's namespace (a harness killed between two `ip` commands) is
//! removed too.

use super::{Side, ip};
use crate::procfs::gone as dead;

/// Where `ip netns` keeps its named namespaces.
pub const RUN_NETNS: &str = "/run/netns";

pub fn netns_name(pid: u32, n: u32, side: Side) -> String {
    format!("slowlab-{pid}-{n}-{side}")
}

/// The veth end of `side` on link `k` (0: `s`/`c`, the shaped path; 1:
/// `f`/`g`, the `/fast` client's unshaped path).
pub fn veth_name(pid: u32, n: u32, k: u8, side: Side) -> String {
    let end = match (k, side) {
        (0, Side::Server) => 's',
        (0, Side::Client) => 'c',
        (_, Side::Server) => 'f',
        (_, Side::Client) => 'g',
    };
    format!("sl{pid}-{n}{end}")
}

/// The pid in one of our namespace names.
fn netns_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("slowlab-")?;
    let (pid, rest) = rest.split_once('-')?;
    let (n, side) = rest.split_once('-')?;
    (["server", "client"].contains(&side) && n.parse::<u32>().is_ok()).then_some(())?;
    pid.parse().ok()
}

/// The pid in one of our veth names.
fn veth_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("sl")?;
    let (pid, rest) = rest.split_once('-')?;
    let n = rest.strip_suffix(['s', 'c', 'f', 'g'])?;
    n.parse::<u32>().ok()?;
    pid.parse().ok()
}

/// Deletes the namespaces (and stray host veths) that harnesses which no
/// longer run left behind; returns how many. Nothing to do without `ip`.
pub fn reap_stale() -> usize {
    let mut reaped = 0;
    let names: Vec<String> = std::fs::read_dir(RUN_NETNS)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    for name in names {
        if netns_owner(&name).is_some_and(dead) && ip::ip(&["netns", "del", &name]).is_ok() {
            reaped += 1;
        }
    }
    let links = ip::ip_output(&["-o", "link", "show"]).unwrap_or_default();
    for line in links.lines() {
        // `7: sl123-0s@if6: <...` : the name ends at `@` or `:`.
        let Some(name) = line.split(": ").nth(1).and_then(|n| n.split('@').next()) else {
            continue;
        };
        if veth_owner(name).is_some_and(dead) && ip::ip(&["link", "del", name]).is_ok() {
            reaped += 1;
        }
    }
    reaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_pid_and_fit_an_interface_name() {
        for side in Side::ALL {
            let ns = netns_name(4_194_304, 9_999, side);
            assert_eq!(netns_owner(&ns), Some(4_194_304), "{ns}");
            for k in [0, 1] {
                let veth = veth_name(4_194_304, 9_999, k, side);
                assert!(veth.len() <= 15, "{veth}");
                assert_eq!(veth_owner(&veth), Some(4_194_304), "{veth}");
            }
        }
        assert_eq!(netns_owner("slowlab-12-x-server"), None);
        assert_eq!(netns_owner("slowlab-12-0-other"), None);
        assert_eq!(netns_owner("other-12-0-server"), None);
        assert_eq!(veth_owner("slack-0s"), None);
        assert_eq!(veth_owner("sl12-0x"), None);
        assert_eq!(veth_owner("eth0"), None);
    }
}
