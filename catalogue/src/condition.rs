//! One cell of the matrix ([`Condition`]): a server, a route, how many
//! slow clients and which way they are slow, and its network and reader
//! dimensions; and the one function that turns a condition's own
//! dimensions into its run's [`NetSpec`] ([`net_spec`]).

use common::units::Size;

use crate::cells::{BufferCell, Kind};
use crate::names::Direction;
use crate::net::{Link, NetSpec, Per};
use crate::reader::ReaderModel;
use crate::route::Route;
use crate::server::Server;

/// One cell of the matrix. The last three dimensions are `dims.rs`'s:
/// unset, the preset's profile (reader) or the run-wide flags (network)
/// decide; in conditions read back from rows, unset means not recorded
/// (reader) or the host's loopback and buffers (network).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct Condition {
    pub server: Server,
    pub route: Route,
    pub slow: u32,
    /// What the `slow` clients do: read `/large` slowly, upload slowly, or
    /// send their request head slowly.
    pub direction: Direction,
    /// How the slow readers read (`slowlab load --reader`).
    pub reader: Option<ReaderModel>,
    /// `tcp_wmem`/`tcp_rmem` max in both namespaces.
    pub buffers: BufferCell,
    /// How the slow clients are slow (implies namespaces).
    pub kind: Option<Kind>,
    /// How many of the `slow` downloads share one connection as HTTP/2
    /// streams (`slowlab load --streams-per-conn`): 1, each its own
    /// connection, on every HTTP/1 edge.
    pub streams_per_conn: u32,
    /// The HTTP/2 stream window the slow readers advertise
    /// (`SETTINGS_INITIAL_WINDOW_SIZE`, `slowlab load --h2-window`); unset,
    /// HTTP/2's default ([`H2_DEFAULT_WINDOW`]) on an HTTP/2 edge and
    /// nothing on an HTTP/1 one.
    pub h2_window: Option<u32>,
}

/// HTTP/2's initial stream and connection window, 65,535 bytes (RFC 9113,
/// 6.9.2), which `slowlab load --h2-window` defaults to.
pub const H2_DEFAULT_WINDOW: u32 = 65_535;

impl Condition {
    /// A condition with none of `dims.rs`'s dimensions set.
    pub fn new(server: Server, route: Route, slow: u32, direction: Direction) -> Condition {
        Condition {
            server,
            route,
            slow,
            direction,
            reader: None,
            buffers: BufferCell::default(),
            kind: None,
            streams_per_conn: 1,
            h2_window: None,
        }
    }

    /// The slow clients' connections: the slow downloads grouped
    /// `streams_per_conn` to a connection (the last one may carry fewer).
    pub fn connections(&self) -> u32 {
        self.readers().div_ceil(self.streams_per_conn.max(1))
    }

    /// The HTTP/2 stream window the slow readers advertise on an HTTP/2
    /// edge: the condition's, else the default; none on an HTTP/1 edge.
    pub fn h2_window_on_edge(&self) -> Option<u32> {
        self.route
            .edge()
            .http2
            .then(|| self.h2_window.unwrap_or(H2_DEFAULT_WINDOW))
    }

    /// This condition's namespaces over the run-wide ones
    /// ([`net_spec`]).
    pub fn net_spec(&self, wide: Option<&NetSpec>) -> Result<Option<NetSpec>, String> {
        net_spec(self, wide)
    }

    /// The dimensions this condition sets that act on its slow clients,
    /// as `--only` spells them, each after a space (empty when it sets
    /// none): the reader only where slow clients read `/large`.
    pub fn dims_label(&self) -> String {
        let mut out = String::new();
        if let Some(r) = self
            .reader
            .filter(|_| self.direction == Direction::Download)
        {
            out += &format!(" reader={r}");
        }
        for (name, v) in [("wmem", self.buffers.wmem), ("rmem", self.buffers.rmem)] {
            if let Some(v) = v {
                out += &format!(" {name}={}", common::units::Size(v));
            }
        }
        match self.kind {
            Some(Kind::Pace) => out += " kind=pace",
            Some(Kind::Link { rate, per }) => {
                let each = match per {
                    Per::Link => "",
                    Per::Client => " per client",
                };
                out += &format!(" kind=link({}/s{each})", common::units::Size(rate))
            }
            None => {}
        }
        if let Some(m) = self.buffers.mtu {
            out += &format!(" mtu={m}");
        }
        if self.streams_per_conn != 1 {
            out += &format!(" spc={}", self.streams_per_conn);
        }
        if let Some(w) = self.h2_window {
            out += &format!(" h2-window={w}");
        }
        out
    }

    /// The same stack and direction with `slow` slow clients; at 0, its
    /// baseline, where no downloads share a connection (streams per
    /// connection 1, as the `h2` preset plans its baselines).
    pub fn at(self, slow: u32) -> Condition {
        let streams_per_conn = match slow {
            0 => 1,
            _ => self.streams_per_conn,
        };
        Condition {
            slow,
            streams_per_conn,
            ..self
        }
    }

    /// Slow uploaders of `POST /upload` (only in the upload direction).
    pub fn uploaders(&self) -> u32 {
        if self.direction == Direction::Upload {
            self.slow
        } else {
            0
        }
    }

    /// Slowloris clients (only in the headers direction).
    pub fn slowloris(&self) -> u32 {
        if self.direction == Direction::Headers {
            self.slow
        } else {
            0
        }
    }

    /// Slow readers of `/large` (none in the request direction).
    pub fn readers(&self) -> u32 {
        if self.direction == Direction::Download {
            self.slow
        } else {
            0
        }
    }
}

impl std::fmt::Display for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.direction {
            Direction::Download => "slow",
            Direction::Upload => "slow uploads",
            Direction::Headers => "slowloris",
        };
        write!(
            f,
            "{} {} {} {what}{}",
            self.server,
            self.route,
            self.slow,
            self.dims_label()
        )
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
    fn a_baseline_has_no_shared_connections() {
        let c = Condition {
            streams_per_conn: 8,
            ..Condition::new(Server::RustSync2, Route::NginxH2Off, 8, Direction::Download)
        };
        assert_eq!(c.connections(), 1);
        assert_eq!(c.at(0).streams_per_conn, 1);
        assert_eq!(c.at(0).connections(), 0);
        assert_eq!(c.at(4).streams_per_conn, 8);
        assert_eq!(
            c.at(0),
            Condition::new(Server::RustSync2, Route::NginxH2Off, 0, Direction::Download)
        );
        assert_eq!(c.h2_window_on_edge(), Some(H2_DEFAULT_WINDOW));
        assert_eq!(c.at(0).dims_label(), "");
        assert_eq!(c.dims_label(), " spc=8");
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
}
