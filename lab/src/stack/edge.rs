//! What the load generator needs to reach a stack's edge beyond its
//! target URL: the `slowlab load` flags of TLS and HTTP/2 ([`EdgeLoad`]),
//! from the route's [`catalogue::Edge`], the run's certificate and the
//! condition's streams ([`Streams`]).
//!
//! The flags are the load generator's contract for "HTTP/2 and TLS at the
//! edge": `--tls-ca FILE` (the run's authority, so every handshake is
//! verified), `--http2`, `--streams-per-conn N` and `--h2-window BYTES`.
//! Until `loadgen::LoadArgs` has their fields, [`EdgeLoad::to_args`] is
//! the one place that writes them, after `LoadArgs::to_args`; once it
//! has them, these values fill its fields instead.

use std::path::PathBuf;

use catalogue::Edge;

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
    /// The flags after `LoadArgs::to_args`: none on a cleartext HTTP/1.1
    /// edge, so every existing command line stays as it was.
    pub fn to_args(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(ca) = self.tls_ca.as_ref().filter(|_| self.edge.tls) {
            out.extend(["--tls-ca".into(), ca.to_string_lossy().into_owned()]);
        }
        if self.edge.http2 {
            out.push("--http2".into());
            out.extend([
                "--streams-per-conn".into(),
                self.streams.per_conn.to_string(),
            ]);
            let window = self
                .streams
                .window
                .unwrap_or(catalogue::condition::H2_DEFAULT_WINDOW);
            out.extend(["--h2-window".into(), window.to_string()]);
        }
        out
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
            "--tls-ca /tmp/run/tls/ca.pem --http2 --streams-per-conn 8 --h2-window 16384"
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
            "--tls-ca /tmp/run/tls/ca.pem --http2 --streams-per-conn 1 --h2-window 65535"
        );
    }
}
