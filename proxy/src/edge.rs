//! The proxy as a TLS and HTTP/2 edge (`--tls-cert`, `--tls-key`,
//! `--http2`): what deployed proxies do in front of an HTTP/1.x app.
//!
//! A client connection is a TLS session (rustls with the `ring`
//! provider, ALPN `h2` when `--http2`, else only `http/1.1`). Over ALPN
//! `h2` it is pingora's own HTTP/2 server connection
//! (`protocols::http::v2::server`): each stream is a `ServerSession` that
//! [`ProxyApp::serve_stream`] serves exactly as an HTTP/1 request, towards
//! the same HTTP/1.0 upstream with the same buffering, so one client
//! connection with N streams holds N upstream connections. pingora writes
//! an HTTP/2 body only as the stream's window allows (`write_body` waits
//! for capacity), so with buffering off a slow HTTP/2 reader holds its
//! upstream as a slow HTTP/1.1 reader does. Over HTTP/1.1 (ALPN
//! `http/1.1`) one request is served and the connection closed: the
//! keep-alive of the cleartext path (`crate::keepalive`) is for its own
//! `ClientIo`.
//!
//! The cleartext HTTP/1 path (`crate::server`, `ClientIo`) is untouched:
//! its CPU per request is what the benches hold against NGINX.

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use anyhow::Context as _;
use async_trait::async_trait;
use pingora_core::protocols::http::ServerSession;
use pingora_core::protocols::http::v2::server::{H2Accept, HttpSession};
use pingora_core::protocols::{Digest, Shutdown, Stream, UniqueID, UniqueIDType};
use pingora_core::server::ShutdownWatch;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_rustls::server::TlsStream;

use crate::app::ProxyApp;
use crate::connlimit::Slot;
use crate::pipe::stopped;

/// TLS (and HTTP/2) towards the clients, checked from the flags.
#[derive(Clone)]
pub struct TlsEdge {
    acceptor: tokio_rustls::TlsAcceptor,
    /// ALPN offers `h2`.
    pub http2: bool,
}

impl fmt::Debug for TlsEdge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsEdge")
            .field("http2", &self.http2)
            .finish_non_exhaustive()
    }
}

impl TlsEdge {
    /// The server certificate chain and its key (PEM files).
    pub fn new(cert: &Path, key: &Path, http2: bool) -> anyhow::Result<TlsEdge> {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
            .and_then(|it| it.collect::<Result<_, _>>())
            .map_err(|e| {
                anyhow::anyhow!("--tls-cert {}: not a PEM certificate ({e})", cert.display())
            })?;
        anyhow::ensure!(
            !certs.is_empty(),
            "--tls-cert {}: no certificate in it",
            cert.display()
        );
        let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
            anyhow::anyhow!("--tls-key {}: not a PEM private key ({e})", key.display())
        })?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .context("TLS versions")?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .context("--tls-cert and --tls-key do not go together")?;
        config.alpn_protocols = if http2 {
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        } else {
            vec![b"http/1.1".to_vec()]
        };
        Ok(TlsEdge {
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
            http2,
        })
    }
}

/// Serves one accepted client connection over TLS: its handshake within
/// `client_header_timeout`, then its HTTP/2 streams, or one HTTP/1.1
/// request.
pub async fn serve(
    app: Arc<ProxyApp>,
    tcp: TcpStream,
    edge: TlsEdge,
    slot: Slot,
    cut: ShutdownWatch,
    mut stop: watch::Receiver<bool>,
) {
    let _slot = slot;
    // As NGINX sets it on TLS and HTTP/2 connections (`tcp_nodelay on`).
    let _ = tcp.set_nodelay(true);
    let fd = tcp.as_raw_fd();
    let header_timeout = app.config().request.header_timeout;
    let stream = match tokio::time::timeout(header_timeout, edge.acceptor.accept(tcp)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::debug!(cause = %e, "TLS handshake failed");
            return;
        }
        Err(_) => return,
    };
    let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
    let io: Stream = Box::new(TlsIo { stream, fd });
    if !h2 {
        app.serve_stream(ServerSession::new_http1(io), cut).await;
        return;
    }
    let mut conn = match pingora_core::protocols::http::v2::server::handshake(io, None).await {
        Ok(c) => c,
        Err(e) => {
            tracing::debug!(cause = %e, "HTTP/2 handshake failed");
            return;
        }
    };
    let digest = Arc::new(Digest::default());
    let mut stopping = false;
    loop {
        // Accepting drives the whole connection: it goes on while streams
        // run, and after a stop until they have ended.
        let next = tokio::select! {
            next = HttpSession::from_h2_conn(&mut conn, digest.clone()) => next,
            () = stopped(&mut stop), if !stopping => {
                stopping = true;
                conn.graceful_shutdown();
                continue;
            }
        };
        match next {
            Ok(Some(H2Accept::Session(session))) => {
                let app = app.clone();
                let cut = cut.clone();
                tokio::spawn(Box::pin(async move {
                    app.serve_stream(ServerSession::new_http2(session), cut)
                        .await;
                }));
            }
            Ok(Some(H2Accept::Rejected)) => {}
            Ok(None) => return,
            Err(e) => {
                tracing::debug!(cause = %e, "HTTP/2 connection ended");
                return;
            }
        }
    }
}

/// A client's TLS stream as pingora sees it.
struct TlsIo {
    stream: TlsStream<TcpStream>,
    fd: RawFd,
}

impl fmt::Debug for TlsIo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TlsIo(fd {})", self.fd)
    }
}

impl AsyncRead for TlsIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[async_trait]
impl Shutdown for TlsIo {
    async fn shutdown(&mut self) {
        // close_notify, then the FIN of the close that follows.
        let _ = tokio::io::AsyncWriteExt::shutdown(&mut self.stream).await;
    }
}

impl UniqueID for TlsIo {
    fn id(&self) -> UniqueIDType {
        self.fd as UniqueIDType
    }
}

crate::client::no_digests!(TlsIo);
