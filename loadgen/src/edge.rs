//! The edge a load meets: TLS (an `https://` target, rustls) and HTTP/2
//! (`--http2`, the `h2` crate, hyper's own), declared once as flags
//! ([`EdgeArgs`], flattened into `load`) and checked once into an
//! [`Edge`] that every client of the run is given.
//!
//! Over HTTP/2 a slow reader is not a small `SO_RCVBUF` but a flow-control
//! window it refills slowly (`--h2-window`, `--h2-conn-window`), and one
//! connection carries many slow downloads (`--streams-per-conn`): see
//! [`crate::h2reader`]. TLS certificates are verified as a real client's
//! would be, against `--tls-ca` (the lab makes a fresh authority for each
//! run, `common::tls`), or not at all with `--tls-insecure`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail};
use common::bounds::{int_in, size_in};
use common::units::Size;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use crate::error::{ErrorKind, Failure};
use crate::target::Target;

/// HTTP/2's initial flow-control window (RFC 9113 6.9.2): a stream's and the
/// connection's when a client asks for nothing else.
pub const DEFAULT_WINDOW: u64 = 65_535;
/// The largest window HTTP/2 allows (RFC 9113 6.9.1).
pub const MAX_WINDOW: u64 = (1 << 31) - 1;
/// The most slow downloads one connection carries (`--streams-per-conn`):
/// NGINX allows 128 concurrent streams by default, h2o 100; more streams
/// than the server allows wait for one to end.
pub const MAX_STREAMS_PER_CONN: usize = 1000;

/// The edge's flags of `slowlab load`.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct EdgeArgs {
    /// Speak HTTP/2 (slow readers and /fast): ALPN h2 to an https://
    /// target, prior-knowledge h2c to an http:// one. A target that does
    /// not speak it is refused with one line before the run.
    #[arg(long)]
    pub http2: bool,
    /// --http2: each stream's flow-control window, the SETTINGS_INITIAL_WINDOW_SIZE
    /// the load sends; a slow reader refills it at --slow-rate (1 to
    /// 2147483647).
    #[arg(long, default_value = "65535", value_parser = size_in(1, MAX_WINDOW))]
    pub h2_window: Size,
    /// --http2: the connection's flow-control window, shared by its
    /// streams (65535 to 2147483647). By default the sum of its streams'
    /// windows (--h2-window x --streams-per-conn, at least 65535), so that
    /// each stream is held back by its own window, not by its siblings': a
    /// connection window of 65535 for 8 streams paced at 2MiB/s made them
    /// take 21 s instead of 8.
    #[arg(long, value_parser = size_in(DEFAULT_WINDOW, MAX_WINDOW))]
    pub h2_conn_window: Option<Size>,
    /// --http2: slow downloads carried by one connection; --slow counts
    /// downloads, so --slow 8 --streams-per-conn 8 is one connection of 8
    /// streams (1 to 1000).
    #[arg(long, default_value_t = 1, value_parser = int_in(1, MAX_STREAMS_PER_CONN))]
    pub streams_per_conn: usize,
    /// An https:// target's certificate is verified against the
    /// certificate authorities in this PEM file (the lab's runs make one
    /// per run).
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// An https:// target's certificate is not verified at all (a
    /// self-signed test server's).
    #[arg(long, conflicts_with = "tls_ca")]
    pub tls_insecure: bool,
}

impl Default for EdgeArgs {
    /// Cleartext HTTP/1.1, as every load was before these flags.
    fn default() -> Self {
        EdgeArgs {
            http2: false,
            h2_window: Size(DEFAULT_WINDOW),
            h2_conn_window: None,
            streams_per_conn: 1,
            tls_ca: None,
            tls_insecure: false,
        }
    }
}

impl EdgeArgs {
    /// The flags that parse back into these arguments.
    pub fn to_args(&self) -> Vec<OsString> {
        let EdgeArgs {
            http2,
            h2_window,
            h2_conn_window,
            streams_per_conn,
            tls_ca,
            tls_insecure,
        } = self;
        let mut a: Vec<OsString> = Vec::new();
        if *http2 {
            a.extend([
                "--http2".into(),
                "--h2-window".into(),
                h2_window.0.to_string().into(),
                "--streams-per-conn".into(),
                streams_per_conn.to_string().into(),
            ]);
            if let Some(w) = h2_conn_window {
                a.extend(["--h2-conn-window".into(), w.0.to_string().into()]);
            }
        }
        if let Some(ca) = tls_ca {
            a.extend(["--tls-ca".into(), ca.into()]);
        }
        if *tls_insecure {
            a.push("--tls-insecure".into());
        }
        a
    }

    /// Checks the flags against the target and the rest of the load.
    /// `request_direction`: the load has slow uploaders or slowloris
    /// clients, which speak HTTP/1.1 only.
    pub fn check(&self, target: &Target, request_direction: bool) -> anyhow::Result<Edge> {
        let h2_flags = self.h2_window.0 != DEFAULT_WINDOW
            || self.h2_conn_window.is_some()
            || self.streams_per_conn != 1;
        if h2_flags && !self.http2 {
            bail!("--h2-window, --h2-conn-window and --streams-per-conn need --http2");
        }
        if self.http2 && request_direction {
            bail!(
                "--http2: slow uploaders and slowloris clients speak HTTP/1.1 only; run them without --http2"
            );
        }
        let tls = if target.parsed.tls {
            let verify = match (&self.tls_ca, self.tls_insecure) {
                (Some(ca), _) => Verify::Ca(ca.clone()),
                (None, true) => Verify::Nothing,
                (None, false) => bail!(
                    "an https:// target needs --tls-ca FILE (the authority that signed its certificate) or --tls-insecure"
                ),
            };
            Some(TlsClient::new(&verify, &target.parsed.host, self.http2)?)
        } else {
            if self.tls_ca.is_some() || self.tls_insecure {
                bail!("--tls-ca and --tls-insecure need an https:// target");
            }
            None
        };
        let http2 = self.http2.then(|| H2Settings {
            window: u32::try_from(self.h2_window.0).unwrap_or(u32::MAX >> 1),
            conn_window: conn_window(self.h2_conn_window, self.h2_window.0, self.streams_per_conn),
            streams_per_conn: self.streams_per_conn,
        });
        Ok(Edge { tls, http2 })
    }
}

/// The connection window: `--h2-conn-window`, else the sum of the
/// streams' windows, within HTTP/2's bounds.
fn conn_window(given: Option<Size>, window: u64, streams: usize) -> u32 {
    let w = given.map_or(window.saturating_mul(streams as u64), |s| s.0);
    u32::try_from(w.clamp(DEFAULT_WINDOW, MAX_WINDOW)).unwrap_or(u32::MAX >> 1)
}

/// A load's edge, checked: every client of the run gets it.
#[derive(Clone, Default)]
pub struct Edge {
    /// TLS to an `https://` target.
    pub tls: Option<TlsClient>,
    /// HTTP/2, with the windows the load advertises.
    pub http2: Option<H2Settings>,
}

impl std::fmt::Debug for Edge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Edge")
            .field("tls", &self.tls.as_ref().map(|t| t.verified))
            .field("http2", &self.http2)
            .finish()
    }
}

impl Edge {
    /// What the load speaks, as the catalogue names a route's edge (and
    /// the `protocol` columns record it).
    pub fn protocol(&self) -> catalogue::Edge {
        catalogue::Edge {
            tls: self.tls.is_some(),
            http2: self.http2.is_some(),
        }
    }
}

/// The HTTP/2 settings of a load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct H2Settings {
    /// Each stream's initial window (`SETTINGS_INITIAL_WINDOW_SIZE`).
    pub window: u32,
    /// The connection's window.
    pub conn_window: u32,
    /// Slow downloads per connection.
    pub streams_per_conn: usize,
}

impl H2Settings {
    /// A client builder that advertises these windows.
    pub fn builder(&self) -> h2::client::Builder {
        let mut b = h2::client::Builder::new();
        b.initial_window_size(self.window)
            .initial_connection_window_size(self.conn_window)
            // The load never accepts pushed streams.
            .enable_push(false);
        b
    }
}

/// How the server's certificate is checked.
enum Verify {
    Ca(PathBuf),
    Nothing,
}

/// A TLS client for the target: rustls with the `ring` provider, ALPN
/// `h2` or `http/1.1`.
#[derive(Clone)]
pub struct TlsClient {
    connector: tokio_rustls::TlsConnector,
    name: ServerName<'static>,
    /// Whether the certificate is verified (`--tls-ca`) or not
    /// (`--tls-insecure`).
    pub verified: bool,
    http2: bool,
}

impl TlsClient {
    fn new(verify: &Verify, host: &str, http2: bool) -> anyhow::Result<TlsClient> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .context("TLS versions")?;
        let mut config = match verify {
            Verify::Ca(path) => {
                let mut roots = rustls::RootCertStore::empty();
                let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                    .and_then(|it| it.collect::<Result<_, _>>())
                    .map_err(|e| {
                        anyhow::anyhow!(
                            "--tls-ca {}: not a PEM file of certificates ({e})",
                            path.display()
                        )
                    })?;
                if certs.is_empty() {
                    bail!("--tls-ca {}: no certificate in it", path.display());
                }
                for c in certs {
                    roots
                        .add(c)
                        .with_context(|| format!("--tls-ca {}", path.display()))?;
                }
                builder.with_root_certificates(roots).with_no_client_auth()
            }
            Verify::Nothing => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
                .with_no_client_auth(),
        };
        config.alpn_protocols = vec![if http2 {
            b"h2".to_vec()
        } else {
            b"http/1.1".to_vec()
        }];
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| anyhow::anyhow!("`{host}` is not a TLS server name: {e}"))?;
        Ok(TlsClient {
            connector: tokio_rustls::TlsConnector::from(Arc::new(config)),
            name,
            verified: matches!(verify, Verify::Ca(_)),
            http2,
        })
    }

    /// The handshake over a connected socket; returns the stream and when
    /// the handshake ended. Fails as `tls` (or as the transfer error that
    /// broke it), and as `tls` when HTTP/2 was asked for and the server did
    /// not choose it in ALPN.
    pub async fn handshake(
        &self,
        tcp: TcpStream,
    ) -> Result<(TlsStream<TcpStream>, Instant), Failure> {
        let stream = self
            .connector
            .connect(self.name.clone(), tcp)
            .await
            .map_err(
                |e| match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
                    Some(tls @ rustls::Error::InvalidCertificate(_)) => Failure::new(
                    ErrorKind::Tls,
                    format!(
                        "TLS handshake: {tls}; --tls-ca must name the authority that signed the server's certificate (a self-signed CA certificate cannot be a server's own), --tls-insecure takes any"
                    ),
                ),
                Some(tls) => Failure::new(ErrorKind::Tls, format!("TLS handshake: {tls}")),
                    None => Failure::transfer("TLS handshake", &e),
                },
            )?;
        let done = Instant::now();
        if self.http2 && stream.get_ref().1.alpn_protocol() != Some(b"h2") {
            let chose = stream
                .get_ref()
                .1
                .alpn_protocol()
                .map_or("none".to_string(), |p| {
                    String::from_utf8_lossy(p).into_owned()
                });
            return Err(Failure::new(
                ErrorKind::Tls,
                format!("the server chose ALPN `{chose}`, not h2"),
            ));
        }
        Ok((stream, done))
    }
}

/// `--tls-insecure`: every certificate is taken; signatures are still
/// checked, so the handshake is a real one.
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_window_is_its_streams_windows_unless_given() {
        assert_eq!(conn_window(None, 65_535, 1), 65_535);
        assert_eq!(conn_window(None, 65_535, 8), 8 * 65_535);
        assert_eq!(conn_window(None, 1, 2), 65_535, "at least HTTP/2's default");
        assert_eq!(conn_window(None, MAX_WINDOW, 8), MAX_WINDOW as u32);
        assert_eq!(conn_window(Some(Size(1 << 20)), 65_535, 8), 1 << 20);
    }
}
