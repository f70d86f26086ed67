//! The routes answer byte for byte like the WSGI app, and close every
//! connection after one response.

mod support;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use server::{Model, ServerConfig};
use support::{PATIENCE, exchange, get};

fn start(model: Model, workers: Option<usize>) -> server::ServerHandle {
    server::spawn(ServerConfig::new(model, workers)).expect("server starts")
}

#[test]
fn fast_is_exactly_the_json_body() {
    for model in [Model::Sync, Model::Threads, Model::Async] {
        let server = start(model, None);
        let reply = get(server.local_addr(), "/fast");
        assert_eq!(reply.status_line, "HTTP/1.1 200 OK", "{model:?}");
        assert_eq!(reply.only("content-type"), "application/json");
        assert_eq!(reply.only("content-length"), "12");
        assert_eq!(reply.only("connection"), "close");
        assert_eq!(reply.body, br#"{"ok": true}"#);
    }
}

#[test]
fn large_is_the_whole_pattern() {
    let server = start(Model::Sync, None);
    let reply = get(server.local_addr(), "/large");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.only("content-type"), "application/octet-stream");
    assert_eq!(reply.only("content-length"), "16777216");
    assert_eq!(reply.only("x-slowlab-block"), "65536");
    assert_eq!(reply.only("connection"), "close");
    assert_eq!(reply.body.len(), 16 * 1024 * 1024);
    let block = common::pattern::block(64 * 1024);
    for (i, chunk) in reply.body.chunks(block.len()).enumerate() {
        assert!(chunk == block.as_slice(), "block {i} differs");
    }
}

#[test]
fn large_with_a_partial_last_block() {
    let mut config = ServerConfig::new(Model::Async, Some(1));
    config.large_bytes = 100_000;
    config.chunk_bytes = 3000;
    let server = server::spawn(config).expect("server starts");
    let reply = get(server.local_addr(), "/large");
    assert_eq!(reply.only("content-length"), "100000");
    assert_eq!(reply.only("x-slowlab-block"), "3000");
    let mut verifier = common::pattern::Verifier::new(3000);
    verifier.update(&reply.body);
    assert_eq!((verifier.seen(), verifier.first_bad()), (100_000, None));
}

#[test]
fn unknown_path_is_404() {
    let server = start(Model::Sync, None);
    for path in ["/", "/fastx", "/large/", "/nope?x=1"] {
        let reply = get(server.local_addr(), path);
        assert_eq!(reply.status_line, "HTTP/1.1 404 Not Found", "{path}");
        assert_eq!(reply.only("content-type"), "text/plain");
        assert_eq!(reply.only("content-length"), "10");
        assert_eq!(reply.body, b"not found\n");
        assert_eq!(reply.only("connection"), "close");
    }
    // A query string does not change the route, as PATH_INFO ignores it.
    assert_eq!(get(server.local_addr(), "/fast?x=1").status, 200);
}

#[test]
fn other_methods_are_405_with_allow() {
    let server = start(Model::Sync, None);
    let addr = server.local_addr();
    for (method, path) in [("POST", "/fast"), ("DELETE", "/large"), ("HEAD", "/fast")] {
        let request = format!("{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
        let reply = exchange(addr, request.as_bytes(), PATIENCE);
        assert_eq!(
            reply.status_line, "HTTP/1.1 405 Method Not Allowed",
            "{method}"
        );
        assert_eq!(reply.only("allow"), "GET");
        assert_eq!(reply.only("connection"), "close");
        if method != "HEAD" {
            assert_eq!(reply.only("content-type"), "text/plain");
            assert_eq!(reply.body, b"method not allowed\n");
        }
    }
}

#[test]
fn malformed_request_is_400_and_frees_the_only_worker() {
    // One worker: if the bad connection kept it, the next request would hang.
    let server = start(Model::Sync, Some(1));
    let addr = server.local_addr();
    let reply = exchange(addr, b"this is not http\r\n\r\n", PATIENCE);
    assert_eq!(reply.status, 400);
    assert_eq!(get(addr, "/fast").status, 200);
}

#[test]
fn a_second_request_on_the_connection_is_not_served() {
    let server = start(Model::Threads, None);
    let addr = server.local_addr();
    // Two pipelined requests: the server answers the first and closes.
    let two = format!(
        "GET /fast HTTP/1.1\r\nHost: {addr}\r\n\r\nGET /fast HTTP/1.1\r\nHost: {addr}\r\n\r\n"
    );
    let reply = exchange(addr, two.as_bytes(), PATIENCE);
    assert_eq!(reply.body, br#"{"ok": true}"#);
}

#[test]
fn half_closed_client_still_gets_the_whole_body() {
    let server = start(Model::Sync, None);
    let mut stream = TcpStream::connect(server.local_addr()).expect("connect");
    stream
        .write_all(b"GET /large HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("send");
    stream
        .shutdown(std::net::Shutdown::Write)
        .expect("half-close");
    // Let the server see the EOF while the body is still being written.
    std::thread::sleep(Duration::from_millis(200));
    let reply = support::read_reply(&mut stream, PATIENCE).expect("reply");
    assert_eq!(reply.body.len(), 16 << 20);
}

#[test]
fn http10_client_gets_the_same_body() {
    let server = start(Model::Sync, None);
    let reply = exchange(server.local_addr(), b"GET /fast HTTP/1.0\r\n\r\n", PATIENCE);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, br#"{"ok": true}"#);
}

#[tokio::test]
async fn spawn_and_drop_inside_a_current_thread_runtime() {
    let server = start(Model::Sync, None);
    let addr = server.local_addr();
    let reply = tokio::task::spawn_blocking(move || get(addr, "/fast"))
        .await
        .expect("client");
    assert_eq!(reply.status, 200);
    // Dropping must not touch the caller's runtime (that would panic here).
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_inside_a_multi_thread_runtime_with_every_model() {
    for model in [Model::Sync, Model::Threads, Model::Async] {
        let server = start(model, Some(2));
        let mut stream = tokio::net::TcpStream::connect(server.local_addr())
            .await
            .expect("connect");
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        stream
            .write_all(b"GET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .expect("send");
        let mut data = Vec::new();
        tokio::time::timeout(PATIENCE, stream.read_to_end(&mut data))
            .await
            .expect("answered in time")
            .expect("read");
        assert!(data.ends_with(br#"{"ok": true}"#), "{model:?}");
        server.shutdown();
    }
}

#[test]
fn busy_port_is_a_clear_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let mut config = ServerConfig::new(Model::Sync, None);
    config.listen = taken.local_addr().expect("addr");
    let err = server::spawn(config).expect_err("port is taken");
    let text = format!("{err:#}");
    assert!(text.contains("cannot listen on"), "{text}");
}

#[test]
fn zero_workers_is_refused() {
    let err = server::spawn(ServerConfig::new(Model::Threads, Some(0))).expect_err("refused");
    assert!(format!("{err:#}").contains("at least 1"));
}

#[test]
fn client_closing_early_does_not_hurt_the_worker() {
    let server = start(Model::Sync, Some(1));
    let addr = server.local_addr();
    {
        let mut s = TcpStream::connect(addr).expect("connect");
        s.write_all(b"GET /large HTTP/1.1\r\nHost: x\r\n\r\n")
            .expect("send");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(get(addr, "/fast").status, 200);
}
