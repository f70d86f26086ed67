//! `--link`: a shaped server-to-client path. The server's veth end gets a
//! token bucket (`tc qdisc ... tbf`), so the bytes a server sends to the
//! clients leave at the link's rate, and the slow readers read as fast as
//! they can (the slow-client kind `link`, against `pace`, readers that
//! pace their own reads on an unshaped path).
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

/// A shaped link: its rate, bucket and queue, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Link {
    /// Bytes per second.
    pub rate: u64,
    pub burst: u64,
    pub limit: u64,
}

impl Link {
    /// The link with the default burst and limit for `rate`.
    pub fn at(rate: u64) -> Link {
        let burst = (rate / 100).clamp(16 << 10, MAX_BURST);
        Link {
            rate,
            burst,
            limit: (rate / 10).max(2 * burst).min(MAX_LIMIT),
        }
    }

    /// `tc qdisc add dev DEV root tbf ...`'s arguments after `dev DEV`.
    pub fn tbf_args(&self) -> Vec<String> {
        [
            "root".to_string(),
            "tbf".into(),
            "rate".into(),
            format!("{}bit", self.rate * 8),
            "burst".into(),
            self.burst.to_string(),
            "limit".into(),
            self.limit.to_string(),
        ]
        .into()
    }

    /// The bytes `n` readers sharing the link each get per second.
    pub fn share(&self, n: u32) -> u64 {
        self.rate / u64::from(n.max(1))
    }
}

impl fmt::Display for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rate={},burst={},limit={}",
            Size(self.rate),
            Size(self.burst),
            Size(self.limit)
        )
    }
}

/// Parses `rate=2MiB[,burst=SIZE][,limit=SIZE]` (clap value parser; its
/// error is one line and exit status 2).
pub fn parse(s: &str) -> Result<Link, String> {
    let (mut rate, mut burst, mut limit) = (None, None, None);
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').ok_or_else(|| {
            format!("`{part}` is not key=value (rate=2MiB[,burst=...][,limit=...])")
        })?;
        let (slot, min, max) = match k.trim() {
            "rate" => (&mut rate, MIN_RATE, MAX_RATE),
            "burst" => (&mut burst, MIN_BURST, MAX_BURST),
            "limit" => (&mut limit, MIN_LIMIT, MAX_LIMIT),
            other => return Err(format!("unknown key `{other}` (rate, burst, limit)")),
        };
        if slot.is_some() {
            return Err(format!("`{}` given twice", k.trim()));
        }
        let v = common::bounds::size_in(min, max)(v).map_err(|e| format!("{}: {e}", k.trim()))?;
        *slot = Some(v.bytes());
    }
    let rate = rate.ok_or("rate= is required (rate=2MiB[,burst=...][,limit=...])")?;
    let d = Link::at(rate);
    Ok(Link {
        rate,
        burst: burst.unwrap_or(d.burst),
        limit: limit.unwrap_or(d.limit),
    })
}

/// Why the kernel has no netem (delay and loss), or none when it has it:
/// tried once on `dev` in the namespace `ns` and removed again.
pub fn netem_missing(ns: &str, dev: &str) -> Option<String> {
    let add = [
        "-n", ns, "qdisc", "add", "dev", dev, "root", "netem", "delay", "1ms",
    ];
    match super::ip::run("tc", &add) {
        Ok(()) => {
            let _ = super::ip::run("tc", &["-n", ns, "qdisc", "del", "dev", dev, "root"]);
            None
        }
        Err(e) => Some(format!(
            "no netem in this kernel: links are shaped by rate only, without delay or loss ({e:#})"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_mtu_is_from_1280_to_65535() {
        use crate::netns::parse_mtu;
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
        for bad in [
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
        let a = Link::at(2 << 20).tbf_args();
        assert_eq!(a[3], format!("{}bit", 16u64 << 20));
    }
}
