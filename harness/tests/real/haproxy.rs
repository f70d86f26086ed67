//! HAProxy 2.6 from Debian's package (with the libraries a minimal system
//! lacks unpacked beside it), as `prepare` finds it, in front of the sync
//! server x2. HAProxy has no setting that buffers a whole response: two
//! slow readers hold both workers behind it, as directly. `option
//! http-buffer-request` waits for one buffer of a body: two slow uploaders
//! of 8 KiB never reach the workers, two of 16 MiB hold them. It reads a
//! whole head before it connects upstream: two slowloris clients never
//! reach the workers. Scaled down as the check tests are.

use serde_json::Value;

use super::check_cli::route;
use super::packaged;
use crate::support;

fn check_through(routes: &str, extra: &[&str]) -> (support::child::Outcome, Value) {
    packaged::require("HAProxy", "haproxy", "usr/sbin/haproxy");
    let (o, v, dir) = packaged::check_through(routes, extra);
    let cfg = std::fs::read_to_string(dir.path().join(routes).join("haproxy.cfg"))
        .expect("the haproxy.cfg is kept beside the levels");
    assert!(cfg.contains("\tnbthread 1\n"), "{cfg}");
    (o, v)
}

#[test]
fn haproxy_passes_slow_readers_through() {
    let (o, v) = check_through("haproxy", &[]);
    assert_eq!(o.status.code(), Some(3), "{}", o.stderr);
    let r = route(&v, "haproxy");
    assert_eq!(r["denied_from"], 2, "{r}\n{}", o.stderr);
    let denied = &r["levels"][2];
    assert_eq!(denied["cause"], "handlers", "{denied}");
    let answer = r["answer"].as_str().unwrap();
    assert!(
        answer.starts_with("behind HAProxy: denied from 2"),
        "{answer}"
    );
    assert!(
        v["remedy"]
            .as_str()
            .unwrap()
            .contains("HAProxy has no setting that buffers a whole response"),
        "{}",
        v["remedy"]
    );
}

#[test]
fn haproxy_waits_for_a_small_body_and_streams_a_large_one() {
    // 8 KiB at 2 KiB/s: each upload takes 4 s, longer than a level.
    let (o, v) = check_through(
        "haproxy-reqbuf",
        &[
            "--direction",
            "upload",
            "--upload-bytes",
            "8KiB",
            "--upload-rate",
            "2KiB",
        ],
    );
    assert_eq!(route(&v, "direct")["denied_from"], 2, "{}", o.stderr);
    let small = route(&v, "haproxy-reqbuf");
    assert_eq!(small["denied_from"], Value::Null, "{small}\n{}", o.stderr);
    assert_eq!(small["held_up_to"], 2, "{small}\n{}", o.stderr);
    // 16 MiB at 8 MiB/s: one buffer of it is waited for, the rest streams.
    let (o, v) = check_through(
        "haproxy-reqbuf",
        &["--direction", "upload", "--upload-rate", "8MiB"],
    );
    let large = route(&v, "haproxy-reqbuf");
    assert_eq!(large["denied_from"], 2, "{large}\n{}", o.stderr);
    assert_eq!(large["levels"][2]["cause"], "handlers", "{large}");
}

#[test]
fn haproxy_holds_slowloris_clients_off_the_workers() {
    let (o, v) = check_through("haproxy", &["--direction", "headers"]);
    assert_eq!(route(&v, "direct")["denied_from"], 2, "{}", o.stderr);
    let r = route(&v, "haproxy");
    assert_eq!(r["denied_from"], Value::Null, "{r}\n{}", o.stderr);
    assert_eq!(r["held_up_to"], 2, "{r}\n{}", o.stderr);
}
