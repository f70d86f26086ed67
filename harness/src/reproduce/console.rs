//! What the reproduction prints: a progress bar with an ETA while the matrix
//! runs, and at the end the conditions next to the published figures and the
//! cross-check.

use std::collections::BTreeMap;
use std::fmt::Write;

use indicatif::{ProgressBar, ProgressStyle};

use analysis::aggregate::ConditionFigures;
use analysis::crosscheck::Row;
use catalogue::preset::Condition;
use catalogue::published;

/// Progress on stderr: a bar with an ETA on a terminal; one line per run
/// (with the same count and ETA) where stderr is a file or a pipe, as in CI.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
    started: std::time::Instant,
    total: u64,
    done: u64,
}

impl Progress {
    pub fn new(total: u64) -> Self {
        let bar = ProgressBar::new(total);
        bar.set_style(
            ProgressStyle::with_template(
                "{bar:30} {pos}/{len} runs, {elapsed} elapsed, ETA {eta}  {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Progress {
            bar,
            started: std::time::Instant::now(),
            total,
            done: 0,
        }
    }

    pub fn set_message(&self, msg: String) {
        self.bar.set_message(msg);
    }

    /// Prints a line above the bar, or plainly when there is no bar.
    pub fn println(&self, line: String) {
        if self.bar.is_hidden() {
            let eta = self.eta().map(|s| format!(", ETA {s}")).unwrap_or_default();
            eprintln!("[{}/{}{eta}] {line}", self.done + 1, self.total);
        } else {
            self.bar.println(line);
        }
    }

    pub fn inc(&mut self) {
        self.done += 1;
        self.bar.inc(1);
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// The time left at the average pace so far, as `4m 10s`.
    fn eta(&self) -> Option<String> {
        if self.done == 0 {
            return None;
        }
        let per = self.started.elapsed().as_secs_f64() / self.done as f64;
        let left = (per * (self.total - self.done) as f64).round() as u64;
        Some(humantime::format_duration(std::time::Duration::from_secs(left)).to_string())
    }
}

fn ms(v: Option<f64>) -> String {
    match v {
        Some(x) if x >= 100.0 => format!("{x:.0}"),
        Some(x) => format!("{x:.2}"),
        None => "-".into(),
    }
}

fn s3(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.3}")).unwrap_or_else(|| "-".into())
}

/// A p95, or the error kinds it fell among (`timeout`), never a number
/// made up for them.
fn p95_cell(p95: Option<f64>, failed: Option<&str>) -> String {
    match (p95, failed) {
        (None, Some(kinds)) => kinds.into(),
        _ => ms(p95),
    }
}

/// The conditions table with the published figures beside them.
pub fn conditions_table(conditions: &BTreeMap<Condition, ConditionFigures>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<18} {:<12} {:>4} {:>4} {:>9} {:>9} {:>19} {:>9} {:>8} {:>8} {:>8}   published for",
        "server",
        "route",
        "slow",
        "runs",
        "p50 ms",
        "p95 ms",
        "p95 range ms",
        "pub p95",
        "app s",
        "pub app",
        "recv s",
    );
    for (c, f) in conditions {
        // The original measured slow readers only.
        let publ = published::reference(c.server, c.route, c.slow)
            .filter(|_| c.direction == schema::Direction::Download);
        let range = match (f.p95_min, f.p95_max) {
            (Some(a), Some(b)) => format!("{}-{}", ms(Some(a)), ms(Some(b))),
            _ => "-".into(),
        };
        let _ = writeln!(
            out,
            "{:<18} {:<12} {:>4} {:>4} {:>9} {:>9} {:>19} {:>9} {:>8} {:>8} {:>8}   {}{}",
            c.server.name(),
            c.route.name(),
            c.slow,
            f.runs,
            ms(f.p50),
            p95_cell(f.p95, f.p95_error.as_deref()),
            range,
            ms(publ.as_ref().map(|(p, _)| p.p95)),
            s3(f.app_send_s),
            s3(publ.as_ref().and_then(|(p, _)| p.app_send_s)),
            s3(f.client_receive_s),
            publ.map(|(_, from)| from).unwrap_or_default(),
            // A grid's cells share server, route and slow clients.
            c.dims_label(),
        );
    }
    out
}

/// The cross-check table.
pub fn crosscheck_table(rows: &[Row]) -> String {
    let mut out = String::new();
    let mark = |a: Option<bool>| match a {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "?",
    };
    let v = |x: Option<analysis::crosscheck::Verdict>| x.map(|v| v.name()).unwrap_or("-");
    let _ = writeln!(
        out,
        "prediction (rule: blocked when handlers <= slow clients and nothing absorbs a whole response, or a proxy holding them in memory outgrows its cap)"
    );
    let _ = writeln!(
        out,
        "{:<18} {:<12} {:>9} {:>9} {:>9} {:>9} {:>10}  {:>5}",
        "server", "route", "handlers", "predicted", "observed", "p95 ms", "x baseline", "agree"
    );
    for r in rows.iter().filter(|r| r.check == "prediction") {
        let ratio = match (r.p95_ms, r.baseline_p95_ms) {
            (Some(p), Some(b)) if b > 0.0 => format!("{:.0}x", p / b),
            _ => "-".into(),
        };
        let _ = writeln!(
            out,
            "{:<18} {:<12} {:>9} {:>9} {:>9} {:>9} {:>10}  {:>5}{}",
            r.server.name(),
            r.route.name(),
            r.handlers
                .map(|h| h.to_string())
                .unwrap_or_else(|| "unbound".into()),
            v(r.predicted),
            v(r.observed),
            p95_cell(r.p95_ms, r.p95_error.as_deref()),
            ratio,
            mark(r.agree),
            r.dims_label(),
        );
    }
    let replica: Vec<&Row> = rows.iter().filter(|r| r.check == "replica").collect();
    if !replica.is_empty() {
        let _ = writeln!(
            out,
            "\nreplicas against their Gunicorn/NGINX counterparts (2 slow)"
        );
        let _ = writeln!(
            out,
            "{:<31} {:<31} {:>9} {:>9} {:>9}  {:>5}",
            "stack", "reference", "verdict", "ref", "p95 ratio", "same"
        );
        for r in replica {
            let _ = writeln!(
                out,
                "{:<31} {:<31} {:>9} {:>9} {:>9}  {:>5}",
                format!("{}/{}", r.server, r.route),
                r.reference,
                v(r.observed),
                v(r.reference_observed),
                r.p95_ratio
                    .map(|x| format!("{x:.2}"))
                    .unwrap_or_else(|| "-".into()),
                mark(r.agree),
            );
        }
    }
    out
}
