//! Starting the lab's servers in a test: the harness's own launcher with
//! the experiment's body, and `slowlab serve` with a few flags.

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::time::Duration;

use catalogue::Body;
use catalogue::Server;
use lab::prepare::{self, Tools};
use lab::process::{self, Guard, Spec};
use lab::stack::launch::{Launcher, RunPaths, Running};

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

/// The tools; the real-stack tier fails here without Gunicorn.
pub fn tools_with_gunicorn() -> Tools {
    let tools = tools();
    testkit::real::require("Gunicorn", tools.gunicorn.as_ref().err());
    tools
}

/// The harness's launcher with the app written to `dir/app`.
pub fn launcher(tools: &Tools, dir: &Path) -> Launcher {
    Launcher {
        exe: slowlab(),
        tools: tools.clone(),
        app_dir: Launcher::write_app(&dir.join("app")).expect("the app is written"),
        ready_timeout: lab::stack::launch::READY_TIMEOUT,
    }
}

/// Starts `server` on the host with [`BODY`], its logs in `logs`.
pub fn start(launcher: &Launcher, server: Server, logs: &Path) -> Running {
    start_at(launcher, server, logs, &lab::netns::Place::host())
}

/// Starts `server` at `place` (a namespace and an address) with [`BODY`],
/// its logs in `logs`.
pub fn start_at(
    launcher: &Launcher,
    server: Server,
    logs: &Path,
    place: &lab::netns::Place,
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
    testkit::http::wait_listening(addr, patience);
    let req = "GET /fast HTTP/1.1\r\nHost: slowlab\r\nConnection: close\r\n\r\n";
    assert_eq!(super::raw_request(addr, req).status, 200, "{addr}");
}
