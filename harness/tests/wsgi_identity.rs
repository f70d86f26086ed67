//! The WSGI app under real Gunicorn 23.0.0 and `slowlab serve` answer with
//! the same bytes: same statuses, the headers that matter, same bodies.

mod support;

use std::time::Duration;

use harness::prepare;
use harness::process::{self, Spec};
use harness::stack::Server;
use harness::stack::launch::{Body, Launcher, RunPaths};
use support::{get, slowlab, state_dir};

#[test]
fn gunicorn_and_slowlab_serve_send_identical_bytes() {
    let tools = prepare::prepare(&state_dir());
    if let Err(e) = &tools.gunicorn {
        panic!("gunicorn is needed for this test (run `slowlab prepare`): {e}");
    }
    let dir = tempfile::tempdir().unwrap();
    let app_dir = Launcher::write_app(&dir.path().join("app")).unwrap();
    let launcher = Launcher {
        exe: slowlab(),
        tools: &tools,
        app_dir,
    };
    let paths = RunPaths::new(dir.path(), dir.path()).unwrap();
    let body = Body {
        large_bytes: 16 << 20,
        chunk_bytes: 64 << 10,
    };
    let gunicorn = launcher
        .start_server(
            Server::GunicornSync2,
            body,
            &paths,
            None,
            &harness::netns::Place::host(),
        )
        .expect("gunicorn starts");

    let rust_spec = Spec {
        name: "serve".into(),
        program: slowlab(),
        args: ["serve", "--listen", "127.0.0.1:0"]
            .map(String::from)
            .to_vec(),
        env: vec![],
        cwd: None,
        netns: None,
        stdout: dir.path().join("serve.out"),
        stderr: dir.path().join("serve.err"),
    };
    let mut rust = process::spawn(&rust_spec, None).unwrap();
    let rust_addr = rust.wait_ready_line(Duration::from_secs(10)).unwrap();

    support::assert_same_answers("gunicorn", gunicorn.addr, rust_addr);
    let fast = get(rust_addr, "/fast");
    assert_eq!(fast.body, br#"{"ok": true}"#);
    let large = get(gunicorn.addr, "/large");
    assert_eq!(large.body.len(), 16 << 20);
    let mut v = common::pattern::Verifier::new(65536);
    v.update(&large.body);
    assert_eq!(v.first_bad(), None);

    // Gunicorn wrote one send-log row per /large, with the shared columns.
    let log = std::fs::read_to_string(dir.path().join("send-log.csv")).unwrap();
    let mut lines = log.lines();
    assert_eq!(
        lines.next(),
        Some("start_unix_s,start_s,app_send_s,bytes,worker,complete")
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 2, "{log}");
    assert!(
        rows.iter()
            .all(|r| r.contains(",16777216,") && r.ends_with(",true"))
    );
}
