//! Shaped links (`--link`): the slow readers read as fast as they can and
//! the tbf on the server's veth end is the bottleneck. Two readers sharing
//! an 8 MiB/s link get 32 MiB (two 16 MiB bodies) in 4 s; that blocks sync
//! x2 direct, not pingora-on in front of it, nor the async replica; the
//! tbf's counters (`qdisc-samples.csv`) grow by the `/large` bytes and not
//! by `/fast`'s, which take their own veth pair; the report draws the
//! link's queue from them; slow uploaders are shaped by a tbf on the
//! client's end; and the namespaces, veths and the qdiscs on them are gone
//! after a normal end. Per-client links (`per=client`) give each of two
//! readers the whole rate where a shared link halves it, and count each
//! client in its own htb class; `sweep-load`'s `/fast` calls take the
//! unshaped pair (`--fast-bind`), its slow reader its own class.

use crate::support;

use std::process::Command;

use support::netns::leftovers;
use support::{slowlab, state_dir};

fn usable() -> bool {
    testkit::real::require("network namespaces", lab::netns::unavailable());
    testkit::real::require_command("tc", "-V");
    true
}

/// The rows of a CSV file as maps from column to cell.
fn rows(path: &std::path::Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    r.deserialize().map(|row| row.unwrap()).collect()
}

fn reproduce(out: &std::path::Path, preset: &str, only: &str, extra: &[&str]) -> u32 {
    reproduce_over(out, preset, only, "rate=8MiB", extra)
}

fn reproduce_over(
    out: &std::path::Path,
    preset: &str,
    only: &str,
    link: &str,
    extra: &[&str],
) -> u32 {
    let child = Command::new(slowlab())
        .args([
            "reproduce",
            "--preset",
            preset,
            "--no-report",
            "--only",
            only,
        ])
        .args(["--link", link])
        .args(extra)
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
    reproduce(&out, "quick", "rust-sync2,direct,pingora-on", &[]);
    let runs = rows(&out.join("runs.csv"));
    assert_eq!(runs.len(), 4);
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
    let slow2 = |route: &str| {
        runs.iter()
            .find(|r| r["route"] == route && r["slow_clients"] == "2")
            .unwrap()
    };
    let p95 = |route: &str| f(slow2(route), "p95_ms");
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
    the_tbf_carries_the_large_bytes_and_not_the_fast_ones(&out, &runs);
    the_report_draws_the_link_queue_from_the_qdisc_samples(&out);
}

/// Per run, the tbf's sent bytes at its last sample (cumulative).
fn tbf_sent(qdiscs: &[std::collections::HashMap<String, String>], run: &str) -> f64 {
    qdiscs
        .iter()
        .filter(|q| q["run_id"] == run && q["side"] == "server")
        .map(|q| f(q, "sent_bytes"))
        .fold(0.0, f64::max)
}

/// `qdisc-samples.csv`: the tbf on the server's veth end carried every
/// `/large` byte, and none of `/fast`'s, which take the second veth pair.
fn the_tbf_carries_the_large_bytes_and_not_the_fast_ones(
    out: &std::path::Path,
    runs: &[std::collections::HashMap<String, String>],
) {
    let qdiscs = rows(&out.join("qdisc-samples.csv"));
    assert!(
        qdiscs
            .iter()
            .all(|q| q["kind"] == "tbf" && q["side"] == "server")
    );
    let requests = rows(&out.join("requests.csv"));
    let large = rows(&out.join("large-responses.csv"));
    for r in runs {
        let id = &r["run_id"];
        let sent = tbf_sent(&qdiscs, id);
        let backlog = qdiscs
            .iter()
            .filter(|q| &q["run_id"] == id)
            .map(|q| f(q, "backlog_bytes"))
            .fold(0.0, f64::max);
        if r["slow_clients"] == "0" {
            // What /fast moved, at the least: a status line and the
            // 12-byte body per answered request.
            let ok = requests
                .iter()
                .filter(|q| &q["run_id"] == id && q["status"] == "200")
                .count();
            assert!(ok >= 10, "{id}: {ok} /fast answers");
            let fast_moved = ok as f64 * (17.0 + 12.0);
            eprintln!("run {id}: /fast only, tbf sent {sent} bytes, /fast moved > {fast_moved}");
            assert!(
                sent * 10.0 < fast_moved,
                "{id}: the tbf sent {sent} bytes with /fast alone (> a tenth of {fast_moved})"
            );
        } else {
            let bodies: f64 = large
                .iter()
                .filter(|l| &l["run_id"] == id)
                .map(|l| f(l, "bytes"))
                .sum();
            eprintln!(
                "run {id} ({}): tbf sent {sent} bytes for {bodies} body bytes, backlog peak {backlog}",
                r["route"]
            );
            assert!(bodies >= (32u64 << 20) as f64);
            assert!(sent >= bodies, "{id}: the tbf sent {sent} < {bodies}");
            assert!(backlog > 0.0, "{id}: the link's queue filled");
        }
    }
}

/// The report's chart 5 has the link's layer, its values are the
/// backlogs of `qdisc-samples.csv`, and the lesson quotes the peak.
fn the_report_draws_the_link_queue_from_the_qdisc_samples(out: &std::path::Path) {
    let results = report::data::load(out).unwrap();
    let doc = report::build(&results);
    let fig = doc
        .figures()
        .find(|f| f.file == "report-bytes.svg")
        .expect("chart 5");
    let mut chart = csv::Reader::from_reader(fig.data_csv.as_bytes());
    let head = chart.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let (run_col, link_col) = (col("run_id"), col("link_queue_bytes"));
    let qdiscs = rows(&out.join("qdisc-samples.csv"));
    let (mut drawn, mut matched) = (0, 0);
    for rec in chart.records() {
        let rec = rec.unwrap();
        let v: f64 = rec[link_col].parse().expect("a link value in every row");
        if v > 0.0 {
            drawn += 1;
            matched += qdiscs
                .iter()
                .any(|q| q["run_id"] == rec[run_col] && f(q, "backlog_bytes") == v)
                as usize;
        }
    }
    assert!(drawn > 0, "the link's layer is drawn");
    // A value is the sample's backlog unless the sender's queue was
    // smaller (then the layer is cut to it).
    assert!(
        matched * 10 >= drawn * 9,
        "{matched} of {drawn} link values are backlogs of qdisc-samples.csv"
    );
    let direct = results
        .runs
        .iter()
        .find(|r| r.route.to_string() == "direct" && r.slow_clients == 2)
        .unwrap();
    let peak = qdiscs
        .iter()
        .filter(|q| q["run_id"] == direct.run_id && q["side"] == "server")
        .map(|q| f(q, "backlog_bytes"))
        .fold(0.0, f64::max);
    report::write(out).unwrap();
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let quoted = format!(
        "the link's qdisc (tbf or htb) up to {}",
        report::fmt::bytes(peak)
    );
    assert!(md.contains(&quoted), "the lesson quotes `{quoted}`");
    eprintln!("lesson: {quoted}");
}

#[test]
fn slow_uploaders_behind_a_link_send_at_its_rate_through_a_client_side_tbf() {
    if !usable() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    reproduce(&out, "upload", "rust-sync2,direct,slow=2", &["--runs", "1"]);
    let runs = rows(&out.join("runs.csv"));
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "ok", "{:?}", runs[0]);
    let uploads = rows(&out.join("uploads.csv"));
    assert_eq!(uploads.len(), 2);
    let bytes: f64 = uploads.iter().map(|u| f(u, "bytes_sent")).sum();
    assert_eq!(bytes, (32u64 << 20) as f64);
    // Two uploaders share 8 MiB/s: the last of 32 MiB is sent at 4 s.
    let end = uploads
        .iter()
        .map(|u| f(u, "started_s") + f(u, "send_s"))
        .fold(0.0, f64::max);
    eprintln!("uploads: the last byte sent at {end:.3} s (32 MiB at 8 MiB/s: 4 s)");
    assert!(
        (3.4..=4.6).contains(&end),
        "the last upload byte at {end:.3} s, not 4 s +-15%"
    );
    let qdiscs = rows(&out.join("qdisc-samples.csv"));
    let sent = |side: &str| {
        qdiscs
            .iter()
            .filter(|q| q["side"] == side)
            .map(|q| f(q, "sent_bytes"))
            .fold(0.0, f64::max)
    };
    assert!(
        sent("client") >= bytes,
        "the client-side tbf sent {}",
        sent("client")
    );
    assert!(
        sent("server") < bytes / 10.0,
        "only answers and ACKs go back"
    );
}

#[test]
fn the_async_replica_is_not_blocked_by_two_link_slow_readers() {
    if !usable() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    reproduce(&out, "servers", "rust-async,slow=2", &[]);
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
    use lab::netns::{Link, NetLab, NetSpec, Side};
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

/// The last byte of each `/large` download of `out`'s one run, seconds
/// since t0, after checking that every body came whole.
fn download_ends(out: &std::path::Path) -> Vec<f64> {
    let large = rows(&out.join("large-responses.csv"));
    assert_eq!(large.len(), 2, "two readers");
    large
        .iter()
        .map(|r| {
            assert!(
                r["bytes"] == (16u64 << 20).to_string() && r["error"].is_empty(),
                "{r:?}"
            );
            f(r, "started_s") + f(r, "receive_s")
        })
        .collect()
}

#[test]
fn per_client_links_give_each_reader_the_whole_rate_where_a_shared_one_halves_it() {
    if !usable() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut ends = vec![];
    for (name, link) in [("client", "rate=4MiB,per=client"), ("shared", "rate=4MiB")] {
        let out = tmp.path().join(name);
        reproduce_over(
            &out,
            "quick",
            "rust-sync2,direct,slow=2",
            link,
            &["--runs", "1"],
        );
        let runs = rows(&out.join("runs.csv"));
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0]["status"], "ok", "{:?}", runs[0]);
        assert_eq!(runs[0]["slow_kind"], "link");
        let e = download_ends(&out);
        eprintln!(
            "{name} link {link}: the two 16 MiB downloads end at {:.3} s and {:.3} s",
            e[0], e[1]
        );
        ends.push(e);
        if name == "client" {
            assert_eq!(
                runs[0]["link"],
                "rate=4MiB,burst=41943,limit=419430,per=client"
            );
            each_client_has_its_own_class(&out);
        }
    }
    // 16 MiB at 4 MiB/s each: 4 s.
    for end in &ends[0] {
        assert!(
            (3.6..=4.4).contains(end),
            "per client: a download ends at {end:.3} s, not 4 s +-10%"
        );
    }
    let last = |e: &[f64]| e.iter().copied().fold(0.0, f64::max);
    let ratio = last(&ends[1]) / last(&ends[0]);
    eprintln!("shared / per client: {ratio:.2}x");
    assert!(
        (1.7..=2.3).contains(&ratio),
        "sharing the 4 MiB/s link takes about twice as long: {ratio:.2}x"
    );
}

/// `qdisc-samples.csv` of a per-client run: the htb root's rows, and one
/// class per reader at its address that carried its 16 MiB; the default
/// class carried next to nothing.
fn each_client_has_its_own_class(out: &std::path::Path) {
    let qdiscs = rows(&out.join("qdisc-samples.csv"));
    let server: Vec<_> = qdiscs.iter().filter(|q| q["side"] == "server").collect();
    assert!(
        server
            .iter()
            .any(|q| q["class"].is_empty() && q["kind"] == "htb")
    );
    let sent = |class: &str| {
        server
            .iter()
            .filter(|q| q["class"] == class)
            .map(|q| f(q, "sent_bytes"))
            .fold(0.0, f64::max)
    };
    for (class, addr) in [("1:10", "198.19.0.1"), ("1:11", "198.19.0.2")] {
        assert!(
            server
                .iter()
                .filter(|q| q["class"] == class)
                .all(|q| q["client_addr"] == addr && q["kind"] == "bfifo"),
            "{class}"
        );
        eprintln!("class {class} ({addr}) sent {} bytes", sent(class));
        assert!(
            sent(class) >= (16u64 << 20) as f64,
            "{class}: {}",
            sent(class)
        );
    }
    eprintln!("default class 1:1 sent {} bytes", sent("1:1"));
    assert!(
        sent("1:1") < (1u64 << 20) as f64,
        "the default class: {}",
        sent("1:1")
    );
}

/// A lab with a 4 MiB/s per-client link for `clients` slow clients.
fn per_client_lab(clients: u32, uploads: bool) -> lab::netns::NetLab {
    use lab::netns::{Link, NetLab, NetSpec, Per};
    use schema::Direction;
    let spec = NetSpec {
        link: Some(Link::at(4 << 20).per(Per::Client)),
        ..NetSpec::default()
    };
    let direction = if uploads {
        Direction::Upload
    } else {
        Direction::Download
    };
    NetLab::create(&spec.for_load(direction, clients)).unwrap()
}

/// Bytes sent by each class of the server end's htb, by class name.
fn sent_by_class(lab: &lab::netns::NetLab) -> std::collections::HashMap<String, u64> {
    lab.qdisc_probe(lab::netns::Side::Server)
        .read()
        .into_iter()
        .filter_map(|q| Some((q.parent?, q.bytes)))
        .collect()
}

#[test]
fn sweep_load_s_fast_calls_take_the_unshaped_pair_and_its_slow_reader_its_own_class() {
    if !usable() {
        return;
    }
    use support::child::Child;
    let lab = per_client_lab(1, false);
    let entry = format!("{}:8000", lab.server.addr);
    let mut serve = Command::new("ip");
    serve
        .args(["netns", "exec", &lab.server.name])
        .arg(slowlab())
        .args(["serve", "--listen", &entry, "--model", "async"])
        .args(["--large-bytes", "4MiB"]);
    let _server = Child::spawn(serve);
    let client = lab.client.path();
    let to: std::net::SocketAddr = entry.parse().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while lab::netns::within(Some(&client), || {
        Ok(
            std::net::TcpStream::connect_timeout(&to, std::time::Duration::from_millis(200))
                .is_err(),
        )
    })
    .unwrap()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never answered"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let tmp = tempfile::tempdir().unwrap();
    let fast_bind = lab.fast_bind().to_string();
    // One sweep-load, its /fast sessions bound (or not); the calls it
    // answered and what each class sent meanwhile.
    let sweep = |bound: bool| {
        let out = tmp.path().join(if bound { "bound" } else { "unbound" });
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &lab.client.name])
            .arg(slowlab())
            .args(["sweep-load", "--target", &format!("http://{entry}")])
            .args([
                "--rates",
                "20",
                "--step-duration",
                "1s",
                "--calls-per-conn",
                "2",
            ])
            .args(["--timeout", "2s", "--slow", "1", "--slow-rate", "10GiB"])
            .args(["--slow-bind", "198.19.0.1"])
            .arg("--out")
            .arg(&out);
        if bound {
            cmd.args(["--fast-bind", &fast_bind]);
        }
        let before = sent_by_class(&lab);
        let o = Child::spawn(cmd).finish(std::time::Duration::from_secs(60));
        assert!(o.status.success(), "{}: {}", o.status, o.stderr);
        let after = sent_by_class(&lab);
        let delta = |c: &str| after[c] - before[c];
        let replies: f64 = rows(&out.join("steps.csv"))
            .iter()
            .map(|r| f(r, "replies"))
            .sum();
        (replies, delta("1:1"), delta("1:10"))
    };
    let (replies, default, reader) = sweep(true);
    // A status line and the 12-byte body per answer, at the least.
    let fast_moved = replies * (17.0 + 12.0);
    eprintln!(
        "bound: {replies} /fast answers (> {fast_moved} bytes), default class sent {default}, the slow reader's class {reader}"
    );
    assert!(replies >= 20.0, "{replies} answers");
    assert!(
        (default as f64) * 10.0 < fast_moved,
        "/fast crossed the shaped link: its default class sent {default} bytes"
    );
    assert!(
        reader > 1 << 20,
        "the slow reader's class sent {reader} bytes"
    );
    // For contrast: unbound, the same calls cross the link's default class.
    let (replies, default, _) = sweep(false);
    eprintln!("unbound: {replies} /fast answers, default class sent {default}");
    assert!(
        default as f64 >= replies * (17.0 + 12.0),
        "unbound /fast calls cross the shaped link: {default} bytes for {replies} answers"
    );
}

#[test]
fn a_per_client_lab_gives_each_client_an_address_and_a_class_at_both_ends_with_uploads() {
    if !usable() {
        return;
    }
    use lab::netns::Side;
    let lab = per_client_lab(2, true);
    let addrs = ["198.19.0.1", "198.19.0.2"];
    assert_eq!(
        lab.binds().slow_bind.map(|a| a.to_string()).as_deref(),
        Some(addrs[0])
    );
    let shown = Command::new("ip")
        .args([
            "-n",
            &lab.client.name,
            "-o",
            "addr",
            "show",
            "dev",
            &lab.client.veth,
        ])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    for a in addrs {
        assert!(shown.contains(&format!("{a}/32")), "{shown}");
    }
    for side in [Side::Server, Side::Client] {
        let q = lab.qdisc_probe(side).read();
        let seen: Vec<_> = q
            .iter()
            .map(|s| {
                (
                    s.kind.as_str(),
                    s.parent.as_deref(),
                    s.client.map(|a| a.to_string()),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("htb", None, None),
                ("bfifo", Some("1:1"), None),
                ("bfifo", Some("1:10"), Some(addrs[0].to_string())),
                ("bfifo", Some("1:11"), Some(addrs[1].to_string())),
            ],
            "{side}"
        );
    }
    let name = lab.client.name.clone();
    drop(lab);
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&list.stdout).contains(&name));
}
