//! Squid 5.7 from Debian's package (with its data and the libraries a
//! minimal system lacks unpacked beside it), as `prepare` finds it, as a
//! reverse proxy in front of the sync server x2, dropping root to
//! `proxy`. It reads 16 KB ahead of a slow reader by default: two slow
//! readers hold both workers behind it; with `read_ahead_gap 32 MB`
//! (`squid-buf`) it reads the whole response off them. A request body
//! streams: two slow uploaders hold the workers. Scaled down as the check
//! tests are.

use serde_json::Value;

use super::packaged::{self, denied_by_handlers, held};
use crate::support;

fn check_through(routes: &str, extra: &[&str]) -> (support::child::Outcome, Value) {
    let squid = ("Squid", "squid", "usr/sbin/squid");
    packaged::check_kept(squid, routes, extra, ("squid.conf", "cache deny all\n"))
}

#[test]
fn squid_reads_a_whole_response_ahead_only_with_its_gap_raised() {
    let (o, v) = check_through("squid,squid-buf", &[]);
    denied_by_handlers(&v, &o, "squid");
    held(&v, &o, "squid-buf");
}

#[test]
fn squid_streams_upload_bodies() {
    // 16 MiB at 8 MiB/s: each upload outlasts a level.
    let upload = ["--direction", "upload", "--upload-rate", "8MiB"];
    let (o, v) = check_through("squid-buf", &upload);
    denied_by_handlers(&v, &o, "squid-buf");
    let remedy = v["remedy"].as_str().unwrap();
    assert!(
        remedy.contains("Squid has no setting that reads a whole request body"),
        "{remedy}"
    );
}
