//! The run's summary: printed on stdout (human or `--json`) and written as
//! `summary.json`.
//!
//! Percentiles are nearest-rank over the requests that returned a whole 200
//! (p95 of 72 is the 69th smallest), as in the original; failed requests
//! have no latency and are counted under `errors` instead. A run in which
//! the load generator ran out of descriptors (`fd_exhausted`) has no
//! percentiles at all: its requests were not all sent, so its latencies are
//! not comparable with another run's.

use std::collections::BTreeMap;
use std::fmt;

use common::stats::{median, nearest_rank};
use serde::Serialize;
use serde::ser::SerializeMap;

use crate::error::ErrorKind;
use crate::latency::Tuning;
use crate::record::{FastRecord, LargeRecord, SlowHeaderRecord, UploadRecord};
use crate::runner::Report;
use crate::settle::Settled;
use crate::slowloris::HeadersEnd;
use crate::sys::HostInfo;

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub target: String,
    #[serde(serialize_with = "ordered_map")]
    pub labels: Vec<(String, String)>,
    pub t0_unix_s: f64,
    pub elapsed_s: f64,
    pub fast: FastSummary,
    pub slow: SlowSummary,
    pub uploads: UploadSummary,
    pub slow_headers: HeadersSummary,
    /// The protocol spoken, and over HTTP/2 how the downloads were carried.
    pub edge: EdgeSummary,
    /// Failures of both kinds of request, by kind.
    pub errors: BTreeMap<ErrorKind, usize>,
    pub cpu: CpuSummary,
    pub host: HostInfo,
    /// The scheduler thread's kernel settings that took effect.
    pub scheduler: Tuning,
    /// One detail per error kind, for people; not in the JSON.
    #[serde(skip)]
    pub error_examples: BTreeMap<ErrorKind, String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FastSummary {
    pub requests: usize,
    pub ok: usize,
    pub failed: usize,
    pub errors: BTreeMap<ErrorKind, usize>,
    pub latency_ms: Percentiles,
    pub schedule_lag_ms: Lag,
    /// When the schedule began, from t0 (`--fast-start`, later by the
    /// wait for the slow readers' first bytes under `--fast-settle`).
    pub began_s: f64,
    /// Why then: `start`, `first_bytes`, `quiet`, `timeout`, `stopped`.
    pub settled: Settled,
}

/// Nearest-rank percentiles; `None` (JSON null) without any values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Percentiles {
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Lag {
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SlowSummary {
    pub clients: usize,
    pub ok: usize,
    pub failed: usize,
    pub errors: BTreeMap<ErrorKind, usize>,
    /// Per client, in client order; null where the download failed.
    pub receive_s: Vec<Option<f64>>,
    pub receive_s_median: Option<f64>,
    pub rcvbuf_requested_bytes: Option<usize>,
    pub rcvbuf_granted_bytes: Option<usize>,
}

/// The slow uploaders (`--slow-upload`).
#[derive(Debug, Clone, Serialize)]
pub struct UploadSummary {
    pub count: usize,
    /// Whole, answered 200, and the server read every byte in the pattern.
    pub ok: usize,
    pub failed: usize,
    pub errors: BTreeMap<ErrorKind, usize>,
    /// Median over the uploads whose whole body was written.
    pub send_s_median: Option<f64>,
    pub sndbuf_requested_bytes: Option<usize>,
    pub sndbuf_granted_bytes: Option<usize>,
}

impl UploadSummary {
    /// Of the uploads' records (`load` and `sweep-load`).
    pub fn of(uploads: &[UploadRecord]) -> UploadSummary {
        let mut errors = BTreeMap::new();
        for f in uploads.iter().filter_map(|r| r.error.as_ref()) {
            *errors.entry(f.kind).or_insert(0) += 1;
        }
        let sent: Vec<f64> = uploads.iter().filter_map(|r| r.send_s).collect();
        let ok = uploads.iter().filter(|r| r.error.is_none()).count();
        UploadSummary {
            count: uploads.len(),
            ok,
            failed: uploads.len() - ok,
            errors,
            send_s_median: median(&sent).map(s6),
            sndbuf_requested_bytes: uploads.first().map(|r| r.sndbuf_requested_bytes),
            sndbuf_granted_bytes: uploads.iter().find_map(|r| r.sndbuf_granted_bytes),
        }
    }
}

/// What the load spoke (`crate::edge`).
#[derive(Debug, Clone, Serialize)]
pub struct EdgeSummary {
    /// `http/1.1`, `http/1.1+tls`, `h2c` or `h2`.
    pub protocol: catalogue::Edge,
    /// The `/fast` requests' TLS handshakes (null without TLS).
    pub tls_ms: Percentiles,
    /// The slow downloads' connections.
    pub connections: usize,
    /// HTTP/2: downloads per connection and the windows advertised.
    pub streams_per_conn: Option<usize>,
    pub h2_window_bytes: Option<u32>,
    pub h2_conn_window_bytes: Option<u32>,
}

impl EdgeSummary {
    pub fn of(fast: &[FastRecord], large: &[LargeRecord]) -> EdgeSummary {
        let protocol = fast
            .first()
            .map(|r| r.protocol)
            .or_else(|| large.first().map(|r| r.protocol))
            .unwrap_or_default();
        let tls: Vec<f64> = fast.iter().filter_map(|r| r.tls_ms).collect();
        let h2 = large.iter().find_map(|r| r.h2).map(|h| h.settings);
        let mut conns: Vec<usize> = large.iter().map(|r| r.connection).collect();
        conns.sort_unstable();
        conns.dedup();
        EdgeSummary {
            protocol,
            tls_ms: percentiles(&tls),
            connections: conns.len(),
            streams_per_conn: h2.map(|h| h.streams_per_conn),
            h2_window_bytes: h2.map(|h| h.window),
            h2_conn_window_bytes: h2.map(|h| h.conn_window),
        }
    }
}

/// The slowloris clients (`--slow-headers`).
#[derive(Debug, Clone, Serialize)]
pub struct HeadersSummary {
    pub clients: usize,
    /// Still holding an unfinished head when the run ended.
    pub held_to_end: usize,
    /// Answered or closed by the server before the run ended.
    pub closed_by_server: usize,
    pub errors: BTreeMap<ErrorKind, usize>,
}

impl HeadersSummary {
    /// Of the slowloris clients' records (`load` and `sweep-load`).
    pub fn of(clients: &[SlowHeaderRecord]) -> HeadersSummary {
        let mut errors = BTreeMap::new();
        for f in clients.iter().filter_map(|r| r.error.as_ref()) {
            *errors.entry(f.kind).or_insert(0) += 1;
        }
        let ended = |e: HeadersEnd| clients.iter().filter(|r| r.ended == e).count();
        HeadersSummary {
            clients: clients.len(),
            held_to_end: ended(HeadersEnd::RunEnd),
            closed_by_server: ended(HeadersEnd::ServerClosed),
            errors,
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct CpuSummary {
    pub user_s: f64,
    pub system_s: f64,
    pub total_s: f64,
    /// Total CPU time over the run's elapsed time.
    pub cores: f64,
}

/// The percentiles the summary reports, over `values` in any order.
pub fn percentiles(values: &[f64]) -> Percentiles {
    Percentiles {
        p50: nearest_rank(values, 50.0).map(ms3),
        p95: nearest_rank(values, 95.0).map(ms3),
        p99: nearest_rank(values, 99.0).map(ms3),
        max: nearest_rank(values, 100.0).map(ms3),
    }
}

impl Summary {
    /// How many requests and downloads failed because the load generator
    /// ran out of file descriptors (`fd_exhausted`); with any, the
    /// percentiles are left empty.
    pub fn fd_exhausted(&self) -> usize {
        self.errors
            .get(&ErrorKind::FdExhausted)
            .copied()
            .unwrap_or(0)
    }

    pub fn of(report: &Report) -> Summary {
        let mut errors = BTreeMap::new();
        let mut error_examples = BTreeMap::new();
        let mut fast_errors = BTreeMap::new();
        for f in report.fast.iter().filter_map(|r| r.error.as_ref()) {
            *fast_errors.entry(f.kind).or_insert(0) += 1;
            *errors.entry(f.kind).or_insert(0) += 1;
            error_examples
                .entry(f.kind)
                .or_insert_with(|| f.detail.clone());
        }
        let mut slow_errors = BTreeMap::new();
        for f in report.large.iter().filter_map(|r| r.error.as_ref()) {
            *slow_errors.entry(f.kind).or_insert(0) += 1;
            *errors.entry(f.kind).or_insert(0) += 1;
            error_examples
                .entry(f.kind)
                .or_insert_with(|| f.detail.clone());
        }
        for f in report.uploads.iter().filter_map(|r| r.error.as_ref()) {
            *errors.entry(f.kind).or_insert(0) += 1;
            error_examples
                .entry(f.kind)
                .or_insert_with(|| f.detail.clone());
        }
        let comparable = !errors.contains_key(&ErrorKind::FdExhausted);
        let latencies: Vec<f64> = report
            .fast
            .iter()
            .filter(|r| r.ok() && comparable)
            .filter_map(|r| r.latency_ms)
            .collect();
        let lags: Vec<f64> = report.fast.iter().map(|r| r.schedule_lag_ms).collect();
        let fast_ok = report.fast.iter().filter(|r| r.ok()).count();
        let receive_s: Vec<Option<f64>> = report
            .large
            .iter()
            .map(|r| r.receive_s.filter(|_| r.error.is_none()).map(s6))
            .collect();
        let received: Vec<f64> = receive_s.iter().flatten().copied().collect();
        let slow_ok = report.large.iter().filter(|r| r.error.is_none()).count();
        let cpu = report.cpu;
        Summary {
            target: report.target.clone(),
            labels: report.labels.clone(),
            t0_unix_s: s6(report.t0_unix_s),
            elapsed_s: s6(report.elapsed_s),
            fast: FastSummary {
                requests: report.fast.len(),
                ok: fast_ok,
                failed: report.fast.len() - fast_ok,
                errors: fast_errors,
                latency_ms: percentiles(&latencies),
                schedule_lag_ms: Lag {
                    p99: nearest_rank(&lags, 99.0).map(ms3),
                    max: nearest_rank(&lags, 100.0).map(ms3),
                },
                began_s: s6(report.fast_began_s),
                settled: report.settled,
            },
            slow: SlowSummary {
                clients: report.large.len(),
                ok: slow_ok,
                failed: report.large.len() - slow_ok,
                errors: slow_errors,
                receive_s,
                receive_s_median: median(&received).map(s6),
                rcvbuf_requested_bytes: report.large.first().and_then(|r| r.rcvbuf_requested_bytes),
                rcvbuf_granted_bytes: report.large.iter().find_map(|r| r.rcvbuf_granted_bytes),
            },
            uploads: UploadSummary::of(&report.uploads),
            slow_headers: HeadersSummary::of(&report.slow_headers),
            edge: EdgeSummary::of(&report.fast, &report.large),
            errors,
            cpu: CpuSummary {
                user_s: s6(cpu.user_s),
                system_s: s6(cpu.system_s),
                total_s: s6(cpu.total_s()),
                cores: if report.elapsed_s > 0.0 {
                    s6(cpu.total_s() / report.elapsed_s)
                } else {
                    0.0
                },
            },
            host: report.host.clone(),
            scheduler: report.scheduler,
            error_examples,
        }
    }
}

/// Rounds milliseconds to the microsecond.
fn ms3(v: f64) -> f64 {
    (v * 1e3).round() / 1e3
}

/// Rounds seconds to the microsecond.
fn s6(v: f64) -> f64 {
    (v * 1e6).round() / 1e6
}

/// Serializes `key=value` pairs as a JSON object in the order given.
fn ordered_map<S: serde::Serializer>(pairs: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(pairs.len()))?;
    for (k, v) in pairs {
        map.serialize_entry(k, v)?;
    }
    map.end()
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.decimals$}"))
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (fs, ss) = (&self.fast, &self.slow);
        writeln!(
            f,
            "target  {}  (t0 {:.6} unix s, {:.3} s)",
            self.target, self.t0_unix_s, self.elapsed_s
        )?;
        let e = &self.edge;
        if e.protocol != catalogue::Edge::CLEARTEXT_HTTP1 {
            write!(f, "edge    {}", e.protocol.protocol())?;
            if let Some(p50) = e.tls_ms.p50 {
                write!(f, ", TLS handshake p50 {p50:.3} ms")?;
            }
            if let (Some(n), Some(w)) = (e.streams_per_conn, e.h2_window_bytes) {
                write!(
                    f,
                    ", {} connection(s) of up to {n} stream(s), stream window {w} B",
                    e.connections
                )?;
            }
            writeln!(f)?;
        }
        writeln!(
            f,
            "/fast   {} requests: {} ok, {} failed",
            fs.requests, fs.ok, fs.failed
        )?;
        let l = fs.latency_ms;
        if self.fd_exhausted() > 0 {
            writeln!(
                f,
                "        latency ms: not comparable (the load generator ran out of file descriptors)"
            )?;
        }
        writeln!(
            f,
            "        latency ms: p50 {}  p95 {}  p99 {}  max {}",
            opt(l.p50, 3),
            opt(l.p95, 3),
            opt(l.p99, 3),
            opt(l.max, 3)
        )?;
        writeln!(
            f,
            "        schedule lag ms: p99 {}  max {}",
            opt(fs.schedule_lag_ms.p99, 3),
            opt(fs.schedule_lag_ms.max, 3)
        )?;
        write!(
            f,
            "/large  {} slow readers: {} ok, {} failed",
            ss.clients, ss.ok, ss.failed
        )?;
        if let (Some(req), Some(granted)) = (ss.rcvbuf_requested_bytes, ss.rcvbuf_granted_bytes) {
            write!(f, " (SO_RCVBUF {req} requested, {granted} granted)")?;
        }
        writeln!(f)?;
        if !ss.receive_s.is_empty() {
            let each: Vec<String> = ss.receive_s.iter().map(|v| opt(*v, 3)).collect();
            writeln!(
                f,
                "        receive s: {} (median {})",
                each.join(" "),
                opt(ss.receive_s_median, 3)
            )?;
        }
        let u = &self.uploads;
        if u.count > 0 {
            writeln!(
                f,
                "/upload {} slow uploaders: {} ok, {} failed; send s median {}",
                u.count,
                u.ok,
                u.failed,
                opt(u.send_s_median, 3)
            )?;
        }
        let h = &self.slow_headers;
        if h.clients > 0 {
            writeln!(
                f,
                "headers {} slowloris clients: {} held to the end, {} closed by the server",
                h.clients, h.held_to_end, h.closed_by_server
            )?;
        }
        if self.errors.is_empty() {
            writeln!(f, "errors  none")?;
        }
        for (kind, n) in &self.errors {
            let detail = self
                .error_examples
                .get(kind)
                .map(String::as_str)
                .unwrap_or("");
            writeln!(f, "errors  {n} {kind} (e.g. {detail})")?;
        }
        let c = self.cpu;
        writeln!(
            f,
            "cpu     {:.3} s user + {:.3} s system = {:.3} s ({:.4} cores)",
            c.user_s, c.system_s, c.total_s, c.cores
        )?;
        let t = self.scheduler;
        let show = |v: Option<String>| v.unwrap_or_else(|| "default".into());
        writeln!(
            f,
            "timing  scheduler thread: policy {}, nice {}, slice {}, timer slack {}, spin {} us",
            t.policy.as_str(),
            show(t.nice.map(|n| n.to_string())),
            show(t.slice_us.map(|v| format!("{v} us"))),
            show(t.timer_slack_ns.map(|v| format!("{v} ns"))),
            t.spin_us,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_as_the_original() {
        // Shuffled 1..=72: p95 is the 69th smallest, p50 the 36th.
        let values: Vec<f64> = (0..72).map(|i| ((i * 37) % 72 + 1) as f64).collect();
        let p = percentiles(&values);
        assert_eq!(p.p95, Some(69.0));
        assert_eq!(p.p50, Some(36.0));
        assert_eq!(p.p99, Some(72.0));
        assert_eq!(p.max, Some(72.0));
        let none = percentiles(&[]);
        assert_eq!((none.p50, none.max), (None, None));
        assert_eq!(percentiles(&[1.25]).p95, Some(1.25));
    }

    #[test]
    fn labels_keep_their_order_in_json() {
        #[derive(Serialize)]
        struct L(#[serde(serialize_with = "ordered_map")] Vec<(String, String)>);
        let l = L(vec![("z".into(), "1".into()), ("a".into(), "2".into())]);
        assert_eq!(
            serde_json::to_string(&l).expect("json"),
            r#"{"z":"1","a":"2"}"#
        );
    }
}
