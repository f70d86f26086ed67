//! The answer in words, from the evidence: one paragraph per route that
//! says what the levels found, what decided the first level that was not
//! held (the cause `check.csv` records, with the figure that shows it and
//! the file it is in), how many runs of the boundary agreed, and one
//! remedy that follows the cause. An inconclusive route says what of the
//! tester or the host ran out and how to go on, never what the server
//! would have done.

use catalogue::{ProxyKind, Route};
use common::units::Size;
use schema::{CheckRow, Direction};

use super::CheckArgs;
use super::answer::{RouteResult, client, clients, ms};
use super::evidence::{Cause, Handlers, TESTER_CPU_SHARE};
use super::search::Settled;

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

/// The route in words: its label directly (`direct`, `target`), or
/// `behind NGINX buffering on`.
fn label(r: &RouteResult) -> String {
    if r.own_proxy {
        return format!("behind your proxy ({})", r.label);
    }
    let Some((kind, what, on)) = buffering(r.route) else {
        return r.label.clone();
    };
    // An HTTP/2 or TLS edge is named, so that its line and the cleartext
    // twin's are told apart.
    let proxy = match r.route.edge() {
        e if e == catalogue::Edge::CLEARTEXT_HTTP1 => kind.title().to_string(),
        e => format!("{} ({} edge)", kind.title(), e.protocol()),
    };
    let base = if what == "buffering" && !kind.buffers_responses() {
        // No switch to name: it has no response buffering.
        format!("behind {proxy}")
    } else {
        format!("behind {proxy} {what} {}", if on { "on" } else { "off" })
    };
    // Uploads through a response route: say what the proxy does with the
    // request bodies, which is what the level measured.
    if what == "buffering" && r.direction == Direction::Upload {
        let request = match r.route.request_body() {
            Some(b) if b.buffering => "request buffering on by default",
            _ => "no request buffering",
        };
        return format!("{base} ({request})");
    }
    base
}

/// `direct: denied from 4 (3 of 3 runs)`, `behind NGINX buffering on: held
/// up to 64`, `target: inconclusive from 117`.
fn short(r: &RouteResult, max_slow: u32) -> String {
    let o = &r.outcome;
    let s = &r.settled;
    let agreed = |n: u32| {
        s.agreement
            .iter()
            .find(|(m, ..)| *m == n)
            .filter(|(_, _, runs)| *runs > 1)
            .map(|(_, agreed, runs)| format!(" ({agreed} of {runs} runs)"))
            .unwrap_or_default()
    };
    let what = match (s.range, s.denied_from, o.inconclusive_from, s.held_up_to) {
        (Some((lo, Some(hi))), ..) if lo != hi => format!(
            "denied from somewhere in {lo} to {hi}: the boundary did not repeat{}{}",
            agreed(lo),
            agreed(hi)
        ),
        (Some((lo, None)), Some(_), ..) => format!(
            "denied from {lo}{}, or more: it did not deny in every run",
            agreed(lo)
        ),
        (_, Some(d), ..) => format!("denied from {d}{}", agreed(d)),
        (_, None, Some(i), Some(h)) => format!("held up to {h}, inconclusive from {i}"),
        (_, None, Some(i), None) => format!("inconclusive from {i}"),
        (_, None, None, Some(h)) if h == max_slow => format!("held up to {h}{}", transient(s)),
        (_, None, None, Some(h)) => format!("held up to {h}{}, degraded above", transient(s)),
        (_, None, None, None) => "degraded at every level".into(),
    };
    format!("{}: {what}", label(r))
}

/// ` (denied in 1 of its 3 runs at 1024)`, for a first denial its repeats
/// overturned; empty otherwise.
fn transient(s: &Settled) -> String {
    s.transient
        .map(|(n, denied, runs)| format!(" (denied in {denied} of its {runs} runs at {n})"))
        .unwrap_or_default()
}

/// Whether `r` decides the exit status (`--gate`; every route by default).
pub fn gated(r: &RouteResult, args: &CheckArgs) -> bool {
    args.gate.is_empty() || args.gate.contains(&r.label)
}

/// The one line of every gated route, when one was denied (the message of
/// exit status 3).
pub fn denied_line(routes: &[RouteResult], args: &CheckArgs) -> Option<String> {
    let gated: Vec<&RouteResult> = routes.iter().filter(|r| gated(r, args)).collect();
    gated.iter().any(|r| r.denied()).then(|| {
        let lines: Vec<String> = gated.iter().map(|r| short(r, args.max_slow)).collect();
        format!(
            "{} were denied: {}",
            clients(args.direction),
            lines.join("; ")
        )
    })
}

/// The line of every gated route that could not be judged, when one could
/// not (the message of exit status 4).
pub fn inconclusive_line(routes: &[RouteResult], args: &CheckArgs) -> Option<String> {
    let unsure: Vec<String> = routes
        .iter()
        .filter(|r| gated(r, args) && r.inconclusive())
        .map(|r| {
            let why = r
                .outcome
                .inconclusive_from
                .and_then(|n| r.row_at(n))
                .map(|x| ran_out(x, args))
                .unwrap_or_default();
            format!("{}: {why}", short(r, args.max_slow))
        })
        .collect();
    (!unsure.is_empty()).then(|| unsure.join("; "))
}

/// What of the tester or the host ran out at a level, with its figure.
fn ran_out(x: &CheckRow, args: &CheckArgs) -> String {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let who = format!("{} {}", x.slow_readers, clients(args.direction));
    match x.cause.as_str() {
        "tester_cpu" => format!(
            "with {who} the load generator used {:.2} cores, more than {:.0}% of this machine's {cores}",
            x.loadgen_cpu_cores.unwrap_or(0.0),
            TESTER_CPU_SHARE * 100.0
        ),
        "host_cpu" => format!(
            "with {who} the host had {:.2} cores idle and the server used {} of the rest",
            x.host_idle_cores.unwrap_or(0.0),
            x.app_cpu_cores
                .map_or("an unknown share".into(), |c| format!("only {c:.2}"))
        ),
        "host_steal" => format!(
            "with {who} the hypervisor took {:.0} ms of CPU from this machine",
            x.host_steal_ms.unwrap_or(0.0)
        ),
        "schedule" => format!(
            "with {who} the fast calls started up to {} ms late (p99)",
            ms(x.schedule_lag_p99_ms)
        ),
        other => format!("with {who}: {other}"),
    }
}

/// Why a level was not held, in words with its figures and its file.
fn why(r: &RouteResult, x: &CheckRow, args: &CheckArgs) -> String {
    let n = x.slow_readers;
    let who = clients(r.direction);
    let dir = format!("in {}/", x.dir);
    let cpu = x
        .app_cpu_cores
        .map_or("not measured".into(), |c| format!("{c:.2} cores"));
    match x.cause.as_str() {
        "handlers" => match r.direction {
            Direction::Download => format!(
                " The server's handlers were held: up to {} of its sockets held responses the kernel would not take (send queues at least half full, socket-samples {dir}) while its CPU was {cpu}. {n} slow downloads of {} ({}, about {:.1} s each at {}/s) occupy the handlers that answer {}, and a slow reader holds one for nearly its whole download.",
                x.held_sockets.unwrap_or(0),
                args.large_path.as_deref().unwrap_or("/large"),
                Size(r.body_bytes),
                r.body_bytes as f64 / r.rate.max(1) as f64,
                Size(r.rate),
                args.fast_path
            ),
            Direction::Upload => format!(
                " The server's handlers were held: {n} slow uploads to {} ({} each at {}/s) kept their connections open at the server (its CPU {cpu}); it reads each body as it arrives, so an uploader holds a handler for its whole upload.",
                args.upload.upload_path,
                Size(r.body_bytes),
                Size(r.rate)
            ),
            Direction::Headers => format!(
                " The server's handlers were held: {n} clients that send their head one line every {} and never finish it kept their connections open at the server (its CPU {cpu}), each waiting in a handler for the rest of its head.",
                common::units::format_duration(args.upload.header_interval)
            ),
        },
        "queueing" => format!(
            " This is not held handlers: the proxy drained the server's sockets (at most {} held at once), but the slow downloads waited {} ms for their first byte (median, large-responses.csv {dir}): the proxy takes each response whole, so {n} responses queued behind the server's handlers and the calls of {} waited in the same queue.",
            x.held_sockets.unwrap_or(0),
            ms(x.first_byte_p50_ms),
            args.fast_path
        ),
        "cpu" => format!(
            " The server ran out of CPU: it used {cpu}{}{} with {n} {who} (resource samples {dir}).",
            match (args.caps.and_then(|c| c.app), x.host_idle_cores) {
                (Some(c), _) => format!(" of its {} cores", c.cpu_cores),
                (None, Some(idle)) => format!(", the host {idle:.2} cores idle"),
                (None, None) => String::new(),
            },
            match x.app_cpu_peak_cores {
                Some(p) if args.caps.and_then(|c| c.app).is_none() => format!(
                    ", and {p:.2} cores over its busiest second: an event loop is one thread, out of CPU at one core whatever the host has idle"
                ),
                _ => String::new(),
            }
        ),
        "memory" => format!(
            " The server ran out of memory: {} MiB at its peak with {n} {who}{}.",
            x.app_memory_peak_mib
                .map_or("-".into(), |m| format!("{m:.0}")),
            args.caps
                .and_then(|c| c.app)
                .map(|c| format!(", against its cap of {}", Size(c.memory_bytes)))
                .unwrap_or_default()
        ),
        "descriptors" => format!(
            " The server ran out of descriptors: {} open against its limit of {}.",
            x.server_fds.unwrap_or(0),
            x.server_fd_limit.map_or("-".into(), |l| l.to_string())
        ),
        "accept_queue" => format!(
            " The server's listen queue overflowed: {} connections dropped (ListenOverflows) with {n} {who}: it did not accept them fast enough.",
            x.listen_overflows.unwrap_or(0)
        ),
        _ => format!(
            "{} Nothing the lab measures explains it: the server's CPU {cpu} ({} cores over its busiest second), {} sockets held, first bytes after {} ms; see {}/.",
            not_handlers(args, n),
            x.app_cpu_peak_cores
                .map_or("-".into(), |p| format!("{p:.2}")),
            x.held_sockets.map_or("-".into(), |h| h.to_string()),
            ms(x.first_byte_p50_ms),
            x.dir
        ),
    }
}

/// When a level's fast calls waited for its slow downloads' first bytes
/// (`slowlab load --fast-settle`) noticeably, the clause that says so.
fn began(x: &CheckRow) -> String {
    match x.fast_began_s {
        Some(b) if b >= 0.5 && x.fast_settled == "first_bytes" => format!(
            " (its calls began {b:.1} s into the level, once every slow download had its first byte: the readers all connect at once, and the server took that long to answer them all)"
        ),
        Some(b) if b >= 0.5 && x.fast_settled == "timeout" => format!(
            " (its calls began {b:.1} s into the level, at the timeout, with slow downloads still getting their first bytes)"
        ),
        _ => String::new(),
    }
}

/// For a lab server whose handlers `n` slow clients cannot all hold, the
/// sentence that says so (the catalogue's handlers); else nothing.
fn not_handlers(args: &CheckArgs, n: u32) -> String {
    let Some(server) = args.server.filter(|s| Handlers::of(*s).outnumber(n)) else {
        return String::new();
    };
    match Handlers::of(server) {
        Handlers::AtMost(h) => {
            format!(" Not held handlers: {server} has {h} handlers, more than {n}.")
        }
        _ => {
            format!(" Not held handlers: {server} has no handler limit (one task per connection).")
        }
    }
}

/// The paragraph of one route, with this run's numbers.
pub fn words(r: &RouteResult, args: &CheckArgs) -> String {
    let o = &r.outcome;
    let who = clients(r.direction);
    let mut s = format!("{}.", short(r, args.max_slow));
    // A first denial its repeats overturned is not the boundary.
    let first_bad = r
        .settled
        .denied_from
        .or(o.denied_from.filter(|_| r.settled.transient.is_none()))
        .and_then(|d| r.row_at(d));
    if let Some(x) = first_bad {
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
        s += &format!(" With {} {who} {how}{}.", x.slow_readers, began(x));
        s += &why(r, x, args);
    } else if let Some(x) = r.settled.held_up_to.and_then(|h| r.held_row_at(h)) {
        s += &format!(
            " With {} {who} the p95 of {} was {} ms against {:.3} ms with none{}.",
            x.slow_readers,
            args.fast_path,
            ms(x.p95_ms),
            r.baseline_ms,
            began(x)
        );
    }
    if let Some(x) = o.inconclusive_from.and_then(|n| r.row_at(n)) {
        s += &format!(
            " Inconclusive: {}; the tester ran out, not the server. Go on with fewer {who} per level (--max-slow under {}), a lower --slow-rate, or several machines (shard the levels and merge, as `reproduce --shard` does).",
            ran_out(x, args),
            x.slow_readers
        );
    }
    if o.stopped {
        s += " The search stopped early (the server did not recover after a level, or it was interrupted).";
    }
    s
}

/// The cause of a route's first level that was not held, if any.
fn cause_of(r: &RouteResult) -> Option<Cause> {
    let n = r.settled.denied_from.or(r.outcome.denied_from)?;
    let name = r.row_at(n)?.cause.clone();
    [
        Cause::Handlers,
        Cause::Queueing,
        Cause::Cpu,
        Cause::Memory,
        Cause::Descriptors,
        Cause::AcceptQueue,
        Cause::ProxyCpu,
        Cause::ProxyMemory,
    ]
    .into_iter()
    .find(|c| c.name() == name)
    .or(Some(Cause::Unknown))
}

/// The remedy of one route, from its cause.
fn remedy_of(r: &RouteResult, args: &CheckArgs) -> String {
    let handlers = "give the server more handlers than slow clients (threads, or an async server)";
    let put = match args.direction {
        // At an HTTP/2 edge, the routes that buffer at that edge.
        Direction::Download if r.route.edge().http2 => {
            "put a buffering reverse proxy at the edge (NGINX proxy_buffering on; check it with --through nginx-h2-on or pingora-h2-on)"
        }
        Direction::Download => {
            "put a buffering reverse proxy in front (NGINX proxy_buffering on; check it with --through nginx-on or pingora-on)"
        }
        Direction::Upload => {
            "put a proxy that reads the whole request before it connects upstream in front (NGINX proxy_request_buffering on, its default; check it with --through nginx-on or pingora-on)"
        }
        Direction::Headers => {
            "put a reverse proxy in front (NGINX and pingora wait for the whole head before they connect upstream; check it with --through nginx-on or pingora-on)"
        }
    };
    match cause_of(r) {
        None => format!("{}: no remedy needed", label(r)),
        Some(Cause::Handlers) if r.own_proxy => format!(
            "{}: your proxy passed the transfers through at the clients' pace; make it buffer them whole ({}), or {handlers}",
            label(r),
            match args.direction {
                Direction::Download => "response buffering with room for a whole response",
                _ => "request buffering: the whole request read before it connects upstream",
            }
        ),
        Some(Cause::Handlers) => match buffering(r.route) {
            None => format!("{}: {put}, or {handlers}", label(r)),
            // Whatever its response buffering: it does nothing for a body.
            Some((kind, ..))
                if args.direction != Direction::Download && !kind.buffers_requests() =>
            {
                format!(
                    "{}: {} has no setting that reads a whole request body before it forwards the request, so it passes each one through at the client's pace; {put}, or {handlers}",
                    label(r),
                    kind.title()
                )
            }
            Some((kind, "buffering", false)) if !kind.buffers_responses() => format!(
                "{}: {} has no setting that buffers a whole response, so it passes each one through at the client's pace; {put}, or {handlers}",
                label(r),
                kind.title()
            ),
            Some((kind, "buffering", true))
                if args.direction == Direction::Download && !r.route.buffers_here() =>
            {
                format!(
                    "{}: {}'s response buffering does not act at its HTTP/2 edge (each stream leaves through mod_http2, not the output filter that buffers); {put}, or {handlers}",
                    label(r),
                    kind.title()
                )
            }
            Some((_, what, false)) => format!(
                "{}: turn the proxy's {what} on (it passed each transfer through at the client's pace), or {handlers}",
                label(r)
            ),
            Some(_) => format!(
                "{}: the proxy did not absorb them (a transfer larger than its buffers and temp-file cap, or a capped proxy); {handlers}",
                label(r)
            ),
        },
        Some(Cause::Queueing) => format!(
            "{}: the proxy already takes each transfer off the server, so another proxy setting will not help; what is left is the server's throughput for large responses: more handlers, or fewer of them at once (a queue or a rate limit for the large path)",
            label(r)
        ),
        Some(Cause::Cpu) => format!(
            "{}: more CPU for the server (its cap, more worker processes for an event loop, or fewer processes beside it); a buffering proxy does not make CPU",
            label(r)
        ),
        Some(Cause::Memory) => format!(
            "{}: more memory for the server, or responses it does not hold in memory whole",
            label(r)
        ),
        Some(Cause::ProxyCpu) => format!(
            "{}: the proxy ran out of CPU under its cap, not the server behind it; give the proxy more CPU (its cap, --caps proxy=), or fewer transfers to copy at once",
            label(r)
        ),
        Some(Cause::ProxyMemory) => format!(
            "{}: the proxy's memory reached its cap, not the server's; give the proxy more memory (--caps proxy=), or a proxy that buffers large transfers to disk instead of memory",
            label(r)
        ),
        Some(Cause::Descriptors) => format!(
            "{}: raise the server's descriptor limit (ulimit -n, LimitNOFILE=)",
            label(r)
        ),
        Some(Cause::AcceptQueue) => format!(
            "{}: a longer listen queue (the server's backlog setting, net.core.somaxconn) or an accept loop that keeps up",
            label(r)
        ),
        Some(_) => format!(
            "{}: find what holds the server in its level's files; {handlers} helps if it is its handlers",
            label(r)
        ),
    }
}

/// The remedy that applies, from every route's cause.
pub fn remedy(routes: &[RouteResult], args: &CheckArgs) -> String {
    let denied: Vec<&RouteResult> = routes.iter().filter(|r| cause_of(r).is_some()).collect();
    if denied.is_empty() {
        if routes.iter().any(RouteResult::inconclusive) {
            return "No remedy can be given: some levels were inconclusive (see above).".into();
        }
        return format!(
            "No remedy needed up to {} {}; raise --max-slow to look further.",
            args.max_slow,
            clients(args.direction)
        );
    }
    // A route that held behind a proxy is the remedy of a direct denial
    // caused by its handlers.
    let held_behind = routes.iter().find(|r| {
        (r.own_proxy || buffering(r.route).is_some()) && !r.denied() && !r.inconclusive()
    });
    let direct_handlers = denied.iter().any(|r| {
        !r.own_proxy && buffering(r.route).is_none() && cause_of(r) == Some(Cause::Handlers)
    });
    if let (Some(t), true) = (held_behind, direct_handlers) {
        return format!(
            "Remedy: keep the proxy in front ({}): it takes the slow clients' transfers off the server.",
            label(t)
        );
    }
    let lines: Vec<String> = denied.iter().map(|r| remedy_of(r, args)).collect();
    format!("Remedy: {}.", lines.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::search::{Outcome, Settled};
    use clap::Parser;
    use schema::{LevelVerdict, Named};

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        args: CheckArgs,
    }

    fn args(words: &[&str]) -> CheckArgs {
        let argv = [
            "check",
            "--target",
            "http://127.0.0.1:9",
            "--large-path",
            "/large",
        ];
        Cmd::try_parse_from(argv.iter().chain(words))
            .expect("arguments parse")
            .args
    }

    /// A check of the lab's server `name`.
    fn server_args(name: &str, words: &[&str]) -> CheckArgs {
        let argv = ["check", "--server", name];
        Cmd::try_parse_from(argv.iter().chain(words))
            .expect("arguments parse")
            .args
    }

    fn level(n: u32, verdict: LevelVerdict, cause: &str) -> CheckRow {
        CheckRow {
            slow_readers: n,
            p95_ms: Some(if verdict == LevelVerdict::Denied {
                1500.0
            } else {
                2.0
            }),
            p95_x_baseline: Some(1000.0),
            verdict: Named::Known(verdict),
            cause: cause.into(),
            held_sockets: Some(0),
            first_byte_p50_ms: Some(1240.0),
            dir: format!("x/level-{n}"),
            ..CheckRow::default()
        }
    }

    fn route(route: Route, label: &str, denied_from: Option<u32>, cause: &str) -> RouteResult {
        let mut rows = vec![level(16, LevelVerdict::Held, "none")];
        let mut levels = vec![(16, LevelVerdict::Held)];
        if let Some(d) = denied_from {
            rows.push(level(d, LevelVerdict::Denied, cause));
            levels.push((d, LevelVerdict::Denied));
        }
        RouteResult {
            route,
            own_proxy: false,
            label: label.into(),
            direction: Direction::Download,
            baseline_ms: 1.5,
            outcome: Outcome {
                levels,
                denied_from,
                held_up_to: Some(16),
                inconclusive_from: None,
                stopped: false,
            },
            settled: Settled {
                denied_from,
                agreement: denied_from
                    .map(|d| vec![(16, 3, 3), (d, 3, 3)])
                    .unwrap_or_default(),
                range: None,
                held_up_to: Some(16),
                transient: None,
            },
            rows,
            body_bytes: 16 << 20,
            rate: 2 << 20,
        }
    }

    #[test]
    fn behind_a_buffering_proxy_a_queue_is_not_blamed_on_handlers() {
        let a = args(&["--through", "nginx-on", "--max-slow", "32"]);
        let r = route(Route::NginxOn, "nginx-on", Some(32), "queueing");
        let w = words(&r, &a);
        assert!(w.contains("not held handlers"), "{w}");
        assert!(w.contains("1240.000 ms for their first byte"), "{w}");
        assert!(w.contains("32 (3 of 3 runs)"), "{w}");
        assert!(!w.contains("occupy the handlers"), "{w}");
        let remedy = remedy(std::slice::from_ref(&r), &a);
        assert!(
            remedy.contains("another proxy setting will not help"),
            "{remedy}"
        );
        let held = route(Route::Direct, "direct", Some(2), "handlers");
        let w = words(&held, &a);
        assert!(w.contains("handlers were held"), "{w}");
    }

    #[test]
    fn a_proxy_without_response_buffering_is_not_told_to_turn_it_on() {
        let a = args(&["--through", "haproxy"]);
        let r = route(Route::Haproxy, "haproxy", Some(2), "handlers");
        assert_eq!(label(&r), "behind HAProxy");
        let remedy = remedy(std::slice::from_ref(&r), &a);
        assert!(
            remedy.contains("HAProxy has no setting that buffers a whole response"),
            "{remedy}"
        );
        assert!(
            !remedy.contains("turn the proxy's buffering on"),
            "{remedy}"
        );
        let nginx = route(Route::NginxOff, "nginx-off", Some(2), "handlers");
        assert_eq!(label(&nginx), "behind NGINX buffering off");
        let h2 = route(Route::NginxH2Off, "nginx-h2-off", Some(2), "handlers");
        assert_eq!(label(&h2), "behind NGINX (h2 edge) buffering off");
        assert!(super::remedy(&[h2], &a).contains("turn the proxy's buffering on"));
        assert!(super::remedy(&[nginx], &a).contains("turn the proxy's buffering on"));
        // Squid's response buffering (its raised read-ahead gap) does
        // nothing for an upload, and it has no request buffering.
        let up = args(&["--through", "squid", "--direction", "upload"]);
        let squid = route(Route::Squid, "squid", Some(2), "handlers");
        let remedy = super::remedy(&[squid], &up);
        assert!(
            remedy.contains("Squid has no setting that reads a whole request body"),
            "{remedy}"
        );
        assert!(!remedy.contains("turn the proxy's"), "{remedy}");
        let squid = route(Route::SquidBuf, "squid-buf", Some(2), "handlers");
        let remedy = super::remedy(&[squid], &up);
        assert!(remedy.contains("Squid has no setting"), "{remedy}");
        let squid = route(Route::Squid, "squid", Some(2), "handlers");
        assert!(super::remedy(&[squid], &a).contains("turn the proxy's buffering on"));
        // An upload's route names what the proxy does with request bodies.
        let mut squid = route(Route::SquidBuf, "squid-buf", Some(2), "handlers");
        assert_eq!(label(&squid), "behind Squid buffering on");
        squid.direction = Direction::Upload;
        assert_eq!(
            label(&squid),
            "behind Squid buffering on (no request buffering)"
        );
        let mut nginx = route(Route::NginxOn, "nginx-on", None, "");
        nginx.direction = Direction::Upload;
        assert_eq!(
            label(&nginx),
            "behind NGINX buffering on (request buffering on by default)"
        );
        let mut explicit = route(Route::NginxReqbufOff, "nginx-reqbuf-off", None, "");
        explicit.direction = Direction::Upload;
        assert_eq!(label(&explicit), "behind NGINX request buffering off");
    }

    #[test]
    fn an_event_loop_is_not_told_its_handlers_were_held() {
        let a = server_args("uvicorn", &["--max-slow", "1024"]);
        let mut r = route(Route::Direct, "direct", Some(512), "unknown");
        r.rows[1].app_cpu_peak_cores = Some(0.3);
        let w = words(&r, &a);
        assert!(
            w.contains("Not held handlers: uvicorn has no handler limit"),
            "{w}"
        );
        assert!(w.contains("0.30 cores over its busiest second"), "{w}");
        let mut r = route(Route::Direct, "direct", Some(512), "cpu");
        r.rows[1].app_cpu_peak_cores = Some(0.98);
        let w = words(&r, &a);
        assert!(w.contains("0.98 cores over its busiest second"), "{w}");
        assert!(w.contains("an event loop is one thread"), "{w}");
        // Sync workers: nothing to say, their handlers can be held.
        let a = server_args("gunicorn-sync2", &[]);
        let w = words(&route(Route::Direct, "direct", Some(2), "unknown"), &a);
        assert!(!w.contains("Not held handlers"), "{w}");
    }

    #[test]
    fn fast_calls_that_waited_for_the_readers_first_bytes_say_so() {
        let a = server_args("uvicorn", &["--max-slow", "1024"]);
        let mut r = route(Route::Direct, "direct", None, "");
        r.rows[0].fast_began_s = Some(1.909);
        r.rows[0].fast_settled = "first_bytes".into();
        let w = words(&r, &a);
        assert!(
            w.contains(
                "its calls began 1.9 s into the level, once every slow download had its first byte"
            ),
            "{w}"
        );
        r.rows[0].fast_began_s = Some(0.25);
        assert!(!words(&r, &a).contains("its calls began"));
    }

    #[test]
    fn a_denial_its_repeats_overturned_is_told_as_a_transient() {
        let a = args(&["--max-slow", "32"]);
        let mut r = route(Route::Direct, "direct", None, "");
        r.rows.push(level(32, LevelVerdict::Denied, "handlers"));
        r.rows.push(level(32, LevelVerdict::Held, "none"));
        r.outcome.denied_from = Some(32);
        r.settled.held_up_to = Some(32);
        r.settled.transient = Some((32, 1, 3));
        r.settled.range = Some((32, None));
        let w = words(&r, &a);
        assert!(
            w.starts_with("direct: held up to 32 (denied in 1 of its 3 runs at 32)."),
            "{w}"
        );
        assert!(!w.contains("handlers were held"), "{w}");
        assert!(
            w.contains("With 32 slow readers the p95 of /fast was 2.000 ms"),
            "{w}"
        );
    }

    #[test]
    fn the_gate_decides_which_routes_deny() {
        let routes = [
            route(Route::Direct, "target", Some(2), "handlers"),
            route(Route::NginxOn, "nginx-on", None, ""),
        ];
        let all = args(&["--through", "nginx-on"]);
        assert!(denied_line(&routes, &all).is_some());
        let behind = args(&["--through", "nginx-on", "--gate", "nginx-on"]);
        assert_eq!(denied_line(&routes, &behind), None);
        assert!(!gated(&routes[0], &behind) && gated(&routes[1], &behind));
        // A route that held behind the proxy is the remedy of the direct one.
        assert!(remedy(&routes, &all).contains("keep the proxy in front"));
    }

    #[test]
    fn your_own_proxy_is_named_and_its_remedy_is_its_buffering() {
        let a = args(&[
            "--through-cmd",
            "p {port} {upstream}",
            "--through-label",
            "edge",
        ]);
        let mut own = route(Route::Direct, "edge", Some(2), "handlers");
        own.own_proxy = true;
        let direct = route(Route::Direct, "direct", Some(2), "handlers");
        let both = [direct, own];
        let remedy = remedy(&both, &a);
        assert!(remedy.contains("behind your proxy (edge)"), "{remedy}");
        assert!(remedy.contains("make it buffer them whole"), "{remedy}");
        assert!(
            !remedy.contains("edge: put a buffering reverse proxy"),
            "{remedy}"
        );
        // Held behind it, it is the remedy of the direct denial.
        let mut held = route(Route::Direct, "edge", None, "");
        held.own_proxy = true;
        let routes = [route(Route::Direct, "direct", Some(2), "handlers"), held];
        let remedy = super::remedy(&routes, &a);
        assert!(
            remedy.contains("keep the proxy in front (behind your proxy (edge))"),
            "{remedy}"
        );
    }

    #[test]
    fn apache_buffering_at_its_h2_edge_is_named_as_what_failed() {
        let a = args(&["--through", "apache-h2-buf,haproxy-h2"]);
        let routes = [
            route(Route::ApacheH2Buf, "apache-h2-buf", Some(2), "handlers"),
            route(Route::HaproxyH2, "haproxy-h2", Some(2), "handlers"),
        ];
        let remedy = remedy(&routes, &a);
        assert!(
            remedy.contains("Apache's response buffering does not act at its HTTP/2 edge"),
            "{remedy}"
        );
        // An HTTP/2 edge's remedy names the routes that buffer there.
        assert!(
            remedy.contains("--through nginx-h2-on or pingora-h2-on"),
            "{remedy}"
        );
    }
}
