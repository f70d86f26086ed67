//! Shaped links (`--link`): the slow readers read as fast as they can and
//! the tbf on the server's veth end is the bottleneck. Two readers sharing
//! an 8 MiB/s link get 32 MiB (two 16 MiB bodies) in 4 s; that blocks sync
//! x2 direct, not pingora-on in front of it, nor the async replica; and the
//! namespaces, veths and the qdisc on them are gone after a normal end.

mod support;

use std::process::Command;

use support::{slowlab, state_dir};

fn usable() -> bool {
    if let Some(why) = harness::netns::unavailable() {
        eprintln!("skipped: {why}");
        return false;
    }
    if Command::new("tc").arg("-V").output().is_err() {
        eprintln!("skipped: no tc");
        return false;
    }
    true
}

/// Our namespaces and veths whose names carry `pid`.
fn leftovers(pid: u32) -> Vec<String> {
    let mut found = Vec::new();
    for args in [&["netns", "list"][..], &["-o", "link", "show"][..]] {
        let out = Command::new("ip").args(args).output().expect("ip");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        found.extend(
            text.lines()
                .filter(|l| {
                    l.contains(&format!("slowlab-{pid}-")) || l.contains(&format!("sl{pid}-"))
                })
                .map(String::from),
        );
    }
    found
}

/// The rows of a CSV file as maps from column to cell.
fn rows(path: &std::path::Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    r.deserialize().map(|row| row.unwrap()).collect()
}

fn reproduce(out: &std::path::Path, preset: &str, only: &str) -> u32 {
    let child = Command::new(slowlab())
        .args([
            "reproduce",
            "--preset",
            preset,
            "--no-report",
            "--only",
            only,
        ])
        .args(["--link", "rate=8MiB"])
        .arg("--out")
        .arg(out)
        .env("SLOWLAB_HOME", state_dir())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", o.status);
    assert_eq!(
        leftovers(pid),
        Vec::<String>::new(),
        "left after a normal end"
    );
    pid
}

fn f(row: &std::collections::HashMap<String, String>, k: &str) -> f64 {
    row[k]
        .parse()
        .unwrap_or_else(|_| panic!("{k} = {:?}", row[k]))
}

#[test]
fn a_shaped_link_delivers_at_its_rate_blocks_sync_x2_and_pingora_on_relieves_it() {
    if !usable() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    reproduce(&out, "quick", "rust-sync2,direct,pingora-on,slow=2");
    let runs = rows(&out.join("runs.csv"));
    assert_eq!(runs.len(), 2);
    for r in &runs {
        assert_eq!(r["status"], "ok", "{r:?}");
        assert_eq!(r["slow_kind"], "link");
        assert_eq!(r["link"], "rate=8MiB,burst=83886,limit=838860");
    }
    let large = rows(&out.join("large-responses.csv"));
    for route in ["direct", "pingora-on"] {
        let mine: Vec<_> = large.iter().filter(|r| r["route"] == route).collect();
        assert_eq!(mine.len(), 2, "{route}");
        assert!(
            mine.iter()
                .all(|r| r["bytes"] == (16u64 << 20).to_string() && r["error"].is_empty())
        );
        // The two readers share 8 MiB/s: 32 MiB take 4 s.
        let end = mine
            .iter()
            .map(|r| f(r, "started_s") + f(r, "receive_s"))
            .fold(0.0, f64::max);
        assert!(
            (3.6..=4.4).contains(&end),
            "{route}: the last byte at {end:.3} s, not 4 s +-10%"
        );
    }
    let p95 = |route: &str| f(runs.iter().find(|r| r["route"] == route).unwrap(), "p95_ms");
    assert!(
        p95("direct") > 1000.0,
        "sync x2 with 2 link-slow readers is blocked: p95 {} ms",
        p95("direct")
    );
    assert!(
        p95("pingora-on") < 500.0,
        "pingora-on relieves it: p95 {} ms",
        p95("pingora-on")
    );
    let env: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("environment.json")).unwrap())
            .unwrap();
    let ns = &env["run"]["netns"];
    assert_eq!(ns["slow_kind"], "link");
    assert!(
        ns["netem"].as_str().is_some_and(|s| !s.contains('\n')),
        "{ns}"
    );
}

#[test]
fn the_async_replica_is_not_blocked_by_two_link_slow_readers() {
    if !usable() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    reproduce(&out, "servers", "rust-async,slow=2");
    let runs = rows(&out.join("runs.csv"));
    assert!(!runs.is_empty());
    for r in &runs {
        assert_eq!(r["status"], "ok", "{r:?}");
        assert!(f(r, "p95_ms") < 500.0, "p95 {}", r["p95_ms"]);
    }
    let large = rows(&out.join("large-responses.csv"));
    assert!(
        large
            .iter()
            .all(|r| r["error"].is_empty() && r["status"] == "200")
    );
}

#[test]
fn the_lab_puts_a_tbf_on_the_server_veth_only_and_removes_it_with_the_namespaces() {
    if !usable() {
        return;
    }
    use harness::netns::{Link, NetLab, NetSpec, Side};
    let link = Link::at(4 << 20);
    let lab = NetLab::create(&NetSpec {
        link: Some(link),
        ..NetSpec::default()
    })
    .unwrap();
    let q = lab.qdisc(Side::Server).expect("tc -s -j qdisc show");
    assert_eq!(q.kind, "tbf");
    assert_ne!(lab.qdisc(Side::Client).expect("client qdisc").kind, "tbf");
    let name = lab.server.name.clone();
    drop(lab);
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&list.stdout).contains(&name));
}
