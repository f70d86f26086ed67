//! `--link`: a shaped server-to-client path. The server's veth end gets a
//! token bucket (`tc qdisc ... tbf`), so the bytes a server sends to the
//! clients leave at the link's rate, and the slow readers read as fast as
//! they can (the slow-client kind `link`, against `pace`, readers that
//! pace their own reads on an unshaped path).
//!
//! `per=` says who shares one rate-`r` bottleneck. `per=link` (the
//! default): one tbf that every slow client shares, so `n` readers get
//! `r / n` each. `per=client`: each slow client sits behind its own thin
//! link, as real slow clients do: it has its own address on the client's
//! veth ([`client_addr`], bound by `slowlab load --slow-bind`), and the
//! veth end carries an htb with one class per client (rate and ceil `r`,
//! burst and cburst `burst`), chosen by a u32 filter on the client's
//! address (destination on the server's end, source on the client's),
//! each class with a `bfifo` of `limit` bytes, the tbf's queue; anything
//! else (no slowlab client) takes a default class shaped the same way.
//! (sch_fq's per-flow pacing would do it without addresses, but not every
//! kernel has it; htb and u32 are everywhere.)
//!
//! Defaults, from the rate `r`:
//! - `burst`: 10 ms of `r`, at least 16 KiB. tbf sends at most `burst`
//!   above the rate at once; 10 ms keeps a run of seconds within 1% of
//!   `r`, and 16 KiB holds a few full-size frames (the kernel splits a
//!   larger GSO packet, so any burst of at least one MTU works).
//! - `limit`: 100 ms of `r`, at least twice the burst: the queue a
//!   typical access router holds before it drops (a shallow, not a
//!   bufferbloated, link).

use std::fmt;
use std::net::Ipv4Addr;

use common::units::Size;

/// The slowest `--link` rate: 8 KiB/s, below which a /large of MiBs takes
/// hours.
pub const MIN_RATE: u64 = 8 << 10;
/// The fastest: 1 GiB/s, about what one veth carries on a small machine.
pub const MAX_RATE: u64 = 1 << 30;
/// tbf's burst: one MTU to 64 MiB.
pub const MIN_BURST: u64 = 1514;
pub const MAX_BURST: u64 = 64 << 20;
/// tbf's queue limit: one MTU to 1 GiB.
pub const MIN_LIMIT: u64 = 1514;
pub const MAX_LIMIT: u64 = 1 << 30;

/// How the slow clients are slow (`runs.csv` `slow_kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SlowKind {
    /// The readers pace their reads (`--slow-rate`) on an unshaped path.
    Pace,
    /// The readers read as fast as they can behind a shaped link.
    Link,
}

impl SlowKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SlowKind::Pace => "pace",
            SlowKind::Link => "link",
        }
    }
}

/// Who shares one rate-`r` bottleneck (`per=`, see the module's doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    /// One tbf that every slow client shares.
    #[default]
    Link,
    /// Each slow client its own htb class.
    Client,
}

impl Per {
    pub fn as_str(self) -> &'static str {
        match self {
            Per::Link => "link",
            Per::Client => "client",
        }
    }
}

/// The most slow clients a per-client link makes room for (the load
/// generator's most slow clients of one kind).
pub const MAX_CLIENTS: u32 = common::bounds::MAX_SLOW_READERS as u32;

/// Slow client `i`'s address behind a per-client link: 198.19.0.1 + `i`,
/// in the lab's range, outside every veth's /30 (198.18.0.0/24).
pub fn client_addr(i: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(CLIENTS_NET.0) + 1 + i)
}

/// Where [`client_addr`]s live: 198.19.0.0/16, routed by the server's
/// namespace to the client's end of link 0.
pub const CLIENTS_NET: (Ipv4Addr, u8) = (Ipv4Addr::new(198, 19, 0, 0), 16);

/// The htb class of slow client `i` (`1:10` is client 0; tc's minor
/// numbers are hexadecimal), and of everything else.
pub fn client_class(i: u32) -> String {
    format!("1:{:x}", 0x10 + i)
}
pub const DEFAULT_CLASS: &str = "1:1";

/// Which address of a packet picks its class: the destination on the
/// server's veth end (what it sends to a client), the source on the
/// client's (what a client sends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    Dst,
    Src,
}

/// A shaped link: its rate, bucket and queue, in bytes, and who shares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Link {
    /// Bytes per second.
    pub rate: u64,
    pub burst: u64,
    pub limit: u64,
    pub per: Per,
}

impl Link {
    /// The shared link with the default burst and limit for `rate`.
    pub fn at(rate: u64) -> Link {
        let burst = (rate / 100).clamp(16 << 10, MAX_BURST);
        Link {
            rate,
            burst,
            limit: (rate / 10).max(2 * burst).min(MAX_LIMIT),
            per: Per::Link,
        }
    }

    /// This link, `per` who.
    pub fn per(self, per: Per) -> Link {
        Link { per, ..self }
    }

    /// The `tc -batch` lines that shape `dev`: one tbf per link; per
    /// client, the htb, its default class and one class, bfifo and filter
    /// per address of `clients` (client `i` in [`client_class`]`(i)`).
    pub fn tc_lines(&self, dev: &str, by: Match, clients: &[Ipv4Addr]) -> Vec<String> {
        let rate = format!("{}bit", self.rate * 8);
        let (burst, limit) = (self.burst, self.limit);
        if self.per == Per::Link {
            return vec![format!(
                "qdisc add dev {dev} root tbf rate {rate} burst {burst} limit {limit}"
            )];
        }
        // Classes never borrow (ceil = rate), so the quantum only has to
        // be in htb's range; one 64 KiB GSO packet keeps it quiet.
        let class = |id: &str| {
            [
                format!(
                    "class add dev {dev} parent 1: classid {id} htb rate {rate} ceil {rate} burst {burst} cburst {burst} quantum 65536"
                ),
                format!("qdisc add dev {dev} parent {id} bfifo limit {limit}"),
            ]
        };
        let mut lines = vec![format!("qdisc add dev {dev} root handle 1: htb default 1")];
        lines.extend(class(DEFAULT_CLASS));
        let field = match by {
            Match::Dst => "dst",
            Match::Src => "src",
        };
        for (i, addr) in clients.iter().enumerate() {
            let id = client_class(i as u32);
            lines.extend(class(&id));
            lines.push(format!(
                "filter add dev {dev} parent 1: protocol ip prio 1 u32 match ip {field} {addr}/32 flowid {id}"
            ));
        }
        lines
    }

    /// The bytes each of `n` readers gets per second: a share of a shared
    /// link, all of a per-client one.
    pub fn share(&self, n: u32) -> u64 {
        match self.per {
            Per::Link => self.rate / u64::from(n.max(1)),
            Per::Client => self.rate,
        }
    }
}

impl fmt::Display for Link {
    /// What `parse` reads back; `per=link`, the default, is left out, so a
    /// shared link reads as it always has.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rate={},burst={},limit={}",
            Size(self.rate),
            Size(self.burst),
            Size(self.limit)
        )?;
        match self.per {
            Per::Link => Ok(()),
            Per::Client => f.write_str(",per=client"),
        }
    }
}

/// Parses `rate=2MiB[,burst=SIZE][,limit=SIZE][,per=link|client]` (clap
/// value parser; its error is one line and exit status 2).
pub fn parse(s: &str) -> Result<Link, String> {
    let (mut rate, mut burst, mut limit, mut per) = (None, None, None, None);
    for part in s.split(',').map(str::trim) {
        if part.is_empty() {
            return Err(format!(
                "`{s}` has an empty part (rate=2MiB[,burst=...][,limit=...][,per=...])"
            ));
        }
        let (k, v) = part.split_once('=').ok_or_else(|| {
            format!("`{part}` is not key=value (rate=2MiB[,burst=...][,limit=...][,per=...])")
        })?;
        let (slot, min, max) = match k.trim() {
            "rate" => (&mut rate, MIN_RATE, MAX_RATE),
            "burst" => (&mut burst, MIN_BURST, MAX_BURST),
            "limit" => (&mut limit, MIN_LIMIT, MAX_LIMIT),
            "per" => {
                if per.is_some() {
                    return Err("`per` given twice".into());
                }
                per = Some(match v.trim() {
                    "link" => Per::Link,
                    "client" => Per::Client,
                    other => return Err(format!("per=`{other}`: expected link or client")),
                });
                continue;
            }
            other => return Err(format!("unknown key `{other}` (rate, burst, limit, per)")),
        };
        if slot.is_some() {
            return Err(format!("`{}` given twice", k.trim()));
        }
        let v = common::bounds::size_in(min, max)(v).map_err(|e| format!("{}: {e}", k.trim()))?;
        *slot = Some(v.bytes());
    }
    let rate = rate.ok_or("rate= is required (rate=2MiB[,burst=...][,limit=...][,per=...])")?;
    let d = Link::at(rate);
    Ok(Link {
        rate,
        burst: burst.unwrap_or(d.burst),
        limit: limit.unwrap_or(d.limit),
        per: per.unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_mtu_is_from_1280_to_65535() {
        use crate::net::parse_mtu;
        assert_eq!(parse_mtu("1280"), Ok(1280));
        assert_eq!(parse_mtu("65535"), Ok(65535));
        for bad in ["1279", "65536", "0", "-1", "9k", ""] {
            let e = parse_mtu(bad).unwrap_err();
            assert!(e.contains("1280 to 65535") && !e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn parses_with_defaults_and_ranges() {
        let l = parse("rate=4MiB").unwrap();
        assert_eq!(l.rate, 4 << 20);
        assert_eq!(l.burst, (4 << 20) / 100);
        assert_eq!(l.limit, (4 << 20) / 10);
        let l = parse("rate=64KiB").unwrap();
        assert_eq!((l.burst, l.limit), (16 << 10, 32 << 10));
        let l = parse("rate=2MiB,burst=32KiB,limit=1MiB").unwrap();
        assert_eq!((l.rate, l.burst, l.limit), (2 << 20, 32 << 10, 1 << 20));
        assert_eq!(parse(&l.to_string()).unwrap(), l);
        assert_eq!(l.per, Per::Link);
        assert_eq!(l.to_string(), "rate=2MiB,burst=32KiB,limit=1MiB");
        let c = parse("rate=2MiB,per=client").unwrap();
        assert_eq!(c, Link::at(2 << 20).per(Per::Client));
        assert_eq!(parse(&c.to_string()).unwrap(), c);
        assert_eq!(parse("rate=2MiB,per=link").unwrap(), Link::at(2 << 20));
        assert_eq!((c.share(2), Link::at(2 << 20).share(2)), (2 << 20, 1 << 20));
        for bad in [
            "rate=2MiB,per=flow",
            "rate=2MiB,,",
            "rate=2MiB,",
            ",rate=2MiB",
            "rate=2MiB,per=client,per=link",
            "",
            "burst=32KiB",
            "rate=1",
            "rate=2GiB",
            "rate=2MiB,rate=2MiB",
            "rate=2MiB,delay=10ms",
            "rate=two",
            "2MiB",
            "rate=2MiB,burst=100",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(!e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn tbf_takes_bits_per_second() {
        let a = Link::at(2 << 20).tc_lines("v", Match::Dst, &[client_addr(0)]);
        assert_eq!(
            a,
            ["qdisc add dev v root tbf rate 16777216bit burst 20971 limit 209715"]
        );
    }

    #[test]
    fn per_client_is_an_htb_class_per_address() {
        let l = Link::at(2 << 20).per(Per::Client);
        let addrs = [client_addr(0), client_addr(1)];
        assert_eq!(addrs[1].to_string(), "198.19.0.2");
        assert!(
            addrs
                .iter()
                .all(|a| common::loopback::in_lab_range((*a).into()))
        );
        assert_eq!(
            (client_class(0), client_class(16)),
            ("1:10".into(), "1:20".into())
        );
        let lines = l.tc_lines("v", Match::Src, &addrs);
        // The root, the default class and its bfifo, then three per client.
        assert_eq!(lines.len(), 3 + 3 * 2);
        assert_eq!(lines[0], "qdisc add dev v root handle 1: htb default 1");
        assert!(lines[1].contains("classid 1:1 htb rate 16777216bit ceil 16777216bit"));
        assert_eq!(lines[7], "qdisc add dev v parent 1:11 bfifo limit 209715");
        assert_eq!(
            lines[8],
            "filter add dev v parent 1: protocol ip prio 1 u32 match ip src 198.19.0.2/32 flowid 1:11"
        );
    }
}
