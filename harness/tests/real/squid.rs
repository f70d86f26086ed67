//! Squid 5.7 from Debian's package (with its data and the libraries a
//! minimal system lacks unpacked beside it), as `prepare` finds it, as a
//! reverse proxy in front of the sync server x2, dropping root to
//! `proxy`. It reads 16 KB ahead of a slow reader by default: two slow
//! readers hold both workers behind it; with `read_ahead_gap 32 MB`
//! (`squid-buf`) it reads the whole response off them. A request body
//! streams: two slow uploaders hold the workers. Scaled down as the check
//! tests are.

use serde_json::Value;

use super::check_cli::route;
use super::packaged;
use crate::support;

fn check_through(routes: &str, extra: &[&str]) -> (support::child::Outcome, Value) {
    packaged::require("Squid", "squid", "usr/sbin/squid");
    let (o, v, dir) = packaged::check_through(routes, extra);
    let first = routes.split(',').next().unwrap();
    let conf = std::fs::read_to_string(dir.path().join(first).join("squid.conf"))
        .expect("the squid.conf is kept beside the levels");
    assert!(conf.contains("cache deny all\n"), "{conf}");
    (o, v)
}

#[test]
fn squid_reads_a_whole_response_ahead_only_with_its_gap_raised() {
    let (o, v) = check_through("squid,squid-buf", &[]);
    let r = route(&v, "squid");
    assert_eq!(r["denied_from"], 2, "{r}\n{}", o.stderr);
    assert_eq!(r["levels"][2]["cause"], "handlers", "{r}");
    let buffered = route(&v, "squid-buf");
    assert_eq!(
        buffered["denied_from"],
        Value::Null,
        "{buffered}\n{}",
        o.stderr
    );
    assert_eq!(buffered["held_up_to"], 2, "{buffered}\n{}", o.stderr);
}

#[test]
fn squid_streams_upload_bodies() {
    // 16 MiB at 8 MiB/s: each upload outlasts a level.
    let (o, v) = check_through(
        "squid-buf",
        &["--direction", "upload", "--upload-rate", "8MiB"],
    );
    let r = route(&v, "squid-buf");
    assert_eq!(r["denied_from"], 2, "{r}\n{}", o.stderr);
    assert_eq!(r["levels"][2]["cause"], "handlers", "{r}");
    assert!(
        v["remedy"]
            .as_str()
            .unwrap()
            .contains("Squid has no setting that reads a whole request body"),
        "{}",
        v["remedy"]
    );
}
