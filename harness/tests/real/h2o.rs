//! H2O 2.2 from Debian's package, as `prepare` finds it, in front of the
//! sync server x2. It reads every response off the app as fast as the
//! app sends it, and every request body before it forwards the request:
//! two slow readers and two slow uploaders leave the workers free.
//! Scaled down as the check tests are.

use serde_json::Value;

use super::check_cli::route;
use super::packaged::{self, held};
use crate::support;

fn check_through(extra: &[&str]) -> (support::child::Outcome, Value) {
    let h2o = ("H2O", "h2o", "usr/bin/h2o");
    let (o, v) = packaged::check_kept(h2o, "h2o", extra, ("h2o.conf", "num-threads: 1\n"));
    assert_eq!(route(&v, "direct")["denied_from"], 2, "{}", o.stderr);
    (o, v)
}

#[test]
fn h2o_takes_whole_responses_off_the_workers() {
    let (o, v) = check_through(&[]);
    held(&v, &o, "h2o");
}

#[test]
fn h2o_takes_whole_upload_bodies_off_the_workers() {
    // 16 MiB at 8 MiB/s: each upload outlasts a level.
    let (o, v) = check_through(&["--direction", "upload", "--upload-rate", "8MiB"]);
    held(&v, &o, "h2o");
}
