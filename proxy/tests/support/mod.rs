//! Blocking clients, hand-written upstreams and log readers for the proxy
//! tests. Every wait has a deadline, so no test can hang.

#![allow(dead_code)] // each test file uses a different subset

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::pattern::Verifier;
use proxy::{Buffering, ProxyConfig, ProxyHandle};
use socket2::{Domain, Socket, Type};

/// A generous bound for anything that should take milliseconds.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// What a client received.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    /// Names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body, kept only when small.
    pub body: Vec<u8>,
    pub body_len: u64,
    /// Offset of the first byte that broke the `/large` pattern.
    pub first_bad: Option<u64>,
    /// True when the connection ended cleanly (EOF) rather than by error.
    pub clean_eof: bool,
    pub elapsed: Duration,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// How a client reads the body.
#[derive(Debug, Clone)]
pub struct Reader {
    /// Bytes per second; `None` reads as fast as possible.
    pub rate: Option<f64>,
    /// `SO_RCVBUF` before connect, as the experiment's slow client does.
    pub rcvbuf: Option<usize>,
    /// Stop (and close) once this is set.
    pub stop: Option<Arc<AtomicBool>>,
    /// Stop after this many body bytes.
    pub max_body: Option<u64>,
}

impl Reader {
    pub fn fast() -> Reader {
        Reader {
            rate: None,
            rcvbuf: None,
            stop: None,
            max_body: None,
        }
    }

    /// The experiment's slow client at `rate` bytes per second.
    pub fn slow(rate: f64) -> Reader {
        Reader {
            rate: Some(rate),
            rcvbuf: Some(8 * 1024),
            ..Reader::fast()
        }
    }
}

pub fn connect(addr: SocketAddr, rcvbuf: Option<usize>) -> TcpStream {
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).expect("socket");
    if let Some(n) = rcvbuf {
        socket.set_recv_buffer_size(n).expect("SO_RCVBUF");
    }
    socket.connect(&addr.into()).expect("connect");
    let stream: TcpStream = socket.into();
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("read timeout");
    stream
}

/// `GET path` through `addr`, reading the body as `reader` says and checking
/// every byte of a `/large` body against the pattern.
pub fn get(addr: SocketAddr, path: &str, reader: &Reader) -> Reply {
    let started = Instant::now();
    let mut stream = connect(addr, reader.rcvbuf);
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).expect("send request");
    read_reply(&mut stream, reader, started)
}

/// Reads a response from `stream` until EOF.
pub fn read_reply(stream: &mut TcpStream, reader: &Reader, started: Instant) -> Reply {
    let deadline = started + Duration::from_secs(120);
    let mut head = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    let mut clean_eof = false;
    let mut rest = Vec::new();
    // The head.
    loop {
        assert!(Instant::now() < deadline, "no response head");
        match stream.read(&mut buf) {
            Ok(0) => {
                clean_eof = true;
                break;
            }
            Ok(n) => {
                head.extend_from_slice(&buf[..n]);
                if let Some(end) = find(&head, b"\r\n\r\n") {
                    rest = head.split_off(end + 4);
                    break;
                }
            }
            Err(e) if is_timeout(&e) => continue,
            Err(_) => break,
        }
    }
    let text = String::from_utf8_lossy(&head).to_string();
    let mut lines = text.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let block = headers
        .iter()
        .find(|(n, _)| n == "x-slowlab-block")
        .and_then(|(_, v)| v.parse().ok());
    let mut verifier = block.map(Verifier::new);
    let mut body = Vec::new();
    let mut body_len = 0u64;
    let mut take = |data: &[u8], body: &mut Vec<u8>| {
        if let Some(v) = verifier.as_mut() {
            v.update(data);
        } else if body.len() < 1 << 20 {
            body.extend_from_slice(data);
        }
    };
    take(&rest, &mut body);
    body_len += rest.len() as u64;
    if !clean_eof {
        loop {
            assert!(Instant::now() < deadline, "body not done in time");
            if reader
                .stop
                .as_ref()
                .is_some_and(|s| s.load(Ordering::Relaxed))
            {
                break;
            }
            if reader.max_body.is_some_and(|m| body_len >= m) {
                break;
            }
            if let Some(rate) = reader.rate {
                // Pace: do not read byte n before started + n / rate.
                let due = started + Duration::from_secs_f64(body_len as f64 / rate);
                let now = Instant::now();
                if due > now {
                    std::thread::sleep((due - now).min(Duration::from_millis(50)));
                    continue;
                }
            }
            match stream.read(&mut buf) {
                Ok(0) => {
                    clean_eof = true;
                    break;
                }
                Ok(n) => {
                    take(&buf[..n], &mut body);
                    body_len += n as u64;
                }
                Err(e) if is_timeout(&e) => continue,
                Err(_) => break,
            }
        }
    }
    Reply {
        status,
        headers,
        body,
        body_len,
        first_bad: verifier.and_then(|v| v.first_bad()),
        clean_eof,
        elapsed: started.elapsed(),
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The experiment's Rust server with `large` body bytes.
pub fn origin(model: server::Model, workers: Option<usize>, large: u64) -> server::ServerHandle {
    let mut cfg = server::ServerConfig::new(model, workers);
    cfg.large_bytes = large;
    server::spawn(cfg).expect("start the origin")
}

/// Where [`proxy_config`] puts the temp files of a test in `dir`.
pub fn temp_path(dir: &Path) -> PathBuf {
    dir.join("tmp")
}

/// A proxy in front of `upstream` with the experiment's values, logging to
/// `dir/stats.csv`, temp files in `dir/tmp`.
pub fn proxy_config(upstream: SocketAddr, buffering: Buffering, dir: &Path) -> ProxyConfig {
    let mut cfg = ProxyConfig::new(upstream, buffering);
    std::fs::create_dir_all(temp_path(dir)).expect("temp dir");
    cfg.buffers.temp_path = temp_path(dir);
    cfg.stats_log = Some(dir.join("stats.csv"));
    cfg
}

pub fn start_proxy(cfg: ProxyConfig) -> ProxyHandle {
    proxy::spawn(cfg).expect("start the proxy")
}

/// One stats-log row, by column name.
#[derive(Debug, Clone)]
pub struct Row(pub Vec<(String, String)>);

impl Row {
    pub fn get(&self, name: &str) -> &str {
        &self.0.iter().find(|(n, _)| n == name).expect("column").1
    }
    pub fn num(&self, name: &str) -> f64 {
        self.get(name).parse().unwrap_or(f64::NAN)
    }
}

/// Waits until `path` holds at least `n` rows and returns them.
pub fn rows(path: &Path, n: usize) -> Vec<Row> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let mut lines = text.lines();
        let header: Vec<String> = lines
            .next()
            .unwrap_or("")
            .split(',')
            .map(str::to_string)
            .collect();
        let rows: Vec<Row> = lines
            .map(|l| {
                Row(header
                    .iter()
                    .cloned()
                    .zip(l.split(',').map(str::to_string))
                    .collect())
            })
            .collect();
        if rows.len() >= n {
            return rows;
        }
        assert!(
            Instant::now() < deadline,
            "only {} rows in {}",
            rows.len(),
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A hand-written upstream (`testkit`'s fake server): each connection
/// gets `respond(stream)` on a thread of its own after its request head was
/// read.
pub struct FakeUpstream {
    pub addr: SocketAddr,
    _server: testkit::fake::FakeServer,
}

impl FakeUpstream {
    pub fn start<F>(respond: F) -> FakeUpstream
    where
        F: Fn(TcpStream) + Send + Sync + 'static,
    {
        let server = testkit::fake::FakeServer::start(move |s, _head| respond(s));
        FakeUpstream {
            addr: server.addr,
            _server: server,
        }
    }
}

/// Writes `total` bytes of the pattern (64 KiB blocks) until done or the
/// peer is gone; returns the bytes written.
pub fn write_pattern(s: &mut TcpStream, total: u64) -> u64 {
    let block = common::pattern::block(64 * 1024);
    let mut sent = 0u64;
    while sent < total {
        let n = ((total - sent) as usize).min(block.len());
        if s.write_all(&block[..n]).is_err() {
            break;
        }
        sent += n as u64;
    }
    sent
}

/// Descriptors of this process that point to proxy temp files of the test
/// in `dir` (the proxy runs in-process, so its temp files show here).
pub fn open_files_in(dir: &Path) -> Vec<String> {
    let dir = temp_path(dir).to_string_lossy().to_string();
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_link(e.path()).ok().map(|t| (e.path(), t)))
        .filter(|(_, t)| t.to_string_lossy().starts_with(&dir))
        .map(|(fd, t)| format!("{} -> {}", fd.display(), t.display()))
        .collect()
}

/// Polls `check` until it holds or `within` passes.
pub fn eventually(within: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if check() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// What a [`SyncUpstream`] saw of one request.
#[derive(Debug, Clone)]
pub struct Received {
    pub accepted: Instant,
    /// When the last body byte was read.
    pub body_done: Instant,
    /// The request head, header names lower-cased.
    pub head: String,
    pub body: Vec<u8>,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<String> {
        self.head
            .split("\r\n")
            .filter_map(|l| l.split_once(':'))
            .find(|(n, _)| n.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_string())
    }
}

/// An upstream with one handler that serves one connection at a time and
/// reads the request body blocking before it answers, as a sync worker
/// does: a slow upload holds it, and others wait in the accept queue.
pub struct SyncUpstream {
    pub addr: SocketAddr,
    pub seen: std::sync::mpsc::Receiver<Received>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl SyncUpstream {
    pub fn start() -> SyncUpstream {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let (tx, seen) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                let Ok((mut s, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                };
                let accepted = Instant::now();
                s.set_nonblocking(false).expect("blocking");
                s.set_read_timeout(Some(PATIENCE)).expect("timeout");
                let mut got = Vec::new();
                let mut buf = [0u8; 64 * 1024];
                let end = loop {
                    if let Some(end) = find(&got, b"\r\n\r\n") {
                        break Some(end);
                    }
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => break None,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                };
                let Some(end) = end else { continue };
                let head = String::from_utf8_lossy(&got[..end]).to_string();
                let mut body = got.split_off(end + 4);
                let mut r = Received {
                    accepted,
                    body_done: Instant::now(),
                    head,
                    body: Vec::new(),
                };
                let want: usize = r
                    .header("content-length")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                while body.len() < want {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => body.extend_from_slice(&buf[..n]),
                    }
                }
                r.body_done = Instant::now();
                r.body = body;
                let answer = format!("{{\"bytes\": {}}}", r.body.len());
                let _ = s.write_all(
                    format!(
                        "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{answer}",
                        answer.len()
                    )
                    .as_bytes(),
                );
                let _ = tx.send(r);
            }
        });
        SyncUpstream {
            addr,
            seen,
            stop,
            thread: Some(thread),
        }
    }

    /// The next request it served, within [`PATIENCE`].
    pub fn next(&self) -> Received {
        self.seen
            .recv_timeout(PATIENCE)
            .expect("a request upstream")
    }

    /// Whether it served nothing within `within`.
    pub fn idle_for(&self, within: Duration) -> bool {
        self.seen.recv_timeout(within).is_err()
    }
}

impl Drop for SyncUpstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Writes `body` to `stream` in `piece`-byte writes paced to `rate`
/// bytes per second against absolute deadlines; returns when the write
/// of the last piece began (the peer may act on the last byte before this
/// thread runs again after that write, so its end is no bound).
pub fn paced_write(stream: &mut TcpStream, body: &[u8], piece: usize, rate: f64) -> Instant {
    let start = Instant::now();
    let mut sent = 0usize;
    let mut last_write = start;
    while sent < body.len() {
        let due = start + Duration::from_secs_f64(sent as f64 / rate);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let n = piece.min(body.len() - sent);
        last_write = Instant::now();
        stream
            .write_all(&body[sent..sent + n])
            .expect("upload piece");
        sent += n;
    }
    last_write
}

/// `len` bytes of the `/large` pattern (64 KiB blocks).
pub fn pattern(len: usize) -> Vec<u8> {
    let block = common::pattern::block(64 * 1024);
    block.iter().copied().cycle().take(len).collect()
}
