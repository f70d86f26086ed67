//! Sizes, rates and durations as people type them.
//!
//! Sizes are binary: `k`, `K`, `KiB` mean 1024 and `m`, `M`, `MiB` mean
//! 1024², as in NGINX (`16k`, `32m`) and in the experiment's prose (`16MiB`).
//! Decimal suffixes (`kB`, `MB`) are refused rather than guessed, because a
//! factor of 1000 against 1024 silently changes what a run measures.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// Why a size, rate or duration did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    #[error("empty value")]
    Empty,
    #[error(
        "`{0}` is not a size: use plain bytes or a binary suffix (KiB, MiB, GiB; k, m, g as in NGINX)"
    )]
    BadSize(String),
    #[error("`{0}` is too large")]
    Overflow(String),
    #[error("`{0}` is not a duration: use for example 250ms, 9s or 1m")]
    BadDuration(String),
}

/// A byte count that parses from `16MiB`, `64KiB`, `16k`, `32m` or `4096`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Size(pub u64);

impl Size {
    pub const fn bytes(self) -> u64 {
        self.0
    }

    /// The size as a `usize`, saturating on 32-bit targets.
    pub fn as_usize(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }
}

impl FromStr for Size {
    type Err = UnitError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_size(s).map(Size)
    }
}

impl fmt::Display for Size {
    /// Prints the shortest exact binary form, so that `Display` and
    /// `FromStr` round-trip: `16MiB`, `64KiB`, `1000`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
        for (factor, name) in UNITS {
            if self.0 >= factor && self.0 % factor == 0 {
                return write!(f, "{}{name}", self.0 / factor);
            }
        }
        write!(f, "{}", self.0)
    }
}

/// Parses a byte count; see the module documentation for the suffixes.
pub fn parse_size(input: &str) -> Result<u64, UnitError> {
    let s = input.trim();
    if s.is_empty() {
        return Err(UnitError::Empty);
    }
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, suffix) = s.split_at(split);
    if digits.is_empty() {
        return Err(UnitError::BadSize(input.to_string()));
    }
    let factor: u64 = match suffix.trim() {
        "" | "b" | "B" => 1,
        "k" | "K" | "KiB" | "kib" | "Ki" => 1 << 10,
        "m" | "M" | "MiB" | "mib" | "Mi" => 1 << 20,
        "g" | "G" | "GiB" | "gib" | "Gi" => 1 << 30,
        _ => return Err(UnitError::BadSize(input.to_string())),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| UnitError::Overflow(input.to_string()))?;
    n.checked_mul(factor)
        .ok_or_else(|| UnitError::Overflow(input.to_string()))
}

/// Parses a duration such as `250ms`, `9s`, `1m 30s` or `1.5s`.
pub fn parse_duration(input: &str) -> Result<Duration, UnitError> {
    let s = input.trim();
    if s.is_empty() {
        return Err(UnitError::Empty);
    }
    // humantime has no fractions; accept `1.5s` and `0.25s` ourselves because
    // people write them.
    if let Some(secs) = s.strip_suffix('s').filter(|v| v.contains('.')) {
        if let Ok(v) = secs.parse::<f64>() {
            if v.is_finite() && v >= 0.0 {
                return Ok(Duration::from_secs_f64(v));
            }
        }
        return Err(UnitError::BadDuration(input.to_string()));
    }
    humantime::parse_duration(s).map_err(|_| UnitError::BadDuration(input.to_string()))
}

/// Formats a duration the way [`parse_duration`] reads it back.
pub fn format_duration(d: Duration) -> String {
    humantime::format_duration(d).to_string().replace(' ', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_binary_suffixes() {
        assert_eq!(parse_size("16MiB"), Ok(16 * 1024 * 1024));
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("16k"), Ok(16384));
        assert_eq!(parse_size("32m"), Ok(32 << 20));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size(" 2 MiB "), Ok(2 << 20));
        assert_eq!(parse_size("0"), Ok(0));
    }

    #[test]
    fn sizes_refuse_what_they_cannot_read() {
        assert!(matches!(parse_size(""), Err(UnitError::Empty)));
        assert!(matches!(parse_size("MiB"), Err(UnitError::BadSize(_))));
        assert!(matches!(parse_size("16MB"), Err(UnitError::BadSize(_))));
        assert!(matches!(parse_size("-1"), Err(UnitError::BadSize(_))));
        assert!(matches!(parse_size("1.5MiB"), Err(UnitError::BadSize(_))));
        assert!(matches!(
            parse_size("99999999999999999999"),
            Err(UnitError::Overflow(_))
        ));
        assert!(matches!(
            parse_size("99999999999G"),
            Err(UnitError::Overflow(_))
        ));
    }

    #[test]
    fn size_display_round_trips() {
        for v in [0, 1, 1000, 1024, 65536, 16 << 20, 3 << 30, (1 << 20) + 1] {
            let shown = Size(v).to_string();
            assert_eq!(shown.parse::<Size>(), Ok(Size(v)), "{shown}");
        }
        assert_eq!(Size(16 << 20).to_string(), "16MiB");
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("9s"), Ok(Duration::from_secs(9)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("1m 30s"), Ok(Duration::from_secs(90)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("-1.0s").is_err());
        assert_eq!(format_duration(Duration::from_millis(250)), "250ms");
    }
}
