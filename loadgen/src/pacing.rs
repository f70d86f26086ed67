//! Read pacing of the slow readers.
//!
//! The deadline of every consumed byte is computed from the download's start,
//! `start + consumed / rate`, never from the previous wake-up: a late timer
//! then delays one chunk but not the whole download, so the error does not
//! accumulate over the ~1,000 reads of a 16 MiB body.

use std::time::Duration;

/// When `consumed` bytes may have been consumed at `rate` bytes per second,
/// counted from the start of the download; exact to the nanosecond.
pub fn due(consumed: u64, rate: u64) -> Duration {
    assert!(rate > 0, "pacing needs a positive rate");
    // Rounded up, so that consumption is never ahead, not even by 1 ns.
    let nanos = (u128::from(consumed) * 1_000_000_000).div_ceil(u128::from(rate));
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_experiment_takes_eight_seconds() {
        assert_eq!(due(16 << 20, 2 << 20), Duration::from_secs(8));
        // One 16 KiB chunk at 2 MiB/s is 7.8125 ms: sub-millisecond exact.
        assert_eq!(
            due(16 << 10, 2 << 20),
            Duration::from_micros(7812) + Duration::from_nanos(500)
        );
        assert_eq!(due(0, 1), Duration::ZERO);
    }

    #[test]
    fn deadlines_do_not_drift_with_odd_chunks() {
        // Summing per-chunk waits rounds every time; absolute deadlines do not.
        let rate = 3 << 20;
        let mut consumed = 0u64;
        for chunk in [1u64, 7, 16384, 8191, 12345].iter().cycle().take(1000) {
            consumed += chunk;
        }
        let exact = consumed as f64 / rate as f64;
        assert!((due(consumed, rate).as_secs_f64() - exact).abs() < 1e-9);
    }

    #[test]
    fn a_paced_reader_is_never_ahead_and_ends_on_time() {
        // 16 MiB in reads of 8-16 KiB at 2 MiB/s, each consumed at its due
        // time: never ahead of rate x elapsed, and done at exactly 8 s.
        let rate = 2u64 << 20;
        let mut consumed = 0u64;
        let mut now = Duration::ZERO;
        for read in [8192u64, 16384, 12000].iter().cycle() {
            let n = (*read).min((16 << 20) - consumed);
            consumed += n;
            now = now.max(due(consumed, rate));
            assert!(consumed as f64 <= rate as f64 * now.as_secs_f64() + 1e-6);
            if consumed == 16 << 20 {
                break;
            }
        }
        assert_eq!(now, Duration::from_secs(8));
    }
}
