//! Starting the lab's servers in a test: the harness's own launcher with
//! the experiment's body, and `slowlab serve` with a few flags.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use harness::prepare::{self, Tools};
use harness::process::{self, Guard, Spec};
use harness::stack::Server;
use harness::stack::launch::{Body, Launcher, RunPaths, Running};

use super::{slowlab, state_dir};

/// The experiment's `/large`: 16 MiB in 64 KiB blocks.
pub const BODY: Body = Body {
    large_bytes: 16 << 20,
    chunk_bytes: 64 << 10,
};

/// The tools `slowlab prepare` left in the state directory.
pub fn tools() -> Tools {
    prepare::prepare(&state_dir())
}

/// The tools, or `None` (with the reason on stderr) without Gunicorn.
pub fn tools_with_gunicorn() -> Option<Tools> {
    let tools = tools();
    if let Err(e) = &tools.gunicorn {
        eprintln!("skipped: gunicorn is not installed ({e})");
        return None;
    }
    Some(tools)
}

/// The harness's launcher with the app written to `dir/app`.
pub fn launcher<'a>(tools: &'a Tools, dir: &Path) -> Launcher<'a> {
    Launcher {
        exe: slowlab(),
        tools,
        app_dir: Launcher::write_app(&dir.join("app")).expect("the app is written"),
    }
}

/// Starts `server` on the host with [`BODY`], its logs in `logs`.
pub fn start(launcher: &Launcher, server: Server, logs: &Path) -> Running {
    start_at(launcher, server, logs, &harness::netns::Place::host())
}

/// Starts `server` at `place` (a namespace and an address) with [`BODY`],
/// its logs in `logs`.
pub fn start_at(
    launcher: &Launcher,
    server: Server,
    logs: &Path,
    place: &harness::netns::Place,
) -> Running {
    let paths = RunPaths::new(logs, logs).expect("run paths");
    launcher
        .start_server(server, BODY, &paths, None, place)
        .unwrap_or_else(|e| panic!("{server} starts (run `slowlab prepare`): {e:#}"))
}

/// A process named `name` with its output in `dir/<name>.out|err`.
pub fn spec(dir: &Path, name: &str, program: std::path::PathBuf, args: Vec<String>) -> Spec {
    Spec {
        name: name.into(),
        program,
        args,
        env: vec![],
        cwd: None,
        netns: None,
        stdout: dir.join(format!("{name}.out")),
        stderr: dir.join(format!("{name}.err")),
    }
}

/// `slowlab serve --listen 127.0.0.1:0` with `extra`, output in `dir`.
pub fn serve(dir: &Path, extra: &[&str]) -> (Guard, SocketAddr) {
    let args = ["serve", "--listen", "127.0.0.1:0"]
        .iter()
        .chain(extra)
        .map(|s| s.to_string())
        .collect();
    let mut guard = process::spawn(&spec(dir, "serve", slowlab(), args), None).expect("serve");
    let addr = guard
        .wait_ready_line(Duration::from_secs(10))
        .expect("ready line");
    (guard, addr)
}

/// A loopback port free a moment ago, for a server that is given one.
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("address").port()
}

/// Waits until `addr` answers `GET /fast` with 200.
pub fn wait_answering(addr: SocketAddr, patience: Duration) {
    let start = Instant::now();
    while TcpStream::connect(addr).is_err() {
        assert!(start.elapsed() < patience, "{addr} does not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    let req = "GET /fast HTTP/1.1\r\nHost: slowlab\r\nConnection: close\r\n\r\n";
    assert_eq!(super::raw_request(addr, req).status, 200, "{addr}");
}
