//! Apache Traffic Server 9.2 from Debian's package (with the libraries a
//! minimal system lacks unpacked beside it, every path relocated by a
//! runroot), as `prepare` finds it, as a reverse proxy in front of the
//! sync server x2. By default it reads 32 KiB ahead of a slow reader: two
//! slow readers hold both workers behind it; with its water mark raised
//! to 32 MiB (`ats-buf`) it reads whole responses off them. A request
//! body streams unless `ats-reqbuf` buffers it whole. Scaled down as the
//! check tests are.

use serde_json::Value;

use super::packaged::{self, denied_by_handlers, held};
use crate::support;

fn check_through(routes: &str, extra: &[&str]) -> (support::child::Outcome, Value) {
    let ats = ("Traffic Server", "trafficserver", "usr/bin/traffic_server");
    let pinned = ("records.config", "proxy.config.http.cache.http INT 0\n");
    packaged::check_kept(ats, routes, extra, pinned)
}

#[test]
fn traffic_server_reads_a_whole_response_ahead_only_with_its_water_mark_raised() {
    let (o, v) = check_through("ats,ats-buf", &[]);
    denied_by_handlers(&v, &o, "ats");
    held(&v, &o, "ats-buf");
}

#[test]
fn traffic_server_streams_upload_bodies_unless_it_buffers_them() {
    // 16 MiB at 8 MiB/s: each upload outlasts a level.
    let upload = ["--direction", "upload", "--upload-rate", "8MiB"];
    let (o, v) = check_through("ats,ats-reqbuf", &upload);
    denied_by_handlers(&v, &o, "ats");
    held(&v, &o, "ats-reqbuf");
}
