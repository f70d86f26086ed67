//! What the load generator needs to reach a stack's edge beyond its
//! target URL: the `slowlab load` flags of TLS and HTTP/2 ([`EdgeLoad`]),
//! from the route's [`catalogue::Edge`], the run's certificate and the
//! condition's streams ([`Streams`]).
//!
//! The flags are the load generator's contract for "HTTP/2 and TLS at the
//! edge": `--tls-ca FILE` (the run's authority, so every handshake is
//! verified), `--http2`, `--streams-per-conn N` and `--h2-window BYTES`;
//! [`EdgeLoad::args`] fills `LoadArgs::edge` with them.

use std::path::{Path, PathBuf};

use catalogue::Edge;

/// The TLS listener of a proxy whose route's edge has TLS: the run's
/// certificate and key (`common::tls`), and whether the listener speaks
/// HTTP/2. Every proxy's configuration takes it.
#[derive(Debug, Clone, Copy)]
pub struct TlsListen<'a> {
    pub cert: &'a Path,
    pub key: &'a Path,
    pub http2: bool,
}

impl<'a> TlsListen<'a> {
    /// The listener of `edge` with the run's certificate `files`; `None`
    /// at a cleartext edge.
    pub fn of(edge: Edge, files: Option<&'a common::tls::CertFiles>) -> Option<TlsListen<'a>> {
        files.filter(|_| edge.tls).map(|f| TlsListen {
            cert: &f.cert,
            key: &f.key,
            http2: edge.http2,
        })
    }

    /// The ALPN protocols it offers, most preferred first.
    pub fn alpn(&self) -> &'static [&'static str] {
        if self.http2 {
            &["h2", "http/1.1"]
        } else {
            &["http/1.1"]
        }
    }
}

/// How a condition's slow downloads share connections: `per_conn`
/// streams each (1: a connection per download, as over HTTP/1), and the
/// HTTP/2 stream window they advertise (`None`: HTTP/2's default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Streams {
    pub per_conn: u32,
    pub window: Option<u32>,
}

impl Streams {
    /// One download per connection at the default window: every HTTP/1
    /// condition.
    pub const ONE: Streams = Streams {
        per_conn: 1,
        window: None,
    };

    /// The streams of condition `c`.
    pub fn of(c: &catalogue::Condition) -> Streams {
        Streams {
            per_conn: c.streams_per_conn,
            window: c.h2_window,
        }
    }
}

/// The load generator's TLS and HTTP/2 flags for one stack's edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeLoad {
    pub edge: Edge,
    /// The authority to verify the edge's certificate against.
    pub tls_ca: Option<PathBuf>,
    pub streams: Streams,
}

impl EdgeLoad {
    /// `slowlab load`'s TLS and HTTP/2 flags for this edge: none on a
    /// cleartext HTTP/1.1 edge, so every existing command line stays as
    /// it was.
    pub fn args(&self) -> loadgen::edge::EdgeArgs {
        let mut a = loadgen::edge::EdgeArgs::default();
        if self.edge.tls {
            a.tls_ca = self.tls_ca.clone();
        }
        if self.edge.http2 {
            a.http2 = true;
            a.streams_per_conn = self.streams.per_conn as usize;
            a.h2_window = common::units::Size(u64::from(
                self.streams
                    .window
                    .unwrap_or(catalogue::condition::H2_DEFAULT_WINDOW),
            ));
        }
        a
    }

    /// [`EdgeLoad::args`] as `slowlab load` reads them (the tests' view).
    #[cfg(test)]
    pub fn to_args(&self) -> Vec<String> {
        self.args()
            .to_args()
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http1_edge_adds_nothing_and_an_h2_edge_its_ca_and_streams() {
        let plain = EdgeLoad {
            edge: Edge::CLEARTEXT_HTTP1,
            tls_ca: None,
            streams: Streams::ONE,
        };
        assert!(plain.to_args().is_empty());
        let h2 = EdgeLoad {
            edge: catalogue::Route::NginxH2On.edge(),
            tls_ca: Some("/tmp/run/tls/ca.pem".into()),
            streams: Streams {
                per_conn: 8,
                window: Some(16384),
            },
        };
        assert_eq!(
            h2.to_args().join(" "),
            "--http2 --h2-window 16384 --streams-per-conn 8 --tls-ca /tmp/run/tls/ca.pem"
        );
        let tls_only = EdgeLoad {
            tls_ca: h2.tls_ca.clone(),
            edge: Edge {
                tls: true,
                http2: false,
            },
            streams: Streams::ONE,
        };
        assert_eq!(tls_only.to_args().join(" "), "--tls-ca /tmp/run/tls/ca.pem");
        let default_window = EdgeLoad {
            streams: Streams::ONE,
            ..h2
        };
        assert_eq!(
            default_window.to_args().join(" "),
            "--http2 --h2-window 65535 --streams-per-conn 1 --tls-ca /tmp/run/tls/ca.pem"
        );
    }
}
