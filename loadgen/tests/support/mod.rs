//! Helpers for the integration tests: parse load arguments as the command
//! line would, run a load in-process, and a tiny scripted HTTP server for
//! responses our real servers never send.

#![allow(dead_code, unused_imports)]

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::Duration;

use testkit::fake::{FakeServer, path_of};

use clap::Parser;
use loadgen::{LoadArgs, LoadConfig, Report};

#[derive(Parser)]
struct Cmd {
    #[command(flatten)]
    args: LoadArgs,
}

/// `slowlab load` arguments from words, as clap reads them.
pub fn args(words: &[&str]) -> LoadArgs {
    let argv = std::iter::once("load").chain(words.iter().copied());
    Cmd::try_parse_from(argv).expect("arguments parse").args
}

/// Runs a load with these arguments in-process and writes `--out` files,
/// as `slowlab load` does, without printing.
pub fn run(words: &[&str]) -> Report {
    let args = args(words);
    let config = LoadConfig::from_args(&args).expect("config is valid");
    let report = loadgen::run_load(&config).expect("the run completes");
    let summary = loadgen::Summary::of(&report);
    eprintln!("{summary}");
    if let Some(dir) = &args.out {
        loadgen::output::write_all(dir, &report, &summary).expect("outputs written");
    }
    report
}

/// What a scripted server does with a request.
pub enum Reply {
    /// Writes these bytes, then closes.
    Bytes(Vec<u8>),
    /// Writes these bytes, then resets the connection (SO_LINGER 0).
    Reset(Vec<u8>),
    /// Never answers; holds the connection for this long.
    Silent(Duration),
    /// Waits this long, then writes these bytes and closes.
    After(Duration, Vec<u8>),
}

/// What a scripted server answers to a request path.
pub type Script = dyn Fn(&str) -> Reply + Send + Sync;

/// A server that answers from a script: `testkit`'s fake server, each
/// connection answered by what the script says for its path.
pub struct ScriptedServer(FakeServer);

impl ScriptedServer {
    pub fn start(script: impl Fn(&str) -> Reply + Send + Sync + 'static) -> Self {
        Self::bind("127.0.0.1:0".parse().expect("addr"), Arc::new(script))
    }

    pub fn bind(addr: SocketAddr, script: Arc<Script>) -> Self {
        ScriptedServer(FakeServer::bind(addr, move |conn, head| {
            serve(conn, &*script, path_of(head))
        }))
    }

    pub fn addr(&self) -> SocketAddr {
        self.0.addr
    }

    pub fn url(&self) -> String {
        self.0.url()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.0.connections.load(Ordering::SeqCst)
    }
}

fn serve(mut conn: TcpStream, script: &Script, path: &str) {
    match script(path) {
        Reply::Bytes(b) => {
            let _ = conn.write_all(&b);
        }
        Reply::Reset(b) => {
            let _ = conn.write_all(&b);
            let _ = socket2::SockRef::from(&conn).set_linger(Some(Duration::ZERO));
        }
        Reply::Silent(d) => thread::sleep(d),
        Reply::After(d, b) => {
            thread::sleep(d);
            let _ = conn.write_all(&b);
        }
    }
}

pub use testkit::http::response;

/// The `/large` pattern body.
pub fn pattern_body(len: usize, block: usize) -> Vec<u8> {
    (0..len).map(|i| ((i % block) % 256) as u8).collect()
}

/// A loopback port that nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}
