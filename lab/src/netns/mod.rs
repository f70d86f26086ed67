//! Network namespaces as part of a run: the server side (app and proxy) in
//! one namespace, the client side (load generator) in another, joined by a
//! veth pair whose addresses come from 198.18.0.0/15 (RFC 2544's
//! benchmarking range). The addresses exist only inside the two
//! namespaces: no default route, no link to the host, so nothing a run
//! sends can leave them. Every run uses the same addresses; they never
//! meet because each run has its own pair of namespaces.
//!
//! Names carry the harness pid and a run counter
//! (`slowlab-<pid>-<n>-server`, veths `sl<pid>-<n>s`), so a harness killed
//! with SIGKILL has its namespaces removed at the next start ([`reap`]),
//! by the liveness rule of cgroups and scratch directories.
//!
//! # Layout
//! - `args.rs`: `--netns`, `--sysctl`, the record in `environment.json`.
//! - `ip.rs`: `ip` commands with one-line errors; [`within`], a closure on a
//!   thread inside a namespace.
//! - `sysctl.rs`: `--sysctl`, the per-namespace TCP keys.
//! - `reap.rs`: our names and the removal of a dead harness's namespaces.
//! - `link.rs`: `--link`, the tbf on the server's veth end (or, per
//!   client, the htb with a class per slow client), the slow-client kind.

mod args;
mod ip;
mod netem;
mod reap;
mod sysctl;

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{Context, Result};

pub use args::{NetnsArgs, environment};
pub use catalogue::net::{
    ALLOWED, Link, MTU_RANGE, NetSpec, Per, Side, SlowKind, Sysctl, VETH_DEFAULT_MTU, link,
    parse_mtu, parse_sysctl, parse_triple, reader_rate, slow_kind,
};
pub use ip::{enter, within};
pub use netem::netem_missing;
pub use reap::reap_stale;
pub use sysctl::{read_in as read_sysctl_in, write_in as write_sysctl_in};

/// The server end of link `k` is `198.18.0.(4k+1)/30`, the client end
/// `.(4k+2)`. Link 0 is the one every run has; a later link (a second,
/// differently shaped path) takes the next /30.
pub fn link_addrs(k: u8) -> (Ipv4Addr, Ipv4Addr) {
    let base = 4 * k;
    (
        Ipv4Addr::new(198, 18, 0, base + 1),
        Ipv4Addr::new(198, 18, 0, base + 2),
    )
}

/// Why this machine cannot give a run its namespaces, or none when it can:
/// not root, no `ip`, or `SLOWLAB_NO_NETNS` set (to simulate either).
pub fn unavailable() -> Option<String> {
    if std::env::var_os("SLOWLAB_NO_NETNS").is_some_and(|v| !v.is_empty()) {
        return Some("network namespaces are off (SLOWLAB_NO_NETNS is set)".into());
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("network namespaces need root (the harness is not running as root)".into());
    }
    if ip::ip_output(&["-V"]).is_none() {
        return Some("network namespaces need `ip` (iproute2), which is not installed".into());
    }
    None
}

/// Where a component runs: its namespace (none: the host's) and the
/// address it listens on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub netns: Option<PathBuf>,
    pub ip: IpAddr,
}

impl Place {
    /// The host's namespace, on 127.0.0.1.
    pub fn host() -> Place {
        Place {
            netns: None,
            ip: Ipv4Addr::LOCALHOST.into(),
        }
    }

    /// The same namespace on its 127.0.0.1 (the app behind a proxy).
    pub fn loopback(&self) -> Place {
        Place {
            netns: self.netns.clone(),
            ip: Ipv4Addr::LOCALHOST.into(),
        }
    }
}

/// One created namespace.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Namespace {
    pub side: Side,
    pub name: String,
    /// Its veth end and that end's address (link 0: the path every client
    /// but `/fast` takes, shaped with `--link`).
    pub veth: String,
    pub addr: Ipv4Addr,
    /// Its end of the second veth pair (link 1), never shaped: the path of
    /// the `/fast` client, as an unrelated fast client would have.
    pub fast_veth: String,
    pub fast_addr: Ipv4Addr,
    /// The TCP sysctls of this namespace after the run's `--sysctl`s were
    /// written (the keys of `catalogue::net::RECORDED_SYSCTLS` that exist inside it).
    pub sysctls: std::collections::BTreeMap<String, String>,
}

impl Namespace {
    /// `/run/netns/NAME`, which `setns(2)` opens.
    pub fn path(&self) -> PathBuf {
        Path::new(reap::RUN_NETNS).join(&self.name)
    }
}

/// A run's two namespaces and their two veth pairs. Dropping it deletes
/// both namespaces (which deletes the veths and any qdisc on them). Drop it
/// after the processes inside have stopped.
///
/// The second pair is the `/fast` client's unshaped path: the client binds
/// its `/fast` sockets to the client's `fast_addr` (`slowlab load
/// --fast-bind`, see [`NetLab::binds`]), and a policy rule in the client
/// namespace sends what leaves from that address over the second pair, to
/// the same server address (`entry`); the server's answers to `fast_addr`
/// leave by the second pair's connected route. The server listens as
/// without it.
///
/// A per-client link adds the slow clients' addresses
/// ([`link::client_addr`], 198.19.0.0/16) to the client's end of the first
/// pair as /32s, and a route to them in the server namespace by way of the
/// client's `addr`; slow client `i` binds its own (`--slow-bind`).
#[derive(Debug)]
pub struct NetLab {
    pub server: Namespace,
    pub client: Namespace,
    /// The veth ends that carry the link's tbf (or htb).
    pub shaped: Vec<Side>,
    /// The per-client link's slow-client addresses (client `i` at `i`);
    /// empty without one.
    pub client_addrs: Vec<Ipv4Addr>,
    /// The link is per client: its shaped ends carry an htb.
    pub per_client: bool,
}

/// Namespaces made so far by [`NetLab::create`], deleted if it fails
/// before the whole lab exists.
struct Partial(Vec<String>);

impl Drop for Partial {
    fn drop(&mut self) {
        for name in &self.0 {
            let _ = ip::ip(&["netns", "del", name]);
        }
    }
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// Turns IPv6 off on `dev` in the namespace at `netns` before it is up:
/// the lab's addresses are IPv4, and a veth with IPv6 sends neighbour
/// discovery and multicast reports of its own (some 600 bytes in its first
/// seconds) that a qdisc's counters would count with the run's bytes. A
/// kernel without IPv6 has nothing to turn off.
fn no_ipv6(netns: &Path, dev: &str) {
    let path = format!("/proc/sys/net/ipv6/conf/{dev}/disable_ipv6");
    if Path::new("/proc/sys/net/ipv6").exists() {
        if let Err(e) = within(Some(netns), || Ok(std::fs::write(&path, "1")?)) {
            tracing::warn!(cause = %format!("{e:#}"), dev, "IPv6 stays on");
        }
    }
}

/// The client namespace's routing table of the `/fast` path.
const FAST_TABLE: &str = "100";

impl NetLab {
    /// Creates the namespaces, the veth pair, the addresses and loopback,
    /// and writes `spec`'s sysctls. On any failure what was made is
    /// removed again.
    pub fn create(spec: &NetSpec) -> Result<NetLab> {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed) % 10_000;
        let pid = std::process::id();
        let (saddr, caddr) = link_addrs(0);
        let (fast_saddr, fast_caddr) = link_addrs(1);
        let ns = |side: Side, addr, fast_addr| Namespace {
            side,
            name: reap::netns_name(pid, n, side),
            veth: reap::veth_name(pid, n, 0, side),
            addr,
            fast_veth: reap::veth_name(pid, n, 1, side),
            fast_addr,
            sysctls: Default::default(),
        };
        let mut made = Partial(vec![]);
        for side in Side::ALL {
            let name = reap::netns_name(pid, n, side);
            ip::ip(&["netns", "add", &name])?;
            made.0.push(name);
        }
        let server = ns(Side::Server, saddr, fast_saddr);
        let client = ns(Side::Client, caddr, fast_caddr);
        for (s, c) in [
            (&server.veth, &client.veth),
            (&server.fast_veth, &client.fast_veth),
        ] {
            ip::ip(&[
                "link",
                "add",
                s,
                "netns",
                &server.name,
                "type",
                "veth",
                "peer",
                "name",
                c,
                "netns",
                &client.name,
            ])?;
        }
        for end in [&server, &client] {
            ip::ip(&["-n", &end.name, "link", "set", "lo", "up"])?;
            for (veth, addr) in [(&end.veth, end.addr), (&end.fast_veth, end.fast_addr)] {
                no_ipv6(&end.path(), veth);
                let cidr = format!("{addr}/30");
                ip::ip(&["-n", &end.name, "addr", "add", &cidr, "dev", veth])?;
                if let Some(mtu) = spec.mtu {
                    let mtu = mtu.to_string();
                    ip::ip(&["-n", &end.name, "link", "set", veth, "mtu", &mtu])?;
                }
                ip::ip(&["-n", &end.name, "link", "set", veth, "up"])?;
            }
        }
        // What leaves the client from its fast address goes to the server's
        // address over the second pair (table 100 holds that one route).
        let from = client.fast_addr.to_string();
        let to = format!("{}/32", server.addr);
        let c = client.name.as_str();
        ip::ip(&["-n", c, "rule", "add", "from", &from, "lookup", FAST_TABLE])?;
        ip::ip(&[
            "-n",
            c,
            "route",
            "add",
            &to,
            "dev",
            &client.fast_veth,
            "src",
            &from,
            "table",
            FAST_TABLE,
        ])?;
        let client_addrs = spec.client_addrs();
        if !client_addrs.is_empty() {
            let lines: Vec<String> = client_addrs
                .iter()
                .map(|a| format!("addr add {a}/32 dev {}", client.veth))
                .collect();
            ip::batch("ip", c, &lines).context("adding the slow clients' addresses")?;
            let (net, bits) = link::CLIENTS_NET;
            let to = format!("{net}/{bits}");
            let via = client.addr.to_string();
            let s = server.name.as_str();
            ip::ip(&[
                "-n",
                s,
                "route",
                "add",
                &to,
                "via",
                &via,
                "dev",
                &server.veth,
            ])?;
        }
        // From here the NetLab's own Drop removes the namespaces (and the
        // qdiscs and addresses in them).
        made.0.clear();
        let mut lab = NetLab {
            server,
            client,
            shaped: spec.shaped(),
            client_addrs,
            per_client: spec.link.is_some_and(|l| l.per == Per::Client),
        };
        for side in lab.shaped.clone() {
            let link = spec.link.expect("shaped() is empty without a link");
            let ns = lab.side(side);
            let by = match side {
                Side::Server => link::Match::Dst,
                Side::Client => link::Match::Src,
            };
            let lines = link.tc_lines(&ns.veth, by, &lab.client_addrs);
            ip::batch("tc", &ns.name, &lines)
                .with_context(|| format!("shaping the link at its {side} end"))?;
        }
        for s in &spec.sysctls {
            for end in [&lab.server, &lab.client] {
                if s.applies_to(end.side) {
                    sysctl::write_in(s, &end.path())?;
                }
            }
        }
        for end in [&mut lab.server, &mut lab.client] {
            let path = end.path();
            end.sysctls = catalogue::net::RECORDED_SYSCTLS
                .iter()
                .filter_map(|k| Some((k.to_string(), sysctl::read_in(Some(&path), k)?)))
                .collect();
        }
        Ok(lab)
    }

    /// The server side's place for the component clients connect to (the
    /// proxy, or the app on the direct route).
    pub fn entry(&self) -> Place {
        Place {
            netns: Some(self.server.path()),
            ip: self.server.addr.into(),
        }
    }

    /// The client side's place (the load generator).
    pub fn client_place(&self) -> Place {
        Place {
            netns: Some(self.client.path()),
            ip: self.client.addr.into(),
        }
    }

    /// The address the `/fast` client binds its sockets to, so that they
    /// take the unshaped second pair (`--fast-bind` of `slowlab load` and
    /// `sweep-load`).
    pub fn fast_bind(&self) -> IpAddr {
        self.client.fast_addr.into()
    }

    /// The load generator's `--fast-bind` and, with a per-client link,
    /// `--slow-bind` (slow client 0's address).
    pub fn binds(&self) -> loadgen::bind::BindArgs {
        loadgen::bind::BindArgs {
            fast_bind: Some(self.fast_bind()),
            slow_bind: self.client_addrs.first().map(|&a| a.into()),
        }
    }

    /// Runs `ip -n NS ARGS` in `side`'s namespace (a qdisc on its veth end,
    /// a route): one-line errors like every `ip` the lab runs.
    pub fn ip(&self, side: Side, args: &[&str]) -> Result<()> {
        let ns = self.side(side);
        let mut all = vec!["-n", ns.name.as_str()];
        all.extend_from_slice(args);
        ip::ip(&all).with_context(|| format!("in the {side} namespace"))
    }

    pub fn side(&self, side: Side) -> &Namespace {
        match side {
            Side::Server => &self.server,
            Side::Client => &self.client,
        }
    }

    /// `tc -s -j qdisc show dev VETH` of `side`'s veth end, parsed: the
    /// root qdisc's kind and counters, none when `tc` fails.
    pub fn qdisc(&self, side: Side) -> Option<QdiscStats> {
        self.qdisc_probe(side).read().into_iter().next()
    }

    /// What reads `side`'s qdiscs, for a sampler thread that outlives no
    /// lab (it only names the namespace, the device and the classes).
    pub fn qdisc_probe(&self, side: Side) -> QdiscProbe {
        let ns = self.side(side);
        let mut classes: Vec<(String, Option<Ipv4Addr>)> = vec![];
        if self.per_client {
            classes.push((link::DEFAULT_CLASS.into(), None));
            classes.extend(
                self.client_addrs
                    .iter()
                    .enumerate()
                    .map(|(i, &a)| (link::client_class(i as u32), Some(a))),
            );
        }
        QdiscProbe {
            side,
            netns: ns.name.clone(),
            dev: ns.veth.clone(),
            classes,
        }
    }

    /// The probes of the veth ends `spec` shaped ([`NetSpec::shaped`]).
    pub fn shaped_qdiscs(&self) -> Vec<QdiscProbe> {
        self.shaped.iter().map(|&s| self.qdisc_probe(s)).collect()
    }

    /// What `environment.json` records of the namespaces.
    pub fn record(&self) -> serde_json::Value {
        serde_json::json!({
            "range": "198.18.0.0/15",
            "server": self.server,
            "client": self.client,
            "netem": netem_missing(&self.server.name, "lo")
                .unwrap_or_else(|| "available".into()),
        })
    }
}

impl Drop for NetLab {
    fn drop(&mut self) {
        for ns in [&self.client, &self.server] {
            if let Err(e) = ip::ip(&["netns", "del", &ns.name]) {
                tracing::warn!(cause = %format!("{e:#}"), "removing a namespace");
            }
        }
    }
}

/// The qdiscs of one veth end: read by `tc -s -j qdisc show` inside its
/// namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QdiscProbe {
    pub side: Side,
    /// The namespace's name (`ip netns`).
    pub netns: String,
    pub dev: String,
    /// A per-client link's htb classes and the slow-client address each
    /// shapes (none: the default class); empty for a tbf.
    pub classes: Vec<(String, Option<Ipv4Addr>)>,
}

impl QdiscProbe {
    /// The root qdisc's kind and counters, then (per client) each class's
    /// leaf `bfifo`; empty when `tc` fails (the namespace is gone, or `tc`
    /// is missing).
    pub fn read(&self) -> Vec<QdiscStats> {
        let args = [
            "-n",
            &self.netns,
            "-s",
            "-j",
            "qdisc",
            "show",
            "dev",
            &self.dev,
        ];
        ip::output("tc", &args)
            .map(|j| QdiscStats::parse(&j, &self.classes))
            .unwrap_or_default()
    }
}

/// The counters of a qdisc, as `tc -s -j` prints them: `bytes` and
/// `packets` sent, `drops`, `overlimits` (a packet that had to wait for
/// tokens), and the `backlog` (bytes) and `qlen` (packets) queued now.
/// The root (a tbf, or a per-client link's htb) counts the whole veth end;
/// a per-client class's leaf (a `bfifo`: no tokens, so `overlimits` 0)
/// counts what went to or came from its one client.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct QdiscStats {
    pub kind: String,
    /// The htb class a leaf hangs from (`1:10`); none for the root.
    #[serde(default)]
    pub parent: Option<String>,
    /// The slow-client address that class shapes; none for the root and
    /// the default class.
    #[serde(skip)]
    pub client: Option<Ipv4Addr>,
    #[serde(default)]
    pub bytes: u64,
    #[serde(default)]
    pub packets: u64,
    #[serde(default)]
    pub drops: u64,
    #[serde(default)]
    pub overlimits: u64,
    #[serde(default)]
    pub backlog: u64,
    #[serde(default)]
    pub qlen: u64,
}

impl QdiscStats {
    /// The root qdisc of `tc -s -j qdisc show dev X`'s output, then the
    /// leaves of `classes` in their order (a class whose leaf is missing
    /// gives none); empty when there is no root.
    pub fn parse(json: &str, classes: &[(String, Option<Ipv4Addr>)]) -> Vec<QdiscStats> {
        let Ok(all) = serde_json::from_str::<Vec<serde_json::Value>>(json) else {
            return vec![];
        };
        let stats = |v: &serde_json::Value| serde_json::from_value::<QdiscStats>(v.clone()).ok();
        let Some(mut root) = all
            .iter()
            .find(|q| q.get("root").is_some_and(|r| r == true))
            .and_then(stats)
        else {
            return vec![];
        };
        root.parent = None;
        let mut out = vec![root];
        for (class, client) in classes {
            let leaf = all
                .iter()
                .find(|q| q.get("parent").and_then(|p| p.as_str()) == Some(class.as_str()))
                .and_then(stats);
            out.extend(leaf.map(|l| QdiscStats {
                client: *client,
                ..l
            }));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use catalogue::Direction;

    #[test]
    fn a_load_sets_its_clients_and_only_uploaders_shape_the_clients_end() {
        let spec = NetSpec {
            link: Some(Link::at(4 << 20).per(Per::Client)),
            mtu: Some(9000),
            ..NetSpec::default()
        };
        for (direction, uploads, shaped) in [
            (Direction::Download, false, vec![Side::Server]),
            (Direction::Upload, true, vec![Side::Server, Side::Client]),
            (Direction::Headers, false, vec![Side::Server]),
        ] {
            let s = spec.for_load(direction, 3);
            assert_eq!((s.clients, s.uploads), (3, uploads), "{direction}");
            assert_eq!(s.shaped(), shaped, "{direction}");
            assert_eq!(s.client_addrs().len(), 3, "{direction}");
            // Everything else is the run's, untouched.
            assert_eq!((s.link, s.mtu), (spec.link, spec.mtu), "{direction}");
            let capped = spec.for_load(direction, u32::MAX);
            assert_eq!(capped.clients, link::MAX_CLIENTS, "{direction}");
        }
        // Without a link nothing is shaped, uploaders or not.
        let plain = NetSpec::default().for_load(Direction::Upload, 2);
        assert!(plain.uploads && plain.shaped().is_empty());
        assert!(plain.client_addrs().is_empty());
    }

    #[test]
    fn a_per_client_htb_reads_as_its_root_and_its_leaves() {
        let json = r#"[{"kind":"htb","handle":"1:","root":true,"bytes":300,"packets":3,"drops":1,"overlimits":7,"backlog":20,"qlen":1},
            {"kind":"bfifo","handle":"80b9:","parent":"1:10","bytes":200,"packets":2,"drops":1,"overlimits":0,"backlog":20,"qlen":1},
            {"kind":"bfifo","handle":"80ba:","parent":"1:1","bytes":100,"packets":1,"drops":0,"overlimits":0,"backlog":0,"qlen":0}]"#;
        let c0 = link::client_addr(0);
        let classes = [
            ("1:1".to_string(), None),
            ("1:10".to_string(), Some(c0)),
            ("1:11".to_string(), Some(link::client_addr(1))),
        ];
        let q = QdiscStats::parse(json, &classes);
        let seen: Vec<_> = q
            .iter()
            .map(|s| (s.kind.as_str(), s.parent.as_deref(), s.client, s.bytes))
            .collect();
        assert_eq!(
            seen,
            [
                ("htb", None, None, 300),
                ("bfifo", Some("1:1"), None, 100),
                ("bfifo", Some("1:10"), Some(c0), 200),
            ]
        );
        assert_eq!((q[0].drops, q[0].backlog, q[2].drops), (1, 20, 1));
        // A tbf: the root alone.
        let tbf = r#"[{"kind":"tbf","handle":"8001:","root":true,"bytes":5}]"#;
        assert_eq!(QdiscStats::parse(tbf, &[]).len(), 1);
        assert!(QdiscStats::parse("not json", &classes).is_empty());
    }
}
