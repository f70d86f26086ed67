//! The request direction: slow uploads (`uploads.csv`, `app-recvs.csv`)
//! and slowloris clients (`slow-headers.csv`). The p95 of `/fast` by route
//! and slow clients (a table and chart 1's drawing), the app's receive
//! time against the client's send time, where the upload bytes are
//! ([`super::upload_bytes`]), and the explanation, every number from the
//! directory's data; a sentence whose numbers are missing is left out.
//! The section is drawn only when the directory has request-direction
//! conditions.

use anyhow::Result;
use common::stats::median;

use super::charts::p95;
use super::data::Results;
use super::doc::{Block, Section, Table};
use super::fmt;
use super::upload_bytes::{self, Snapshot};
use analysis::select::{self, Cond};
use catalogue::Route;
use schema::{Check, ConditionRow, Direction, RunRow, Verdict};

/// The HTML id of the section.
pub const ID: &str = "request";
pub const TITLE: &str = "The request direction: slow uploads and slowloris";

/// A held handler: the app read the body for at least this share of the
/// client's send time (it read at the client's pace, not the proxy's).
pub const HELD_SHARE: f64 = 0.5;

/// The conditions of `direction` in `conditions.csv`, in display order.
fn rows(r: &Results, direction: Direction) -> Vec<&ConditionRow> {
    let mut v: Vec<&ConditionRow> = r
        .conditions
        .iter()
        .filter(|c| select::in_direction(&c.direction, direction))
        .collect();
    v.sort_by_key(|c| {
        (
            c.server.clone(),
            select::route_key(&c.route),
            c.slow_clients,
        )
    });
    v
}

/// The observed verdict of a condition, from `crosscheck.csv`.
fn verdict(r: &Results, direction: Direction, c: &Cond) -> Option<Verdict> {
    r.crosscheck
        .iter()
        .find(|x| {
            x.check == Check::Prediction
                && select::in_direction(&x.direction, direction)
                && c.is(&x.server, &x.route, x.slow_clients)
        })
        .and_then(|x| x.observed.as_ref().and_then(|v| v.known()))
}

/// A condition's p95 as a table cell ([`fmt::p95_or_failed`]).
pub fn p95_cell(c: &ConditionRow) -> String {
    fmt::p95_or_failed(c.p95, c.p95_error.as_deref())
}

fn cond(c: &ConditionRow) -> Cond {
    Cond::new(&c.server, &c.route, c.slow_clients)
}

/// The table of p95 by route and slow clients of `direction`.
fn p95_table(r: &Results, direction: Direction, what: &str) -> Table {
    let mut t = Table {
        header: [
            "server",
            "route",
            what,
            "runs",
            "p95",
            "p95 range",
            "observed",
        ]
        .map(String::from)
        .to_vec(),
        numeric: vec![2, 3, 4],
        ..Table::default()
    };
    for c in rows(r, direction) {
        let range = match (c.p95_min, c.p95_max) {
            (Some(a), Some(b)) => format!("{} – {}", fmt::ms(a), fmt::ms(b)),
            _ => "–".into(),
        };
        t.rows.push(vec![
            c.server.to_string(),
            c.route.to_string(),
            c.slow_clients.to_string(),
            c.runs.to_string(),
            p95_cell(c),
            range,
            verdict(r, direction, &cond(c))
                .map(|v| v.to_string())
                .unwrap_or_else(|| "–".into()),
        ]);
    }
    t
}

/// The upload figures of one condition, over its completed runs.
#[derive(Debug, Clone, Default)]
pub struct UploadFigures {
    pub cond: Option<Cond>,
    pub uploads: usize,
    pub completed: usize,
    /// Median `send_s` of the uploads (client: first to last body byte).
    pub send_s: Option<f64>,
    /// Median `app_recv_s` of the app's complete receives.
    pub app_recv_s: Option<f64>,
    /// Median over the runs of the time from the first upload's start to
    /// the app's first request head.
    pub head_after_start_s: Option<f64>,
    pub app_receives: usize,
    /// Complete receives whose pattern held.
    pub verified: usize,
    pub p95: Option<f64>,
    pub baseline_p95: Option<f64>,
    pub verdict: Option<Verdict>,
}

impl UploadFigures {
    /// Whether the app read each body for about as long as its client
    /// sent it: its handler was held by the slow upload.
    pub fn held(&self) -> Option<bool> {
        Some(self.app_recv_s? >= HELD_SHARE * self.send_s?)
    }
}

fn runs_of<'a>(r: &'a Results, c: &Cond) -> Vec<&'a RunRow> {
    select::ok_runs_in(r, c, Direction::Upload)
}

/// The figures of one upload condition.
pub fn upload_figures(r: &Results, c: &Cond) -> UploadFigures {
    let ids: Vec<&str> = runs_of(r, c).iter().map(|x| x.run_id.as_str()).collect();
    let ups: Vec<_> = r
        .uploads
        .iter()
        .filter(|u| ids.contains(&u.run_id.as_str()))
        .collect();
    let recvs: Vec<_> = r
        .app_recvs
        .iter()
        .filter(|a| ids.contains(&a.run_id.as_str()) && a.complete == Some(true))
        .collect();
    let sends: Vec<f64> = ups.iter().filter_map(|u| u.send_s).collect();
    let recv_s: Vec<f64> = recvs.iter().filter_map(|a| a.app_recv_s).collect();
    // Per run: the app's first request head after the first upload began.
    let lags: Vec<f64> = ids
        .iter()
        .filter_map(|id| {
            let began = ups
                .iter()
                .filter(|u| u.run_id == *id)
                .map(|u| u.started_s)
                .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.min(v))))?;
            let head = recvs
                .iter()
                .filter(|a| a.run_id == *id)
                .filter_map(|a| a.t_s)
                .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.min(v))))?;
            Some(head - began)
        })
        .collect();
    let row = select::condition_row_in(r, c, Direction::Upload);
    let base = select::condition_row_in(
        r,
        &Cond {
            slow: 0,
            ..c.clone()
        },
        Direction::Upload,
    );
    UploadFigures {
        cond: Some(c.clone()),
        uploads: ups.len(),
        completed: ups.iter().filter(|u| u.status == Some(200)).count(),
        send_s: median(&sends),
        app_recv_s: median(&recv_s),
        head_after_start_s: median(&lags),
        app_receives: recvs.len(),
        verified: recvs.iter().filter(|a| a.pattern_ok == Some(true)).count(),
        p95: row.and_then(|x| x.p95),
        baseline_p95: base.and_then(|x| x.p95),
        verdict: verdict(r, Direction::Upload, c),
    }
}

/// The upload conditions with slow uploaders at the comparison level.
fn upload_conds(r: &Results) -> (u32, Vec<Cond>) {
    let slow = select::comparison_slow_in(r, Direction::Upload).unwrap_or(0);
    let conds = select::conditions_in(r, Direction::Upload)
        .into_iter()
        .filter(|c| c.slow == slow && slow > 0)
        .collect();
    (slow, conds)
}

fn receive_table(figs: &[UploadFigures]) -> Table {
    let mut t = Table {
        header: [
            "server",
            "route",
            "uploads (completed)",
            "client send_s",
            "app app_recv_s",
            "app / client",
            "app saw the first head, after the upload began",
            "app verified",
        ]
        .map(String::from)
        .to_vec(),
        numeric: vec![3, 4, 5, 6],
        ..Table::default()
    };
    for f in figs {
        let Some(c) = &f.cond else { continue };
        t.rows.push(vec![
            c.server.to_string(),
            c.route.to_string(),
            format!("{} ({})", f.uploads, f.completed),
            fmt::or_dash(f.send_s, fmt::secs),
            fmt::or_dash(f.app_recv_s, fmt::secs),
            match (f.app_recv_s, f.send_s) {
                (Some(a), Some(s)) if s > 0.0 => format!("{:.2}", a / s),
                _ => "–".into(),
            },
            fmt::or_dash(f.head_after_start_s, fmt::secs),
            format!("{} of {}", f.verified, f.app_receives),
        ]);
    }
    t
}

fn layer(v: &Result<f64, &'static str>) -> String {
    match v {
        Ok(b) => fmt::bytes(*b),
        Err(_) => "not sampled".into(),
    }
}

fn bytes_table(snaps: &[(Cond, Snapshot)]) -> Table {
    let mut t = Table {
        header: [
            "server",
            "route",
            "at t",
            "not yet sent or not sampled (derived)",
            "client send queues",
            "kernel between",
            "proxy memory",
            "proxy body temp file",
            "read by the app",
        ]
        .map(String::from)
        .to_vec(),
        numeric: vec![2, 3, 4, 5, 6, 7, 8],
        ..Table::default()
    };
    for (c, s) in snaps {
        t.rows.push(vec![
            c.server.to_string(),
            c.route.to_string(),
            fmt::secs(s.t),
            fmt::bytes(s.not_sent()),
            fmt::bytes(s.client_queue),
            fmt::bytes(s.between()),
            layer(&s.proxy_memory),
            layer(&s.proxy_file),
            layer(&s.app_read),
        ]);
    }
    t
}

/// What a route does with the request body, in the reader's terms.
fn route_words(c: &Cond) -> String {
    match c.route.known() {
        Some(Route::Direct) => "straight to the app".into(),
        Some(r) => match r.request_body() {
            Some(b) if b.buffering => format!("behind `{r}` (request buffering on)"),
            _ => format!("behind `{r}` (request buffering off)"),
        },
        _ => format!("through `{}`", c.route),
    }
}

/// One sentence per route of the followed server: how long the app read,
/// against the client, and what `/fast` did.
fn upload_sentence(f: &UploadFigures, slow: u32) -> Option<String> {
    let c = f.cond.as_ref()?;
    let (send, recv) = (f.send_s?, f.app_recv_s?);
    let held = f.held()?;
    let how = if held {
        format!(
            "the app read each body for {} while its client took {} to send it: the handler was held for the whole upload",
            fmt::secs(recv),
            fmt::secs(send)
        )
    } else {
        let after = f
            .head_after_start_s
            .filter(|&l| l >= HELD_SHARE * send)
            .map(|l| {
                format!(
                    ", and saw the first request head only {} after the upload began",
                    fmt::secs(l)
                )
            })
            .unwrap_or_default();
        format!(
            "the app read each body in {} against its client's {} of sending{after}: the proxy took the slow upload off the handler",
            fmt::secs(recv),
            fmt::secs(send)
        )
    };
    let fast = match (f.p95, f.baseline_p95) {
        (Some(p), Some(b)) => format!(
            "; the p95 of `/fast` was {} against {} with no slow uploader",
            fmt::ms(p),
            fmt::ms(b)
        ),
        (Some(p), None) => format!("; the p95 of `/fast` was {}", fmt::ms(p)),
        _ => String::new(),
    };
    let v = f
        .verdict
        .map(|v| format!(" (observed: {v})"))
        .unwrap_or_default();
    Some(format!(
        "With {slow} slow uploaders of `{}` {}, {how}{fast}{v}.",
        c.server,
        route_words(c)
    ))
}

/// The closing sentence: request buffering, not the proxy, relieves, if
/// the verdicts say so.
fn conclusion(figs: &[UploadFigures]) -> Option<String> {
    let by = |on: bool| {
        figs.iter().filter(move |f| {
            f.cond
                .as_ref()
                .and_then(|c| c.route.known())
                .and_then(Route::request_body)
                .is_some_and(|b| b.buffering == on)
        })
    };
    let on_relieved: Vec<String> = by(true)
        .filter(|f| f.verdict == Some(Verdict::Relieved))
        .filter_map(|f| f.cond.as_ref().map(|c| format!("`{}`", c.route)))
        .collect();
    let off_blocked: Vec<String> = by(false)
        .filter(|f| f.verdict == Some(Verdict::Blocked))
        .filter_map(|f| f.cond.as_ref().map(|c| format!("`{}`", c.route)))
        .collect();
    (!on_relieved.is_empty() && !off_blocked.is_empty()).then(|| {
        format!(
            "So the proxy alone does not help: streaming the body ({}) leaves the handler held as long as the client sends, and only reading the whole body before connecting upstream ({}) frees it, at the cost of holding the upload in the proxy.",
            off_blocked.join(", "),
            on_relieved.join(", ")
        )
    })
}

fn uploads(r: &Results, s: &mut Section) -> Result<()> {
    let (slow, conds) = upload_conds(r);
    let body = r.profile_f64(&["upload", "bytes"]).or_else(|| {
        r.uploads
            .iter()
            .map(|u| u.upload_bytes)
            .max()
            .map(|v| v as f64)
    });
    let rate = r.profile_f64(&["upload", "rate"]);
    s.para(&match (body, rate) {
        (Some(b), Some(rate)) => format!(
            "**Slow uploads.** {slow} clients each `POST /upload` a {} body at {}, so one upload takes about {}, while `/fast` is called on its schedule as in the response direction. A sync worker reads the body itself: it is held until the last byte has arrived.",
            fmt::bytes(b),
            fmt::rate(rate),
            fmt::secs1(b / rate)
        ),
        _ => format!("**Slow uploads.** {slow} clients each `POST /upload` a large body slowly, while `/fast` is called on its schedule."),
    });
    s.push(Block::Table(p95_table(
        r,
        Direction::Upload,
        "slow uploaders",
    )));
    if let Some(fig) = p95::chart(
        r,
        Direction::Upload,
        "report-upload-p95.svg",
        "p95 of /fast by route and number of slow uploaders, one panel per server",
    )? {
        s.push(Block::Figure(fig));
    }
    if conds.is_empty() {
        s.note("No condition with slow uploaders completed here, so there is no receive time to compare.");
        return Ok(());
    }
    let figs: Vec<UploadFigures> = conds.iter().map(|c| upload_figures(r, c)).collect();
    s.para(&format!(
        "The app's receive time (`app_recv_s` of `app-recvs.csv`: from the request head to the last body byte read) against the client's send time (`send_s` of `uploads.csv`: from the first body byte to the last accepted by its kernel), median over the uploads of the condition's runs, {slow} slow uploaders. The app is held for an upload when it reads for at least {:.0}% of the client's time.",
        HELD_SHARE * 100.0
    ));
    s.push(Block::Table(receive_table(&figs)));
    let said: Vec<String> = figs
        .iter()
        .filter_map(|f| upload_sentence(f, slow))
        .chain(conclusion(&figs))
        .collect();
    if !said.is_empty() {
        s.para(&said.join(" "));
    }
    let unverified: usize = figs.iter().map(|f| f.app_receives - f.verified).sum();
    if unverified > 0 {
        s.note(&format!(
            "{unverified} completed receives did not verify the body's pattern (`pattern_ok` in `app-recvs.csv`)."
        ));
    }
    where_bytes(r, s, &conds);
    Ok(())
}

fn where_bytes(r: &Results, s: &mut Section, conds: &[Cond]) {
    let mut snaps = Vec::new();
    let mut why = Vec::new();
    for c in conds {
        let Some(run) = select::median_run_in(r, c, Direction::Upload) else {
            continue;
        };
        match upload_bytes::snapshot(r, &run.run_id, &c.route) {
            Ok(snap) => snaps.push((c.clone(), snap)),
            Err(e) => why.push(format!("{} (run {}): {e}", c.label(), run.run_id)),
        }
    }
    if !snaps.is_empty() {
        s.para(
            "**Where the upload bytes are**, in the run with the median p95 of each route, at the last socket sample before the uploads were half sent (`t`, seconds on the run's clock: halfway from the first upload's start to the first client's last byte), summed over the uploads: \
             not yet written by the clients, or in a layer that was not sampled (derived: the rest), in their send queues, in the kernel between (the proxy's receive queues from the clients, its send queues to the app, the app's receive queues), inside the proxy (pingora's gauge; for NGINX its body temp files as sampled), and read by the app (the `tcp_info` bytes its sockets received less their queues, request heads included, plus uploads it had finished).",
        );
        s.push(Block::Table(bytes_table(&snaps)));
        let mut said = Vec::new();
        for (c, snap) in &snaps {
            let (Ok(read), Ok(file)) = (&snap.app_read, &snap.proxy_file) else {
                continue;
            };
            let mem = snap.proxy_memory.as_ref().ok().copied().unwrap_or(0.0);
            if mem + file > *read {
                said.push(format!(
                    "Halfway, the proxy in front of `{}` (`{}`) held {} of the {} and the app had read {}.",
                    c.server,
                    c.route,
                    fmt::bytes(mem + file),
                    fmt::bytes(snap.total),
                    fmt::bytes(*read)
                ));
            } else if snap.between() + snap.client_queue < *read {
                said.push(format!(
                    "Halfway, the app (`{}` on `{}`) had read {} and the kernel's queues held {}: the body passes through at the client's pace.",
                    c.server,
                    c.route,
                    fmt::bytes(*read),
                    fmt::bytes(snap.between() + snap.client_queue)
                ));
            }
        }
        if !said.is_empty() {
            s.para(&said.join(" "));
        }
        let mut missing: Vec<&str> = snaps
            .iter()
            .flat_map(|(_, x)| [&x.proxy_memory, &x.proxy_file, &x.app_read])
            .filter_map(|v| v.as_ref().err().copied())
            .collect();
        missing.sort_unstable();
        missing.dedup();
        if !missing.is_empty() {
            s.note(&format!("Not sampled here: {}.", missing.join("; ")));
        }
    }
    if !why.is_empty() {
        s.note(&format!("No snapshot for {}.", why.join("; ")));
    }
}

fn headers(r: &Results, s: &mut Section) {
    let slow = select::comparison_slow_in(r, Direction::Headers).unwrap_or(0);
    s.para(
        "**Slowloris.** Clients that send a request head one header line at a time and never finish it (`slow-headers.csv`). A sync worker that accepted such a connection waits for the rest of the head; a proxy holds the unfinished head itself and opens no upstream connection. The p95 of `/fast`, by route and number of slowloris clients:"
    );
    s.push(Block::Table(p95_table(
        r,
        Direction::Headers,
        "slowloris clients",
    )));
    let mut said = Vec::new();
    for c in select::conditions_in(r, Direction::Headers)
        .into_iter()
        .filter(|c| c.slow == slow && slow > 0)
    {
        let Some(row) = select::condition_row_in(r, &c, Direction::Headers) else {
            continue;
        };
        let p95 = match (row.p95, row.p95_error.as_deref()) {
            (Some(p), _) => fmt::ms(p),
            (None, Some("timeout")) => match r.profile_f64(&["timeout"]) {
                Some(t) => format!("timed out (after {})", fmt::secs1(t)),
                None => "timed out".into(),
            },
            (None, Some(_)) => p95_cell(row),
            (None, None) => continue,
        };
        let base = select::condition_row_in(
            r,
            &Cond {
                slow: 0,
                ..c.clone()
            },
            Direction::Headers,
        )
        .and_then(|x| x.p95)
        .map(|b| format!(" against {}", fmt::ms(b)))
        .unwrap_or_default();
        let ids: Vec<String> = select::ok_runs_in(r, &c, Direction::Headers)
            .iter()
            .map(|x| x.run_id.clone())
            .collect();
        let held: Vec<f64> = r
            .slow_headers
            .iter()
            .filter(|h| ids.contains(&h.run_id))
            .filter_map(|h| h.held_s)
            .collect();
        let held = median(&held)
            .map(|h| {
                format!(
                    ", each client held its connection for {} (median)",
                    fmt::secs(h)
                )
            })
            .unwrap_or_default();
        let v = verdict(r, Direction::Headers, &c)
            .map(|v| format!(" (observed: {v})"))
            .unwrap_or_default();
        said.push(format!(
            "`{}` {}: p95 {p95}{base}{held}{v}.",
            c.server,
            route_words(&c)
                .replace(" (request buffering on)", "")
                .replace(" (request buffering off)", ""),
        ));
    }
    if !said.is_empty() {
        s.para(&format!(
            "With {slow} slowloris clients: {}",
            said.join(" ")
        ));
    }
}

/// Builds the section; left empty (and so out of the report) when the
/// directory has no request-direction conditions.
pub fn section(r: &Results, s: &mut Section) -> Result<()> {
    let any = |d| !select::conditions_in(r, d).is_empty();
    if any(Direction::Upload) {
        uploads(r, s)?;
    }
    if any(Direction::Headers) {
        headers(r, s);
    }
    Ok(())
}
