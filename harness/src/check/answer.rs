//! What `check` writes and prints: the `check.csv` row of a level, a line
//! per level as it is measured, the answer (the words are [`explain`]'s),
//! and the `--json` object.
//!
//! [`explain`]: super::explain

use serde_json::{Value, json};

use super::CheckArgs;
use super::evidence::Cause;
use super::explain;
use super::level::Figures;
use super::preflight::Finding;
use super::search::{Judge, Outcome, Settled};
use catalogue::Route;
use schema::{CheckRow, Direction, LevelVerdict, RouteName};

/// Everything one route's search found.
#[derive(Debug, Clone)]
pub struct RouteResult {
    pub route: Route,
    /// Whether it is the user's own proxy (`--through-cmd`; `route` is
    /// then direct, and what the proxy buffers is not known).
    pub own_proxy: bool,
    /// Its name in the answer and `check.csv` (`--label` for the route to
    /// the server itself).
    pub label: String,
    pub direction: Direction,
    pub baseline_ms: f64,
    pub outcome: Outcome,
    /// The boundary after its repetitions.
    pub settled: Settled,
    pub rows: Vec<CheckRow>,
    /// What one slow client moves: the large path's length, or an
    /// upload's (none for a slowloris client).
    pub body_bytes: u64,
    /// Its pace, bytes per second.
    pub rate: u64,
}

impl RouteResult {
    /// The row of the first measurement of a level with `n` slow clients.
    pub fn row_at(&self, n: u32) -> Option<&CheckRow> {
        self.rows.iter().find(|x| x.slow_readers == n)
    }

    /// The first held run of the level of `n` slow clients, else its first
    /// run (a level held after a transient denial is told by a held run).
    pub fn held_row_at(&self, n: u32) -> Option<&CheckRow> {
        self.rows
            .iter()
            .find(|x| x.slow_readers == n && x.verdict == schema::Named::Known(LevelVerdict::Held))
            .or_else(|| self.row_at(n))
    }

    /// Whether the route's settled verdict is "denied".
    pub fn denied(&self) -> bool {
        self.settled.denied_from.is_some()
    }

    /// Whether the route could not be judged to its end.
    pub fn inconclusive(&self) -> bool {
        self.outcome.inconclusive_from.is_some()
    }
}

/// One measured level, before it becomes a row.
#[derive(Debug)]
pub struct Level<'a> {
    /// The route's label.
    pub route: &'a str,
    pub direction: Direction,
    pub server: &'a str,
    pub slow: u32,
    pub order: u32,
    pub figures: &'a Figures,
    pub judge: &'a Judge,
    pub verdict: LevelVerdict,
    pub cause: Cause,
    /// 1 for the level's first measurement.
    pub repetition: u32,
    /// What the clients spoke at the route's edge.
    pub edge: catalogue::Edge,
    /// How many slow downloads shared one connection.
    pub streams_per_conn: u32,
    /// The recovery check's last load and whether it recovered.
    pub recovery: Option<&'a (Figures, bool)>,
    pub dir: &'a str,
}

impl Level<'_> {
    pub fn row(&self) -> CheckRow {
        let f = self.figures;
        let e = &f.evidence;
        let named = ["timeout", "connect_refused", "reset"];
        CheckRow {
            route: RouteName::parse(self.route),
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
            cause: self.cause.name().into(),
            loadgen_cpu_cores: e.loadgen_cpu_cores,
            host_idle_cores: e.host_idle_cores,
            host_steal_ms: e
                .host_steal_share
                .map(|s| s * f.level_s * e.host_cores * 1000.0),
            schedule_lag_p99_ms: e.schedule_lag_p99_ms,
            held_sockets: e.held_sockets,
            waiting_requests: e.waiting_requests,
            server_fds: e.server_fds,
            server_fd_limit: e.server_fd_limit,
            listen_overflows: e.listen_overflows,
            first_byte_p50_ms: e.first_byte_p50_ms,
            repetition: Some(self.repetition),
            app_cpu_peak_cores: e.app_cpu_peak_cores,
            fast_began_s: Some(f.fast_began_s),
            fast_settled: f.settled.clone().unwrap_or_default(),
            protocol: Some(self.edge.protocol().into()),
            streams_per_conn: Some(self.streams_per_conn),
        }
    }
}

pub fn ms(v: Option<f64>) -> String {
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

/// `direct  2 slow readers: p95 1234.500 ms (2373.0x baseline), 0 errors: denied (handlers)`.
pub fn level_line(r: &CheckRow) -> String {
    let ratio = r
        .p95_x_baseline
        .map_or_else(String::new, |x| format!(" ({x:.1}x baseline)"));
    let recovered = match r.recovered {
        Some(false) => ", did NOT recover",
        _ => "",
    };
    let cause = match r.cause.as_str() {
        "" | "none" => String::new(),
        c => format!(" ({c})"),
    };
    let again = match r.repetition {
        Some(n) if n > 1 => format!(" [run {n}]"),
        _ => String::new(),
    };
    format!(
        "{:<12} {:>4} {}: p95 {} ms{ratio}, {} errors of {} requests: {}{cause}{recovered}{again}",
        r.route.as_str(),
        r.slow_readers,
        clients(r.direction.or_download().unwrap_or(Direction::Download)),
        ms(r.p95_ms),
        r.errors,
        r.fast_requests,
        r.verdict
    )
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
        println!("{}", explain::words(r, args));
    }
    println!("{}", explain::remedy(routes, args));
}

/// Writes the answer (the `--json` object) as `check.json` into `out`, for
/// the report; a failure to write it is said, not fatal.
pub fn write(
    out: &std::path::Path,
    args: &CheckArgs,
    what: &str,
    findings: &[Finding],
    routes: &[RouteResult],
) {
    let path = out.join(schema::CHECK_JSON);
    let text = json_object(args, what, findings, routes).to_string() + "\n";
    if let Err(e) = std::fs::write(&path, text) {
        eprintln!("slowlab: {} could not be written: {e}", path.display());
    }
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
                        "repetition": x.repetition,
                        "verdict": x.verdict.as_str(),
                        "cause": x.cause,
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
                        "loadgen_cpu_cores": x.loadgen_cpu_cores,
                        "host_idle_cores": x.host_idle_cores,
                        "host_steal_ms": x.host_steal_ms,
                        "schedule_lag_p99_ms": x.schedule_lag_p99_ms,
                        "held_sockets": x.held_sockets,
                        "waiting_requests": x.waiting_requests,
                        "server_fds": x.server_fds,
                        "server_fd_limit": x.server_fd_limit,
                        "listen_overflows": x.listen_overflows,
                        "first_byte_p50_ms": x.first_byte_p50_ms,
                        "app_cpu_peak_cores": x.app_cpu_peak_cores,
                        "fast_began_s": x.fast_began_s,
                        "fast_settled": x.fast_settled,
                        "level_s": x.level_s,
                        "dir": x.dir,
                    })
                })
                .collect();
            json!({
                "route": r.label,
                "direction": r.direction.name(),
                "protocol": r.rows.first().and_then(|x| x.protocol.clone()),
                "streams_per_conn": r.rows.first().and_then(|x| x.streams_per_conn),
                "denied_from": r.settled.denied_from,
                "held_up_to": r.settled.held_up_to,
                "inconclusive_from": r.outcome.inconclusive_from,
                "range": r.settled.range.map(|(lo, hi)| json!({"from": lo, "to": hi})),
                "agreement": r.settled.agreement.iter().map(|(n, agreed, runs)| json!({
                    "slow_readers": n, "agreed": agreed, "runs": runs,
                })).collect::<Vec<_>>(),
                "baseline_p95_ms": r.baseline_ms,
                "held_limit_ms": r.rows.first().and_then(|x| x.held_limit_ms),
                "stopped": r.outcome.stopped,
                "gated": explain::gated(r, args),
                "answer": explain::words(r, args),
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
        "remedy": (!routes.is_empty()).then(|| explain::remedy(routes, args)),
    })
}
