//! The H2O 2.2 configuration of the `h2o` route: one thread
//! (`num-threads: 1`, as NGINX's one worker), in the foreground, its
//! error log on standard error, its temp buffers in the run's scratch, and
//! NGINX's 60 s timeouts (`http1-request-timeout`, `proxy.timeout.io`,
//! 10 s and 30 s by default, `include/h2o.h`:79-86 of v2.2.5). Run as
//! root, H2O switches to `user` (`nobody` by default), which could not
//! write the scratch; `user: root` keeps it the lab's child as it is.
//! What H2O 2.2 does with a transfer (`Route::H2o` cites the source):
//! - it reads the upstream's whole response as fast as the upstream sends
//!   it, whatever the client reads: in memory, or past a 32 MB buffer in
//!   an unlinked temp file under `temp-buffer-path`, mapped into memory;
//! - it reads a whole request body before it handles the request, up to
//!   `limit-request-body` (1 GiB by default), in the buffer that holds
//!   the head too: a 16 MiB body and its head grow it to 32 MiB, past
//!   which it moves to a temp file.
//!
//! `temp-buffer-path` is a directory: H2O appends its own file template
//! (`/h2o.b.XXXXXX`, `src/main.c`:1296-1308, `lib/common/socket.c`:122-124).
//! Given a template instead, every `mkstemp` failed, and each 16 MiB
//! upload was reset after its last byte, unanswered (the `proxies`
//! example's run 080; "failed to create temporary file", `memory.c`:247-253).
//!
//! So the one route buffers both directions: H2O 2.2 has no setting that
//! streams either.
//!
//! At an HTTP/2 edge (`h2o-h2`) the listener has an `ssl:` block with the
//! run's certificate and key, where H2O offers `h2` and `http/1.1` by
//! ALPN (`lib/common/socket.c`, `h2o_ssl_register_alpn_protocols` from
//! `src/main.c`); the proxying, and its reading of whole responses, is
//! that of `lib/core/proxy.c` whatever the client speaks. OCSP stapling is
//! off (`ocsp-update-interval: 0`): the lab's certificate names no
//! responder, and nothing may reach beyond the loopback.

use std::net::SocketAddr;
use std::path::Path;

use super::NGINX_TIMEOUT_S;
use super::edge::TlsListen;

/// Renders the `h2o.conf` of one run: listening on `listen`, proxying to
/// `upstream`, its temp buffers in `scratch`.
pub fn config(
    listen: SocketAddr,
    upstream: SocketAddr,
    scratch: &Path,
    tls: Option<TlsListen<'_>>,
) -> String {
    let ssl = tls.map_or(String::new(), |t| {
        format!(
            "  ssl:\n    certificate-file: \"{}\"\n    key-file: \"{}\"\n    ocsp-update-interval: 0\n",
            t.cert.display(),
            t.key.display()
        )
    });
    format!(
        "user: root
num-threads: 1
error-log: /dev/stderr
temp-buffer-path: \"{scratch}\"
http1-request-timeout: {NGINX_TIMEOUT_S}
listen:
  host: \"{host}\"
  port: {port}
{ssl}hosts:
  default:
    paths:
      /:
        proxy.timeout.io: {io_ms}
        proxy.reverse.url: \"http://{upstream}/\"
",
        scratch = scratch.display(),
        host = listen.ip(),
        port = listen.port(),
        // seconds for the request, milliseconds for the upstream's I/O
        io_ms = NGINX_TIMEOUT_S * 1000,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_is_pinned() {
        let c = config(
            "127.0.0.1:8080".parse().unwrap(),
            "127.0.0.1:9000".parse().unwrap(),
            Path::new("/s/h2o"),
            None,
        );
        assert_eq!(
            c,
            "user: root\nnum-threads: 1\nerror-log: /dev/stderr\ntemp-buffer-path: \"/s/h2o\"\nhttp1-request-timeout: 60\nlisten:\n  host: \"127.0.0.1\"\n  port: 8080\nhosts:\n  default:\n    paths:\n      /:\n        proxy.timeout.io: 60000\n        proxy.reverse.url: \"http://127.0.0.1:9000/\"\n"
        );
        let v6 = config(
            "[::1]:8080".parse().unwrap(),
            "[::1]:9000".parse().unwrap(),
            Path::new("/s"),
            None,
        );
        assert!(
            v6.contains("host: \"::1\"") && v6.contains("\"http://[::1]:9000/\""),
            "{v6}"
        );
    }

    #[test]
    fn at_an_h2_edge_the_listener_has_the_run_s_certificate() {
        let c = config(
            "127.0.0.1:8443".parse().unwrap(),
            "127.0.0.1:9000".parse().unwrap(),
            Path::new("/s"),
            Some(TlsListen {
                cert: Path::new("/s/tls/cert.pem"),
                key: Path::new("/s/tls/key.pem"),
                http2: true,
            }),
        );
        assert!(
            c.contains("  port: 8443\n  ssl:\n    certificate-file: \"/s/tls/cert.pem\"\n    key-file: \"/s/tls/key.pem\"\n    ocsp-update-interval: 0\nhosts:"),
            "{c}"
        );
    }
}
