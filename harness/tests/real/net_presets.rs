//! The `buffers` and `link` presets through the CLI, one small slice each:
//! a condition's own buffer cell reaches both namespaces (the app's peak
//! send queue follows `tcp_wmem` max, and at the preset's MTU 65535 grows
//! further than at the veth's 1500) and its rows carry the cell; a
//! condition's own link makes its rows `slow_kind=link`; and a run-wide
//! flag that contradicts a condition's own dimension is refused in one
//! line before anything runs.

use crate::support;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use support::request_report::{reproduce, reproduce_command};
use support::slowlab;

/// Both tests measure; on a small machine they should not share it.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn usable(tc: bool) -> bool {
    testkit::real::require("network namespaces", lab::netns::unavailable());
    if tc {
        testkit::real::require_command("tc", "-V");
    }
    true
}

fn rows(path: &Path) -> Vec<HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    r.deserialize().map(|row| row.unwrap()).collect()
}

const WMEM_256K: &str = "net.ipv4.tcp_wmem=4096 16384 262144";
const WMEM_16M: &str = "net.ipv4.tcp_wmem=4096 16384 16777216";
const RMEM_1M: &str = "net.ipv4.tcp_rmem=4096 131072 1048576";

#[test]
fn a_buffers_cell_sets_both_namespaces_and_the_app_s_send_queue_follows_its_wmem() {
    let _serial = one_at_a_time();
    if !usable(false) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    reproduce(
        "buffers",
        &out,
        "server=rust-sync2,route=direct,slow=2,reader=strict,wmem=256K,wmem=16M,rmem=1M",
        &[],
    );
    let runs = rows(&out.join("runs.csv"));
    assert_eq!(runs.len(), 2);
    let cell_of = |wmem: &str| format!("{wmem};{RMEM_1M}");
    let mut peak = HashMap::new();
    let sockets = rows(&out.join("socket-samples.csv"));
    for r in &runs {
        assert_eq!(r["status"], "ok", "{r:?}");
        assert_eq!(
            (
                r["reader"].as_str(),
                r["slow_kind"].as_str(),
                r["netns"].as_str()
            ),
            ("strict", "pace", "true")
        );
        let p = sockets
            .iter()
            .filter(|s| s["run_id"] == r["run_id"] && s["component"] == "app")
            .filter_map(|s| s["tx_queue_bytes"].parse::<u64>().ok())
            .max()
            .expect("the app's sockets were sampled");
        peak.insert(r["sysctls"].clone(), p);
    }
    let small = peak[&cell_of(WMEM_256K)];
    let large = peak[&cell_of(WMEM_16M)];
    assert!(
        small <= 512 << 10,
        "tcp_wmem max 256 KiB bounds the send queue: {small}"
    );
    assert!(
        large > small + small / 2,
        "tcp_wmem max 16 MiB lets it grow further: {large} against {small}"
    );
    assert!(
        runs.iter().all(|r| r["mtu"] == "65535"),
        "the original's loopback MTU"
    );
    // The same 16 MiB cell at the veth default MTU (the `cross` preset has
    // the same load and reader): the send buffer grows from the congestion
    // window counted in segments, so at 1500 it stops lower.
    let at_1500 = tmp.path().join("mtu1500");
    reproduce(
        "cross",
        &at_1500,
        "server=rust-sync2,route=direct,slow=2",
        &["--sysctl", WMEM_16M, "--sysctl", RMEM_1M, "--mtu", "1500"],
    );
    let r1500 = rows(&at_1500.join("runs.csv"));
    assert_eq!(
        (
            r1500.len(),
            r1500[0]["mtu"].as_str(),
            r1500[0]["reader"].as_str()
        ),
        (1, "1500", "strict")
    );
    let peak_1500 = rows(&at_1500.join("socket-samples.csv"))
        .iter()
        .filter(|s| s["component"] == "app")
        .filter_map(|s| s["tx_queue_bytes"].parse::<u64>().ok())
        .max()
        .expect("the app's sockets were sampled");
    assert!(
        large > peak_1500 + peak_1500 / 2,
        "at MTU 65535 the 16 MiB cell's send queue grows further than at 1500: {large} against {peak_1500}"
    );
    // model.csv says where the MTU kept the send buffer below the
    // tcp_wmem max its prediction assumes.
    let m1500 = rows(&at_1500.join("model.csv"));
    assert_eq!(
        (
            m1500[0]["mtu"].as_str(),
            m1500[0]["wmem_max_bytes"].as_str(),
            m1500[0]["sndbuf_as_assumed"].as_str()
        ),
        ("1500", "16777216", "no"),
        "{m1500:?}"
    );
    let sndbuf_1500: u64 = m1500[0]["app_sndbuf_peak_bytes"].parse().unwrap();
    assert!(sndbuf_1500 < 16 << 20, "{sndbuf_1500}");
    // Both namespaces got the cell; the host kept its own.
    let env: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("environment.json")).unwrap())
            .unwrap();
    assert!(env["run"]["netns"].is_object(), "{}", env["run"]["netns"]);
    assert_ne!(
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_wmem")
            .unwrap()
            .split_whitespace()
            .nth(2),
        Some("262144")
    );
    let conditions = rows(&out.join("conditions.csv"));
    assert_eq!(conditions.len(), 2, "one row per cell");
    let model = rows(&out.join("model.csv"));
    assert_eq!(model.len(), 2, "one model row per cell");
    for m in &model {
        assert_eq!(m["reader"], "strict");
        assert_eq!(m["mtu"], "65535");
        assert!(
            ["yes", "no"].contains(&m["sndbuf_as_assumed"].as_str()),
            "the app's send buffer was sampled: {m:?}"
        );
        let want = if m["sysctls"] == cell_of(WMEM_256K) {
            "262144"
        } else {
            "16777216"
        };
        assert_eq!(m["wmem_max_bytes"], want, "{m:?}");
        assert_eq!(m["rmem_max_bytes"], "1048576");
    }
    assert!(
        rows(&out.join("crosscheck.csv"))
            .iter()
            .all(|c| c["sysctls"].starts_with("net.ipv4.tcp_wmem="))
    );
}

#[test]
fn the_link_preset_s_link_conditions_run_behind_a_link() {
    let _serial = one_at_a_time();
    if !usable(true) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    reproduce(
        "link",
        &out,
        "server=rust-sync2,route=direct,slow=2,kind=link",
        &[],
    );
    let runs = rows(&out.join("runs.csv"));
    assert_eq!(runs.len(), 1);
    let r = &runs[0];
    assert_eq!(r["status"], "ok", "{r:?}");
    assert_eq!(r["slow_kind"], "link");
    assert_eq!(r["link"], "rate=2MiB,burst=20971,limit=209715,per=client");
    // Two unpaced readers, each behind its own 2 MiB/s link, as the paced
    // readers each read at 2 MiB/s: 16 MiB take about 8 s.
    let large = rows(&out.join("large-responses.csv"));
    let end = large
        .iter()
        .map(|l| l["started_s"].parse::<f64>().unwrap() + l["receive_s"].parse::<f64>().unwrap())
        .fold(0.0, f64::max);
    eprintln!("link preset, per client: the last byte at {end:.3} s");
    assert!((7.2..=8.8).contains(&end), "the last byte at {end:.3} s");
    let c = rows(&out.join("conditions.csv"));
    assert_eq!(
        (c[0]["slow_kind"].as_str(), c[0]["link"].as_str()),
        ("link", r["link"].as_str())
    );
    let m = rows(&out.join("model.csv"));
    assert_eq!(m[0]["slow_kind"], "link");
    assert_eq!(
        m[0]["slow_rate_bytes_per_s"], "2097152",
        "each client's own link"
    );
}

#[test]
fn a_run_wide_flag_that_contradicts_a_condition_is_refused_in_one_line() {
    for (preset, flag, value) in [
        ("link", "--link", "rate=8MiB"),
        // The preset's links are per client; a shared one contradicts them.
        ("link", "--link", "rate=2MiB"),
        ("buffers", "--sysctl", WMEM_16M),
        ("buffers", "--mtu", "1500"),
    ] {
        let o = Command::new(slowlab())
            .args(["reproduce", "--preset", preset, flag, value])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{preset} {flag}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("contradicts"), "{err}");
    }
}

#[test]
fn without_namespaces_a_buffers_condition_is_skipped_with_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let o = reproduce_command(
        "buffers",
        &out,
        "server=rust-sync2,route=direct,slow=2,reader=strict,wmem=256K,rmem=1M",
        &[],
    )
    .env("SLOWLAB_NO_NETNS", "1")
    .output()
    .unwrap();
    support::assert_one_line_with(&String::from_utf8_lossy(&o.stderr), "SLOWLAB_NO_NETNS");
    let runs = rows(&out.join("runs.csv"));
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "skipped");
    assert_eq!(runs[0]["sysctls"], format!("{WMEM_256K};{RMEM_1M}"));
}
