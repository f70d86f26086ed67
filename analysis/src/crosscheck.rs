//! The cross-check: for every server x route at 2 slow connections, the
//! verdict a simple rule predicts against the one observed; and whether the
//! Rust replicas reproduce their Gunicorn/NGINX counterparts.
//!
//! The rule (stated in the book, "Which servers block"): a server is *blocked* when its
//! concurrent handlers are no more than the slow clients and nothing in
//! front of it absorbs a whole `/large` response; otherwise it is
//! *relieved*. In the request direction the same rule holds with what the
//! handler is held by: a slow upload (absorbed by a request-buffering
//! proxy within its body limit) or a request head never finished
//! (absorbed by either proxy: it holds the head and opens no upstream
//! connection). A server that stops accepting at a number of open
//! connections (Waitress's `connection_limit`) is blocked once the slow
//! clients keep that many open at it, whatever they hold of its handlers.
//!
//! The observation: *blocked* when p95 >= 1 s and >= 100x the same stack's
//! 0-slow p95; *relieved* when p95 <= 10x that baseline; *partial* otherwise.

use std::collections::BTreeMap;

use crate::aggregate::ConditionFigures;
use catalogue::Condition;
use catalogue::published::{counterpart_route, counterpart_server};
use catalogue::{Route, Server};
use schema::{Check, CrossRow, DimCells, Direction, Named};

pub use schema::Verdict;

/// The rule's prediction.
pub fn predict(
    server: Server,
    route: Route,
    slow: u32,
    body_bytes: u64,
    proxy_capacity: u64,
) -> Verdict {
    predict_in(
        Direction::Download,
        server,
        route,
        slow,
        body_bytes,
        proxy_capacity,
    )
}

/// The rule's prediction for slow clients in `direction` (`body_bytes`: a
/// response's or an upload's).
pub fn predict_in(
    direction: Direction,
    server: Server,
    route: Route,
    slow: u32,
    body_bytes: u64,
    proxy_capacity: u64,
) -> Verdict {
    let saturated = server.handlers().is_some_and(|h| h <= slow);
    // A proxy that holds the transfers in memory beyond the experiment's
    // cap is killed by its cgroup, and takes every request with it, unless
    // it starts again at once (Varnish's child): then the slow transfers
    // fail, and `/fast` goes on.
    let killed = route.outgrows_memory(
        direction,
        slow,
        body_bytes,
        catalogue::ProxyBuffers::EXPERIMENT_PROXY_MEMORY,
    ) && !route.proxy().is_some_and(|(k, _)| k.restarts_when_killed());
    if saturated && !absorbs_in(direction, server, route, body_bytes, proxy_capacity)
        || shut_out(direction, server, route, slow, body_bytes, proxy_capacity)
        || killed
    {
        Verdict::Blocked
    } else {
        Verdict::Relieved
    }
}

/// Whether the slow clients keep enough connections open at the server
/// that it accepts no other, whatever they hold of its handlers
/// ([`Server::connection_room`]: Waitress's `connection_limit`). A route
/// whose proxy takes what a slow client holds keeps no connection to the
/// server open for it.
pub fn shut_out(
    direction: Direction,
    server: Server,
    route: Route,
    slow: u32,
    body_bytes: u64,
    proxy_capacity: u64,
) -> bool {
    let held = if route_absorbs_in(direction, route, body_bytes, proxy_capacity) {
        0
    } else {
        slow
    };
    server.connection_room().is_some_and(|room| held >= room)
}

/// Whether something between the handler and the slow reader takes a whole
/// response off the handler: a buffering proxy on the route, or the
/// server's own output buffer (Waitress).
pub fn absorbs(server: Server, route: Route, body_bytes: u64, proxy_capacity: u64) -> bool {
    route.absorbs(body_bytes, proxy_capacity) || server.absorbs(body_bytes)
}

/// Whether something in front of the handler takes what a slow client in
/// `direction` would hold it with: a whole response ([`absorbs`]), a
/// whole upload (a request-buffering proxy within its body limit, or the
/// server's own reading of the body before a handler gets the request:
/// Waitress, [`Server::absorbs_request`]), or an unfinished head (any
/// proxy: it waits for the whole head before it connects upstream; or a
/// server that parses heads outside its handlers, [`Server::absorbs_head`]).
pub fn absorbs_in(
    direction: Direction,
    server: Server,
    route: Route,
    body_bytes: u64,
    proxy_capacity: u64,
) -> bool {
    route_absorbs_in(direction, route, body_bytes, proxy_capacity)
        || match direction {
            Direction::Download => server.absorbs(body_bytes),
            Direction::Upload => server.absorbs_request(body_bytes),
            Direction::Headers => server.absorbs_head(),
        }
}

/// The route's part of [`absorbs_in`]: its proxy takes a whole response, a
/// whole upload, or an unfinished head.
pub fn route_absorbs_in(
    direction: Direction,
    route: Route,
    body_bytes: u64,
    proxy_capacity: u64,
) -> bool {
    match direction {
        Direction::Download => route.absorbs(body_bytes, proxy_capacity),
        Direction::Upload => route.absorbs_request(body_bytes),
        Direction::Headers => route.proxy().is_some(),
    }
}

/// Blocked: p95 at least this many ms ...
pub const BLOCKED_MIN_MS: f64 = 1000.0;
/// ... and at least this many times the 0-slow baseline.
pub const BLOCKED_MIN_RATIO: f64 = 100.0;
/// Relieved: p95 at most this many times the baseline.
pub const RELIEVED_MAX_RATIO: f64 = 10.0;

/// The observed verdict from a p95 and the same stack's 0-slow p95.
pub fn observe(p95_ms: f64, baseline_ms: f64) -> Verdict {
    if p95_ms >= BLOCKED_MIN_MS && p95_ms >= BLOCKED_MIN_RATIO * baseline_ms {
        Verdict::Blocked
    } else if p95_ms <= RELIEVED_MAX_RATIO * baseline_ms {
        Verdict::Relieved
    } else {
        Verdict::Partial
    }
}

/// One line of `crosscheck.csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `prediction` or `replica`.
    pub check: &'static str,
    pub server: Server,
    pub route: Route,
    pub slow_clients: u32,
    pub direction: Direction,
    pub handlers: Option<u32>,
    pub absorbs: bool,
    pub predicted: Option<Verdict>,
    pub observed: Option<Verdict>,
    pub p95_ms: Option<f64>,
    /// Where `p95_ms` is empty because the condition's p95 fell among
    /// failed requests: their error kinds (`conditions.csv` `p95_error`).
    pub p95_error: Option<String>,
    pub baseline_p95_ms: Option<f64>,
    /// Whose 0-slow p95 served as the baseline (`server/route`).
    pub baseline_from: String,
    /// For replica checks: the Gunicorn/NGINX stack compared with.
    pub reference: String,
    pub reference_observed: Option<Verdict>,
    pub reference_p95_ms: Option<f64>,
    /// p95 / reference p95.
    pub p95_ratio: Option<f64>,
    pub agree: Option<bool>,
    /// The condition's cells as `conditions.csv` has them.
    pub dims: DimCells,
}

impl Row {
    /// The dimensions its condition sets, as the conditions table shows
    /// them (`Condition::dims_label`).
    pub fn dims_label(&self) -> String {
        schema::dims::condition_of(
            Some(self.server),
            Some(self.route),
            self.slow_clients,
            Some(self.direction),
            &self.dims,
        )
        .map(|c| c.dims_label())
        .unwrap_or_default()
    }

    /// The row as `crosscheck.csv` writes it.
    pub fn to_row(&self) -> CrossRow {
        let v = |x: Option<Verdict>| x.map(Named::Known);
        let text = |s: &str| (!s.is_empty()).then(|| s.to_string());
        let mut row = CrossRow {
            check: Named::parse(self.check),
            server: self.server.into(),
            route: self.route.into(),
            slow_clients: self.slow_clients,
            handlers: self
                .handlers
                .map(|h| h.to_string())
                .unwrap_or_else(|| "unbounded".into()),
            absorbs_whole_response: self.absorbs,
            predicted: v(self.predicted),
            observed: v(self.observed),
            p95_ms: self.p95_ms,
            baseline_p95_ms: self.baseline_p95_ms,
            baseline_from: text(&self.baseline_from),
            reference: text(&self.reference),
            reference_observed: v(self.reference_observed),
            reference_p95_ms: self.reference_p95_ms,
            p95_ratio: self.p95_ratio,
            agree: self.agree,
            direction: self.direction.into(),
            p95_error: self.p95_error.clone(),
            ..CrossRow::default()
        };
        row.set_dims(self.dims.clone());
        row
    }
}

/// The 0-slow p95 of a stack: its own when measured (in the condition's
/// direction, else in the download direction: with no slow client the load
/// is the same), else that of the same route with the sync2 server of the
/// same implementation (the seed preset has no 0-slow gthread run), saying
/// which it used. Each in the condition's own cell and reader first, else
/// in the same kind of network at the same MTU at the host's buffers with
/// any reader (the `buffers` preset's one baseline per stack): without
/// slow readers neither acts.
pub fn baseline(
    figures: &BTreeMap<Condition, ConditionFigures>,
    c: Condition,
) -> Option<(f64, String)> {
    let sibling = if c.server.is_gunicorn() {
        Server::GunicornSync2
    } else {
        Server::RustSync2
    };
    [c.server, sibling]
        .into_iter()
        .flat_map(|server| {
            [c.direction, Direction::Download].map(|direction| Condition {
                server,
                direction,
                ..c.at(0)
            })
        })
        .find_map(|b| {
            if let Some(p) = figures.get(&b).and_then(|f| f.p95) {
                return Some((p, format!("{}/{}", b.server, b.route)));
            }
            let host = figures.iter().find_map(|(k, f)| {
                let same = Condition {
                    reader: k.reader,
                    buffers: catalogue::cells::BufferCell {
                        mtu: b.buffers.mtu,
                        ..Default::default()
                    },
                    ..b
                };
                (*k == same).then_some(f.p95).flatten()
            })?;
            Some((host, format!("{}/{} (host buffers)", b.server, b.route)))
        })
}

/// What was observed of a condition.
struct Observed {
    verdict: Option<Verdict>,
    p95: Option<f64>,
    /// The error kinds its p95 fell among, when it has no figure.
    p95_error: Option<String>,
    /// Its baseline p95 and whose it is.
    base: Option<(f64, String)>,
}

/// A p95 among failed requests (every `/fast` request timed out while
/// slowloris clients held the workers) is slower than any success, as
/// failures rank last: **blocked**, against a measured baseline.
fn observed(figures: &BTreeMap<Condition, ConditionFigures>, c: Condition) -> Observed {
    let p95 = figures.get(&c).and_then(|f| f.p95);
    let p95_error = figures
        .get(&c)
        .and_then(|f| f.p95_error.clone())
        .filter(|_| p95.is_none());
    let base = baseline(figures, c);
    let verdict = match (p95, &p95_error, &base) {
        (Some(p), _, Some((b, _))) => Some(observe(p, *b)),
        (None, Some(_), Some(_)) => Some(Verdict::Blocked),
        _ => None,
    };
    Observed {
        verdict,
        p95,
        p95_error,
        base,
    }
}

/// Builds every row for the conditions at `slow` slow clients.
pub fn rows(
    figures: &BTreeMap<Condition, ConditionFigures>,
    slow: u32,
    body_bytes: u64,
    proxy_capacity: u64,
) -> Vec<Row> {
    let mut out = Vec::new();
    let at_slow: Vec<Condition> = figures.keys().copied().filter(|c| c.slow == slow).collect();
    for &c in &at_slow {
        let Observed {
            verdict: obs,
            p95,
            p95_error,
            base,
        } = observed(figures, c);
        // Streams beyond what one HTTP/2 connection runs at once hold
        // nothing: they wait.
        let predicted = predict_in(
            c.direction,
            c.server,
            c.route,
            c.route.served_at_once(slow, c.streams_per_conn),
            body_bytes,
            proxy_capacity,
        );
        out.push(Row {
            check: Check::Prediction.name(),
            server: c.server,
            route: c.route,
            slow_clients: slow,
            direction: c.direction,
            handlers: c.server.handlers(),
            absorbs: absorbs_in(c.direction, c.server, c.route, body_bytes, proxy_capacity),
            predicted: Some(predicted),
            observed: obs,
            p95_ms: p95,
            p95_error,
            baseline_p95_ms: base.as_ref().map(|b| b.0),
            baseline_from: base.map(|b| b.1).unwrap_or_default(),
            reference: String::new(),
            reference_observed: None,
            reference_p95_ms: None,
            p95_ratio: None,
            agree: obs.map(|o| o == predicted),
            dims: figures[&c].dims(),
        });
    }
    for &c in &at_slow {
        let mut refs = vec![
            (counterpart_server(c.server), counterpart_route(c.route)),
            (counterpart_server(c.server), c.route),
            (c.server, counterpart_route(c.route)),
        ];
        refs.sort();
        refs.dedup();
        for (s, r) in refs {
            let rc = Condition {
                server: s,
                route: r,
                ..c
            };
            if rc == c || !figures.contains_key(&rc) {
                continue;
            }
            let Observed {
                verdict: obs,
                p95,
                p95_error,
                base,
            } = observed(figures, c);
            let reference = observed(figures, rc);
            let (ref_obs, ref_p95) = (reference.verdict, reference.p95);
            out.push(Row {
                check: Check::Replica.name(),
                server: c.server,
                route: c.route,
                slow_clients: slow,
                direction: c.direction,
                handlers: c.server.handlers(),
                absorbs: absorbs_in(c.direction, c.server, c.route, body_bytes, proxy_capacity),
                predicted: None,
                observed: obs,
                p95_ms: p95,
                p95_error,
                baseline_p95_ms: base.as_ref().map(|b| b.0),
                baseline_from: base.map(|b| b.1).unwrap_or_default(),
                reference: format!("{s}/{r}"),
                reference_observed: ref_obs,
                reference_p95_ms: ref_p95,
                p95_ratio: match (p95, ref_p95) {
                    (Some(a), Some(b)) if b > 0.0 => Some(a / b),
                    _ => None,
                },
                agree: match (obs, ref_obs) {
                    (Some(a), Some(b)) => Some(a == b),
                    _ => None,
                },
                dims: figures[&c].dims(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use catalogue::ProxyBuffers;

    const MIB16: u64 = 16 << 20;

    #[test]
    fn predictions_follow_the_rule() {
        let cap = ProxyBuffers::EXPERIMENT.capacity();
        let p = |s, r| predict(s, r, 2, MIB16, cap);
        assert_eq!(p(Server::GunicornSync2, Route::Direct), Verdict::Blocked);
        assert_eq!(p(Server::GunicornSync2, Route::NginxOff), Verdict::Blocked);
        assert_eq!(p(Server::GunicornSync2, Route::NginxOn), Verdict::Relieved);
        assert_eq!(
            p(Server::GunicornGthread4, Route::Direct),
            Verdict::Relieved
        );
        assert_eq!(p(Server::RustAsync, Route::Direct), Verdict::Relieved);
        assert_eq!(
            predict(Server::RustSync2, Route::Direct, 1, MIB16, cap),
            Verdict::Relieved
        );
        // Caddy holds 2 whole responses in its 96 MiB; 8 outgrow it and
        // its cgroup kills it (the proxies preset's run 021), even in
        // front of a server with handlers to spare.
        assert_eq!(p(Server::GunicornSync2, Route::CaddyBuf), Verdict::Relieved);
        assert_eq!(
            predict(Server::GunicornSync2, Route::CaddyBuf, 8, MIB16, cap),
            Verdict::Blocked
        );
        assert_eq!(
            predict(Server::RustAsync, Route::CaddyBuf, 8, MIB16, cap),
            Verdict::Blocked
        );
        assert_eq!(p(Server::GunicornSync2, Route::Haproxy), Verdict::Blocked);
        // Varnish outgrows it too, but its manager starts a new child: the
        // slow downloads fail, `/fast` goes on (3 of 3 runs).
        assert!(Route::Varnish.outgrows_memory(Direction::Download, 8, MIB16, 96 << 20));
        assert_eq!(
            predict(Server::GunicornSync2, Route::Varnish, 8, MIB16, cap),
            Verdict::Relieved
        );
    }

    #[test]
    fn request_direction_predictions_follow_the_rule() {
        let cap = ProxyBuffers::EXPERIMENT.capacity();
        let p = |d, s, r| predict_in(d, s, r, 2, MIB16, cap);
        use Direction::{Headers, Upload};
        for s in [Server::GunicornSync2, Server::RustSync2] {
            assert_eq!(p(Upload, s, Route::Direct), Verdict::Blocked, "{s}");
            assert_eq!(p(Headers, s, Route::Direct), Verdict::Blocked, "{s}");
            for r in [Route::NginxReqbufOn, Route::PingoraReqbufOn] {
                assert_eq!(p(Upload, s, r), Verdict::Relieved, "{s} {r}");
            }
            for r in [Route::NginxReqbufOff, Route::PingoraReqbufOff] {
                assert_eq!(p(Upload, s, r), Verdict::Blocked, "{s} {r}");
            }
            for r in Route::REQUEST {
                assert_eq!(p(Headers, s, r), Verdict::Relieved, "{s} {r}");
            }
        }
        // Threads and event loops outnumber two uploaders.
        assert_eq!(
            p(Upload, Server::RustThreads4, Route::Direct),
            Verdict::Relieved
        );
        assert_eq!(
            p(Upload, Server::RustAsync, Route::Direct),
            Verdict::Relieved
        );
        // A body beyond the proxy's limit is not absorbed.
        assert!(!absorbs_in(
            Upload,
            Server::RustSync2,
            Route::PingoraReqbufOn,
            1 << 40,
            cap
        ));
    }

    #[test]
    fn waitress_reads_the_whole_request_before_a_thread_gets_it() {
        let cap = ProxyBuffers::EXPERIMENT.capacity();
        let p = |d, s, slow, body| predict_in(d, s, Route::Direct, slow, body, cap);
        use Direction::{Headers, Upload};
        // 8 slow uploaders outnumber its 4 threads, yet hold none of them.
        assert_eq!(p(Upload, Server::Waitress4, 8, MIB16), Verdict::Relieved);
        assert_eq!(p(Headers, Server::Waitress4, 8, MIB16), Verdict::Relieved);
        // A body at max_request_body_size is refused, not read.
        assert!(!absorbs_in(
            Upload,
            Server::Waitress4,
            Route::Direct,
            catalogue::server::WAITRESS_MAX_REQUEST_BODY,
            cap
        ));
        // Its connection_limit: from 98 held connections (100 with the
        // listener and the trigger) it accepts no /fast connection.
        for d in [Upload, Headers, Direction::Download] {
            assert_eq!(p(d, Server::Waitress4, 97, MIB16), Verdict::Relieved);
            assert_eq!(p(d, Server::Waitress4, 98, MIB16), Verdict::Blocked);
            assert_eq!(p(d, Server::Waitress4, 200, MIB16), Verdict::Blocked);
            assert!(absorbs_in(d, Server::Waitress4, Route::Direct, MIB16, cap));
        }
        // Behind a proxy that takes what they hold, none stay open there.
        for (d, r) in [
            (Upload, Route::NginxReqbufOn),
            (Headers, Route::PingoraReqbufOff),
        ] {
            let behind = predict_in(d, Server::Waitress4, r, 200, MIB16, cap);
            assert_eq!(behind, Verdict::Relieved, "{d} {r}");
        }
        let streamed = predict_in(
            Upload,
            Server::Waitress4,
            Route::PingoraReqbufOff,
            98,
            MIB16,
            cap,
        );
        assert_eq!(streamed, Verdict::Blocked);
        // Gunicorn's threads read the body (and the head) themselves.
        assert_eq!(
            p(Upload, Server::GunicornGthread4, 8, MIB16),
            Verdict::Blocked
        );
        assert_eq!(
            p(Headers, Server::GunicornGthread4, 8, MIB16),
            Verdict::Blocked
        );
        // Event loops, greenlet pools and Granian's 512 threads outnumber 8.
        for s in [
            Server::Uvicorn,
            Server::GunicornUvicorn2,
            Server::GunicornGevent2,
            Server::Granian,
        ] {
            assert_eq!(p(Upload, s, 8, MIB16), Verdict::Relieved, "{s}");
        }
    }

    #[test]
    fn python_servers_predictions_follow_their_handler_models() {
        let cap = ProxyBuffers::EXPERIMENT.capacity();
        let p = |s, slow| predict(s, Route::Direct, slow, MIB16, cap);
        // Event loops and greenlet pools outnumber 8 slow readers.
        for s in [
            Server::Uvicorn,
            Server::GunicornUvicorn2,
            Server::GunicornGevent2,
            Server::Granian,
        ] {
            assert_eq!(p(s, 2), Verdict::Relieved, "{s}");
            assert_eq!(p(s, 8), Verdict::Relieved, "{s}");
        }
        // Waitress: 4 threads, but its output buffer takes 16 MiB whole...
        assert_eq!(p(Server::Waitress4, 8), Verdict::Relieved);
        // ... and not a larger response.
        assert_eq!(
            predict(Server::Waitress4, Route::Direct, 8, 32 << 20, cap),
            Verdict::Blocked
        );
        assert_eq!(p(Server::GunicornGthread4, 8), Verdict::Blocked);
        assert!(absorbs(Server::Waitress4, Route::Direct, MIB16, cap));
        assert!(!absorbs(Server::Uvicorn, Route::Direct, MIB16, cap));
    }

    #[test]
    fn observations_use_the_thresholds() {
        // The published figures: direct blocked, nginx-off blocked (barely:
        // 1071 ms is >= 1 s and >= 100x 2.66 ms), nginx-on relieved.
        assert_eq!(observe(5945.11, 1.57), Verdict::Blocked);
        assert_eq!(observe(1071.47, 2.66), Verdict::Blocked);
        assert_eq!(observe(2.34, 1.93), Verdict::Relieved);
        assert_eq!(observe(900.0, 2.0), Verdict::Partial);
        assert_eq!(observe(1500.0, 20.0), Verdict::Partial);
    }

    #[test]
    fn a_p95_among_timed_out_requests_is_observed_blocked() {
        let mut f = BTreeMap::new();
        let c = |s, slow| Condition::new(s, Route::Direct, slow, Direction::Headers);
        let timed_out = ConditionFigures {
            p95_error: Some("timeout".into()),
            ..ConditionFigures::default()
        };
        f.insert(c(Server::GunicornSync2, 2), timed_out.clone());
        // No baseline yet: nothing to judge against.
        let rows_at = |f: &BTreeMap<_, _>| rows(f, 2, MIB16, ProxyBuffers::EXPERIMENT.capacity());
        assert_eq!(rows_at(&f)[0].observed, None);
        let base = ConditionFigures {
            p95: Some(1.5),
            ..ConditionFigures::default()
        };
        f.insert(c(Server::GunicornSync2, 0), base);
        let row = rows_at(&f).remove(0);
        assert_eq!(row.observed, Some(Verdict::Blocked));
        assert_eq!(row.predicted, Some(Verdict::Blocked));
        assert_eq!(row.agree, Some(true));
        assert_eq!(row.p95_ms, None, "never an invented figure");
        assert_eq!(row.p95_error.as_deref(), Some("timeout"));
        let csv = row.to_row();
        assert_eq!(csv.p95_error.as_deref(), Some("timeout"));
        // A condition with neither p95 nor failures has no verdict.
        f.insert(c(Server::GunicornSync2, 2), ConditionFigures::default());
        assert_eq!(rows_at(&f)[0].observed, None);
    }

    #[test]
    fn replica_rows_compare_counterparts() {
        let mut f = BTreeMap::new();
        let put = |f: &mut BTreeMap<_, _>, s, r, slow, p95| {
            f.insert(
                Condition::new(s, r, slow, Direction::Download),
                ConditionFigures {
                    p95: Some(p95),
                    ..ConditionFigures::default()
                },
            );
        };
        put(&mut f, Server::GunicornSync2, Route::Direct, 0, 1.5);
        put(&mut f, Server::GunicornSync2, Route::Direct, 2, 6000.0);
        put(&mut f, Server::RustSync2, Route::Direct, 0, 0.5);
        put(&mut f, Server::RustSync2, Route::Direct, 2, 6600.0);
        put(&mut f, Server::GunicornGthread4, Route::Direct, 2, 1.6);
        let rows = rows(&f, 2, MIB16, ProxyBuffers::EXPERIMENT.capacity());
        let replica: Vec<&Row> = rows
            .iter()
            .filter(|r| r.check == Check::Replica.name())
            .collect();
        assert_eq!(replica.len(), 1);
        assert_eq!(replica[0].reference, "gunicorn-sync2/direct");
        assert_eq!(replica[0].agree, Some(true));
        assert!((replica[0].p95_ratio.unwrap() - 1.1).abs() < 1e-9);
        let gthread = rows
            .iter()
            .find(|r| r.server == Server::GunicornGthread4)
            .unwrap();
        assert_eq!(gthread.baseline_from, "gunicorn-sync2/direct");
        assert_eq!(gthread.observed, Some(Verdict::Relieved));
        assert_eq!(gthread.agree, Some(true));
    }

    #[test]
    fn streams_on_one_connection_are_judged_against_the_stack_s_baseline() {
        let mut f = BTreeMap::new();
        let at = |slow, spc| Condition {
            streams_per_conn: spc,
            ..Condition::new(
                Server::GunicornSync2,
                Route::NginxH2Off,
                slow,
                Direction::Download,
            )
        };
        for (c, p95) in [(at(0, 1), 1.5), (at(2, 2), 3000.0), (at(2, 1), 3100.0)] {
            f.insert(
                c,
                ConditionFigures {
                    p95: Some(p95),
                    ..ConditionFigures::default()
                },
            );
        }
        let rows = rows(&f, 2, MIB16, ProxyBuffers::EXPERIMENT.capacity());
        let judged: Vec<(Option<f64>, Option<Verdict>, Option<Verdict>)> = rows
            .iter()
            .filter(|r| r.check == Check::Prediction.name())
            .map(|r| (r.baseline_p95_ms, r.predicted, r.observed))
            .collect();
        // Both shapes are judged against the stack's one baseline (where no
        // connection is shared), and both hold both workers behind
        // buffering off, as the rule says: each stream is a request the
        // app's handler writes.
        let blocked = (Some(1.5), Some(Verdict::Blocked), Some(Verdict::Blocked));
        assert_eq!(judged, [blocked, blocked]);
    }
}
