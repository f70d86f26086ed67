//! The documented range of every numeric flag, and the clap value parsers
//! that enforce them when the arguments are parsed (the book's command reference lists
//! each range with its flag). A value outside its range is bad input: clap
//! prints one line naming the flag, the value and the range, and the binary
//! exits with status 2 before anything is allocated, spawned or sent.
//!
//! The ranges follow from the machine, not from taste: a thread per slow
//! reader or worker, a descriptor per open connection, memory per scheduled
//! request, and `Instant + duration` that must not overflow.

use std::fmt::Display;
use std::str::FromStr;
use std::time::Duration;

use crate::units::{Size, format_duration, parse_duration};

/// The most threads a flag may ask for (`serve --workers`, `proxy
/// --threads`): a thread costs a stack and a kernel task each; the
/// experiment uses 2 to 4, and past a thousand a 2-core machine only
/// schedules, it does not serve.
pub const MAX_THREADS: usize = 1024;
/// The most slow clients of one kind (`load --slow`, `--slow-upload`,
/// `--slow-headers`, `sweep --slow`, `check --max-slow`): one connection
/// and a few hundred bytes of state each in the load generator's engine;
/// the default ephemeral port range holds 28,232 connections to one
/// address, and the open-files limit is checked before a run.
pub const MAX_SLOW_READERS: usize = 25_000;
/// The highest `--slow-rate` (and `--upload-rate`): 10 GiB/s is more than
/// loopback carries, so it means "unpaced"; the pacing arithmetic stays
/// exact below it.
pub const MAX_SLOW_RATE: u64 = 10 << 30;
/// The longest duration any timing flag accepts: long enough for any run,
/// short enough that `Instant::now() + d` (every timeout and deadline)
/// cannot overflow and a typo fails at once rather than hanging for years.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

/// A clap value parser for an integer in `min..=max`.
pub fn int_in<T>(min: T, max: T) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync
where
    T: FromStr + PartialOrd + Display + Copy + Send + Sync + 'static,
{
    move |s: &str| {
        let range = || format!("must be an integer from {min} to {max}");
        let v: T = s.trim().parse().map_err(|_| range())?;
        if v < min || v > max {
            return Err(range());
        }
        Ok(v)
    }
}

/// A clap value parser for a finite number in `min..=max`.
pub fn f64_in(min: f64, max: f64) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    move |s: &str| {
        let v: f64 = s
            .trim()
            .parse()
            .map_err(|_| format!("must be a number from {min} to {max}"))?;
        if !v.is_finite() || v < min || v > max {
            return Err(format!("must be a number from {min} to {max}"));
        }
        Ok(v)
    }
}

/// A clap value parser for a duration in `min..=max`.
pub fn duration_in(
    min: Duration,
    max: Duration,
) -> impl Fn(&str) -> Result<Duration, String> + Clone + Send + Sync {
    move |s: &str| {
        let d = parse_duration(s).map_err(|e| e.to_string())?;
        if d < min || d > max {
            return Err(format!(
                "must be from {} to {}",
                format_duration(min),
                format_duration(max)
            ));
        }
        Ok(d)
    }
}

/// A clap value parser for a size in `min..=max` bytes.
pub fn size_in(min: u64, max: u64) -> impl Fn(&str) -> Result<Size, String> + Clone + Send + Sync {
    move |s: &str| {
        let v: Size = s
            .parse()
            .map_err(|e: crate::units::UnitError| e.to_string())?;
        if v.bytes() < min || v.bytes() > max {
            return Err(format!("must be from {} to {}", Size(min), Size(max)));
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_bounded() {
        let p = int_in(1usize, MAX_THREADS);
        assert_eq!(p("1"), Ok(1));
        assert_eq!(p("1024"), Ok(1024));
        assert_eq!(p("0"), Err("must be an integer from 1 to 1024".into()));
        assert!(p("100000").is_err());
        assert!(p("-1").is_err());
        assert!(p("99999999999999999999999").is_err());
        assert!(p("two").is_err());
    }

    #[test]
    fn numbers_are_bounded_and_finite() {
        let p = f64_in(0.0, 10_000.0);
        assert_eq!(p("8"), Ok(8.0));
        assert_eq!(p("0.5"), Ok(0.5));
        assert_eq!(p("10000"), Ok(10_000.0));
        for bad in ["1e9", "-1", "nan", "inf", "x", ""] {
            assert!(p(bad).is_err(), "{bad}");
        }
        assert_eq!(p("1e9"), Err("must be a number from 0 to 10000".into()));
    }

    #[test]
    fn durations_are_bounded() {
        let p = duration_in(Duration::from_millis(1), MAX_DURATION);
        assert_eq!(p("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(p("24h"), Ok(MAX_DURATION));
        assert_eq!(p("0s"), Err("must be from 1ms to 1day".into()));
        assert!(p("99999999999999s").is_err());
        assert!(p("25h").is_err());
        assert!(p("soon").is_err());
        // Nothing in range can overflow a deadline.
        assert!(
            std::time::Instant::now()
                .checked_add(MAX_DURATION)
                .is_some()
        );
        let zero_ok = duration_in(Duration::ZERO, Duration::from_secs(1));
        assert_eq!(zero_ok("0s"), Ok(Duration::ZERO));
    }

    #[test]
    fn sizes_are_bounded() {
        let p = size_in(1, 1 << 20);
        assert_eq!(p("16KiB"), Ok(Size(16 << 10)));
        assert_eq!(p("1MiB"), Ok(Size(1 << 20)));
        assert_eq!(p("0"), Err("must be from 1 to 1MiB".into()));
        assert!(p("2MiB").is_err());
        assert!(p("16MB").is_err());
    }
}
