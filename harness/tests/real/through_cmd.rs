//! `slowlab check --through-cmd`: the user's own proxy, with the user's
//! own config, in front of the server, started, probed and stopped as
//! `--server-cmd` is. The proxy here is `slowlab proxy` given on a command
//! line (buffering on holds two slow readers off the sync server x2,
//! buffering off passes them through); then proxies that exit at once,
//! never listen, or ignore SIGTERM: a clear line each, nothing left running.

use serde_json::Value;

use super::check_cli::{SCALED, TIMING, check, json, route, serve};
use crate::support;

const BIN: &str = env!("CARGO_BIN_EXE_slowlab");

/// `slowlab proxy` as a user's command line.
fn own_proxy(buffering: &str) -> String {
    format!(
        "{BIN} proxy --listen {{host}}:{{port}} --upstream {{upstream}} --buffering {buffering}"
    )
}

/// A scaled check of the sync server x2 at 2 slow readers behind `line`
/// (its route called `label`), with `--json`.
fn behind(line: &str, label: &str) -> (support::child::Outcome, Value) {
    let _one = TIMING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let server = serve("sync", "--workers 2");
    let mut args = vec!["--server-cmd", &server, "--large-path", "/large"];
    args.extend(["--through-cmd", line, "--through-label", label]);
    args.extend(["--max-slow", "2", "--repeat", "1", "--json"]);
    args.extend(SCALED);
    let o = check(&args, dir.path());
    assert!(
        dir.path().join(label).join("proxy.err").exists(),
        "the proxy's output is kept beside its levels"
    );
    let v = json(&o);
    (o, v)
}

#[test]
fn your_own_buffering_proxy_holds_what_the_sync_server_alone_cannot() {
    let (o, v) = behind(&own_proxy("on"), "edge");
    assert_eq!(o.status.code(), Some(3), "direct is denied: {}", o.stderr);
    assert_eq!(route(&v, "direct")["denied_from"], 2);
    let p = route(&v, "edge");
    assert_eq!(p["denied_from"], Value::Null, "{p}");
    assert_eq!(p["held_up_to"], 2, "{p}");
    assert!(
        o.stderr.contains("behind your proxy (edge): held up to 2"),
        "{}",
        o.stderr
    );
    let remedy = v["remedy"].as_str().unwrap();
    assert!(remedy.contains("keep the proxy in front"), "{remedy}");
}

#[test]
fn your_own_proxy_that_passes_transfers_through_is_denied_with_its_remedy() {
    let (o, v) = behind(&own_proxy("off"), "edge-off");
    assert_eq!(o.status.code(), Some(3), "{}", o.stderr);
    let p = route(&v, "edge-off");
    assert_eq!(p["denied_from"], 2, "{p}");
    let remedy = v["remedy"].as_str().unwrap();
    assert!(remedy.contains("make it buffer them whole"), "{remedy}");
}

/// A `--through-cmd` that carries `mark` in its environment, in front of
/// the async server; nothing with the mark may be left afterwards.
fn failing_proxy(line: &str, mark: &str) -> support::child::Outcome {
    let dir = tempfile::tempdir().unwrap();
    let server = serve("async", "");
    let line = format!("export SLOWLAB_CHECK_MARK={mark}; {line}");
    let mut args = vec!["--server-cmd", &server, "--large-path", "/large"];
    args.extend(["--through-cmd", &line, "--max-slow", "1", "--repeat", "1"]);
    // What never answers is given up on after 5 s, not the default 20.
    args.extend(["--ready-timeout", "5s"]);
    args.extend(SCALED);
    let o = check(&args, dir.path());
    let left = support::processes_mentioning(mark);
    assert!(left.is_empty(), "left running: {left:?}");
    o
}

#[test]
fn a_proxy_that_exits_at_once_is_one_clear_line() {
    let o = failing_proxy(
        "echo {port} {upstream} >&2; echo bad config line 3 >&2; exit 1",
        "proxy-exits",
    );
    assert_eq!(o.status.code(), Some(1), "{}", o.stderr);
    assert!(
        o.stderr.contains("before it answered: bad config line 3"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("--through-cmd"), "{}", o.stderr);
}

#[test]
fn a_proxy_that_never_listens_is_stopped() {
    let o = failing_proxy("sleep 300 # {port} {upstream}", "proxy-never-listens");
    assert_eq!(o.status.code(), Some(1), "{}", o.stderr);
    assert!(
        o.stderr.contains("did not answer GET /fast"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("within 5s"), "{}", o.stderr);
}

#[test]
fn a_proxy_that_ignores_sigterm_is_killed_with_its_group() {
    let _one = TIMING.lock().unwrap_or_else(|e| e.into_inner());
    let line = format!(
        "trap '' TERM; {} & while true; do sleep 1; done",
        own_proxy("on")
    );
    let o = failing_proxy(&line, "proxy-ignores-sigterm");
    assert_eq!(o.status.code(), Some(0), "{}", o.stderr);
}

#[test]
fn a_proxy_command_without_its_upstream_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve("async", "");
    let args = [
        "--server-cmd",
        &server,
        "--large-path",
        "/large",
        "--through-cmd",
        "haproxy -f my.cfg # {port}",
    ];
    let o = check(&args, dir.path());
    assert_eq!(o.status.code(), Some(2), "{}", o.stderr);
    assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
    assert!(o.stderr.contains("{upstream}"), "{}", o.stderr);
}
