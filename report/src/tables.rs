//! Section 6: the cross-check (what the simple rule predicts against what
//! was observed, and whether each Rust replica behaves as its Gunicorn/NGINX
//! counterpart), and this directory's figures next to the published ones.

use anyhow::Result;

use super::data::Results;
use super::doc::{Block, Section, Table};
use super::fmt;
use analysis::select::{self, Cond};
use catalogue::published::{MAX_SCHEDULE_LAG_MS, TEMP_PEAK_MIB};
use schema::{Check, ConditionRow, CrossRow, Direction};

/// `✓ yes`, `✗ no`, or a dash.
fn mark(agree: Option<bool>) -> String {
    match agree {
        Some(true) => "✓ yes".into(),
        Some(false) => "✗ no".into(),
        None => "–".into(),
    }
}

/// A text cell, or a dash.
fn s<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|x| x.to_string())
        .filter(|x| !x.is_empty())
        .unwrap_or_else(|| "–".into())
}

fn times_baseline(c: &CrossRow) -> String {
    match (c.p95_ms, c.baseline_p95_ms) {
        (Some(p), Some(b)) if b > 0.0 => fmt::times(p / b),
        _ => "–".into(),
    }
}

fn crosscheck(r: &Results, sec: &mut Section) {
    if r.crosscheck.is_empty() {
        sec.note("`crosscheck.csv` is missing or empty, so there is no cross-check to show.");
        return;
    }
    sec.para(
        "The rule (from the harness): a server is predicted **blocked** when its concurrent handlers are no more \
         than the slow clients and nothing in front of it absorbs a whole `/large` response (only a buffering-on \
         proxy, whose memory buffers and temp-file cap hold it, does), or when the slow clients keep as many \
         connections open at it as it accepts (Waitress: 98); otherwise **relieved**. Observed: \
         **blocked** when the p95 is at least 1 s and at least 100 times the same stack's 0-slow p95 (its \
         baseline), or when it fell among failed requests (`timed out`: failures rank last), **relieved** \
         when at most 10 times the baseline, **partial** in between.",
    );
    let pred = Table {
        header: [
            "server",
            "route",
            "slow",
            "handlers",
            "absorbs whole response",
            "predicted",
            "observed",
            "p95",
            "× baseline",
            "baseline from",
            "agree",
        ]
        .map(String::from)
        .to_vec(),
        rows: r
            .crosscheck
            .iter()
            .filter(|c| c.check == Check::Prediction)
            .map(|c| {
                vec![
                    c.server.to_string(),
                    c.route.to_string(),
                    c.slow_clients.to_string(),
                    c.handlers.clone(),
                    c.absorbs_whole_response.to_string(),
                    s(&c.predicted),
                    s(&c.observed),
                    fmt::p95_or_failed(c.p95_ms, c.p95_error.as_deref()),
                    times_baseline(c),
                    s(&c.baseline_from),
                    mark(c.agree),
                ]
            })
            .collect(),
        numeric: vec![2, 7, 8],
    };
    if !pred.rows.is_empty() {
        sec.push(Block::Table(pred));
    }
    let replica: Vec<&CrossRow> = r
        .crosscheck
        .iter()
        .filter(|c| c.check == Check::Replica)
        .collect();
    if replica.is_empty() {
        sec.para("No Rust replica ran next to its Gunicorn/NGINX counterpart here, so there is no replica check.");
        return;
    }
    sec.para("Each Rust replica against its Gunicorn/NGINX counterpart at the same number of slow connections:");
    sec.push(Block::Table(Table {
        header: [
            "replica",
            "counterpart",
            "slow",
            "replica verdict",
            "counterpart verdict",
            "replica p95",
            "counterpart p95",
            "ratio",
            "same verdict",
        ]
        .map(String::from)
        .to_vec(),
        rows: replica
            .iter()
            .map(|c| {
                vec![
                    format!("{}/{}", c.server, c.route),
                    s(&c.reference),
                    c.slow_clients.to_string(),
                    s(&c.observed),
                    s(&c.reference_observed),
                    fmt::or_dash(c.p95_ms, fmt::ms),
                    fmt::or_dash(c.reference_p95_ms, fmt::ms),
                    fmt::or_dash(c.p95_ratio, |v| format!("{v:.2}")),
                    mark(c.agree),
                ]
            })
            .collect(),
        numeric: vec![2, 5, 6, 7],
    }));
}

fn range(a: Option<f64>, b: Option<f64>, f: fn(f64) -> String) -> String {
    match (a, b) {
        (Some(a), Some(b)) => format!("{} – {}", f(a), f(b)),
        _ => "–".into(),
    }
}

fn ms_plain(v: f64) -> String {
    fmt::ms_number(v)
}

fn pub_ms(v: f64) -> String {
    fmt::ms_published(v).trim_end_matches(" ms").to_string()
}

fn published_table(r: &Results, sec: &mut Section) {
    let mut t = Table {
        header: [
            "server",
            "route",
            "slow",
            "runs",
            "p95 ms",
            "p95 range",
            "published p95",
            "published range",
            "app_send_s",
            "published",
            "client_receive_s",
            "published",
            "published for",
        ]
        .map(String::from)
        .to_vec(),
        numeric: vec![2, 3, 4, 6, 8, 9, 10, 11],
        ..Table::default()
    };
    let condition = |c: &ConditionRow| {
        schema::dims::condition_of(
            c.server.known(),
            c.route.known(),
            c.slow_clients,
            c.direction.or_download(),
            &c.dims(),
        )
    };
    // The original measured the response direction only.
    let mut conditions: Vec<&ConditionRow> = r
        .conditions
        .iter()
        .filter(|c| select::in_direction(&c.direction, Direction::Download))
        .collect();
    conditions.sort_by_key(|c| {
        (
            c.server.clone(),
            c.slow_clients,
            select::route_key(&c.route),
            condition(c),
        )
    });
    // A directory whose conditions differ in more than server, route and
    // slow clients (a `buffers` grid, both kinds of `link`) names each
    // row's dimensions beside its route.
    let varied = conditions
        .iter()
        .map(|c| c.dims())
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        > 1;
    let route_of = |c: &ConditionRow| {
        let dims = condition(c)
            .map(|k| k.dims_label())
            .filter(|_| varied)
            .unwrap_or_default();
        format!("{}{dims}", c.route)
    };
    for c in conditions {
        let cond = Cond::new(&c.server, &c.route, c.slow_clients);
        let p = select::published(&cond);
        let pp = p.as_ref().map(|x| x.0);
        t.rows.push(vec![
            c.server.to_string(),
            route_of(c),
            c.slow_clients.to_string(),
            c.runs.to_string(),
            fmt::or_dash(c.p95, ms_plain),
            range(c.p95_min, c.p95_max, ms_plain),
            fmt::or_dash(pp.map(|x| x.p95), pub_ms),
            range(
                pp.and_then(|x| x.p95_min),
                pp.and_then(|x| x.p95_max),
                pub_ms,
            ),
            fmt::or_dash(c.app_send_s, |v| format!("{v:.3}")),
            fmt::or_dash(pp.and_then(|x| x.app_send_s), |v| format!("{v:.3}")),
            fmt::or_dash(c.client_receive_s, |v| format!("{v:.3}")),
            fmt::or_dash(pp.and_then(|x| x.client_receive_s), |v| format!("{v:.3}")),
            p.map(|x| x.1).unwrap_or_else(|| "not measured".into()),
        ]);
    }
    sec.para(
        "This directory's figures next to the original's (p95 in ms, median of the runs; times in seconds). \
         A Rust replica or pingora is compared with its Gunicorn/NGINX counterpart, named in the last column.",
    );
    sec.push(Block::Table(t));
    if let Some(d) = super::notices::profile_difference(r) {
        sec.note(&d);
    }
    let mut extra = Table {
        header: ["figure", "here", "published"].map(String::from).to_vec(),
        numeric: vec![1, 2],
        ..Table::default()
    };
    let temp = r
        .conditions
        .iter()
        .filter(|c| select::buffering_on(&c.route))
        .filter_map(|c| c.temp_peak_mib)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    extra.rows.push(vec![
        "largest temp-file peak, buffering on".into(),
        fmt::or_dash(temp, fmt::mib),
        fmt::mib(TEMP_PEAK_MIB),
    ]);
    let lag = r
        .conditions
        .iter()
        .filter_map(|c| c.max_schedule_lag_ms)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    extra.rows.push(vec![
        "largest schedule lag of the load generator".into(),
        fmt::or_dash(lag, fmt::ms),
        fmt::ms(MAX_SCHEDULE_LAG_MS),
    ]);
    let req: u64 = r.conditions.iter().map(|c| c.fast_requests).sum();
    let err: u64 = r.conditions.iter().map(|c| c.fast_errors).sum();
    extra.rows.push(vec![
        "/fast requests that failed".into(),
        format!("{err} of {}", fmt::count(req as usize)),
        "none".into(),
    ]);
    sec.push(Block::Table(extra));
}

/// Builds section 6.
pub fn section(r: &Results, sec: &mut Section) -> Result<()> {
    crosscheck(r, sec);
    if r.conditions.is_empty() {
        sec.note("`conditions.csv` is missing or empty, so there are no figures to compare with the published ones.");
    } else {
        published_table(r, sec);
    }
    Ok(())
}
