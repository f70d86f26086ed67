//! Fake servers for answers the lab's real servers never give: each
//! connection is handed, after its request head was read, to a closure on
//! a thread of its own. Dropping the server stops its accept loop.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// A thread-per-connection server; `respond` gets each connection with the
/// request head it sent.
pub struct FakeServer {
    pub addr: SocketAddr,
    /// Connections accepted so far.
    pub connections: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FakeServer {
    /// Listens on `127.0.0.1:0`.
    pub fn start<F>(respond: F) -> FakeServer
    where
        F: Fn(TcpStream, &str) + Send + Sync + 'static,
    {
        Self::bind("127.0.0.1:0".parse().expect("addr"), respond)
    }

    /// Listens on `addr`.
    pub fn bind<F>(addr: SocketAddr, respond: F) -> FakeServer
    where
        F: Fn(TcpStream, &str) + Send + Sync + 'static,
    {
        let listener = TcpListener::bind(addr).expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let stop = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(AtomicUsize::new(0));
        let respond = Arc::new(respond);
        let (flag, count) = (stop.clone(), connections.clone());
        let thread = thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((mut s, _)) => {
                        count.fetch_add(1, Ordering::SeqCst);
                        s.set_nonblocking(false).expect("blocking");
                        let respond = respond.clone();
                        thread::spawn(move || {
                            if let Some(head) = read_head(&mut s) {
                                respond(s, &head);
                            }
                        });
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        FakeServer {
            addr,
            connections,
            stop,
            thread: Some(thread),
        }
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads a request head byte by byte (so nothing of a body is taken);
/// `None` when the client left first.
pub fn read_head(s: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}

/// The path of a request head.
pub fn path_of(head: &str) -> &str {
    head.split_whitespace().nth(1).unwrap_or("/")
}

/// Writes `bytes` and closes; a peer that left is not an error.
pub fn answer(mut s: TcpStream, bytes: &[u8]) {
    let _ = s.write_all(bytes);
}
