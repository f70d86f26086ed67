//! How the report writes numbers. One place, so that the lesson, the tables,
//! the chart labels and the tests that compare them with the data agree on
//! every digit.

/// Bytes in one MiB.
pub const MIB: f64 = 1_048_576.0;
/// Bytes in one KiB.
pub const KIB: f64 = 1024.0;

/// Groups the integer part in thousands: `5945.11` -> `5,945.11`.
fn thousands(s: &str) -> String {
    let (sign, rest) = match s.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", s),
    };
    let (int, frac) = match rest.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (rest, None),
    };
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    match frac {
        Some(f) => format!("{sign}{out}.{f}"),
        None => format!("{sign}{out}"),
    }
}

/// A latency in milliseconds with the unit, precise where it is small:
/// `0.75 ms`, `12.3 ms`, `2,934 ms`.
pub fn ms(v: f64) -> String {
    format!("{} ms", ms_number(v))
}

/// [`ms`] without the unit.
pub fn ms_number(v: f64) -> String {
    let a = v.abs();
    if a < 10.0 {
        format!("{v:.2}")
    } else if a < 100.0 {
        format!("{v:.1}")
    } else {
        thousands(&format!("{v:.0}"))
    }
}

/// A published figure exactly as the original printed it (two decimals).
pub fn ms_published(v: f64) -> String {
    format!("{} ms", thousands(&format!("{v:.2}")))
}

/// Seconds with three decimals, as the original's tables: `3.306 s`.
pub fn secs(v: f64) -> String {
    format!("{v:.3} s")
}

/// Seconds with one decimal for prose: `3.3 s`.
pub fn secs1(v: f64) -> String {
    format!("{v:.1} s")
}

/// A size in the unit that reads best: `16 KiB`, `3.1 MiB`, `25.2 MiB`.
pub fn bytes(v: f64) -> String {
    let a = v.abs();
    if a >= MIB {
        let m = v / MIB;
        if (m - m.round()).abs() < 0.005 {
            format!("{:.0} MiB", m)
        } else {
            format!("{m:.1} MiB")
        }
    } else if a >= KIB {
        let k = v / KIB;
        if (k - k.round()).abs() < 0.05 {
            format!("{:.0} KiB", k)
        } else {
            format!("{k:.1} KiB")
        }
    } else {
        format!("{v:.0} bytes")
    }
}

/// A size given in MiB (`temp_peak_mib`), as the original: `25.2 MiB`.
pub fn mib(v: f64) -> String {
    format!("{v:.1} MiB")
}

/// A rate in bytes per second: `4 MiB/s`.
pub fn rate(bytes_per_s: f64) -> String {
    format!("{}/s", bytes(bytes_per_s))
}

/// A share of one CPU core as a percentage: `0.33% of a core`.
pub fn cores_percent(cores: f64) -> String {
    format!("{:.2}% of a core", cores * 100.0)
}

/// A ratio: `877x`.
pub fn times(v: f64) -> String {
    if v >= 10.0 {
        format!("{}x", thousands(&format!("{v:.0}")))
    } else {
        format!("{v:.1}x")
    }
}

/// A count with thousands separators.
pub fn count(n: usize) -> String {
    thousands(&n.to_string())
}

/// An optional cell: the value or an en dash.
pub fn or_dash(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "–".into())
}

/// A p95 cell: the figure in ms, or, where the p95 fell among failed
/// requests (`p95_error` of the results files), what they were: `timed
/// out`, else `failed (kinds)`; never a figure made up for them.
pub fn p95_or_failed(p95: Option<f64>, failed: Option<&str>) -> String {
    match (p95, failed) {
        (None, Some("timeout")) => "timed out".into(),
        (None, Some(kinds)) if !kinds.is_empty() => {
            format!("failed ({})", kinds.replace(';', ", "))
        }
        (p, _) => or_dash(p, ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_p95_among_failures_is_named_not_a_figure() {
        assert_eq!(p95_or_failed(None, Some("timeout")), "timed out");
        assert_eq!(
            p95_or_failed(None, Some("reset;timeout")),
            "failed (reset, timeout)"
        );
        assert_eq!(p95_or_failed(Some(2.5), None), "2.50 ms");
        assert_eq!(p95_or_failed(None, None), "–");
    }

    #[test]
    fn numbers() {
        assert_eq!(ms(0.753), "0.75 ms");
        assert_eq!(ms(12.34), "12.3 ms");
        assert_eq!(ms(2934.4), "2,934 ms");
        assert_eq!(ms(1234567.0), "1,234,567 ms");
        assert_eq!(ms_published(5945.11), "5,945.11 ms");
        assert_eq!(secs(3.3061), "3.306 s");
        assert_eq!(bytes(16384.0), "16 KiB");
        assert_eq!(bytes(16.0 * MIB), "16 MiB");
        assert_eq!(bytes(3228647.0), "3.1 MiB");
        assert_eq!(bytes(8009.0), "7.8 KiB");
        assert_eq!(bytes(12.0), "12 bytes");
        assert_eq!(mib(25.17), "25.2 MiB");
        assert_eq!(rate(4.0 * MIB), "4 MiB/s");
        assert_eq!(times(877.4), "877x");
        assert_eq!(times(1.995), "2.0x");
        assert_eq!(count(2160), "2,160");
        assert_eq!(or_dash(None, ms), "–");
    }
}
