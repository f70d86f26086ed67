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
//! - `link.rs`: `--link`, the tbf on the server's veth end, the slow-client
//!   kind.

mod args;
mod ip;
pub mod link;
mod reap;
mod sysctl;

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{Context, Result};

pub use args::{NetnsArgs, environment, reap_and_report};
pub use ip::{enter, within};
pub use link::{Link, SlowKind};
pub use reap::reap_stale;
pub use sysctl::{ALLOWED, Sysctl, parse as parse_sysctl, read_in as read_sysctl_in};

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

    fn name(self) -> &'static str {
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
    /// direction).
    pub link: Option<Link>,
}

/// How the slow clients of a run with `spec` are slow.
pub fn slow_kind(spec: Option<&NetSpec>) -> SlowKind {
    match spec.and_then(|s| s.link) {
        Some(_) => SlowKind::Link,
        None => SlowKind::Pace,
    }
}

/// The `--slow-rate` a run's readers get: `paced` without a link; with
/// one, the loadgen's highest rate, which means "unpaced", so that the
/// link is the bottleneck.
pub fn reader_rate(spec: Option<&NetSpec>, paced: u64) -> u64 {
    match slow_kind(spec) {
        SlowKind::Pace => paced,
        SlowKind::Link => loadgen::config::MAX_SLOW_RATE,
    }
}

impl NetSpec {
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
    /// Its veth end and that end's address.
    pub veth: String,
    pub addr: Ipv4Addr,
    /// The TCP sysctls of this namespace after the run's `--sysctl`s were
    /// written (the keys of `envinfo::SYSCTLS` that exist inside it).
    pub sysctls: std::collections::BTreeMap<String, String>,
}

impl Namespace {
    /// `/run/netns/NAME`, which `setns(2)` opens.
    pub fn path(&self) -> PathBuf {
        Path::new(reap::RUN_NETNS).join(&self.name)
    }
}

/// A run's two namespaces and their veth pair. Dropping it deletes both
/// namespaces (which deletes the veths and any qdisc on them). Drop it
/// after the processes inside have stopped.
#[derive(Debug)]
pub struct NetLab {
    pub server: Namespace,
    pub client: Namespace,
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

impl NetLab {
    /// Creates the namespaces, the veth pair, the addresses and loopback,
    /// and writes `spec`'s sysctls. On any failure what was made is
    /// removed again.
    pub fn create(spec: &NetSpec) -> Result<NetLab> {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed) % 10_000;
        let pid = std::process::id();
        let (saddr, caddr) = link_addrs(0);
        let ns = |side: Side, addr| Namespace {
            side,
            name: reap::netns_name(pid, n, side),
            veth: reap::veth_name(pid, n, side),
            addr,
            sysctls: Default::default(),
        };
        let mut made = Partial(vec![]);
        for side in Side::ALL {
            let name = reap::netns_name(pid, n, side);
            ip::ip(&["netns", "add", &name])?;
            made.0.push(name);
        }
        let (server, client) = (ns(Side::Server, saddr), ns(Side::Client, caddr));
        ip::ip(&[
            "link",
            "add",
            &server.veth,
            "netns",
            &server.name,
            "type",
            "veth",
            "peer",
            "name",
            &client.veth,
            "netns",
            &client.name,
        ])?;
        for end in [&server, &client] {
            let cidr = format!("{}/30", end.addr);
            ip::ip(&["-n", &end.name, "addr", "add", &cidr, "dev", &end.veth])?;
            ip::ip(&["-n", &end.name, "link", "set", "lo", "up"])?;
            ip::ip(&["-n", &end.name, "link", "set", &end.veth, "up"])?;
        }
        // From here the NetLab's own Drop removes the namespaces (and the
        // qdiscs on their veths).
        made.0.clear();
        let mut lab = NetLab { server, client };
        if let Some(link) = &spec.link {
            let mut args = vec![
                "-n",
                &lab.server.name,
                "qdisc",
                "add",
                "dev",
                &lab.server.veth,
            ];
            let tbf = link.tbf_args();
            args.extend(tbf.iter().map(String::as_str));
            ip::run("tc", &args).context("shaping the server-to-client link")?;
        }
        for s in &spec.sysctls {
            for end in [&lab.server, &lab.client] {
                if s.applies_to(end.side) {
                    s.write_in(&end.path())?;
                }
            }
        }
        for end in [&mut lab.server, &mut lab.client] {
            let path = end.path();
            end.sysctls = crate::envinfo::SYSCTLS
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
        let ns = self.side(side);
        let out = ip::output(
            "tc",
            &["-n", &ns.name, "-s", "-j", "qdisc", "show", "dev", &ns.veth],
        )?;
        QdiscStats::parse_root(&out)
    }

    /// What `environment.json` records of the namespaces.
    pub fn record(&self) -> serde_json::Value {
        serde_json::json!({
            "range": "198.18.0.0/15",
            "server": self.server,
            "client": self.client,
            "netem": link::netem_missing(&self.server.name, "lo")
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

/// The counters of a root qdisc, as `tc -s -j` prints them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct QdiscStats {
    pub kind: String,
    #[serde(default)]
    pub bytes: u64,
    #[serde(default)]
    pub packets: u64,
    #[serde(default)]
    pub drops: u64,
    #[serde(default)]
    pub backlog: u64,
    #[serde(default)]
    pub qlen: u64,
}

impl QdiscStats {
    /// The root qdisc of `tc -s -j qdisc show dev X`'s output.
    pub fn parse_root(json: &str) -> Option<QdiscStats> {
        let all: Vec<serde_json::Value> = serde_json::from_str(json).ok()?;
        let root = all
            .into_iter()
            .find(|q| q.get("root").is_some_and(|r| r == true))?;
        serde_json::from_value(root).ok()
    }
}
