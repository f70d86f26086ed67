//! Varnish 7.1 from Debian's package (with its libraries unpacked beside
//! it, its VCL compiled by the system's C compiler), as `prepare` finds
//! it, in front of the sync server x2. Passing every request (nothing
//! cached), it still fetches each response whole into memory as fast as
//! the app sends it: two slow readers never hold the workers. A passed
//! request body streams, so two slow uploaders hold them, unless
//! `std.cache_req_body` reads the body first. Scaled down as the check
//! tests are.

use serde_json::Value;

use super::check_cli::route;
use super::packaged;
use crate::support;

fn check_through(routes: &str, extra: &[&str]) -> (support::child::Outcome, Value) {
    packaged::require("Varnish", "varnish", "usr/sbin/varnishd");
    let (o, v, dir) = packaged::check_through(routes, extra);
    let first = routes.split(',').next().unwrap();
    let vcl = std::fs::read_to_string(dir.path().join(first).join("default.vcl"))
        .expect("the VCL is kept beside the levels");
    assert!(vcl.contains("return (pass);"), "{vcl}");
    (o, v)
}

#[test]
fn varnish_takes_whole_responses_off_the_workers() {
    let (o, v) = check_through("varnish", &[]);
    assert_eq!(route(&v, "direct")["denied_from"], 2, "{}", o.stderr);
    let r = route(&v, "varnish");
    assert_eq!(r["denied_from"], Value::Null, "{r}\n{}", o.stderr);
    assert_eq!(r["held_up_to"], 2, "{r}\n{}", o.stderr);
}

#[test]
fn varnish_streams_upload_bodies_unless_it_caches_them() {
    // 16 MiB at 8 MiB/s: each upload outlasts a level.
    let (o, v) = check_through(
        "varnish,varnish-reqbuf",
        &["--direction", "upload", "--upload-rate", "8MiB"],
    );
    let streaming = route(&v, "varnish");
    assert_eq!(streaming["denied_from"], 2, "{streaming}\n{}", o.stderr);
    assert_eq!(streaming["levels"][2]["cause"], "handlers", "{streaming}");
    let cached = route(&v, "varnish-reqbuf");
    assert_eq!(cached["denied_from"], Value::Null, "{cached}\n{}", o.stderr);
    assert_eq!(cached["held_up_to"], 2, "{cached}\n{}", o.stderr);
}
