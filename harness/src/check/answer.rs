//! What `check` says: a line per level as it is measured, the answer in
//! plain words with this run's numbers (one line per route, what it
//! implies, the remedy), the `--json` object, and the `check.csv` row of a
//! level.

use serde_json::{Value, json};

use super::CheckArgs;
use super::level::Figures;
use super::preflight::Finding;
use super::search::{Judge, Outcome};
use catalogue::{ProxyKind, Route};
use common::units::Size;
use schema::{CheckRow, Direction, LevelVerdict};

/// Everything one route's search found.
#[derive(Debug, Clone)]
pub struct RouteResult {
    pub route: Route,
    pub direction: Direction,
    pub baseline_ms: f64,
    pub outcome: Outcome,
    pub rows: Vec<CheckRow>,
    /// What one slow client moves: the large path's length, or an
    /// upload's (none for a slowloris client).
    pub body_bytes: u64,
    /// Its pace, bytes per second.
    pub rate: u64,
}

/// One measured level, before it becomes a row.
#[derive(Debug)]
pub struct Level<'a> {
    pub route: Route,
    pub direction: Direction,
    pub server: &'a str,
    pub slow: u32,
    pub order: u32,
    pub figures: &'a Figures,
    pub judge: &'a Judge,
    pub verdict: LevelVerdict,
    /// The recovery check's last load and whether it recovered.
    pub recovery: Option<&'a (Figures, bool)>,
    pub dir: &'a str,
}

impl Level<'_> {
    pub fn row(&self) -> CheckRow {
        let f = self.figures;
        let named = ["timeout", "connect_refused", "reset"];
        CheckRow {
            route: self.route.into(),
            server: self.server.into(),
            slow_readers: self.slow,
            order: self.order,
            fast_requests: f.requests,
            fast_ok: f.ok,
            p50_ms: f.p50_ms,
            p95_ms: f.p95_ms,
            p99_ms: f.p99_ms,
            max_ms: f.max_ms,
            baseline_p95_ms: Some(self.judge.baseline_ms),
            p95_x_baseline: f
                .p95_ms
                .filter(|_| self.judge.baseline_ms > 0.0)
                .map(|p| p / self.judge.baseline_ms),
            errors: f.error_count(),
            err_timeout: f.errors_of("timeout"),
            err_connect_refused: f.errors_of("connect_refused"),
            err_reset: f.errors_of("reset"),
            err_other: f
                .errors
                .iter()
                .filter(|(k, _)| !named.contains(&k.as_str()))
                .map(|(_, n)| n)
                .sum(),
            slow_ok: f.slow_ok,
            slow_failed: f.slow_failed,
            verdict: self.verdict.into(),
            recovery_p95_ms: self.recovery.and_then(|(r, _)| r.p95_ms),
            recovered: self.recovery.map(|(_, ok)| *ok),
            app_cpu_cores: f.app.cpu_cores,
            app_memory_peak_mib: f.app.memory_peak_mib,
            proxy_cpu_cores: f.proxy.cpu_cores,
            proxy_memory_peak_mib: f.proxy.memory_peak_mib,
            level_s: f.level_s,
            dir: self.dir.into(),
            noise_floor_ms: Some(self.judge.noise_floor_ms),
            held_limit_ms: Some(self.judge.held_limit_ms()),
            direction: self.direction.into(),
        }
    }
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.3}"))
}

/// The slow clients of `direction`, in words.
pub fn clients(direction: Direction) -> &'static str {
    match direction {
        Direction::Download => "slow readers",
        Direction::Upload => "slow uploaders",
        Direction::Headers => "slowloris clients",
    }
}

/// One slow client of `direction`, in words.
pub fn client(direction: Direction) -> &'static str {
    let many = clients(direction);
    // Every plural above ends in one `s`.
    &many[..many.len() - 1]
}

/// `direct  2 slow readers: p95 1234.500 ms (2373.0x baseline), 0 errors: denied`.
pub fn level_line(r: &CheckRow) -> String {
    let ratio = r
        .p95_x_baseline
        .map_or_else(String::new, |x| format!(" ({x:.1}x baseline)"));
    let recovered = match r.recovered {
        Some(false) => ", did NOT recover",
        _ => "",
    };
    format!(
        "{:<12} {:>4} {}: p95 {} ms{ratio}, {} errors of {} requests: {}{recovered}",
        r.route.as_str(),
        r.slow_readers,
        clients(r.direction.or_download().unwrap_or(Direction::Download)),
        ms(r.p95_ms),
        r.errors,
        r.fast_requests,
        r.verdict
    )
}

/// The route's proxy, what its name's buffering is (request buffering on
/// the request-direction routes, response buffering on the others) and
/// whether it is on; `None` direct.
fn buffering(route: Route) -> Option<(ProxyKind, &'static str, bool)> {
    let (kind, on) = route.proxy()?;
    Some(match route.request_body() {
        Some(b) if b.explicit => (kind, "request buffering", b.buffering),
        _ => (kind, "buffering", on),
    })
}

/// The route in words: `direct`, `behind NGINX buffering on`, or in the
/// request direction `behind NGINX request buffering on`.
fn label(route: Route) -> String {
    let Some((kind, what, on)) = buffering(route) else {
        return "direct".into();
    };
    let proxy = match kind {
        ProxyKind::Nginx => "NGINX",
        ProxyKind::Pingora => "pingora",
    };
    format!("behind {proxy} {what} {}", if on { "on" } else { "off" })
}

/// `direct: denied from 4` or `behind NGINX buffering on: held up to 64`.
fn short(r: &RouteResult, max_slow: u32) -> String {
    let o = &r.outcome;
    let what = match (o.denied_from, o.held_up_to) {
        (Some(d), _) => format!("denied from {d}"),
        (None, Some(h)) if h == max_slow => format!("held up to {h}"),
        (None, Some(h)) => format!("held up to {h}, degraded above"),
        (None, None) => "degraded at every level".into(),
    };
    format!("{}: {what}", label(r.route))
}

/// The one line of every route, when some level was denied (the message
/// of exit status 3).
pub fn denied_line(routes: &[RouteResult]) -> Option<String> {
    let max = routes
        .iter()
        .flat_map(|r| r.outcome.levels.iter().map(|(n, _)| *n))
        .max()
        .unwrap_or(0);
    let direction = routes.first().map_or(Direction::Download, |r| r.direction);
    routes
        .iter()
        .any(|r| r.outcome.denied_from.is_some())
        .then(|| {
            let lines: Vec<String> = routes.iter().map(|r| short(r, max)).collect();
            format!("{} were denied: {}", clients(direction), lines.join("; "))
        })
}

/// Why `d` slow clients of the route's direction are denied, in words
/// with the run's numbers.
fn why_denied(r: &RouteResult, d: u32, args: &CheckArgs) -> String {
    let each = r.body_bytes as f64 / r.rate.max(1) as f64;
    match r.direction {
        Direction::Download => format!(
            " So {d} slow downloads of {} ({}, about {each:.1} s each at {}/s) occupy every handler that answers {}: the server writes about {d} responses at once, and a slow reader holds one for nearly its whole download.",
            args.large_path.as_deref().unwrap_or("-"),
            Size(r.body_bytes),
            Size(r.rate),
            args.fast_path
        ),
        Direction::Upload => format!(
            " So {d} slow uploads to {} ({} each, about {each:.1} s at {}/s) occupy every handler that answers {}: the server reads each request body as it arrives, and a slow uploader holds a handler for its whole upload.",
            args.upload.upload_path,
            Size(r.body_bytes),
            Size(r.rate),
            args.fast_path
        ),
        Direction::Headers => format!(
            " So {d} clients that send their request head one line every {} and never finish it occupy every handler that answers {}: the server waits in a handler for the rest of each head.",
            common::units::format_duration(args.upload.header_interval),
            args.fast_path
        ),
    }
}

/// The paragraph of one route, with this run's numbers.
fn words(r: &RouteResult, args: &CheckArgs) -> String {
    let o = &r.outcome;
    let who = clients(r.direction);
    let row_at = |n: u32| r.rows.iter().find(|x| x.slow_readers == n);
    let mut s = format!("{}.", short(r, args.max_slow));
    if let Some(d) = o.denied_from {
        if let Some(x) = row_at(d) {
            let how = if x.errors > 0 {
                format!(
                    "{} of {} calls of {} failed (timeouts {}, refused {}, reset {}, other {})",
                    x.errors,
                    x.fast_requests,
                    args.fast_path,
                    x.err_timeout,
                    x.err_connect_refused,
                    x.err_reset,
                    x.err_other
                )
            } else {
                format!(
                    "the p95 of {} went from {:.3} ms with no {} to {} ms ({:.0}x)",
                    args.fast_path,
                    r.baseline_ms,
                    client(r.direction),
                    ms(x.p95_ms),
                    x.p95_x_baseline.unwrap_or(0.0)
                )
            };
            s += &format!(" With {d} {who} {how}.");
        }
        s += &why_denied(r, d, args);
    } else if let Some(x) = o.held_up_to.and_then(row_at) {
        s += &format!(
            " With {} {who} the p95 of {} was {} ms against {:.3} ms with none.",
            x.slow_readers,
            args.fast_path,
            ms(x.p95_ms),
            r.baseline_ms
        );
    }
    if o.stopped {
        s += " The search stopped early (the server did not recover after a level, or it was interrupted).";
    }
    s
}

/// The remedy that applies, from every route's result.
fn remedy(routes: &[RouteResult], args: &CheckArgs) -> String {
    let direct = routes.iter().find(|r| r.route == Route::Direct);
    let through = routes.iter().find(|r| r.route != Route::Direct);
    let denied = |r: &RouteResult| r.outcome.denied_from.is_some();
    let handlers = "give the server more handlers than slow clients (threads, or an async server)";
    let (absorbs, off, not_even, put) = match args.direction {
        Direction::Download => (
            "it takes each response off the server at once and feeds the slow readers itself",
            "buffering off only adds a second set of kernel buffers; turn the proxy's buffering on (check it with --through nginx-on or pingora-on)",
            "even the buffering proxy did not absorb them (a response larger than its buffers and temp-file cap, or a capped proxy)",
            "put a buffering reverse proxy in front (NGINX proxy_buffering on; check it with --through nginx-on or pingora-on)",
        ),
        Direction::Upload => (
            "it reads each upload whole before it passes the request on",
            "request buffering off streams each upload to the server as it arrives; turn it on (NGINX proxy_request_buffering on, its default; check it with --through nginx-on or pingora-on)",
            "even the request-buffering proxy did not absorb them (an upload larger than its body limit, or a capped proxy)",
            "put a proxy that reads the whole request before it connects upstream in front (NGINX proxy_request_buffering on, its default; check it with --through nginx-on or pingora-on)",
        ),
        Direction::Headers => (
            "it waits for the whole request head before it connects upstream",
            "even without request buffering the proxy should wait for the whole head; check its header timeout (NGINX client_header_timeout, pingora --client-header-timeout)",
            "even the proxy did not absorb them (a capped proxy, or one out of connections)",
            "put a reverse proxy in front (NGINX or pingora wait for the whole head before they connect upstream; check it with --through nginx-on or pingora-on)",
        ),
    };
    let who = clients(args.direction);
    match (direct, through) {
        (Some(d), _) if !denied(d) => format!(
            "No remedy needed up to {} {who}; raise --max-slow to look further.",
            args.max_slow
        ),
        (Some(_), Some(t)) if !denied(t) => format!(
            "Remedy: keep the proxy in front ({}): {absorbs}.",
            label(t.route)
        ),
        (Some(_), Some(t)) if matches!(buffering(t.route), Some((_, _, false))) => {
            format!("Remedy: {off}, or {handlers}.")
        }
        (Some(_), Some(_)) => format!("Remedy: {not_even}; {handlers}."),
        _ => format!("Remedy: {put}, or {handlers}."),
    }
}

/// Prints the answer: the words, or with `--json` one object.
pub fn print(args: &CheckArgs, what: &str, findings: &[Finding], routes: &[RouteResult]) {
    if args.json {
        println!("{}", json_object(args, what, findings, routes));
        return;
    }
    for f in findings {
        println!(
            "pre-flight {} ({}): {}",
            f.check,
            serde_json::to_value(f.status)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
            f.message
        );
    }
    if routes.is_empty() {
        return;
    }
    println!();
    for r in routes {
        println!("{}", words(r, args));
    }
    println!("{}", remedy(routes, args));
}

fn json_object(
    args: &CheckArgs,
    what: &str,
    findings: &[Finding],
    routes: &[RouteResult],
) -> Value {
    let routes_json: Vec<Value> = routes
        .iter()
        .map(|r| {
            let levels: Vec<Value> = r
                .rows
                .iter()
                .map(|x| {
                    json!({
                        "slow_readers": x.slow_readers,
                        "order": x.order,
                        "verdict": x.verdict.as_str(),
                        "fast_requests": x.fast_requests,
                        "fast_ok": x.fast_ok,
                        "p50_ms": x.p50_ms,
                        "p95_ms": x.p95_ms,
                        "p99_ms": x.p99_ms,
                        "max_ms": x.max_ms,
                        "p95_x_baseline": x.p95_x_baseline,
                        "held_limit_ms": x.held_limit_ms,
                        "errors": x.errors,
                        "err_timeout": x.err_timeout,
                        "err_connect_refused": x.err_connect_refused,
                        "err_reset": x.err_reset,
                        "err_other": x.err_other,
                        "slow_ok": x.slow_ok,
                        "slow_failed": x.slow_failed,
                        "recovered": x.recovered,
                        "recovery_p95_ms": x.recovery_p95_ms,
                        "app_cpu_cores": x.app_cpu_cores,
                        "app_memory_peak_mib": x.app_memory_peak_mib,
                        "proxy_cpu_cores": x.proxy_cpu_cores,
                        "proxy_memory_peak_mib": x.proxy_memory_peak_mib,
                        "level_s": x.level_s,
                        "dir": x.dir,
                    })
                })
                .collect();
            json!({
                "route": r.route.name(),
                "direction": r.direction.name(),
                "denied_from": r.outcome.denied_from,
                "held_up_to": r.outcome.held_up_to,
                "baseline_p95_ms": r.baseline_ms,
                "held_limit_ms": r.rows.first().and_then(|x| x.held_limit_ms),
                "stopped": r.outcome.stopped,
                "answer": words(r, args),
                "levels": levels,
            })
        })
        .collect();
    json!({
        "server": what,
        "direction": args.direction.name(),
        "large_path": args.large_path,
        "upload_path": (args.direction == Direction::Upload).then_some(&args.upload.upload_path),
        "fast_path": args.fast_path,
        "max_slow": args.max_slow,
        "noise_floor_ms": args.noise_floor.as_secs_f64() * 1000.0,
        "preflight": findings,
        "routes": routes_json,
        "remedy": (!routes.is_empty()).then(|| remedy(routes, args)),
    })
}
