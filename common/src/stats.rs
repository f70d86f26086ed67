//! Nearest-rank percentiles and medians, as the original experiment used.
//!
//! The nearest-rank percentile `p` of `n` sorted values is the value at rank
//! `ceil(p / 100 * n)` (1-based): p95 of 72 values is the 69th smallest, p50
//! of 72 is the 36th. No interpolation, so every reported percentile is a
//! value that was actually measured.

/// The nearest-rank percentile of `values` (in any order), or `None` when
/// there are none. `p` is in percent, `0 < p <= 100`; `p = 0` gives the
/// minimum.
pub fn nearest_rank(values: &[f64], p: f64) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    Some(sorted[rank_index(sorted.len(), p)])
}

/// The 0-based index of the nearest-rank percentile `p` among `n` values.
pub fn rank_index(n: usize, p: f64) -> usize {
    assert!(n > 0, "rank of an empty set");
    let p = p.clamp(0.0, 100.0);
    // Compute ceil(p * n / 100) in integers where possible, so that p95 of
    // 20 values is exactly rank 19 and not 20 because 0.95 * 20 rounds up
    // to 19.000000000000004 in floating point.
    let scaled = p * n as f64;
    let rounded = scaled.round();
    let rank = if (scaled - rounded).abs() < 1e-9 {
        (rounded as usize).div_ceil(100)
    } else {
        (scaled / 100.0).ceil() as usize
    };
    rank.clamp(1, n) - 1
}

/// The median of `values`: the mean of the two middle values for an even
/// count, as Python's `statistics.median` (which the original used) does.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    Some(if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_to(n: usize) -> Vec<f64> {
        (1..=n).map(|v| v as f64).collect()
    }

    #[test]
    fn p95_of_72_is_the_69th_smallest() {
        assert_eq!(nearest_rank(&one_to(72), 95.0), Some(69.0));
    }

    #[test]
    fn p50_of_72_is_the_36th_smallest() {
        assert_eq!(nearest_rank(&one_to(72), 50.0), Some(36.0));
    }

    #[test]
    fn edges() {
        assert_eq!(nearest_rank(&[], 95.0), None);
        assert_eq!(nearest_rank(&[7.0], 95.0), Some(7.0));
        assert_eq!(nearest_rank(&one_to(20), 95.0), Some(19.0));
        assert_eq!(nearest_rank(&one_to(100), 99.0), Some(99.0));
        assert_eq!(nearest_rank(&one_to(10), 100.0), Some(10.0));
        assert_eq!(nearest_rank(&one_to(10), 0.0), Some(1.0));
        assert_eq!(nearest_rank(&[3.0, f64::NAN, 1.0, 2.0], 50.0), Some(2.0));
        // Order of the input does not matter.
        let mut rev = one_to(72);
        rev.reverse();
        assert_eq!(nearest_rank(&rev, 95.0), Some(69.0));
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }
}
