//! Caddy 2.6 from Debian's package, as `prepare` unpacks it, in front of
//! the sync server x2: by default it passes each response through at the
//! slow reader's pace, so two slow readers hold both workers (denied, as
//! predicted); with `buffer_responses` it takes each 16 MiB response into
//! memory and the workers are free (held); with `buffer_requests` two slow
//! uploaders never reach the workers. Scaled down as the check tests are.

use serde_json::Value;

use super::check_cli::route;
use super::packaged;
use crate::support;

fn check_through(routes: &str, direction: &[&str]) -> (support::child::Outcome, Value) {
    packaged::require("Caddy", "caddy", "usr/bin/caddy");
    let (o, v, dir) = packaged::check_through(routes, direction);
    assert!(
        dir.path().join("caddy-buf").join("Caddyfile").exists()
            || dir.path().join("caddy-reqbuf").join("Caddyfile").exists(),
        "the Caddyfile is kept beside the levels"
    );
    (o, v)
}

#[test]
fn caddy_passes_slow_readers_through_unless_it_buffers_responses() {
    let (o, v) = check_through("caddy,caddy-buf", &[]);
    assert_eq!(o.status.code(), Some(3), "{}", o.stderr);
    let streaming = route(&v, "caddy");
    assert_eq!(streaming["denied_from"], 2, "{streaming}");
    let buffering = route(&v, "caddy-buf");
    assert_eq!(buffering["denied_from"], Value::Null, "{buffering}");
    assert_eq!(buffering["held_up_to"], 2, "{buffering}");
    assert!(
        o.stderr.contains("behind Caddy buffering on: held up to 2"),
        "{}",
        o.stderr
    );
}

#[test]
fn caddy_with_buffer_requests_holds_slow_uploaders_off_the_workers() {
    // 16 MiB uploads at 8 MiB/s: each outlasts a level (as check_cli's).
    let (o, v) = check_through(
        "caddy-buf",
        &["--direction", "upload", "--upload-rate", "8MiB"],
    );
    assert!(matches!(o.status.code(), Some(0 | 3)), "{}", o.stderr);
    // Direct, two uploaders hold both workers; behind Caddy they never
    // reach them. What Caddy costs the fast calls itself (one Go thread
    // copying 16 MiB/s into memory: p95 17-19 ms here, 42 ms once in CI,
    // against a held limit of about 21 ms) may degrade the level, but
    // never for held handlers.
    let direct = route(&v, "direct");
    assert_eq!(direct["denied_from"], 2, "{direct}\n{}", o.stderr);
    let r = route(&v, "caddy-reqbuf");
    assert_eq!(r["denied_from"], Value::Null, "{r}\n{}", o.stderr);
    let levels = r["levels"].as_array().expect("levels");
    assert_eq!(levels.len(), 3, "{r}");
    // Once, at 1 uploader, the copying alone took the p95 to 21.3 ms
    // against a held limit of 21.0: degraded, not for handlers.
    for l in levels {
        assert!(
            l["verdict"] == "held" || (l["verdict"] == "degraded" && l["cause"] != "handlers"),
            "{l}\n{}",
            o.stderr
        );
    }
}
