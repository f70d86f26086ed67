//! The edge: slow readers and `/fast` over HTTP/2 (h2c and h2 over TLS)
//! and HTTP/1.1 over TLS, against an in-process server made of the `h2`
//! crate's server and rustls with the lab's generated certificate; and
//! the one-line refusals of a target that does not speak what was asked.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use catalogue::Edge;
use common::pattern::DEFAULT_BLOCK;
use common::tls::LabCertificate;
use loadgen::{LoadConfig, Verified};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

/// The `/large` the test server sends: the lab's pattern.
const LARGE: usize = 512 << 10;

/// An HTTP/2 (and, over TLS, HTTP/1.1) server on 127.0.0.1.
struct EdgeServer {
    addr: SocketAddr,
    tls: bool,
    _rt: tokio::runtime::Runtime,
}

impl EdgeServer {
    /// Cleartext h2c with `None`, TLS with this certificate otherwise
    /// (ALPN h2 and http/1.1).
    fn start(cert: Option<&LabCertificate>) -> EdgeServer {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let acceptor = cert.map(|c| {
            let certs: Vec<CertificateDer<'static>> =
                CertificateDer::pem_slice_iter(c.cert_pem.as_bytes())
                    .collect::<Result<_, _>>()
                    .unwrap();
            let key = PrivateKeyDer::from_pem_slice(c.key_pem.as_bytes()).unwrap();
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut config = rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(certs, key)
                .unwrap();
            config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            tokio_rustls::TlsAcceptor::from(Arc::new(config))
        });
        let tls = acceptor.is_some();
        rt.spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                // As NGINX's `tcp_nodelay on` (its default).
                let _ = tcp.set_nodelay(true);
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    match acceptor {
                        None => serve_h2(tcp).await,
                        Some(a) => {
                            let Ok(s) = a.accept(tcp).await else { return };
                            if s.get_ref().1.alpn_protocol() == Some(b"h2") {
                                serve_h2(s).await;
                            } else {
                                serve_h1(s).await;
                            }
                        }
                    }
                });
            }
        });
        EdgeServer { addr, tls, _rt: rt }
    }

    fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }
}

fn body_of(path: &str) -> Vec<u8> {
    if path == "/large" {
        common::pattern::block(DEFAULT_BLOCK)
            .into_iter()
            .cycle()
            .take(LARGE)
            .collect()
    } else {
        b"fast".to_vec()
    }
}

async fn serve_h2<T: AsyncRead + AsyncWrite + Unpin>(io: T) {
    let Ok(mut conn) = h2::server::handshake(io).await else {
        return;
    };
    while let Some(Ok((req, mut respond))) = conn.accept().await {
        tokio::spawn(async move {
            let body = body_of(req.uri().path());
            let response = http::Response::builder()
                .status(200)
                .header("content-length", body.len())
                .header("x-slowlab-block", DEFAULT_BLOCK)
                .body(())
                .unwrap();
            let Ok(mut send) = respond.send_response(response, false) else {
                return;
            };
            // As the window allows: what is sent never waits in the server.
            let mut rest = Bytes::from(body);
            while !rest.is_empty() {
                send.reserve_capacity(rest.len().min(16 << 10));
                let Some(Ok(n)) = std::future::poll_fn(|cx| send.poll_capacity(cx)).await else {
                    return;
                };
                let piece = rest.split_to(n.min(rest.len()));
                if send.send_data(piece, rest.is_empty()).is_err() {
                    return;
                }
            }
        });
    }
}

async fn serve_h1<T: AsyncRead + AsyncWrite + Unpin>(mut io: T) {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match io.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head);
    let path = text.split(' ').nth(1).unwrap_or("/").to_string();
    let body = body_of(&path);
    let reply = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nX-Slowlab-Block: {DEFAULT_BLOCK}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = io.write_all(reply.as_bytes()).await;
    let _ = io.write_all(&body).await;
    let _ = io.shutdown().await;
}

/// The generated authority, written where `--tls-ca` can read it.
fn ca_file(cert: &LabCertificate, dir: &tempfile::TempDir) -> String {
    cert.write(dir.path()).unwrap().ca.display().to_string()
}

fn load(url: &str, extra: &[&str]) -> loadgen::Report {
    let mut words = vec![
        "--target",
        url,
        "--slow-rate",
        "512KiB",
        "--fast-rate",
        "10",
        "--fast-duration",
        "500ms",
        "--timeout",
        "5s",
    ];
    words.extend(extra);
    support::run(&words)
}

/// Each download whole, its pattern checked, in about size / rate.
fn assert_paced(r: &loadgen::Report, protocol: Edge) {
    for d in &r.large {
        assert_eq!(d.error, None, "{d:?}");
        assert_eq!(d.verified, Verified::Pattern, "{d:?}");
        assert_eq!(d.bytes, LARGE as u64);
        assert_eq!(d.protocol, protocol);
        let took = d.receive_s.expect("whole");
        // 512 KiB at 512 KiB/s: one second, paced from the connect.
        assert!((0.99..1.05).contains(&took), "receive_s {took}");
    }
    assert!(
        r.fast.iter().all(|f| f.ok() && f.protocol == protocol),
        "{:?}",
        r.fast
    );
}

#[test]
fn streams_on_one_h2c_connection_are_paced_by_their_window() {
    let server = EdgeServer::start(None);
    let r = load(
        &server.url(),
        &[
            "--http2",
            "--slow",
            "4",
            "--streams-per-conn",
            "2",
            "--h2-window",
            "16KiB",
        ],
    );
    assert_eq!(r.large.len(), 4);
    assert_paced(&r, Edge::H2C);
    let conns: Vec<usize> = r.large.iter().map(|d| d.connection).collect();
    assert_eq!(conns, [0, 0, 1, 1], "two streams to a connection");
    for d in &r.large {
        let h2 = d.h2.expect("h2 facts");
        assert_eq!(
            (h2.settings.window, h2.settings.streams_per_conn),
            (16 << 10, 2)
        );
        // The server can send no more than the window ahead of the reader.
        assert!(
            (1..=16 << 10).contains(&h2.unconsumed_peak_bytes),
            "{}",
            h2.unconsumed_peak_bytes
        );
    }
}

#[test]
fn h2_over_tls_is_verified_against_the_generated_authority() {
    let cert = LabCertificate::generate().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let server = EdgeServer::start(Some(&cert));
    let r = load(
        &server.url(),
        &["--http2", "--slow", "2", "--tls-ca", &ca_file(&cert, &dir)],
    );
    assert_paced(&r, Edge::H2);
    for f in &r.fast {
        let tls = f.tls_ms.expect("a handshake per request");
        assert!(tls > 0.0 && tls < f.latency_ms.unwrap(), "{f:?}");
    }
}

#[test]
fn http1_over_tls_reads_paced() {
    let cert = LabCertificate::generate().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let server = EdgeServer::start(Some(&cert));
    let r = load(
        &server.url(),
        &["--slow", "2", "--tls-ca", &ca_file(&cert, &dir)],
    );
    assert_paced(&r, Edge::HTTP1_TLS);
    assert!(r.large.iter().all(|d| d.h2.is_none()));
}

/// The run's error for these arguments: bad input, one line.
fn refused(words: &[&str]) -> String {
    let config = LoadConfig::from_args(&support::args(words)).expect("the flags are valid");
    let err = loadgen::run_load(&config).expect_err("refused before the run");
    assert!(err.is::<common::exit::BadInput>(), "{err:#}");
    let line = format!("{err:#}");
    assert!(!line.contains('\n'), "one line: {line}");
    line
}

#[test]
fn a_server_without_http2_is_refused_in_one_line() {
    let server = support::ScriptedServer::start(|_| {
        support::Reply::Bytes(support::response("400 Bad Request", "", b"no"))
    });
    let line = refused(&["--target", &server.url(), "--http2", "--slow", "1"]);
    assert!(line.contains("does not speak HTTP/2"), "{line}");
}

#[test]
fn a_certificate_the_load_does_not_trust_is_refused_in_one_line() {
    let cert = LabCertificate::generate().unwrap();
    let other = LabCertificate::generate().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let server = EdgeServer::start(Some(&cert));
    let line = refused(&[
        "--target",
        &server.url(),
        "--tls-ca",
        &ca_file(&other, &dir),
    ]);
    assert!(
        line.contains("does not speak TLS") && line.contains("certificate"),
        "{line}"
    );
}
