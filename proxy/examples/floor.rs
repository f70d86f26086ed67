//! The least a proxy on tokio, and on pingora's HTTP/1 session, does for a
//! request: the floors under `slowlab proxy`'s cost per request, measured
//! beside it by scripts/bench-proxy.sh and scripts/bench-instructions.sh
//! with `FLOOR=1`.
//!
//! Both do a proxy's socket work for one request per connection, as NGINX
//! does with buffering on and `Connection: close`: accept, read the head,
//! connect to the upstream, send it the request, read its answer, send
//! that on, close.
//! - `tokio` does nothing else: the head goes on as it came, the answer is
//!   read until the upstream closes and sent on as it came.
//! - `pingora` reads the request with pingora's `ServerSession`, sends the
//!   upstream `slowlab proxy`'s request (`upstream::request_wire`), reads
//!   its head with `slowlab proxy`'s reader (`upstream::read_head`) and
//!   answers through the session in one write, as `slowlab proxy` does for
//!   a small answer.
//!
//! Neither has what a proxy needs beyond that: no timeouts of their own,
//! limits, logs, keep-alive, bodies larger than one read, or errors
//! answered. Whatever one costs, a proxy built the same way costs at least
//! that. They are measures, not proxies to use.
//!
//! Usage: `floor tokio|pingora LISTEN UPSTREAM` (both `IP:PORT`, loopback;
//! port 0 for LISTEN takes a free one). Prints `listening on IP:PORT` once
//! it accepts, as `slowlab proxy` does; SIGINT stops it.

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
        _ => usage("usage: floor tokio|pingora LISTEN UPSTREAM"),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        let listener = TcpListener::bind(listen).await.expect("binding LISTEN");
        let bound = listener.local_addr().expect("the listener's address");
        println!("listening on {bound}");
        let accept = async {
            loop {
                if let Ok((client, _)) = listener.accept().await {
                    // Boxed, as `slowlab proxy` does: tokio would copy
                    // pingora's kilobytes of session futures into its task
                    // and out again.
                    match floor {
                        Floor::Tokio => tokio::spawn(tokio_floor(client, upstream)),
                        Floor::Pingora => tokio::spawn(Box::pin(pingora_floor(client, upstream))),
                    };
                }
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

async fn tokio_floor(mut client: TcpStream, upstream: SocketAddr) {
    // Not zeroed (`read_buf` fills it): a 16 KiB memset would be most of
    // the count under callgrind, which counts each byte of a `rep stosb`.
    let mut buf = Vec::with_capacity(BUF);
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
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
    loop {
        match origin.read_buf(&mut buf).await {
            Ok(0) => break,
            Ok(_) if buf.len() < BUF => {}
            _ => return,
        }
    }
    drop(origin);
    let _ = client.write_all(&buf).await;
}

async fn pingora_floor(client: TcpStream, upstream: SocketAddr) {
    let mut session = ServerSession::new_http1(Box::new(ClientIo::new(client)));
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
    if session
        .write_response_body(head.leftover, true)
        .await
        .is_ok()
    {
        let _ = session.finish().await;
    }
}
