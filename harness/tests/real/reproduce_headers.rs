//! `slowlab reproduce --preset headers` end to end, one repetition of a
//! small slice with real processes: two slowloris clients hold both
//! workers of Gunicorn sync x2 reached directly (`/fast` times out: a
//! completed run whose p95 is a timeout, judged blocked), and not behind
//! NGINX, which holds the unfinished heads itself (without Gunicorn and
//! NGINX, the replica and pingora instead); every slowloris client is
//! recorded; and the report's request-direction section quotes the files.

use crate::support;

use schema::{self, Direction, RunStatus, Verdict, read_dir};
use support::state_dir;

/// The observed verdict of a stack at 2 slowloris clients; the rule must
/// have predicted it.
fn observed(set: &schema::ResultSet, server: &str, route: &str) -> Option<Verdict> {
    let row = set
        .crosscheck
        .iter()
        .find(|c| {
            c.check == schema::Check::Prediction
                && c.server.as_str() == server
                && c.route.as_str() == route
        })
        .unwrap_or_else(|| {
            panic!(
                "no prediction row for {server} {route}: {:?}",
                set.crosscheck
            )
        });
    assert_eq!(row.direction, Direction::Headers);
    assert_eq!(row.slow_clients, 2);
    assert_eq!(row.agree, Some(true), "{row:?}");
    row.observed.as_ref().and_then(|v| v.known())
}

#[test]
fn slowloris_clients_hold_sync_workers_direct_and_not_behind_a_proxy() {
    let tools = lab::prepare::prepare(&state_dir());
    let real = tools.gunicorn.is_ok() && tools.nginx().is_ok();
    if !real {
        eprintln!("Gunicorn or NGINX is not installed: rust-sync2 and pingora only");
    }
    // With the real parts, Gunicorn and NGINX alone: the replica's
    // workers held by unfinished heads and pingora's header deadline are
    // the fast tier's (`server/tests/phenomenon.rs`, `proxy/tests/request.rs`).
    let (only, stacks): (&str, &[(&str, &str)]) = if real {
        (
            "gunicorn-sync2,direct,nginx-reqbuf-on",
            &[
                ("gunicorn-sync2", "direct"),
                ("gunicorn-sync2", "nginx-reqbuf-on"),
            ],
        )
    } else {
        (
            "rust-sync2,direct,pingora-reqbuf-on",
            &[
                ("rust-sync2", "direct"),
                ("rust-sync2", "pingora-reqbuf-on"),
            ],
        )
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("results");
    support::request_report::reproduce("headers", &out, only, &[]);
    let set = read_dir(&out);
    assert_eq!(set.runs.len(), stacks.len() * 2, "{:?}", set.runs);
    assert!(set.runs.iter().all(|r| r.direction == Direction::Headers));
    for (server, route) in stacks {
        let run = |slow: u32| {
            set.runs
                .iter()
                .find(|r| {
                    r.server.as_str() == *server
                        && r.route.as_str() == *route
                        && r.slow_clients == slow
                })
                .unwrap()
        };
        assert_eq!(run(0).status, RunStatus::Ok, "{:?}", run(0));
        let held = run(2);
        // The load ran to its end even where every /fast request timed
        // out (`slowlab load` exits 1 then): a completed run.
        assert_eq!(held.status, RunStatus::Ok, "{held:?}");
        if *route == "direct" {
            // Both workers are held: the /fast requests time out, they are
            // kept with their error kind, and the p95 that falls among them
            // is recorded as such, never as a figure, and judged blocked.
            let fast: Vec<_> = set
                .requests
                .iter()
                .filter(|q| q.run_id == held.run_id)
                .collect();
            assert_eq!(fast.len() as u64, held.fast_requests, "{held:?}");
            let timed_out = fast
                .iter()
                .filter(|q| q.error.as_deref() == Some("timeout"))
                .count();
            assert!(timed_out * 20 > fast.len(), "{timed_out} of {}", fast.len());
            assert_eq!(held.p95_ms, None, "{held:?}");
            assert_eq!(held.p95_error.as_deref(), Some("timeout"), "{held:?}");
            assert_eq!(
                observed(&set, server, route),
                Some(Verdict::Blocked),
                "{server} {route}"
            );
            let cross = set
                .crosscheck
                .iter()
                .find(|c| {
                    c.check == schema::Check::Prediction
                        && c.server.as_str() == *server
                        && c.route.as_str() == *route
                })
                .unwrap();
            assert_eq!(
                (cross.p95_ms, cross.p95_error.as_deref()),
                (None, Some("timeout"))
            );
        } else {
            assert_eq!(
                observed(&set, server, route),
                Some(Verdict::Relieved),
                "{server} {route}"
            );
            let clients: Vec<_> = set
                .slow_headers
                .iter()
                .filter(|h| h.run_id == held.run_id)
                .collect();
            assert_eq!(
                clients.len(),
                2,
                "{server} {route}: one row per slowloris client"
            );
            assert!(clients.iter().all(|h| h.header_lines > 0), "{clients:?}");
        }
    }
    assert!(set.uploads.is_empty(), "no uploads in the headers preset");
    support::request_report::check_headers_section(&out);
}
