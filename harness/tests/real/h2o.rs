//! H2O 2.2 from Debian's package, as `prepare` finds it, in front of the
//! sync server x2. It reads every response off the app as fast as the
//! app sends it, and every request body before it forwards the request:
//! two slow readers and two slow uploaders leave the workers free.
//! Scaled down as the check tests are.

use serde_json::Value;

use super::check_cli::route;
use super::packaged;
use crate::support;

fn check_through(extra: &[&str]) -> (support::child::Outcome, Value) {
    packaged::require("H2O", "h2o", "usr/bin/h2o");
    let (o, v, dir) = packaged::check_through("h2o", extra);
    let conf = std::fs::read_to_string(dir.path().join("h2o").join("h2o.conf"))
        .expect("the h2o.conf is kept beside the levels");
    assert!(conf.contains("num-threads: 1\n"), "{conf}");
    (o, v)
}

#[test]
fn h2o_takes_whole_responses_off_the_workers() {
    let (o, v) = check_through(&[]);
    assert_eq!(route(&v, "direct")["denied_from"], 2, "{}", o.stderr);
    let r = route(&v, "h2o");
    assert_eq!(r["denied_from"], Value::Null, "{r}\n{}", o.stderr);
    assert_eq!(r["held_up_to"], 2, "{r}\n{}", o.stderr);
}

#[test]
fn h2o_takes_whole_upload_bodies_off_the_workers() {
    // 16 MiB at 8 MiB/s: each upload outlasts a level.
    let (o, v) = check_through(&["--direction", "upload", "--upload-rate", "8MiB"]);
    assert_eq!(route(&v, "direct")["denied_from"], 2, "{}", o.stderr);
    let r = route(&v, "h2o");
    assert_eq!(r["denied_from"], Value::Null, "{r}\n{}", o.stderr);
    assert_eq!(r["held_up_to"], 2, "{r}\n{}", o.stderr);
}
