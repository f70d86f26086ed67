//! Apache httpd 2.4 from Debian's package (`apache2-bin`, with the APR
//! libraries a minimal system lacks unpacked beside it), as `prepare`
//! finds it, in front of the sync server x2: the event MPM, one child,
//! `mod_proxy_http`. By default its output filter writes blocking once
//! 64 KiB wait for the client, so two slow readers hold both workers
//! behind it; with `FlushMaxThreshold 32M` (`apache-buf`) it sets the
//! response aside and the workers go free. A request body streams: two
//! slow uploaders hold the workers, unless a filter on request bodies
//! (`apache-reqbuf`) makes it spool each whole body to a temp file first.
//! Scaled down as the check tests are.

use serde_json::Value;

use super::check_cli::route;
use super::packaged::{self, denied_by_handlers, held};
use crate::support;

fn check_through(routes: &str, extra: &[&str]) -> (support::child::Outcome, Value) {
    let apache = ("Apache", "apache2-bin", "usr/sbin/apache2");
    packaged::check_kept(apache, routes, extra, ("httpd.conf", "ServerLimit 1\n"))
}

#[test]
fn apache_holds_slow_readers_on_the_workers_unless_it_sets_responses_aside() {
    let (o, v) = check_through("apache,apache-buf", &[]);
    denied_by_handlers(&v, &o, "apache");
    let answer = route(&v, "apache")["answer"].as_str().unwrap().to_string();
    assert!(answer.starts_with("behind Apache"), "{answer}");
    held(&v, &o, "apache-buf");
}

#[test]
fn apache_streams_upload_bodies_unless_a_filter_makes_it_spool_them() {
    // 16 MiB at 8 MiB/s: each upload outlasts a level.
    let upload = ["--direction", "upload", "--upload-rate", "8MiB"];
    let (o, v) = check_through("apache,apache-reqbuf", &upload);
    denied_by_handlers(&v, &o, "apache");
    held(&v, &o, "apache-reqbuf");
}
