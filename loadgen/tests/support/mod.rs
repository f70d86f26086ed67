//! Helpers for the integration tests: parse load arguments as the command
//! line would, run a load in-process, and a tiny scripted HTTP server for
//! responses our real servers never send.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

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
}

/// What a scripted server answers to a request path.
pub type Script = dyn Fn(&str) -> Reply + Send + Sync;

/// A thread-per-connection server that answers from a script. Dropping it
/// stops the accept loop and joins it.
pub struct ScriptedServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    pub connections: Arc<AtomicUsize>,
    thread: Option<thread::JoinHandle<()>>,
}

impl ScriptedServer {
    pub fn start(script: impl Fn(&str) -> Reply + Send + Sync + 'static) -> Self {
        Self::bind("127.0.0.1:0".parse().expect("addr"), Arc::new(script))
    }

    pub fn bind(addr: SocketAddr, script: Arc<Script>) -> Self {
        let listener = TcpListener::bind(addr).expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let stop = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(AtomicUsize::new(0));
        let (stop2, conns2) = (stop.clone(), connections.clone());
        let thread = thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                conns2.fetch_add(1, Ordering::SeqCst);
                let script = script.clone();
                thread::spawn(move || serve(conn, &*script));
            }
        });
        ScriptedServer {
            addr,
            stop,
            connections,
            thread: Some(thread),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(mut conn: TcpStream, script: &Script) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head);
    let path = text.split_whitespace().nth(1).unwrap_or("/").to_string();
    match script(&path) {
        Reply::Bytes(b) => {
            let _ = conn.write_all(&b);
        }
        Reply::Reset(b) => {
            let _ = conn.write_all(&b);
            let _ = socket2::SockRef::from(&conn).set_linger(Some(Duration::ZERO));
        }
        Reply::Silent(d) => thread::sleep(d),
    }
}

/// A complete response with a Content-Length.
pub fn response(status: &str, extra_headers: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\n{extra_headers}Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

/// The `/large` pattern body.
pub fn pattern_body(len: usize, block: usize) -> Vec<u8> {
    (0..len).map(|i| ((i % block) % 256) as u8).collect()
}

/// A loopback port that nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}
