//! "Which proxies protect a blocking app": one blocking server behind
//! every proxy route measured (the `proxies` preset), one table per
//! direction: what the route's proxy takes off the server (from the
//! catalogue), the p95 of `/fast` at each number of slow clients with the
//! verdict the rule predicts (from the catalogue's model of the proxy)
//! and the one observed against the route's own 0-slow p95, the app's
//! write time, and the price of the relief at the most slow clients: the
//! proxy's resident memory and temp files per slow client, and its CPU;
//! above each table, its chart (the p95s and verdicts of every route, as
//! chart 7 draws the servers', in [`super::charts::verdicts`]).

use super::charts::verdicts::{self, Column, Labels};
use super::data::Results;
use super::doc::{Block, Section, Table};
use super::fmt;
use super::servers::Cell;
use analysis::crosscheck::{self, Verdict};
use analysis::select::{Cond, condition_row_in, in_direction, ok_runs_in, route_rank};
use catalogue::{Direction, LoadProfile, ProxyBuffers, ProxyKind, Route};
use common::stats::median;
use schema::{RouteName, RunRow, ServerName};

/// Fewer proxies (kinds, not routes) than this behind one server: no
/// section (the `quick` and `seed` presets' NGINX on and off are the
/// cross-check's).
const MIN_PROXY_KINDS: usize = 2;

pub const ID: &str = "proxies";
pub const TITLE: &str = "8. Which proxies protect a blocking app";
/// The chart of the response direction (the request direction's is
/// `report-proxies-upload.svg`).
pub const FILE: &str = "report-proxies.svg";

/// The server behind the most proxy routes with slow clients, and those
/// routes (direct first, in the lab's order) of `direction`.
fn server_and_routes(r: &Results, direction: Direction) -> Option<(ServerName, Vec<RouteName>)> {
    let with_slow: Vec<&RunRow> = r
        .runs
        .iter()
        .filter(|x| x.ok() && x.slow_clients > 0 && in_direction(&x.direction, direction))
        .collect();
    let mut best: Option<(ServerName, Vec<RouteName>)> = None;
    let mut servers: Vec<&ServerName> = with_slow.iter().map(|x| &x.server).collect();
    servers.sort();
    servers.dedup();
    for s in servers {
        let mut routes: Vec<RouteName> = with_slow
            .iter()
            .filter(|x| &x.server == s)
            .map(|x| x.route.clone())
            .collect();
        routes.sort_by(|a, b| route_rank(a).cmp(&route_rank(b)).then_with(|| a.cmp(b)));
        routes.dedup();
        let mut kinds: Vec<ProxyKind> = routes
            .iter()
            .filter_map(|r| r.known().and_then(Route::proxy).map(|(k, _)| k))
            .collect();
        kinds.sort_by_key(|k| k.title());
        kinds.dedup();
        if kinds.len() >= MIN_PROXY_KINDS
            && best.as_ref().is_none_or(|(_, b)| routes.len() > b.len())
        {
            best = Some((s.clone(), routes));
        }
    }
    best
}

/// What the route's proxy takes off the server of a transfer in
/// `direction`, from the catalogue.
fn takes_off(route: &RouteName, direction: Direction) -> String {
    let Some((kind, buffering)) = route.known().and_then(Route::proxy) else {
        return "–".into();
    };
    let upload = LoadProfile::experiment().upload.bytes;
    let known = route.known().expect("a known route");
    match direction {
        Direction::Download if buffering => format!("the whole response, in {}", kind.store()),
        Direction::Download if !kind.buffers_responses() => {
            "nothing: no setting buffers a response".into()
        }
        Direction::Download => "nothing: buffering off".into(),
        _ if known.absorbs_request(upload) => {
            format!("the whole body, in {}", kind.request_store())
        }
        _ if known.request_body().is_some_and(|b| b.buffering) => {
            format!(
                "at most {} of the body; the rest streams",
                kind.request_store()
            )
        }
        _ => "nothing: the body streams".into(),
    }
}

/// The median of `f` over the condition's ok runs.
fn median_of(runs: &[&RunRow], f: impl Fn(&RunRow) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = runs.iter().filter_map(|x| f(x)).collect();
    median(&v)
}

/// The table of one direction, or `None` when it has too few routes.
fn table(r: &Results, direction: Direction) -> Option<Directional> {
    let (server, routes) = server_and_routes(r, direction)?;
    let mut slows: Vec<u32> = r
        .runs
        .iter()
        .filter(|x| x.ok() && x.server == server && in_direction(&x.direction, direction))
        .map(|x| x.slow_clients)
        .collect();
    slows.push(0);
    slows.sort_unstable();
    slows.dedup();
    let most = *slows.last()?;
    let runs =
        |route: &RouteName, slow: u32| ok_runs_in(r, &Cond::new(&server, route, slow), direction); // The condition's p95 as `conditions.csv` has it (the median over its
    // runs), or what its failed requests were; from the runs when the
    // directory has no conditions.
    let p95 = |route: &RouteName, slow: u32| -> (Option<f64>, Option<String>) {
        match condition_row_in(r, &Cond::new(&server, route, slow), direction) {
            Some(c) => (c.p95, c.p95_error.clone().filter(|_| c.p95.is_none())),
            None => (median_of(&runs(route, slow), |x| x.p95_ms), None),
        }
    };
    // The runs' range of p95s, for the chart's bars.
    let range = |route: &RouteName, slow: u32| -> (Option<f64>, Option<f64>) {
        match condition_row_in(r, &Cond::new(&server, route, slow), direction) {
            Some(c) => (c.p95_min, c.p95_max),
            None => {
                let v: Vec<f64> = runs(route, slow).iter().filter_map(|x| x.p95_ms).collect();
                (
                    v.iter().copied().reduce(f64::min),
                    v.iter().copied().reduce(f64::max),
                )
            }
        }
    };
    let mut header: Vec<String> = ["route", "takes off the server", "p95, 0 slow"]
        .map(String::from)
        .to_vec();
    for s in slows.iter().filter(|&&s| s > 0) {
        header.push(format!("p95, {s} slow"));
        header.push(format!("{s} slow: predicted / observed"));
    }
    header.extend([
        format!("app write time, {most} slow"),
        format!("proxy memory per slow client, {most} slow"),
        format!("temp files per slow client, {most} slow"),
        format!("proxy CPU, {most} slow"),
    ]);
    let mut rows = Vec::new();
    let mut columns = Vec::new();
    let mut protected = Vec::new();
    let mut lost = Vec::new();
    let mut disagree = Vec::new();
    let profile = LoadProfile::experiment();
    let body = match direction {
        Direction::Download => profile.body.large_bytes,
        _ => profile.upload.bytes,
    };
    let cap = ProxyBuffers::EXPERIMENT.capacity();
    for route in &routes {
        let base = p95(route, 0).0;
        let mut row = vec![
            route.to_string(),
            takes_off(route, direction),
            fmt::or_dash(base, fmt::ms),
        ];
        let mut verdicts = Vec::new();
        let (min, max) = range(route, 0);
        let mut cells = vec![Cell {
            slow: 0,
            p95: base,
            min,
            max,
            predicted: None,
            observed: None,
        }];
        // The price is read at the most slow clients the route measured a
        // p95 at: a proxy its cgroup killed left no peak worth the name.
        let mut priced = 0;
        for &slow in slows.iter().filter(|&&s| s > 0) {
            let (p, failed) = p95(route, slow);
            row.push(fmt::p95_or_failed(p, failed.as_deref()));
            if p.is_some() {
                priced = slow;
            }
            // As the cross-check: a p95 among failed requests is blocked.
            let v = match (p, &failed, base) {
                (Some(p), _, Some(b)) => Some(crosscheck::observe(p, b)),
                (None, Some(_), Some(_)) => Some(Verdict::Blocked),
                _ => None,
            };
            verdicts.push(v);
            let predicted = match (server.known(), route.known()) {
                (Some(s), Some(r)) => {
                    Some(crosscheck::predict_in(direction, s, r, slow, body, cap))
                }
                _ => None,
            };
            if let (Some(a), Some(b)) = (predicted, v)
                && a != b
            {
                disagree.push(format!("{route} at {slow} slow"));
            }
            row.push(format!(
                "{} / {}",
                predicted.map_or("–", Verdict::name),
                v.map_or("–", Verdict::name)
            ));
            let (min, max) = range(route, slow);
            cells.push(Cell {
                slow,
                p95: p,
                min,
                max,
                predicted,
                observed: v,
            });
        }
        columns.push((route.to_string(), cells));
        let at_most = runs(route, priced);
        let at_none = runs(route, 0);
        let per_client = |f: &dyn Fn(&RunRow) -> Option<f64>| {
            let (a, b) = (median_of(&at_most, f), median_of(&at_none, f));
            a.filter(|_| priced > 0)
                .map(|a| (a - b.unwrap_or(0.0)).max(0.0) / f64::from(priced))
        };
        let at = |cell: String| {
            if priced == most || cell == "–" {
                cell
            } else {
                format!("{cell} (at {priced} slow)")
            }
        };
        let proxied = route.known().is_some_and(|r| r.proxy().is_some());
        row.push(fmt::or_dash(
            median_of(&runs(route, most), |x| x.app_send_s),
            |s| format!("{s:.2} s"),
        ));
        let rss = |x: &RunRow| x.proxy_rss_peak_bytes.map(|b| b as f64 / (1 << 20) as f64);
        let price = |cell: String| if proxied { at(cell) } else { "–".into() };
        row.push(price(fmt::or_dash(per_client(&rss), fmt::mib)));
        row.push(price(fmt::or_dash(
            per_client(&|x: &RunRow| x.temp_peak_mib),
            fmt::mib,
        )));
        row.push(price(fmt::or_dash(
            median_of(&at_most, |x| x.proxy_cpu_cores),
            |c| format!("{c:.3} cores"),
        )));
        // The slow transfers themselves failed (a proxy killed under them
        // fails them, whatever `/fast` saw).
        let failed_at: Vec<u32> = slows
            .iter()
            .copied()
            .filter(|&s| s > 0 && runs(route, s).iter().any(|x| transfers_failed(r, x)))
            .collect();
        if proxied && !failed_at.is_empty() {
            let outgrown = failed_at.iter().any(|&s| {
                route.known().is_some_and(|k| {
                    k.outgrows_memory(direction, s, body, ProxyBuffers::EXPERIMENT_PROXY_MEMORY)
                })
            });
            lost.push(format!(
                "{route} at {}{}",
                failed_at
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                if outgrown {
                    " (its memory outgrows its cap)"
                } else {
                    ""
                }
            ));
        }
        if proxied
            && failed_at.is_empty()
            && !verdicts.is_empty()
            && verdicts.iter().all(|v| *v == Some(Verdict::Relieved))
        {
            protected.push(route.to_string());
        }
        rows.push(row);
    }
    let numeric = (2..header.len())
        .filter(|i| !header[*i].contains("predicted"))
        .collect();
    Some(Directional {
        server,
        most,
        table: Table {
            header,
            rows,
            numeric,
        },
        protected,
        lost,
        disagree,
        columns,
    })
}

/// Whether a slow download or upload of run `x` failed: downloads from its
/// `runs.csv` counts, uploads from `uploads.csv`.
fn transfers_failed(r: &Results, x: &RunRow) -> bool {
    x.large_ok < x.large_responses
        || r.uploads
            .iter()
            .any(|u| u.run_id == x.run_id && u.error.as_deref().is_some_and(|e| !e.is_empty()))
}

/// One direction's table and what its words say of it.
struct Directional {
    server: ServerName,
    most: u32,
    table: Table,
    /// The proxy routes observed relieved at every number of slow clients,
    /// their slow transfers whole.
    protected: Vec<String>,
    /// The proxy routes whose slow transfers failed, and at how many.
    lost: Vec<String>,
    /// Where the rule and the observation disagree.
    disagree: Vec<String>,
    /// The chart's columns: each route's cells, 0 slow first.
    columns: Vec<(String, Vec<Cell>)>,
}

/// The section, when a server was measured behind at least
/// [`MIN_PROXY_KINDS`] proxies with slow clients.
pub fn section(r: &Results, sec: &mut Section) -> anyhow::Result<()> {
    for (direction, clients) in [
        (Direction::Download, "slow readers of `/large`"),
        (Direction::Upload, "slow uploaders"),
    ] {
        let Some(d) = table(r, direction) else {
            continue;
        };
        sec.para(&format!(
            "**{clients}**: {} directly and behind each proxy route. *takes off the server*: what \
             the route's proxy reads whole before the server's handler is free of it, from the \
             catalogue, which the rule's prediction uses (with the proxy's memory: one that holds \
             the transfers in memory beyond its cap is killed by its cgroup); each verdict is \
             observed against the same route's 0-slow p95, as in the cross-check, a p95 among \
             failed requests counting as blocked. The price of the relief, at {} slow (or the most \
             slow clients the route measured a p95 at): the proxy's resident memory and temp files \
             at their peak, less their peak with no slow client, per slow client, and its CPU over \
             the run (medians over the runs). Protected at every number measured, the slow \
             transfers whole: {}.{}",
            d.server,
            d.most,
            if d.protected.is_empty() {
                "none".to_string()
            } else {
                d.protected.join(", ")
            },
            if d.lost.is_empty() {
                String::new()
            } else {
                format!(
                    " The slow transfers themselves failed behind {} (the runs' \
                     large-responses.csv and uploads.csv): a proxy its cgroup killed fails \
                     them, and Varnish's manager starts a new child at once, so `/fast` goes \
                     on through it.",
                    d.lost.join("; ")
                )
            }
        ));
        let columns: Vec<Column<'_>> = d
            .columns
            .iter()
            .map(|(name, cells)| Column {
                name: name.clone(),
                cells,
            })
            .collect();
        let who = match direction {
            Direction::Download => "readers",
            _ => "uploaders",
        };
        let labels = Labels {
            file: match direction {
                Direction::Download => FILE.into(),
                _ => format!("report-proxies-{}.svg", direction.name()),
            },
            alt: format!(
                "p95 of /fast of {} directly and behind each proxy route, by number of slow {who}, \
                 with the verdicts",
                d.server
            ),
            column: "route",
            clients: who,
        };
        if let Err(e) = verdicts::figure(&columns, &labels, sec) {
            sec.note(&format!("The chart could not be drawn: {e:#}"));
        }
        sec.push(Block::Table(d.table));
        if !d.disagree.is_empty() {
            sec.para(&format!(
                "The rule and the observation disagree for {}: the rule counts the handlers the \
                 slow clients hold and what the proxy takes off them, not the proxy's own work \
                 under its CPU cap, nor the queue of whole transfers a buffering proxy hands to the \
                 server's few handlers at once.",
                d.disagree.join(", ")
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use schema::Named;

    fn run(route: Route, direction: Direction, slow: u32, p95: f64, rss_mib: u64) -> RunRow {
        RunRow {
            run_id: format!("{route}-{slow}"),
            server: Named::parse("gunicorn-sync2"),
            route: route.into(),
            slow_clients: slow,
            repetition: 1,
            status: Named::parse("ok"),
            p95_ms: Some(p95),
            proxy_rss_peak_bytes: route.proxy().map(|_| rss_mib << 20),
            proxy_cpu_cores: route.proxy().map(|_| 0.05),
            direction: Named::parse(direction.name()),
            ..RunRow::default()
        }
    }

    fn build(r: &Results) -> Section {
        let mut s = Section::new(ID, TITLE);
        section(r, &mut s).expect("the section builds");
        s
    }

    #[test]
    fn each_route_says_what_it_takes_off_and_what_the_relief_costs() {
        let down = Direction::Download;
        let mut r = Results {
            runs: vec![
                run(Route::Direct, down, 0, 2.0, 0),
                run(Route::Direct, down, 2, 6000.0, 0),
                run(Route::NginxOn, down, 0, 2.0, 10),
                run(Route::NginxOn, down, 2, 2.5, 14),
            ],
            ..Results::default()
        };
        assert!(build(&r).blocks.is_empty(), "one proxy is no comparison");
        r.runs.extend([
            run(Route::NginxOff, down, 0, 2.0, 1),
            run(Route::NginxOff, down, 2, 3000.0, 1),
        ]);
        assert!(
            build(&r).blocks.is_empty(),
            "nor are two routes of one proxy"
        );
        r.runs.extend([
            run(Route::Haproxy, down, 0, 2.0, 4),
            run(Route::Haproxy, down, 2, 5000.0, 4),
            run(Route::CaddyBuf, down, 0, 2.0, 20),
            run(Route::CaddyBuf, down, 2, 3.0, 84),
        ]);
        let sec = build(&r);
        let Some(Block::Table(t)) = sec.blocks.iter().find(|b| matches!(b, Block::Table(_))) else {
            panic!("no table");
        };
        let names: Vec<&str> = t.rows.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(
            names,
            ["direct", "nginx-off", "nginx-on", "caddy-buf", "haproxy"]
        );
        assert_eq!(
            t.rows[2][1],
            "the whole response, in memory, then temp files"
        );
        assert_eq!(t.rows[2][4], "relieved / relieved");
        assert_eq!(t.rows[3][1], "the whole response, in memory");
        // (84 - 20) MiB over 2 slow readers.
        assert_eq!(t.rows[3][6], "32.0 MiB");
        assert_eq!(t.rows[4][1], "nothing: no setting buffers a response");
        assert_eq!(t.rows[4][4], "blocked / blocked");
        assert_eq!(t.rows[0][6], "–");
        let text = format!("{:?}", sec.blocks);
        assert!(
            text.contains(
                "Protected at every number measured, the slow transfers whole: nginx-on, caddy-buf."
            ),
            "{text}"
        );
        // A proxy killed under its slow downloads (Varnish's child: `/fast`
        // goes on) is relieved for `/fast`, but protects no one.
        let mut lost = r.clone();
        lost.runs.extend([
            run(Route::Varnish, down, 0, 2.0, 10),
            RunRow {
                large_responses: 2,
                large_ok: 0,
                ..run(Route::Varnish, down, 2, 3.0, 40)
            },
        ]);
        let text = format!("{:?}", build(&lost).blocks);
        assert!(
            text.contains("the slow transfers whole: nginx-on, caddy-buf."),
            "{text}"
        );
        assert!(
            text.contains("The slow transfers themselves failed behind varnish at 2 ("),
            "{text}"
        );
        // Uploads get their own table.
        let up = Direction::Upload;
        r.runs.extend([
            run(Route::Direct, up, 0, 2.0, 0),
            run(Route::Direct, up, 2, 7000.0, 0),
            run(Route::HaproxyReqbuf, up, 0, 2.0, 4),
            run(Route::HaproxyReqbuf, up, 2, 7000.0, 4),
            run(Route::NginxReqbufOn, up, 0, 2.0, 4),
            run(Route::NginxReqbufOn, up, 2, 2.0, 4),
        ]);
        let sec = build(&r);
        let tables: Vec<&Table> = sec
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::Table(t) => Some(t),
                _ => None,
            })
            .collect();
        assert_eq!(tables.len(), 2);
        let figures: Vec<&str> = sec
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::Figure(f) => Some(f.file.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(figures, [FILE, "report-proxies-upload.svg"]);
        let Some(Block::Figure(f)) = sec.blocks.iter().find(|b| matches!(b, Block::Figure(_)))
        else {
            panic!("no figure");
        };
        assert!(
            f.data_csv.starts_with("route,slow_clients,p95_ms"),
            "{}",
            f.data_csv
        );
        assert!(
            f.data_csv
                .contains("\nhaproxy,2,5000.000,5000.000,5000.000,blocked,blocked\n"),
            "{}",
            f.data_csv
        );
        let hap = tables[1]
            .rows
            .iter()
            .find(|r| r[0] == "haproxy-reqbuf")
            .unwrap();
        assert_eq!(
            hap[1],
            "at most one 16 KiB buffer of the body; the rest streams"
        );
        assert_eq!(hap[4], "blocked / blocked");
        let text = format!("{:?}", sec.blocks);
        assert!(!text.contains("disagree"), "{text}");
    }
}
