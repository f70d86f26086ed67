//! The network dimensions of a condition: the namespace buffer cell
//! (`tcp_wmem` max, `tcp_rmem` max) and the slow-client kind (`pace`, or
//! `link` at a rate). `condition::net_spec` turns a condition's own
//! dimensions into its run's `NetSpec`.
//!
//! Precedence: a dimension the condition sets itself (the `buffers` and
//! `link` presets do) wins; the run-wide `--netns`, `--sysctl` and
//! `--link` fill the dimensions a condition leaves unset, as they did
//! before conditions had them. A run-wide flag that sets what a planned
//! condition sets itself (`--sysctl net.ipv4.tcp_wmem=...` with the
//! `buffers` grid, `--link` with the `link` preset's paced conditions, or
//! another rate) is refused before anything runs.

use crate::net::{Per, SlowKind, Sysctl};

/// The sysctl keys of a buffer cell.
pub const WMEM: &str = "net.ipv4.tcp_wmem";
pub const RMEM: &str = "net.ipv4.tcp_rmem";

/// The `min default` a cell writes before its max: the kernel's own
/// defaults (`tcp_wmem` 4096 16384, `tcp_rmem` 4096 131072), so a cell
/// changes only how far a buffer may autotune.
const WMEM_LOW: &str = "4096 16384";
const RMEM_LOW: &str = "4096 131072";

/// The namespace buffer cell: `tcp_wmem` max and `tcp_rmem` max written
/// in both namespaces (server and client side), and the MTU the buffers
/// grow at. `None`: not set by the condition (the run-wide `--sysctl`s and
/// `--mtu`, else the host's defaults and the veth's 1500). Read back from
/// a row's cells ([`condition_of`]), `mtu` is the path's as recorded: the
/// veths' in namespaces, the loopback's on the host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct BufferCell {
    pub wmem: Option<u64>,
    pub rmem: Option<u64>,
    pub mtu: Option<u32>,
}

impl BufferCell {
    pub fn is_set(&self) -> bool {
        self.wmem.is_some() || self.rmem.is_some() || self.mtu.is_some()
    }

    /// The `--sysctl`s of the cell, through the one `--sysctl` parser.
    pub fn sysctls(&self) -> Vec<Sysctl> {
        [(WMEM, WMEM_LOW, self.wmem), (RMEM, RMEM_LOW, self.rmem)]
            .into_iter()
            .filter_map(|(key, low, max)| {
                let max = max?;
                // Cannot fail: both keys are in netns::ALLOWED and the
                // value is three whole numbers.
                Some(
                    format!("{key}={low} {max}")
                        .parse()
                        .expect("a cell's sysctl"),
                )
            })
            .collect()
    }

    /// The cell a run's `sysctls` cell (`runs.csv`) amounts to: the max of
    /// each key written in both namespaces. A key set on one side only is
    /// not a cell (it stays visible in the `sysctls` column).
    pub fn from_sysctls(cell: Option<&str>) -> BufferCell {
        let mut out = BufferCell::default();
        for s in Sysctl::from_cell(cell)
            .into_iter()
            .filter(|s| s.side.is_none())
        {
            let max = s.triple().map(|t| t[2]);
            match s.key.as_str() {
                WMEM => out.wmem = max,
                RMEM => out.rmem = max,
                _ => {}
            }
        }
        out
    }
}

/// How a condition's slow clients are slow, when the condition says so.
/// Either runs in the lab's namespaces; `Pace` on an unshaped veth, so the
/// two kinds differ only by the tbf.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Kind {
    /// The readers pace their reads at the profile's `slow_rate`.
    Pace,
    /// The readers read unpaced behind a link shaped at `rate` bytes/s
    /// (`netns::Link::at`'s burst and limit), shared or `per` client.
    Link { rate: u64, per: Per },
}

impl Kind {
    pub fn slow_kind(self) -> SlowKind {
        match self {
            Kind::Pace => SlowKind::Pace,
            Kind::Link { .. } => SlowKind::Link,
        }
    }

    /// The kind `runs.csv`'s `netns`, `slow_kind` and `link` cells record:
    /// none for a run on the host's loopback.
    pub fn of_cells(
        netns: Option<bool>,
        slow_kind: Option<&str>,
        link: Option<&str>,
    ) -> Option<Kind> {
        match (slow_kind, link.map(crate::net::link::parse)) {
            (Some("link"), Some(Ok(l))) => Some(Kind::Link {
                rate: l.rate,
                per: l.per,
            }),
            _ if netns == Some(true) => Some(Kind::Pace),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::Link;

    #[test]
    fn kinds_read_back_from_the_cells() {
        assert_eq!(Kind::of_cells(None, None, None), None);
        assert_eq!(Kind::of_cells(Some(false), Some("pace"), None), None);
        assert_eq!(
            Kind::of_cells(Some(true), Some("pace"), None),
            Some(Kind::Pace)
        );
        let l = Link::at(2 << 20).to_string();
        assert_eq!(
            Kind::of_cells(Some(true), Some("link"), Some(&l)),
            Some(Kind::Link {
                rate: 2 << 20,
                per: Per::Link
            })
        );
    }
}
