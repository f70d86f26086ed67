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
use super::packaged;
use crate::support;

fn check_through(routes: &str, extra: &[&str]) -> (support::child::Outcome, Value) {
    packaged::require("Apache", "apache2-bin", "usr/sbin/apache2");
    let (o, v, dir) = packaged::check_through(routes, extra);
    let first = routes.split(',').next().unwrap();
    let conf = std::fs::read_to_string(dir.path().join(first).join("httpd.conf"))
        .expect("the httpd.conf is kept beside the levels");
    assert!(conf.contains("ServerLimit 1\n"), "{conf}");
    (o, v)
}

#[test]
fn apache_holds_slow_readers_on_the_workers_unless_it_sets_responses_aside() {
    let (o, v) = check_through("apache,apache-buf", &[]);
    let r = route(&v, "apache");
    assert_eq!(r["denied_from"], 2, "{r}\n{}", o.stderr);
    assert_eq!(r["levels"][2]["cause"], "handlers", "{r}");
    let answer = r["answer"].as_str().unwrap();
    assert!(answer.starts_with("behind Apache"), "{answer}");
    let buffered = route(&v, "apache-buf");
    assert_eq!(
        buffered["denied_from"],
        Value::Null,
        "{buffered}\n{}",
        o.stderr
    );
    assert_eq!(buffered["held_up_to"], 2, "{buffered}\n{}", o.stderr);
}

#[test]
fn apache_streams_upload_bodies_unless_a_filter_makes_it_spool_them() {
    // 16 MiB at 8 MiB/s: each upload outlasts a level.
    let (o, v) = check_through(
        "apache,apache-reqbuf",
        &["--direction", "upload", "--upload-rate", "8MiB"],
    );
    let r = route(&v, "apache");
    assert_eq!(r["denied_from"], 2, "{r}\n{}", o.stderr);
    assert_eq!(r["levels"][2]["cause"], "handlers", "{r}");
    let spooled = route(&v, "apache-reqbuf");
    assert_eq!(
        spooled["denied_from"],
        Value::Null,
        "{spooled}\n{}",
        o.stderr
    );
    assert_eq!(spooled["held_up_to"], 2, "{spooled}\n{}", o.stderr);
}
