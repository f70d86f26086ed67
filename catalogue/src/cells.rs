//! The network and reader dimensions of a [`Condition`]: the reader model,
//! the namespace buffer cell (`tcp_wmem` max, `tcp_rmem` max) and the
//! slow-client kind (`pace`, or `link` at a rate), and the one function
//! that turns a condition's own dimensions into its run's
//! [`NetSpec`] ([`net_spec`]).
//!
//! Precedence: a dimension the condition sets itself (the `buffers` and
//! `link` presets do) wins; the run-wide `--netns`, `--sysctl` and
//! `--link` fill the dimensions a condition leaves unset, as they did
//! before conditions had them. A run-wide flag that sets what a planned
//! condition sets itself (`--sysctl net.ipv4.tcp_wmem=...` with the
//! `buffers` grid, `--link` with the `link` preset's paced conditions, or
//! another rate) is refused before anything runs.

use common::units::Size;

use crate::net::{Link, NetSpec, Per, SlowKind, Sysctl};
use crate::preset::Condition;

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

/// The run's namespaces for condition `c`: its own dimensions over the
/// run-wide `wide` (see the module's precedence); none when neither asks
/// for namespaces. The error is one line naming the contradiction.
pub fn net_spec(c: &Condition, wide: Option<&NetSpec>) -> Result<Option<NetSpec>, String> {
    // The condition's direction and slow clients are the one source of
    // the load's part of the spec (its shaped ends, the per-client link's
    // clients), and this is the one function that turns a condition into
    // its spec.
    if !c.buffers.is_set() && c.kind.is_none() {
        return Ok(wide.map(|w| w.for_load(c.direction, c.slow)));
    }
    let mut spec = wide.cloned().unwrap_or_default();
    for s in c.buffers.sysctls() {
        if let Some(w) = spec.sysctls.iter().find(|w| w.key == s.key) {
            return Err(format!(
                "--sysctl {w} contradicts condition `{c}`, which sets {} itself in both namespaces (leave the flag out; pick cells with --only wmem=/rmem=)",
                s.key
            ));
        }
        spec.sysctls.push(s);
    }
    match (c.buffers.mtu, spec.mtu) {
        (Some(own), Some(w)) if own != w => {
            return Err(format!(
                "--mtu {w} contradicts condition `{c}`, whose veths run at MTU {own} (leave the flag out)"
            ));
        }
        (Some(own), _) => spec.mtu = Some(own),
        _ => {}
    }
    match (c.kind, spec.link) {
        (Some(Kind::Pace), Some(l)) => {
            return Err(format!(
                "--link {l} contradicts condition `{c}`, whose slow clients pace their reads (leave the flag out, or --only kind=link)"
            ));
        }
        (Some(Kind::Link { rate, per }), Some(l)) if l.rate != rate || l.per != per => {
            return Err(format!(
                "--link {l} contradicts condition `{c}`, whose link runs at {}/s per {}",
                Size(rate),
                per.as_str()
            ));
        }
        (Some(Kind::Link { rate, per }), None) => spec.link = Some(Link::at(rate).per(per)),
        _ => {}
    }
    Ok(Some(spec.for_load(c.direction, c.slow)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::Direction;
    use crate::route::Route;
    use crate::server::Server;

    fn cell(w: u64, r: u64) -> Condition {
        Condition {
            buffers: BufferCell {
                wmem: Some(w),
                rmem: Some(r),
                mtu: None,
            },
            ..Condition::new(Server::RustSync2, Route::Direct, 2, Direction::Download)
        }
    }

    #[test]
    fn a_cell_is_two_sysctls_in_both_namespaces_and_reads_back() {
        let c = cell(256 << 10, 16 << 20);
        let spec = net_spec(&c, None)
            .unwrap()
            .expect("a cell needs namespaces");
        let text = spec.sysctls_cell();
        assert_eq!(
            text,
            "net.ipv4.tcp_wmem=4096 16384 262144;net.ipv4.tcp_rmem=4096 131072 16777216"
        );
        assert!(spec.sysctls.iter().all(|s| s.side.is_none()));
        assert_eq!(spec.link, None);
        assert_eq!(BufferCell::from_sysctls(Some(&text)), c.buffers);
        // One side only is not a cell.
        assert_eq!(
            BufferCell::from_sysctls(Some("server:net.ipv4.tcp_wmem=4096 16384 524288")),
            BufferCell::default()
        );
    }

    #[test]
    fn run_wide_flags_fill_what_a_condition_leaves_unset_and_contradictions_are_refused() {
        let plain = Condition::new(Server::RustSync2, Route::Direct, 2, Direction::Download);
        assert_eq!(net_spec(&plain, None).unwrap(), None);
        let wide = NetSpec {
            sysctls: vec!["net.ipv4.tcp_notsent_lowat=131072".parse().unwrap()],
            link: None,
            clients: 0,
            uploads: false,
            mtu: None,
        };
        assert_eq!(
            net_spec(&plain, Some(&wide)).unwrap(),
            Some(wide.for_load(Direction::Download, 2))
        );
        // The cell adds to the run-wide sysctls of other keys.
        let spec = net_spec(&cell(1 << 20, 1 << 20), Some(&wide))
            .unwrap()
            .unwrap();
        assert_eq!(spec.sysctls.len(), 3);
        let clash = NetSpec {
            sysctls: vec![
                "server:net.ipv4.tcp_wmem=4096 16384 524288"
                    .parse()
                    .unwrap(),
            ],
            link: None,
            clients: 0,
            uploads: false,
            mtu: None,
        };
        let e = net_spec(&cell(1 << 20, 1 << 20), Some(&clash)).unwrap_err();
        assert!(e.contains("contradicts") && !e.contains('\n'), "{e}");
        // Kinds: a link condition gets its link; a paced one refuses --link.
        let link = Condition {
            kind: Some(Kind::Link {
                rate: 2 << 20,
                per: Per::Link,
            }),
            ..plain
        };
        let spec = net_spec(&link, None).unwrap().unwrap();
        assert_eq!(spec.link, Some(Link::at(2 << 20)));
        let pace = Condition {
            kind: Some(Kind::Pace),
            ..plain
        };
        assert_eq!(
            net_spec(&pace, None).unwrap(),
            Some(NetSpec::default().for_load(Direction::Download, 2))
        );
        let wide_link = NetSpec {
            link: Some(Link::at(8 << 20)),
            ..NetSpec::default()
        };
        assert!(net_spec(&pace, Some(&wide_link)).is_err());
        assert!(net_spec(&link, Some(&wide_link)).is_err());
        let same = NetSpec {
            link: Some(Link::at(2 << 20)),
            ..NetSpec::default()
        };
        assert!(net_spec(&link, Some(&same)).is_ok());
        // A condition without its own kind takes the run-wide link.
        assert_eq!(
            net_spec(&plain, Some(&wide_link)).unwrap().unwrap().link,
            Some(Link::at(8 << 20))
        );
    }

    #[test]
    fn a_condition_s_mtu_reaches_its_spec_and_a_contradicting_mtu_is_refused() {
        let plain = Condition::new(Server::RustSync2, Route::Direct, 2, Direction::Download);
        let wide = |mtu| NetSpec {
            mtu: Some(mtu),
            ..NetSpec::default()
        };
        // A run-wide --mtu alone fills a plain condition's spec.
        assert_eq!(
            net_spec(&plain, Some(&wide(9000))).unwrap().unwrap().mtu,
            Some(9000)
        );
        let own = Condition {
            buffers: BufferCell {
                mtu: Some(65535),
                ..cell(16 << 20, 16 << 20).buffers
            },
            ..plain
        };
        let spec = net_spec(&own, None).unwrap().unwrap();
        assert_eq!(spec.mtu, Some(65535));
        assert_eq!(spec.sysctls.len(), 2);
        assert_eq!(
            net_spec(&own, Some(&wide(65535))).unwrap().unwrap().mtu,
            Some(65535)
        );
        let e = net_spec(&own, Some(&wide(1500))).unwrap_err();
        assert!(
            e.contains("--mtu 1500 contradicts") && !e.contains('\n'),
            "{e}"
        );
        // A cell without its own MTU keeps the veth default.
        assert_eq!(
            net_spec(&cell(1 << 20, 1 << 20), None)
                .unwrap()
                .unwrap()
                .mtu,
            None
        );
    }

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
