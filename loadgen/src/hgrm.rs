//! `latency.hgrm`: the `/fast` latency distribution in the HdrHistogram
//! percentile-distribution text format, as wrk2 prints it (HdrHistogram_c's
//! `hdr_percentiles_print`, CLASSIC format) and HdrHistogram's plotter reads.
//!
//! Latencies are recorded in microseconds with 3 significant digits and
//! printed in milliseconds, as wrk2 does.

use std::fmt::Write;

use anyhow::Context;
use hdrhistogram::Histogram;

use crate::record::FastRecord;

/// Significant digits kept, as in wrk2.
const SIGFIG: u8 = 3;
/// Percentile ticks per half distance to 100%, as in wrk2.
const TICKS_PER_HALF: u32 = 5;
/// Recorded unit (µs) per printed unit (ms).
const SCALE: f64 = 1000.0;

/// The histogram of the successful requests' latencies, in µs.
pub fn histogram(records: &[FastRecord]) -> anyhow::Result<Histogram<u64>> {
    let mut h = Histogram::<u64>::new(SIGFIG).context("creating the latency histogram")?;
    for ms in records
        .iter()
        .filter(|r| r.ok())
        .filter_map(|r| r.latency_ms)
    {
        // The histogram cannot hold 0; a sub-microsecond latency is 1 µs.
        let us = (ms * SCALE).round().max(1.0) as u64;
        h.record(us).context("recording a latency")?;
    }
    Ok(h)
}

/// The text of `latency.hgrm`.
pub fn render(records: &[FastRecord]) -> anyhow::Result<String> {
    Ok(format_distribution(&histogram(records)?))
}

/// Formats `h` (values in µs) as a percentile distribution in ms.
pub fn format_distribution(h: &Histogram<u64>) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail; the results are ignored.
    let _ = write!(
        out,
        "{:>12} {:>12} {:>12} {:>12}\n\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    let mut total = 0u64;
    for v in h.iter_quantiles(TICKS_PER_HALF) {
        total += v.count_since_last_iteration();
        let q = v.quantile_iterated_to();
        // At 100% this is infinite and prints as `inf`, like C's printf.
        let inverse = 1.0 / (1.0 - q);
        let _ = writeln!(
            out,
            "{:12.3} {:12.6} {:12} {:12.2}",
            v.value_iterated_to() as f64 / SCALE,
            q,
            total,
            inverse
        );
    }
    let (mean, stdev, max) = if h.is_empty() {
        (0.0, 0.0, 0.0)
    } else {
        (h.mean() / SCALE, h.stdev() / SCALE, h.max() as f64 / SCALE)
    };
    let _ = writeln!(
        out,
        "#[Mean    = {mean:12.3}, StdDeviation   = {stdev:12.3}]"
    );
    let _ = writeln!(
        out,
        "#[Max     = {max:12.3}, Total count    = {:12}]",
        h.len()
    );
    let _ = writeln!(
        out,
        "#[Buckets = {:12}, SubBuckets     = {:12}]",
        h.buckets(),
        sub_buckets(h.sigfig())
    );
    out
}

/// HdrHistogram's sub-bucket count for a precision: the power of two that
/// holds 2 x 10^sigfig values (2048 for 3 digits). The crate keeps it private.
fn sub_buckets(sigfig: u8) -> u64 {
    (2 * 10u64.pow(u32::from(sigfig))).next_power_of_two()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(ms: f64) -> FastRecord {
        FastRecord {
            seq: 0,
            scheduled_s: 0.0,
            started_s: 0.0,
            schedule_lag_ms: 0.0,
            connect_ms: None,
            first_byte_ms: None,
            latency_ms: Some(ms),
            status: Some(200),
            bytes: 12,
            error: None,
            tls_ms: None,
            protocol: catalogue::Edge::CLEARTEXT_HTTP1,
        }
    }

    #[test]
    fn renders_the_wrk2_layout() {
        // Below 2.048 ms every microsecond is exact at 3 significant digits.
        let records: Vec<FastRecord> = (1..=72).map(|i| record(i as f64 * 0.025)).collect();
        let text = render(&records).expect("renders");
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some("       Value   Percentile   TotalCount 1/(1-Percentile)")
        );
        assert_eq!(lines.next(), Some(""));
        let first = lines.next().expect("a value line");
        assert_eq!(first, "       0.025     0.000000            1         1.00");
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .skip(2)
            .collect();
        let last = rows.last().expect("rows");
        assert!(last.ends_with("inf"), "{last}");
        assert!(last.contains("1.000000"), "{last}");
        assert!(last.contains("72"), "{last}");
        assert!(
            text.contains("#[Max     =        1.800, Total count    =           72]"),
            "{text}"
        );
        assert!(text.contains("SubBuckets     =         2048]"), "{text}");
    }

    #[test]
    fn failed_requests_are_left_out_and_empty_is_fine() {
        let mut bad = record(5.0);
        bad.error = Some(crate::error::Failure::new(
            crate::error::ErrorKind::BadStatus,
            "500",
        ));
        let h = histogram(&[bad, record(1.0)]).expect("histogram");
        assert_eq!(h.len(), 1);
        let empty = render(&[]).expect("renders");
        assert!(empty.contains("Total count    =            0]"), "{empty}");
    }
}
