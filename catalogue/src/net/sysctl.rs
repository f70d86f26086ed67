//! `--sysctl [server:|client:]KEY=VALUE`: TCP sysctls written inside the
//! run's namespaces, never on the host.
//!
//! Only keys that are per network namespace on this kernel are accepted:
//! the `net.ipv4.tcp_*` buffer keys of [`ALLOWED`] (checked by the test
//! `a_key_set_in_a_namespace_leaves_the_host_alone`, which sets each in a
//! namespace and reads the host's). `net.core.rmem_max`/`wmem_max` and
//! friends are refused: older kernels share them with the host, and this
//! one (6.x) gives each namespace a read-only copy of the host's values.

use std::fmt;
use std::str::FromStr;

use common::exit::BadInput;

use super::Side;

/// The keys `--sysctl` accepts.
pub const ALLOWED: [&str; 9] = [
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_moderate_rcvbuf",
    "net.ipv4.tcp_notsent_lowat",
    "net.ipv4.tcp_autocorking",
    "net.ipv4.tcp_limit_output_bytes",
    "net.ipv4.tcp_adv_win_scale",
    "net.ipv4.tcp_window_scaling",
    "net.ipv4.tcp_slow_start_after_idle",
];

/// One `--sysctl`: which namespaces (none named: both), the key, the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sysctl {
    pub side: Option<Side>,
    pub key: String,
    pub value: String,
}

impl Sysctl {
    /// Whether it applies to `side`'s namespace.
    pub fn applies_to(&self, side: Side) -> bool {
        self.side.is_none_or(|s| s == side)
    }

    /// The `--sysctl`s of a `runs.csv` `sysctls` cell
    /// ([`super::NetSpec::sysctls_cell`]), `;` between them; a part that
    /// does not parse is left out.
    pub fn from_cell(cell: Option<&str>) -> Vec<Sysctl> {
        cell.unwrap_or("")
            .split(';')
            .filter_map(|s| s.parse().ok())
            .collect()
    }

    /// The value as a `min default max` triple (`tcp_wmem`, `tcp_rmem`).
    pub fn triple(&self) -> Option<[u64; 3]> {
        triple(&self.value)
    }
}

/// A sysctl value of exactly three whole numbers, `min default max` (as
/// `tcp_wmem` and `tcp_rmem` read and are written).
pub fn triple(value: &str) -> Option<[u64; 3]> {
    let mut words = value.split_whitespace().map(|w| w.parse::<u64>().ok());
    let t = [words.next()??, words.next()??, words.next()??];
    words.next().is_none().then_some(t)
}

impl FromStr for Sysctl {
    type Err = BadInput;

    fn from_str(s: &str) -> Result<Self, BadInput> {
        let bad = |why: String| BadInput(format!("--sysctl {s:?}: {why}"));
        let (side, rest) = match s.split_once(':') {
            Some(("server", rest)) => (Some(Side::Server), rest),
            Some(("client", rest)) => (Some(Side::Client), rest),
            Some((other, _)) if !other.contains('=') => {
                return Err(bad(format!("unknown side `{other}` (server or client)")));
            }
            _ => (None, s),
        };
        let (key, value) = rest
            .split_once('=')
            .ok_or_else(|| bad("expected KEY=VALUE".into()))?;
        let key = key.trim().replace('/', ".");
        let value = value
            .trim()
            .trim_matches('"')
            .split_whitespace()
            .collect::<Vec<_>>();
        if !ALLOWED.contains(&key.as_str()) {
            let why = if key.starts_with("net.core.") {
                "net.core.* is not per network namespace on this kernel (a namespace gets a read-only copy of the host's)".to_string()
            } else {
                format!(
                    "not a per-namespace TCP key slowlab sets ({})",
                    ALLOWED.join(", ")
                )
            };
            return Err(bad(why));
        }
        check_value(&key, &value).map_err(bad)?;
        Ok(Sysctl {
            side,
            key,
            value: value.join(" "),
        })
    }
}

/// What the kernel takes for `key`: how many numbers, and the range of
/// each (as `net/ipv4/sysctl_net_ipv4.c` of 6.x bounds them).
fn value_shape(key: &str) -> (usize, i64, i64) {
    const INT_MAX: i64 = i32::MAX as i64;
    match key {
        "net.ipv4.tcp_wmem" | "net.ipv4.tcp_rmem" => (3, 1, INT_MAX),
        "net.ipv4.tcp_adv_win_scale" => (1, -31, 31),
        "net.ipv4.tcp_notsent_lowat" => (1, 0, u32::MAX as i64),
        "net.ipv4.tcp_limit_output_bytes" => (1, 0, INT_MAX),
        // tcp_moderate_rcvbuf, tcp_autocorking, tcp_window_scaling,
        // tcp_slow_start_after_idle: on or off.
        _ => (1, 0, 1),
    }
}

/// Refuses a value the kernel would refuse or take wrongly: the wrong
/// count of numbers, a number out of its range, or a `min default max`
/// triple out of order (the kernel writes it as given, and the namespace
/// would then run with a default above its max).
fn check_value(key: &str, words: &[&str]) -> Result<(), String> {
    let (count, lo, hi) = value_shape(key);
    let numbers: Vec<i64> = words
        .iter()
        .map(|w| w.parse::<i64>())
        .collect::<Result<_, _>>()
        .map_err(|_| "the value must be whole numbers".to_string())?;
    if numbers.len() != count {
        return Err(if count == 3 {
            format!(
                "the value must be three numbers, min default max (got {})",
                numbers.len()
            )
        } else {
            format!("the value must be one number (got {})", numbers.len())
        });
    }
    if let Some(n) = numbers.iter().find(|&&n| n < lo || n > hi) {
        return Err(format!("{n} is out of range ({lo} to {hi})"));
    }
    if count == 3 && !(numbers[0] <= numbers[1] && numbers[1] <= numbers[2]) {
        return Err(format!(
            "min {} default {} max {} are out of order (min <= default <= max)",
            numbers[0], numbers[1], numbers[2]
        ));
    }
    Ok(())
}

impl fmt::Display for Sysctl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(side) = self.side {
            write!(f, "{side}:")?;
        }
        write!(f, "{}={}", self.key, self.value)
    }
}

/// The clap value parser of `--sysctl`.
pub fn parse(s: &str) -> Result<Sysctl, String> {
    s.parse().map_err(|e: BadInput| e.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_keys_and_values_parse() {
        let s: Sysctl = "server:net.ipv4.tcp_wmem=\"4096 16384 524288\""
            .parse()
            .unwrap();
        assert_eq!(s.side, Some(Side::Server));
        assert_eq!(s.value, "4096 16384 524288");
        assert_eq!(s.to_string(), "server:net.ipv4.tcp_wmem=4096 16384 524288");
        assert_eq!(s.to_string().parse::<Sysctl>().unwrap(), s);
        let both: Sysctl = "net.ipv4.tcp_rmem=4096 131072 1048576".parse().unwrap();
        assert!(both.applies_to(Side::Server) && both.applies_to(Side::Client));
        assert!(!s.applies_to(Side::Client));
        for bad in [
            "net.core.wmem_max=8388608",
            "net.ipv4.tcp_mem=1 2 3",
            "kernel.pid_max=5",
            "middle:net.ipv4.tcp_wmem=1 2 3",
            "net.ipv4.tcp_wmem",
            "net.ipv4.tcp_wmem=lots",
            "net.ipv4.tcp_wmem=4096 16384",
            "net.ipv4.tcp_wmem=4096 16384 1 2",
            "net.ipv4.tcp_wmem=65536 16384 8192",
            "net.ipv4.tcp_rmem=0 16384 65536",
            "net.ipv4.tcp_rmem=4096 16384 4294967296",
            "net.ipv4.tcp_autocorking=2",
            "net.ipv4.tcp_notsent_lowat=1 2",
            "net.ipv4.tcp_adv_win_scale=32",
        ] {
            let err = bad.parse::<Sysctl>().expect_err(bad).0;
            assert!(err.starts_with("--sysctl") && !err.contains('\n'), "{err}");
        }
        assert!(
            parse("net.ipv4.tcp_wmem=9 8 7")
                .unwrap_err()
                .contains("out of order")
        );
        assert!(
            parse("net.ipv4.tcp_wmem=1 2")
                .unwrap_err()
                .contains("three numbers")
        );
        let neg: Sysctl = "net.ipv4.tcp_adv_win_scale=-2".parse().unwrap();
        assert_eq!(neg.value, "-2");
        assert!("net.ipv4.tcp_wmem=4096 4096 4096".parse::<Sysctl>().is_ok());
        assert!(
            parse("net.core.rmem_max=1")
                .unwrap_err()
                .contains("not per network namespace")
        );
    }

    #[test]
    fn triples_are_three_whole_numbers_and_cells_split_at_semicolons() {
        assert_eq!(
            triple("4096 16384  16777216\n"),
            Some([4096, 16384, 16 << 20])
        );
        for bad in ["4096 16384", "4096 16384 1 2", "4096 x 1", ""] {
            assert_eq!(triple(bad), None, "{bad:?}");
        }
        let s = Sysctl::from_cell(Some(
            "server:net.ipv4.tcp_wmem=4096 16384 524288;net.ipv4.tcp_rmem=4096 131072 1048576;bogus",
        ));
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].side, Some(Side::Server));
        assert_eq!(s[1].triple(), Some([4096, 131072, 1 << 20]));
        assert!(Sysctl::from_cell(None).is_empty());
    }
}
