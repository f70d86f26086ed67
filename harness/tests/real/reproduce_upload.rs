//! `slowlab reproduce --preset upload` end to end, one repetition of a few
//! conditions with real processes: request buffering in front of a sync x2
//! server relieves `/fast` under 2 slow uploaders, streaming does not; the
//! request direction's files are merged into the results; and the app
//! verified every byte of every completed upload on every route; and the
//! report's request-direction section quotes these files and says what
//! they show (`support::request_report`).

use crate::support;

use analysis::crosscheck::{BLOCKED_MIN_MS, RELIEVED_MAX_RATIO};
use schema::{self, Direction, RunStatus, Verdict, read_dir};
use support::state_dir;

/// The prediction row of `route` at 2 slow uploaders.
fn prediction<'a>(set: &'a schema::ResultSet, route: &str) -> &'a schema::CrossRow {
    let row = set
        .crosscheck
        .iter()
        .find(|c| c.check == schema::Check::Prediction && c.route.as_str() == route)
        .unwrap_or_else(|| panic!("no prediction row for {route}: {:?}", set.crosscheck));
    assert_eq!(row.direction, Direction::Upload);
    assert_eq!(row.slow_clients, 2);
    row
}

/// The prediction row's observed verdict of `route` at 2 slow uploaders,
/// which must agree with the prediction.
fn observed(set: &schema::ResultSet, route: &str) -> Option<Verdict> {
    let row = prediction(set, route);
    assert_eq!(row.agree, Some(true), "{row:?}");
    row.observed.as_ref().and_then(|v| v.known())
}

/// Every completed upload of every route was verified by the app, and each
/// route with slow uploaders completed at least one.
fn every_upload_verified(set: &schema::ResultSet, routes: &[&str]) {
    assert!(
        set.runs.iter().all(|r| r.status == RunStatus::Ok),
        "{:?}",
        set.runs
    );
    assert!(set.runs.iter().all(|r| r.direction == Direction::Upload));
    for route in routes {
        let ups: Vec<_> = set
            .uploads
            .iter()
            .filter(|u| u.route.as_str() == *route)
            .collect();
        assert_eq!(ups.len(), 2, "{route}: two uploads, one row each");
        let done: Vec<_> = ups.iter().filter(|u| u.status == Some(200)).collect();
        assert!(!done.is_empty(), "{route}: no upload completed: {ups:?}");
        for u in &done {
            assert_eq!(u.pattern_ok, Some(true), "{route}: {u:?}");
            assert_eq!(u.server_bytes, Some(u.upload_bytes), "{route}: {u:?}");
        }
        let recvs: Vec<_> = set
            .app_recvs
            .iter()
            .filter(|r| r.route.as_str() == *route && r.complete == Some(true))
            .collect();
        assert!(
            recvs.len() >= done.len(),
            "{route}: the app's log lacks uploads"
        );
        // A buffering proxy sends the body at full speed once it has it
        // whole (0.15-0.2 s for 16 MiB here); streamed, the app reads it
        // at the uploader's 2 MiB/s (about 8 s).
        let buffered = route
            .parse::<catalogue::Route>()
            .unwrap()
            .absorbs_request(16 << 20);
        for r in recvs {
            assert_eq!(r.pattern_ok, Some(true), "{route}: {r:?}");
            let s = r.app_recv_s.unwrap();
            assert!(if buffered { s < 2.0 } else { s > 4.0 }, "{route}: {r:?}");
        }
    }
}

#[test]
fn pingora_request_buffering_relieves_rust_sync2_under_slow_uploads() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("results");
    support::request_report::reproduce(
        "upload",
        &out,
        "rust-sync2,pingora-reqbuf-on,pingora-reqbuf-off",
        &[],
    );
    let set = read_dir(&out);
    assert_eq!(set.runs.len(), 4);
    assert_eq!(observed(&set, "pingora-reqbuf-on"), Some(Verdict::Relieved));
    assert_eq!(observed(&set, "pingora-reqbuf-off"), Some(Verdict::Blocked));
    every_upload_verified(&set, &["pingora-reqbuf-on", "pingora-reqbuf-off"]);
    support::request_report::check_upload_section(&out);
}

#[test]
fn nginx_request_buffering_relieves_gunicorn_sync2_under_slow_uploads() {
    let tools = lab::prepare::prepare(&state_dir());
    testkit::real::require("Gunicorn", tools.gunicorn.as_ref().err());
    testkit::real::require("NGINX", tools.nginx().err());
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("results");
    support::request_report::reproduce("upload", &out, "gunicorn-sync2,nginx-reqbuf-on", &[]);
    let set = read_dir(&out);
    assert_eq!(set.runs.len(), 2);
    // NGINX hands both buffered bodies to Gunicorn at full speed when the
    // uploads end, at about the same time, and each worker reads and
    // verifies its 16 MiB for a quarter to half a second under the app's
    // 0.25-core cap: the few /fast calls of 72 that arrive then wait, right
    // at the p95's rank. So the p95 lands anywhere from about 15 ms (10x a
    // 1.5 ms baseline, on either side of the relieved line: 15.84 ms
    // relieved, 15.53 ms partial in two CIs) to a good part of the
    // hand-over (103 ms in a later CI). What must hold is the relief from
    // the 7.4 s of the direct route: not blocked, and no call waiting
    // longer than one hand-over, the longest body receive the app logged
    // (a worker that finishes takes the next call), plus what counts as
    // relieved for the call itself.
    let row = prediction(&set, "nginx-reqbuf-on");
    let predicted = row.predicted.as_ref().and_then(|v| v.known());
    assert_eq!(predicted, Some(Verdict::Relieved), "{row:?}");
    let seen = row.observed.as_ref().and_then(|v| v.known());
    assert!(
        matches!(seen, Some(Verdict::Relieved | Verdict::Partial)),
        "{row:?}"
    );
    // Every upload completed and was logged by the app, so the longest
    // receive below is a real one.
    every_upload_verified(&set, &["nginx-reqbuf-on"]);
    let p95 = row.p95_ms.expect("a p95");
    let baseline = row.baseline_p95_ms.expect("a baseline p95");
    let hand_over_ms = set
        .app_recvs
        .iter()
        .filter(|r| {
            r.route.as_str() == "nginx-reqbuf-on" && r.slow_clients == 2 && r.complete == Some(true)
        })
        .filter_map(|r| r.app_recv_s)
        .fold(0.0_f64, f64::max)
        * 1000.0;
    let bound = hand_over_ms + RELIEVED_MAX_RATIO * baseline;
    assert!(
        p95 < BLOCKED_MIN_MS && p95 <= bound,
        "nginx-reqbuf-on p95 {p95} ms: over one hand-over ({hand_over_ms} ms) \
         plus {} x the {baseline} ms baseline",
        RELIEVED_MAX_RATIO
    );
    support::request_report::check_upload_section(&out);
}
