//! Which conditions and runs each chart shows, in a stable order: servers
//! and routes in the order the harness defines them (direct, buffering off,
//! buffering on), and for a condition the run with its median p95, as the
//! original's time-series charts did. Names come parsed from the files;
//! names this version does not know sort last and are still drawn.

use catalogue::published;
use catalogue::{ProxyKind, Route, Server};
use schema::ResultSet as Results;
use schema::{Direction, DirectionName, RouteName, RunRow, ServerName};

/// One cell of the matrix.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cond {
    pub server: ServerName,
    pub route: RouteName,
    pub slow: u32,
}

impl Cond {
    pub fn new(server: &ServerName, route: &RouteName, slow: u32) -> Cond {
        Cond {
            server: server.clone(),
            route: route.clone(),
            slow,
        }
    }

    pub fn label(&self) -> String {
        format!("{} {}", self.server, self.route)
    }

    /// Whether a row of this server, route and slow clients is this cell.
    pub fn is(&self, server: &ServerName, route: &RouteName, slow: u32) -> bool {
        self.server == *server && self.route == *route && self.slow == slow
    }
}

/// The position of a route: its place in the catalogue's `Route::ALL`,
/// which is the display order; unknown routes last.
pub fn route_rank(route: &RouteName) -> usize {
    route
        .known()
        .and_then(|k| Route::ALL.iter().position(|r| *r == k))
        .unwrap_or(Route::ALL.len())
}

/// Routes in display order.
pub fn route_key(route: &RouteName) -> (usize, RouteName) {
    (route_rank(route), route.clone())
}

/// The proxy of a known route and its buffering.
fn proxy(route: &RouteName) -> Option<(ProxyKind, bool)> {
    route.known().and_then(Route::proxy)
}

/// Whether the route is a proxy with buffering on.
pub fn buffering_on(route: &RouteName) -> bool {
    matches!(proxy(route), Some((_, true)))
}

/// Whether the route is a proxy with buffering off.
pub fn buffering_off(route: &RouteName) -> bool {
    matches!(proxy(route), Some((_, false)))
}

/// Whether the route goes through NGINX (whose buffers are not sampled).
pub fn is_nginx(route: &RouteName) -> bool {
    matches!(proxy(route), Some((ProxyKind::Nginx, _)))
}

/// Whether the route goes through pingora (whose gauge is sampled).
pub fn is_pingora(route: &RouteName) -> bool {
    matches!(proxy(route), Some((ProxyKind::Pingora, _)))
}

/// Whether the route goes through a proxy at all (an unknown route is
/// assumed to).
pub fn has_proxy(route: &RouteName) -> bool {
    route.known().is_none_or(|r| r.proxy().is_some())
}

/// How many responses the server can write at once, if known and bounded.
pub fn handlers(server: &ServerName) -> Option<u32> {
    server.known().and_then(Server::handlers)
}

/// The original's figure for this condition or its Gunicorn/NGINX
/// counterpart, and whose it is.
pub fn published(c: &Cond) -> Option<(published::Published, String)> {
    published::reference(c.server.known()?, c.route.known()?, c.slow)
}

fn sort_key(c: &Cond) -> (ServerName, usize, RouteName, u32) {
    (
        c.server.clone(),
        route_rank(&c.route),
        c.route.clone(),
        c.slow,
    )
}

/// Whether a row of `direction` is in `want` (an empty direction, in
/// files before the column, is the download direction).
pub fn in_direction(direction: &DirectionName, want: Direction) -> bool {
    direction.or_download() == Some(want)
}

/// Every condition of the response direction (slow readers of `/large`)
/// present in `conditions.csv` or `runs.csv`, in order: the cells the
/// response sections draw.
pub fn conditions(r: &Results) -> Vec<Cond> {
    conditions_in(r, Direction::Download)
}

/// Whether a row's slow downloads each had their own connection: the
/// cells of these sections. Those that shared connections (the `h2`
/// preset's streams per connection) have their own table
/// (`report::streams`), so that one cell never mixes two shapes of the
/// same number of slow clients.
pub fn one_per_connection(streams_per_conn: Option<u32>) -> bool {
    streams_per_conn.unwrap_or(1) == 1
}

/// Every condition of `direction` present in `conditions.csv` or
/// `runs.csv`, in order.
pub fn conditions_in(r: &Results, direction: Direction) -> Vec<Cond> {
    let mut out: Vec<Cond> = r
        .conditions
        .iter()
        .filter(|c| in_direction(&c.direction, direction))
        .filter(|c| one_per_connection(c.streams_per_conn))
        .map(|c| Cond::new(&c.server, &c.route, c.slow_clients))
        .chain(
            r.runs
                .iter()
                .filter(|x| in_direction(&x.direction, direction))
                .filter(|x| one_per_connection(x.streams_per_conn))
                .map(|x| Cond::new(&x.server, &x.route, x.slow_clients)),
        )
        .collect();
    out.sort_by_key(sort_key);
    out.dedup();
    out
}

/// The conditions with `slow` slow clients, in order.
pub fn at_slow(r: &Results, slow: u32) -> Vec<Cond> {
    conditions(r)
        .into_iter()
        .filter(|c| c.slow == slow)
        .collect()
}

/// The completed runs of a condition of the response direction.
pub fn ok_runs<'a>(r: &'a Results, c: &Cond) -> Vec<&'a RunRow> {
    ok_runs_in(r, c, Direction::Download)
}

/// The completed runs of a condition of `direction`.
pub fn ok_runs_in<'a>(r: &'a Results, c: &Cond, direction: Direction) -> Vec<&'a RunRow> {
    r.runs
        .iter()
        .filter(|x| {
            x.ok()
                && in_direction(&x.direction, direction)
                && one_per_connection(x.streams_per_conn)
                && c.is(&x.server, &x.route, x.slow_clients)
        })
        .collect()
}

/// The row of `conditions.csv` of a condition of the response direction.
pub fn condition_row<'a>(r: &'a Results, c: &Cond) -> Option<&'a schema::ConditionRow> {
    condition_row_in(r, c, Direction::Download)
}

/// The row of `conditions.csv` of a condition of `direction`.
pub fn condition_row_in<'a>(
    r: &'a Results,
    c: &Cond,
    direction: Direction,
) -> Option<&'a schema::ConditionRow> {
    r.conditions.iter().find(|x| {
        in_direction(&x.direction, direction)
            && one_per_connection(x.streams_per_conn)
            && c.is(&x.server, &x.route, x.slow_clients)
    })
}

/// The run with the median p95 of its condition (the lower middle for an
/// even count, so that it is always a run that happened).
pub fn median_run<'a>(r: &'a Results, c: &Cond) -> Option<&'a RunRow> {
    median_run_in(r, c, Direction::Download)
}

/// [`median_run`] of a condition of `direction`.
pub fn median_run_in<'a>(r: &'a Results, c: &Cond, direction: Direction) -> Option<&'a RunRow> {
    let mut runs: Vec<&RunRow> = ok_runs_in(r, c, direction)
        .into_iter()
        .filter(|x| x.p95_ms.is_some())
        .collect();
    if runs.is_empty() {
        // A run whose p95 fell on a failed request still shows what happened.
        return ok_runs_in(r, c, direction).into_iter().next();
    }
    runs.sort_by(|a, b| {
        let (pa, pb) = (a.p95_ms.unwrap_or(f64::MAX), b.p95_ms.unwrap_or(f64::MAX));
        pa.total_cmp(&pb).then_with(|| a.run_id.cmp(&b.run_id))
    });
    Some(runs[(runs.len() - 1) / 2])
}

/// For every condition with `slow` slow clients, its median-p95 run.
pub fn shown_runs(r: &Results, slow: u32) -> Vec<(Cond, &RunRow)> {
    at_slow(r, slow)
        .into_iter()
        .filter_map(|c| median_run(r, &c).map(|run| (c, run)))
        .collect()
}

/// The slow-client count the comparisons use: 2 as in the original, else
/// the largest present.
pub fn comparison_slow(r: &Results) -> Option<u32> {
    comparison_slow_in(r, Direction::Download)
}

/// [`comparison_slow`] among the conditions of `direction`.
pub fn comparison_slow_in(r: &Results, direction: Direction) -> Option<u32> {
    let all = conditions_in(r, direction);
    if all.iter().any(|c| c.slow == 2) {
        return Some(2);
    }
    all.iter().map(|c| c.slow).filter(|&s| s > 0).max()
}

#[cfg(test)]
mod tests {
    use super::*;
    use schema::{Named, RunStatus};

    fn run(id: &str, p95: Option<f64>) -> RunRow {
        RunRow {
            run_id: id.into(),
            server: Server::RustSync2.into(),
            route: Route::Direct.into(),
            slow_clients: 2,
            repetition: 1,
            status: RunStatus::Ok.into(),
            p95_ms: p95,
            ..RunRow::default()
        }
    }

    #[test]
    fn the_median_run_is_a_run_that_happened() {
        let c = Cond::new(&Server::RustSync2.into(), &Route::Direct.into(), 2);
        let mut r = Results {
            runs: vec![
                run("1", Some(3.0)),
                run("2", Some(1.0)),
                run("3", Some(2.0)),
            ],
            ..Results::default()
        };
        assert_eq!(median_run(&r, &c).map(|x| x.run_id.as_str()), Some("3"));
        r.runs.pop();
        assert_eq!(median_run(&r, &c).map(|x| x.run_id.as_str()), Some("2"));
        r.runs = vec![run("9", None)];
        assert_eq!(median_run(&r, &c).map(|x| x.run_id.as_str()), Some("9"));
        assert_eq!(comparison_slow(&r), Some(2));
    }

    #[test]
    fn downloads_that_shared_connections_are_not_these_cells() {
        let c = Cond::new(&Server::RustSync2.into(), &Route::Direct.into(), 2);
        let mut shared = run("2", Some(9.0));
        shared.streams_per_conn = Some(2);
        let mut own = run("1", Some(1.0));
        own.streams_per_conn = Some(1);
        let r = Results {
            runs: vec![own, shared, run("0", Some(2.0))],
            ..Results::default()
        };
        let ids: Vec<&str> = ok_runs(&r, &c).iter().map(|x| x.run_id.as_str()).collect();
        assert_eq!(ids, ["1", "0"], "an empty cell of an older file is one");
        assert_eq!(conditions(&r), [c]);
    }

    #[test]
    fn route_order_is_direct_off_on_and_unknown_names_last() {
        let mut r: Vec<RouteName> = ["pingora-on", "nginx-on", "direct", "nginx-off", "x"]
            .iter()
            .map(|n| Named::parse(n))
            .collect();
        r.sort_by_key(route_key);
        let names: Vec<String> = r.iter().map(|n| n.to_string()).collect();
        assert_eq!(
            names,
            ["direct", "nginx-off", "nginx-on", "pingora-on", "x"]
        );
        let p = |n: &str| RouteName::parse(n);
        assert!(buffering_on(&p("nginx-on")) && buffering_on(&p("pingora-on")));
        assert!(buffering_off(&p("pingora-off")) && !buffering_off(&p("direct")));
        assert!(is_nginx(&p("nginx-off")) && !is_nginx(&p("pingora-off")));
        assert!(has_proxy(&p("x")) && !has_proxy(&p("direct")));
        assert!(
            ServerName::parse("rust-async") < ServerName::parse("aaa"),
            "unknown servers sort after the known ones"
        );
    }
}
