//! Which conditions and runs each chart shows, in a stable order: servers
//! and routes in the order the harness defines them (direct, buffering off,
//! buffering on), and for a condition the run with its median p95, as the
//! original's time-series charts did.

use super::data::Results;
use super::rows::RunRow;
use crate::reproduce::published;
use crate::stack::{ProxyKind, Route, Server};

/// One cell of the matrix, by name (names the harness does not know sort
/// last and still get drawn).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cond {
    pub server: String,
    pub route: String,
    pub slow: u32,
}

impl Cond {
    pub fn new(server: &str, route: &str, slow: u32) -> Cond {
        Cond {
            server: server.to_string(),
            route: route.to_string(),
            slow,
        }
    }

    pub fn label(&self) -> String {
        format!("{} {}", self.server, self.route)
    }
}

/// The position of a server in `Server::ALL`, unknown names last.
pub fn server_rank(name: &str) -> usize {
    Server::ALL
        .iter()
        .position(|s| s.name() == name)
        .unwrap_or(Server::ALL.len())
}

/// The position of a route: direct, then buffering off, then on.
pub fn route_rank(name: &str) -> usize {
    match name.parse::<Route>() {
        Ok(Route::Direct) => 0,
        Ok(Route::NginxOff) => 1,
        Ok(Route::PingoraOff) => 2,
        Ok(Route::NginxOn) => 3,
        Ok(Route::PingoraOn) => 4,
        Err(_) => 5,
    }
}

/// Whether the route is a proxy with buffering on.
pub fn buffering_on(route: &str) -> bool {
    matches!(
        route.parse::<Route>().ok().and_then(Route::proxy),
        Some((_, true))
    )
}

/// Whether the route is a proxy with buffering off.
pub fn buffering_off(route: &str) -> bool {
    matches!(
        route.parse::<Route>().ok().and_then(Route::proxy),
        Some((_, false))
    )
}

/// Whether the route goes through NGINX (whose buffers are not sampled).
pub fn is_nginx(route: &str) -> bool {
    matches!(
        route.parse::<Route>().ok().and_then(Route::proxy),
        Some((ProxyKind::Nginx, _))
    )
}

/// Whether the route goes through a proxy at all.
pub fn has_proxy(route: &str) -> bool {
    route.parse::<Route>().ok().and_then(Route::proxy).is_some() || route != "direct"
}

/// How many responses the server can write at once, if known and bounded.
pub fn handlers(server: &str) -> Option<u32> {
    server.parse::<Server>().ok().and_then(Server::handlers)
}

/// The original's figure for this condition or its Gunicorn/NGINX
/// counterpart, and whose it is.
pub fn published(c: &Cond) -> Option<(published::Published, String)> {
    let s = c.server.parse::<Server>().ok()?;
    let r = c.route.parse::<Route>().ok()?;
    published::reference(s, r, c.slow)
}

fn sort_key(server: &str, route: &str, slow: u32) -> (usize, String, usize, String, u32) {
    (
        server_rank(server),
        server.to_string(),
        route_rank(route),
        route.to_string(),
        slow,
    )
}

/// Every condition present in `conditions.csv` or `runs.csv`, in order.
pub fn conditions(r: &Results) -> Vec<Cond> {
    let mut out: Vec<Cond> = r
        .conditions
        .iter()
        .map(|c| Cond::new(&c.server, &c.route, c.slow_clients))
        .chain(
            r.runs
                .iter()
                .map(|x| Cond::new(&x.server, &x.route, x.slow_clients)),
        )
        .collect();
    out.sort_by_key(|c| sort_key(&c.server, &c.route, c.slow));
    out.dedup();
    out
}

/// The servers present, in order.
pub fn servers(r: &Results) -> Vec<String> {
    let mut s: Vec<String> = conditions(r).into_iter().map(|c| c.server).collect();
    s.dedup();
    s
}

/// The conditions with `slow` slow clients, in order.
pub fn at_slow(r: &Results, slow: u32) -> Vec<Cond> {
    conditions(r)
        .into_iter()
        .filter(|c| c.slow == slow)
        .collect()
}

/// The completed runs of a condition.
pub fn ok_runs<'a>(r: &'a Results, c: &Cond) -> Vec<&'a RunRow> {
    r.runs
        .iter()
        .filter(|x| {
            x.ok() && x.server == c.server && x.route == c.route && x.slow_clients == c.slow
        })
        .collect()
}

/// The run with the median p95 of its condition (the lower middle for an
/// even count, so that it is always a run that happened).
pub fn median_run<'a>(r: &'a Results, c: &Cond) -> Option<&'a RunRow> {
    let mut runs: Vec<&RunRow> = ok_runs(r, c)
        .into_iter()
        .filter(|x| x.p95_ms.is_some())
        .collect();
    if runs.is_empty() {
        // A run whose p95 fell on a failed request still shows what happened.
        return ok_runs(r, c).into_iter().next();
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
    let all = conditions(r);
    if all.iter().any(|c| c.slow == 2) {
        return Some(2);
    }
    all.iter().map(|c| c.slow).filter(|&s| s > 0).max()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str, p95: Option<f64>) -> RunRow {
        RunRow {
            run_id: id.into(),
            server: "rust-sync2".into(),
            route: "direct".into(),
            slow_clients: 2,
            repetition: 1,
            preset: None,
            status: "ok".into(),
            reason: None,
            p95_ms: p95,
            fast_requests: None,
            fast_ok: None,
            large_responses: None,
            large_ok: None,
            app_send_s: None,
            app_cpu_cores: None,
            app_memory_peak_bytes: None,
            proxy_memory_peak_bytes: None,
            proxy_rss_peak_bytes: None,
            max_schedule_lag_ms: None,
        }
    }

    #[test]
    fn the_median_run_is_a_run_that_happened() {
        let c = Cond::new("rust-sync2", "direct", 2);
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
    fn route_order_is_direct_off_on() {
        let mut r = vec!["pingora-on", "nginx-on", "direct", "nginx-off", "x"];
        r.sort_by_key(|n| route_rank(n));
        assert_eq!(r, ["direct", "nginx-off", "nginx-on", "pingora-on", "x"]);
        assert!(buffering_on("nginx-on") && buffering_on("pingora-on"));
        assert!(buffering_off("pingora-off") && !buffering_off("direct"));
        assert!(is_nginx("nginx-off") && !is_nginx("pingora-off"));
    }
}
