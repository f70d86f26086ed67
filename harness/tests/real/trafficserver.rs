//! Apache Traffic Server 9.2 from Debian's package (with the libraries a
//! minimal system lacks unpacked beside it, every path relocated by a
//! runroot), as `prepare` finds it, as a reverse proxy in front of the
//! sync server x2. By default it reads 32 KiB ahead of a slow reader: two
//! slow readers hold both workers behind it; with its water mark raised
//! to 32 MiB (`ats-buf`) it reads whole responses off them. A request
//! body streams unless `ats-reqbuf` buffers it whole. Scaled down as the
//! check tests are.

use serde_json::Value;

use super::check_cli::route;
use super::packaged;
use crate::support;

fn check_through(routes: &str, extra: &[&str]) -> (support::child::Outcome, Value) {
    packaged::require("Traffic Server", "trafficserver", "usr/bin/traffic_server");
    let (o, v, dir) = packaged::check_through(routes, extra);
    let first = routes.split(',').next().unwrap();
    let records = std::fs::read_to_string(dir.path().join(first).join("records.config"))
        .expect("the records.config is kept beside the levels");
    assert!(
        records.contains("proxy.config.http.cache.http INT 0\n"),
        "{records}"
    );
    (o, v)
}

#[test]
fn traffic_server_reads_a_whole_response_ahead_only_with_its_water_mark_raised() {
    let (o, v) = check_through("ats,ats-buf", &[]);
    let r = route(&v, "ats");
    assert_eq!(r["denied_from"], 2, "{r}\n{}", o.stderr);
    assert_eq!(r["levels"][2]["cause"], "handlers", "{r}");
    let buffered = route(&v, "ats-buf");
    assert_eq!(
        buffered["denied_from"],
        Value::Null,
        "{buffered}\n{}",
        o.stderr
    );
    assert_eq!(buffered["held_up_to"], 2, "{buffered}\n{}", o.stderr);
}

#[test]
fn traffic_server_streams_upload_bodies_unless_it_buffers_them() {
    // 16 MiB at 8 MiB/s: each upload outlasts a level.
    let (o, v) = check_through(
        "ats,ats-reqbuf",
        &["--direction", "upload", "--upload-rate", "8MiB"],
    );
    let streaming = route(&v, "ats");
    assert_eq!(streaming["denied_from"], 2, "{streaming}\n{}", o.stderr);
    assert_eq!(streaming["levels"][2]["cause"], "handlers", "{streaming}");
    let buffered = route(&v, "ats-reqbuf");
    assert_eq!(
        buffered["denied_from"],
        Value::Null,
        "{buffered}\n{}",
        o.stderr
    );
    assert_eq!(buffered["held_up_to"], 2, "{buffered}\n{}", o.stderr);
}
