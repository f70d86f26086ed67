//! The `slowlab sweep` section: the article's charts (replies per second
//! and response time against the demanded request rate, one line per
//! sweep) and the table of `sweep-summary.csv`.
//!
//! Sweeps of one directory differ by stack (server and route), slow
//! readers and caps. A panel holds one combination of caps and slow
//! readers, so that its lines compare stacks under the same conditions; a
//! stack keeps its colour in every panel.
//!
//! # Layout
//! - this file: the section, its figures and table, from the rows of
//!   `sweep.csv` and `sweep-summary.csv` ([`schema::sweep`]).
//! - [`chart`]: drawing the two charts.

pub mod chart;

use anyhow::Result;

use super::charts::{Csv, cell};
use super::data::Results;
use super::doc::{Block, Figure, Section, Table, text};
use analysis::select;
use schema::{
    CapsMode, Missing, RouteName, SWEEP_CSV, SWEEP_SUMMARY_CSV, ServerName, SweepRow,
    SweepSummaryRow,
};

/// A stack's label: `rust-async direct`.
pub fn stack(server: &ServerName, route: &RouteName) -> String {
    format!("{server} {route}")
}

/// Why a sweep file gave no rows, if it is missing or unreadable.
fn missing<'a>(r: &'a Results, file: &str) -> Option<&'a Missing> {
    r.missing.iter().find(|m| m.file == file)
}

/// Builds the sweep section, when the directory holds sweep results.
pub fn section(r: &Results, s: &mut Section) -> Result<()> {
    if !r.dir.join(SWEEP_CSV).is_file() {
        return Ok(());
    }
    s.para(
        "As in the rate-sweep article (autobench driving httperf): each step opens sessions at a demanded \
         connection rate for a fixed time, open loop, each session making `calls_per_conn` sequential `/fast` \
         requests; a request not answered within the timeout is an error. A server saturates where replies per \
         second stop following the demanded rate, response time climbs and errors appear.",
    );
    match missing(r, SWEEP_CSV) {
        Some(m) => s.note(&format!(
            "The sweep charts could not be drawn: `{SWEEP_CSV}` could not be read ({}).",
            m.error.as_deref().unwrap_or("absent")
        )),
        None => {
            if let Err(e) = charts(&r.sweep, s) {
                s.note(&format!("The sweep charts could not be drawn: {e:#}"));
            }
        }
    }
    match missing(r, SWEEP_SUMMARY_CSV) {
        Some(Missing { error: None, .. }) => s.note(&format!("`{SWEEP_SUMMARY_CSV}` is missing.")),
        Some(Missing { error: Some(e), .. }) => {
            s.note(&format!("`{SWEEP_SUMMARY_CSV}` could not be read: {e}"))
        }
        None if r.sweep_summary.is_empty() => {
            s.note(&format!("`{SWEEP_SUMMARY_CSV}` has no sweeps yet."))
        }
        None => table(&r.sweep_summary, s),
    }
    // A sweep killed while it wrote a row costs that row, and says so.
    for k in r
        .skipped
        .iter()
        .filter(|k| k.file == SWEEP_CSV || k.file == SWEEP_SUMMARY_CSV)
    {
        s.note(&format!(
            "`{}`: {} row(s) could not be read and are left out of the charts and table (first: {}).",
            k.file, k.rows, k.first
        ));
    }
    Ok(())
}

fn charts(steps: &[SweepRow], s: &mut Section) -> Result<()> {
    if steps.is_empty() {
        s.note(&format!("`{SWEEP_CSV}` has no steps yet."));
        return Ok(());
    }
    let mut csv = Csv::new(&[
        "sweep_id",
        "server",
        "route",
        "slow_clients",
        "caps",
        "req_rate_demanded",
        "replies_per_s_min",
        "replies_per_s_avg",
        "replies_per_s_max",
        "p95_ms",
        "errors",
        "loadgen_saturated",
    ]);
    for x in steps {
        csv.row(&[
            x.sweep_id.clone(),
            x.server.to_string(),
            x.route.to_string(),
            x.slow_clients.to_string(),
            x.caps.to_string(),
            cell(Some(x.req_rate_demanded), 0),
            cell(x.replies_per_s_min, 2),
            cell(x.replies_per_s_avg, 2),
            cell(x.replies_per_s_max, 2),
            cell(x.p95_ms, 3),
            x.errors.to_string(),
            x.loadgen_saturated
                .map(|b| b.to_string())
                .unwrap_or_default(),
        ]);
    }
    let data = csv.finish();
    let marks = "Cross: a step with errors. Black ring: a step where the load generator saturated (0.9 of a core, \
                 or a p99 schedule lag of 5 ms), which measures the client as much as the server.";
    s.push(Block::Figure(Figure {
        file: "report-sweep-replies.svg".into(),
        svg: chart::draw(steps, chart::Metric::Replies)?,
        alt: "replies per second against the demanded request rate, one line per sweep".into(),
        caption: text(&format!(
            "Unit: the step (one sending window). Point: replies per second over the window (complete 200 \
             responses by completion time); bar: the slowest to the fastest 1-second interval of the window; \
             grey diagonal: every demanded request answered. {marks}"
        )),
        data_csv: data.clone(),
    }));
    s.push(Block::Figure(Figure {
        file: "report-sweep-p95.svg".into(),
        svg: chart::draw(steps, chart::Metric::P95)?,
        alt: "p95 response time against the demanded request rate, one line per sweep".into(),
        caption: text(&format!(
            "Unit: the step. Point: the p95 (nearest rank) of the response times of the step's successful \
             requests, from the request written to the whole body; a step without replies has none. Log axis: \
             each gridline is ten times the one below. {marks}"
        )),
        data_csv: data,
    }));
    Ok(())
}

fn table(rows: &[SweepSummaryRow], s: &mut Section) {
    let mut rows: Vec<&SweepSummaryRow> = rows.iter().collect();
    rows.sort_by_key(|r| {
        (
            r.caps != CapsMode::Uncapped,
            r.slow_clients,
            r.server.clone(),
            select::route_key(&r.route),
        )
    });
    let num = |v: Option<f64>| v.map(|v| format!("{v:.0}")).unwrap_or_else(|| "–".into());
    let body = rows
        .iter()
        .map(|r| {
            let calls = r.calls_per_conn.map_or(1.0, f64::from);
            let first = match r.first_error_conn_rate {
                Some(c) => format!("{:.0} ({c:.0} conn/s)", c * calls),
                None => "none in the range".into(),
            };
            vec![
                stack(&r.server, &r.route),
                r.slow_clients.to_string(),
                r.caps.to_string(),
                num(r.calls_per_conn.map(f64::from)),
                r.steps.map(|n| n.to_string()).unwrap_or_else(|| "–".into()),
                match r.highest_error_free_req_rate {
                    Some(q) => format!("{q:.0} ({} conn/s)", num(r.highest_error_free_conn_rate)),
                    None => "none".into(),
                },
                r.highest_error_free_replies_per_s
                    .map(|v| format!("{v:.1}"))
                    .unwrap_or_else(|| "–".into()),
                first,
                r.loadgen_saturated_steps
                    .map(|n| n.to_string())
                    .unwrap_or_else(|| "–".into()),
                r.ports_exhausted_steps
                    .map(|n| n.to_string())
                    .unwrap_or_else(|| "–".into()),
            ]
        })
        .collect();
    s.para(
        "Per sweep: the highest demanded request rate whose step, and every step before it, had no error, and \
         the first rate with errors (`sweep-summary.csv`). Rates are requests per second (connections per \
         second in brackets).",
    );
    s.push(Block::Table(Table {
        header: [
            "stack",
            "slow",
            "caps",
            "calls/conn",
            "steps",
            "highest error-free req/s",
            "replies/s there",
            "first errors at req/s",
            "load generator saturated (steps)",
            "ports exhausted (steps)",
        ]
        .map(String::from)
        .to_vec(),
        rows: body,
        numeric: vec![1, 3, 4, 6, 8, 9],
    }));
    let saturated: Vec<String> = rows
        .iter()
        .filter(|r| r.loadgen_saturated_steps.unwrap_or(0) > 0)
        .map(|r| {
            let n = r.loadgen_saturated_steps.unwrap_or(0);
            format!(
                "`{}` ({n} step{})",
                r.sweep_id,
                if n == 1 { "" } else { "s" }
            )
        })
        .collect();
    if !saturated.is_empty() {
        s.note(&format!(
            "The load generator saturated in {}: in those steps it used at least 0.9 of a core or started \
             connections late (p99 schedule lag of 5 ms or more), so they measure the client as much as the \
             server: where they begin, the server's capacity is only known to be at least what was measured.",
            saturated.join(", ")
        ));
    }
    let ports: Vec<String> = rows
        .iter()
        .filter(|r| r.ports_exhausted_steps.unwrap_or(0) > 0)
        .map(|r| format!("`{}`", r.sweep_id))
        .collect();
    if !ports.is_empty() {
        s.note(&format!(
            "Ephemeral ports ran out (`EADDRNOTAVAIL`, usually TIME_WAIT) in {}: those errors are the client's \
             limit, not the server's (`err_ports_exhausted` in `{SWEEP_CSV}`).",
            ports.join(", ")
        ));
    }
}
