//! `slowlab load --reader streamreader` against the thing it models: a
//! plain asyncio client written as the original describes its own
//! (`harness/python/slowlab_reference_reader.py`: `StreamReader` with limit
//! 16 KiB, `SO_RCVBUF` 8 KiB, `read(16 KiB)` then a sleep to the pace), run
//! back to back against real Gunicorn sync x2 with 2 slow readers at the
//! original's load (16 MiB at 2 MiB/s, `/fast` 8/s for 9 s: about 10 s a
//! run). `--reader strict` runs beside them and is reported, not judged.
//!
//! Where the runs happen is a [`Place`]: the host here; a network namespace
//! with its own `tcp_wmem` plugs in as another `Place` (server started in
//! it, clients wrapped in `ip netns exec`), with the same comparison.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use harness::prepare::{self, Tools};
use harness::stack::Server;
use harness::stack::launch::{Launcher, Running};
use support::{lab, root, slowlab, state_dir};

/// Where a comparison runs.
trait Place {
    /// Starts a fresh Gunicorn sync x2 whose send log goes into `dir`.
    fn start(&self, dir: &Path) -> Running;
    /// A command for a client program, run where the clients belong.
    fn client(&self, program: &Path) -> Command;
    fn name(&self) -> String;
}

/// This machine, its own sysctls.
struct Host<'a> {
    launcher: Launcher<'a>,
}

impl Place for Host<'_> {
    fn start(&self, dir: &Path) -> Running {
        lab::start(&self.launcher, Server::GunicornSync2, dir)
    }
    fn client(&self, program: &Path) -> Command {
        Command::new(program)
    }
    fn name(&self) -> String {
        "host".into()
    }
}

/// What one client measured.
#[derive(Debug)]
struct Measured {
    who: String,
    p95_ms: f64,
    fast_ok: u64,
    receive_s: f64,
    app_send_s: f64,
    cpu_s: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    assert!(!v.is_empty());
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The median `app_send_s` of the complete responses in the send log.
fn app_send_s(dir: &Path) -> f64 {
    let mut r = csv::Reader::from_path(dir.join("send-log.csv")).expect("send log");
    let sends: Vec<f64> = r
        .deserialize::<std::collections::HashMap<String, String>>()
        .map(|row| row.expect("row"))
        .filter(|row| row["complete"] == "true")
        .map(|row| row["app_send_s"].parse().expect("seconds"))
        .collect();
    assert_eq!(sends.len(), 2, "both /large responses were written whole");
    median(sends)
}

fn json_of(out: std::process::Output, what: &str) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn run_python(place: &dyn Place, python: &Path, dir: &Path) -> Measured {
    let server = place.start(dir);
    let script = root().join("harness/python/slowlab_reference_reader.py");
    let out = place
        .client(python)
        .arg(script)
        .arg(server.addr.ip().to_string())
        .arg(server.addr.port().to_string())
        .output()
        .expect("python runs");
    let v = json_of(out, "reference reader");
    let receive: Vec<f64> = v["receive_s"]
        .as_array()
        .expect("receive_s")
        .iter()
        .map(|x| x.as_f64().expect("seconds"))
        .collect();
    drop(server);
    Measured {
        who: "python asyncio".into(),
        p95_ms: v["fast_p95_ms"].as_f64().expect("a p95"),
        fast_ok: v["fast_ok"].as_u64().expect("count"),
        receive_s: median(receive),
        app_send_s: app_send_s(dir),
        cpu_s: v["cpu_s"].as_f64().expect("cpu"),
    }
}

fn run_slowlab(place: &dyn Place, reader: &str, dir: &Path) -> Measured {
    let server = place.start(dir);
    let out = place
        .client(&slowlab())
        .args(["load", "--json", "--reader", reader, "--target"])
        .arg(format!("http://{}", server.addr))
        .arg("--out")
        .arg(dir.join("load"))
        .output()
        .expect("slowlab load runs");
    let v = json_of(out, reader);
    drop(server);
    Measured {
        who: format!("slowlab --reader {reader}"),
        p95_ms: v["fast"]["latency_ms"]["p95"].as_f64().expect("a p95"),
        fast_ok: v["fast"]["ok"].as_u64().expect("count"),
        receive_s: v["slow"]["receive_s_median"].as_f64().expect("receive"),
        app_send_s: app_send_s(dir),
        cpu_s: v["cpu"]["total_s"].as_f64().expect("cpu"),
    }
}

/// Runs the three clients back to back in `place` and judges the model.
fn compare(place: &dyn Place, python: &Path) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let sub = |name: &str| -> PathBuf {
        let d = tmp.path().join(name);
        std::fs::create_dir_all(&d).expect("dir");
        d
    };
    let python = run_python(place, python, &sub("python"));
    let stream = run_slowlab(place, "streamreader", &sub("streamreader"));
    let strict = run_slowlab(place, "strict", &sub("strict"));
    for m in [&python, &stream, &strict] {
        eprintln!(
            "{}: {}: /fast p95 {:.1} ms ({} ok), receive_s {:.3}, app_send_s {:.3}, client cpu {:.2} s",
            place.name(),
            m.who,
            m.p95_ms,
            m.fast_ok,
            m.receive_s,
            m.app_send_s,
            m.cpu_s
        );
    }
    for m in [&python, &stream] {
        assert_eq!(m.fast_ok, 72, "{}: every /fast request answered", m.who);
        // The pacing is the client's: 16 MiB at 2 MiB/s is 8 s.
        assert!(
            (m.receive_s - 8.0).abs() < 0.2,
            "{}: receive_s {}",
            m.who,
            m.receive_s
        );
    }
    let ratio = stream.p95_ms / python.p95_ms;
    assert!(
        (0.85..=1.15).contains(&ratio),
        "{}: streamreader p95 {:.1} ms against the asyncio client's {:.1} ms ({ratio:.3}x)",
        place.name(),
        stream.p95_ms,
        python.p95_ms
    );
    assert!(
        (stream.receive_s - python.receive_s).abs() < 0.1,
        "download times {} and {}",
        stream.receive_s,
        python.receive_s
    );
}

fn tools() -> Tools {
    let tools = prepare::prepare(&state_dir());
    if let Err(e) = &tools.gunicorn {
        panic!("gunicorn is needed for this test (run `slowlab prepare`): {e}");
    }
    tools
}

#[test]
fn streamreader_matches_an_asyncio_client_on_the_host() {
    let python = PathBuf::from("/usr/bin/python3");
    if !python.exists() {
        eprintln!("skipped: no /usr/bin/python3 for the asyncio reference client");
        return;
    }
    let tools = tools();
    let dir = tempfile::tempdir().expect("tempdir");
    let host = Host {
        launcher: lab::launcher(&tools, dir.path()),
    };
    compare(&host, &python);
}
