//! The least a proxy on tokio, and on pingora's HTTP/1 session, does for a
//! request: the floors under `slowlab proxy`'s cost per request, measured
//! beside it by scripts/bench-proxy.sh and scripts/bench-instructions.sh
//! with `FLOOR=1`.
//!
//! Both do a proxy's socket work for one request per connection, as NGINX
//! does with buffering on and `Connection: close`: accept, read the head,
//! connect to the upstream, send it the request, read its answer up to its
//! `Content-Length`, send that on, close.
//! - `tokio` does nothing else: it finds each head's end with `httparse`
//!   (the lab's HTTP parser), and the request and the answer go on as they
//!   came.
//! - `pingora` runs pingora's `ServerSession` over `slowlab proxy`'s client
//!   socket (`client::ClientIo`, which sends a small answer's head and body
//!   in one write), sends the upstream `slowlab proxy`'s request
//!   (`upstream::request_wire`), reads its head with `slowlab proxy`'s
//!   reader (`upstream::read_head`, which arms one pingora timer when the
//!   head is not in at its first read) and answers through the session.
//!
//! Neither has what a proxy needs beyond that: no other timeouts (the
//! session's own read timeout is off, as in `slowlab proxy`), limits, logs,
//! keep-alive, bodies larger than one buffer, or errors answered. Whatever
//! one costs, a proxy built the same way costs at least that. They are
//! measures, not proxies to use.
//!
//! Usage: `floor tokio|pingora LISTEN UPSTREAM` (both `IP:PORT`, loopback;
//! port 0 for LISTEN takes a free one). Prints `listening on IP:PORT` once
//! it accepts, as `slowlab proxy` does; SIGINT stops it. Exit status 2 for
//! bad arguments, 1 when it cannot listen.

use std::net::SocketAddr;
use std::time::Duration;

use pingora_core::protocols::http::ServerSession;
use proxy::client::ClientIo;
use proxy::upstream::{BodyLength, read_head, request_wire};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Large enough for the bench's request and `/fast`'s answer.
const BUF: usize = 16 * 1024;
/// `read_head`'s wait for the upstream's head (NGINX's default
/// proxy_read_timeout).
const READ_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Clone, Copy)]
enum Floor {
    Tokio,
    Pingora,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (floor, listen, upstream) = match args.as_slice() {
        [floor, listen, upstream] => {
            let floor = match floor.as_str() {
                "tokio" => Floor::Tokio,
                "pingora" => Floor::Pingora,
                _ => usage("the floor is tokio or pingora"),
            };
            match (listen.parse::<SocketAddr>(), upstream.parse::<SocketAddr>()) {
                (Ok(l), Ok(u)) if l.ip().is_loopback() && u.ip().is_loopback() => (floor, l, u),
                _ => usage("LISTEN and UPSTREAM are loopback IP:PORT addresses"),
            }
        }
        _ => usage("expected: floor tokio|pingora LISTEN UPSTREAM"),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(&format!("starting tokio: {e}")));
    runtime.block_on(async move {
        let listener = TcpListener::bind(listen)
            .await
            .unwrap_or_else(|e| fail(&format!("listening on {listen}: {e}")));
        let bound = listener
            .local_addr()
            .unwrap_or_else(|e| fail(&format!("the listener's address: {e}")));
        println!("listening on {bound}");
        let accept = async {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    // Out of descriptors, say: try again shortly, not at
                    // once.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                // Boxed, as `slowlab proxy` does: tokio would copy
                // pingora's kilobytes of session futures into its task and
                // out again.
                match floor {
                    Floor::Tokio => tokio::spawn(tokio_floor(client, upstream)),
                    Floor::Pingora => tokio::spawn(Box::pin(pingora_floor(client, upstream))),
                };
            }
        };
        tokio::select! {
            () = accept => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    });
}

fn usage(why: &str) -> ! {
    eprintln!("floor: {why}");
    std::process::exit(2);
}

fn fail(why: &str) -> ! {
    eprintln!("floor: {why}");
    std::process::exit(1);
}

/// Whether the request at the start of `buf` has its whole head (parsed
/// with `httparse`, the lab's HTTP parser, as `slowlab proxy`'s reads are).
fn request_head_in(buf: &[u8]) -> bool {
    let mut headers = [httparse::EMPTY_HEADER; 16];
    let mut request = httparse::Request::new(&mut headers);
    matches!(request.parse(buf), Ok(httparse::Status::Complete(_)))
}

/// The length of the answer at the start of `buf` (head and body) once its
/// head is in: its `Content-Length` after the head. `None` while the head
/// is not complete or says no length.
fn answer_length(buf: &[u8]) -> Option<usize> {
    let mut headers = [httparse::EMPTY_HEADER; 16];
    let mut response = httparse::Response::new(&mut headers);
    let httparse::Status::Complete(head) = response.parse(buf).ok()? else {
        return None;
    };
    let length = response
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-length"))?;
    Some(
        head + std::str::from_utf8(length.value)
            .ok()?
            .trim()
            .parse::<usize>()
            .ok()?,
    )
}

async fn tokio_floor(mut client: TcpStream, upstream: SocketAddr) {
    // Not zeroed (`read_buf` fills it): a 16 KiB memset would be most of
    // the count under callgrind, which counts each byte of a `rep stosb`.
    let mut buf = Vec::with_capacity(BUF);
    while !request_head_in(&buf) {
        match client.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) if buf.len() == BUF => return,
            Ok(_) => {}
        }
    }
    let Ok(mut origin) = TcpStream::connect(upstream).await else {
        return;
    };
    if origin.write_all(&buf).await.is_err() {
        return;
    }
    buf.clear();
    // Up to the answer's end, as NGINX reads (and not on to the upstream's
    // close, a read more).
    while answer_length(&buf).is_none_or(|n| buf.len() < n) {
        match origin.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) if buf.len() == BUF => return,
            Ok(_) => {}
        }
    }
    drop(origin);
    let _ = client.write_all(&buf).await;
}

async fn pingora_floor(client: TcpStream, upstream: SocketAddr) {
    let mut session = ServerSession::new_http1(Box::new(ClientIo::new(client)));
    // Off, as in `slowlab proxy` (which has one deadline of its own for the
    // head instead).
    session.set_read_timeout(None);
    if !matches!(session.read_request().await, Ok(true)) {
        return;
    }
    // After the read, which takes the request's wish.
    session.set_keepalive(None);
    let wire = request_wire(session.req_header(), None);
    let Ok(mut origin) = TcpStream::connect(upstream).await else {
        return;
    };
    if origin.write_all(&wire).await.is_err() {
        return;
    }
    let Ok(head) = read_head(&mut origin, BUF, READ_TIMEOUT, false, None).await else {
        return;
    };
    // Only an answer whose body came with its head: /fast's.
    if !matches!(head.body, BodyLength::Exact(n) if n == head.leftover.len() as u64) {
        return;
    }
    drop(origin);
    proxy::client::cork(session.stream());
    if session
        .write_response_header(Box::new(head.header))
        .await
        .is_err()
    {
        return;
    }
    // Not the end yet: `finish` ends the body, as the proxy's pipe leaves it
    // to.
    if session
        .write_response_body(head.leftover, false)
        .await
        .is_ok()
    {
        let _ = session.finish().await;
    }
}
