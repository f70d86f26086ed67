//! Real NGINX with the generated `nginx-reqbuf-on` configuration: a paced
//! slow upload reaches the upstream only after its last byte has left the
//! client, and meanwhile NGINX holds the body in a temp file the sampler
//! finds (inside `proxy_temp`); with `nginx-reqbuf-off` the upstream is
//! connected while the client still sends.

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use catalogue::{ProxyBuffers, Route};
use lab::stack::nginx;
use support::child::Child;

fn nginx_binary() -> Option<PathBuf> {
    [
        support::state_dir().join("nginx/usr/sbin/nginx"),
        PathBuf::from("/usr/sbin/nginx"),
    ]
    .into_iter()
    .find(|p| p.exists())
}

/// An upstream that reads one request with its body and reports when it
/// accepted the connection and what it read.
fn upstream() -> (SocketAddr, mpsc::Receiver<(Instant, Vec<u8>)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        while let Ok((mut s, _)) = listener.accept() {
            let accepted = Instant::now();
            s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 65536];
            let body = loop {
                if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    if got.len() >= end + 4 + len {
                        break got[end + 4..end + 4 + len].to_vec();
                    }
                }
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break Vec::new(),
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            };
            let _ = s.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok");
            let _ = tx.send((accepted, body));
        }
    });
    (addr, rx)
}

/// Starts NGINX with `route`'s generated config in `dir`.
fn start(binary: &Path, route: Route, upstream: SocketAddr, dir: &Path) -> (Child, SocketAddr) {
    let port = lab::process::free_port().unwrap();
    let listen = SocketAddr::from(([127, 0, 0, 1], port));
    let prefix = dir.join("nginx");
    let temp = dir.join("proxy-temp");
    std::fs::create_dir_all(&prefix).unwrap();
    std::fs::create_dir_all(&temp).unwrap();
    let conf = nginx::config(
        listen,
        upstream,
        route.proxy().unwrap().1,
        &ProxyBuffers::EXPERIMENT,
        route.request_body(),
        None,
        &prefix,
        &temp,
        &dir.join("error.log"),
    );
    let conf_path = dir.join("nginx.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let mut cmd = Command::new(binary);
    cmd.arg("-p")
        .arg(format!("{}/", prefix.display()))
        .arg("-c")
        .arg(&conf_path)
        .arg("-e")
        .arg(dir.join("error.log"));
    let child = Child::spawn(cmd);
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(listen).is_err() {
        assert!(Instant::now() < deadline, "nginx did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, listen)
}

/// Uploads `len` bytes at `rate` B/s; returns the socket, when the last
/// byte was accepted, and the largest body temp file seen meanwhile.
fn upload(
    addr: SocketAddr,
    len: usize,
    rate: f64,
    pid: u32,
    temp: &Path,
) -> (TcpStream, Instant, u64) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(
        format!(
            "POST /upload HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {len}\r\n\r\n"
        )
        .as_bytes(),
    )
    .unwrap();
    let block = common::pattern::block(16 * 1024);
    let start = Instant::now();
    let mut sent = 0;
    let mut temp_peak = 0;
    // When the last piece's write began: the upstream may be connected as
    // soon as that write hands NGINX the last byte, before this thread
    // runs again (and before the temp-file scan below).
    let mut last_write = start;
    while sent < len {
        let due = start + Duration::from_secs_f64(sent as f64 / rate);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let n = block.len().min(len - sent);
        last_write = Instant::now();
        s.write_all(&block[..n]).unwrap();
        sent += n;
        let t = lab::procfs::temp_files(&[pid], temp);
        temp_peak = temp_peak.max(t.logical_bytes);
    }
    (s, last_write, temp_peak)
}

#[test]
fn a_slow_upload_reaches_the_upstream_only_after_its_last_byte_with_request_buffering_on() {
    let binary = nginx_binary();
    testkit::real::require(
        "NGINX",
        binary
            .is_none()
            .then_some("none in $SLOWLAB_HOME/nginx or /usr/sbin/nginx"),
    );
    let binary = binary.expect("required above");
    let len = 512 * 1024;
    let rate = 512.0 * 1024.0;
    let expected: Vec<u8> = common::pattern::block(16 * 1024)
        .into_iter()
        .cycle()
        .take(len)
        .collect();
    for route in [Route::NginxReqbufOn, Route::NginxReqbufOff] {
        let dir = tempfile::tempdir().unwrap();
        let (up, seen) = upstream();
        let (nginx, addr) = start(&binary, route, up, dir.path());
        let temp = dir.path().join("proxy-temp");
        let (mut s, last_byte, temp_peak) = upload(addr, len, rate, nginx.id(), &temp);
        let (accepted, body) = seen.recv_timeout(Duration::from_secs(20)).unwrap();
        assert_eq!(body.len(), len, "{route}");
        assert!(body == expected, "{route}: every byte, in order");
        let mut reply = Vec::new();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let _ = s.read_to_end(&mut reply);
        assert!(reply.starts_with(b"HTTP/1.1 200"), "{route}");
        match route {
            Route::NginxReqbufOn => {
                assert!(
                    accepted >= last_byte,
                    "connected {:?} before the last byte",
                    last_byte - accepted
                );
                assert!(temp_peak > 16 * 1024, "body temp file sampled: {temp_peak}");
            }
            _ => {
                assert!(
                    accepted + Duration::from_millis(300) < last_byte,
                    "{route}: streamed"
                );
                assert_eq!(temp_peak, 0, "{route}: no body temp file");
            }
        }
        drop(nginx);
    }
}
