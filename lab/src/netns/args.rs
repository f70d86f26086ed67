//! The flags that put a run in namespaces, flattened into `reproduce`,
//! `sweep` and `check`.

use super::{NetSpec, Sysctl};

#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct NetnsArgs {
    /// Run the app and the proxy in a server network namespace and the
    /// load generator in a client namespace, joined by a veth pair on
    /// 198.18.0.0/15 (needs root and `ip`; otherwise the runs are skipped
    /// with one line).
    #[arg(long)]
    pub netns: bool,
    /// A TCP sysctl written inside the run's namespaces, never on the
    /// host: `[server:|client:]net.ipv4.tcp_wmem="4096 16384 16777216"`
    /// (no side: both). Repeatable; implies --netns. Only per-namespace
    /// `net.ipv4.tcp_*` keys.
    #[arg(long = "sysctl", value_name = "[SIDE:]KEY=VALUE", value_parser = super::parse_sysctl)]
    pub sysctls: Vec<Sysctl>,
    /// A shaped server-to-client link:
    /// `rate=2MiB[,burst=SIZE][,limit=SIZE][,per=link|client]` (rate 8KiB
    /// to 1GiB per second; burst default 10 ms of the rate, at least
    /// 16KiB; limit default 100 ms, at least twice the burst). per=link
    /// (the default): one tbf on the server's veth end that all slow
    /// clients share; per=client: each slow client behind its own link of
    /// that rate (an htb class per client address). The slow readers read
    /// as fast as they can (slow-client kind `link`). Implies --netns.
    #[arg(long, value_name = "rate=SIZE[,burst=SIZE][,limit=SIZE][,per=link|client]", value_parser = super::link::parse)]
    pub link: Option<super::Link>,
    /// The MTU of the lab's veth pairs, 1280 to 65535 (default: the
    /// veth's 1500; the host's loopback has 65536). Implies --netns.
    #[arg(long, value_name = "N", value_parser = super::parse_mtu)]
    pub mtu: Option<u32>,
}

impl NetnsArgs {
    /// What the runs ask of the namespaces; none without --netns,
    /// --sysctl, --link or --mtu.
    pub fn spec(&self) -> Option<NetSpec> {
        let asked = self.netns || !self.sysctls.is_empty() || self.link.is_some();
        (asked || self.mtu.is_some()).then(|| NetSpec {
            sysctls: self.sysctls.clone(),
            link: self.link,
            clients: 0,
            uploads: false,
            mtu: self.mtu,
        })
    }
}

/// `environment.json`'s `netns`: none without namespaces; the reason when
/// the machine cannot make them; else what a pair made with `spec`
/// holds (each side's TCP sysctls, read inside it).
pub fn environment(spec: Option<&NetSpec>) -> serde_json::Value {
    let Some(spec) = spec else {
        return serde_json::Value::Null;
    };
    let requested: Vec<String> = spec.sysctls.iter().map(|s| s.to_string()).collect();
    if let Some(why) = super::unavailable() {
        return serde_json::json!({"requested": requested, "unavailable": why});
    }
    match super::NetLab::create(spec) {
        Ok(lab) => {
            let mut v = lab.record();
            v["requested"] = requested.into();
            v["slow_kind"] = super::slow_kind(Some(spec)).as_str().into();
            v["link"] = spec.link.map(|l| l.to_string()).into();
            // The run-wide --mtu (null: none); a condition's own MTU is
            // in each run's `runs.csv` row.
            v["mtu"] = spec.mtu.into();
            v
        }
        Err(e) => serde_json::json!({"requested": requested, "error": format!("{e:#}")}),
    }
}
