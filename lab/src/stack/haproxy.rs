//! The HAProxy 2.6 configuration of the `haproxy` routes: one process,
//! one thread (`nbthread 1`, as NGINX's one worker), in the foreground, no
//! logs, no stats socket; `mode http` from a frontend to the app, with
//! NGINX's default timeouts of 60 s (`client_header_timeout`,
//! `send_timeout`, `proxy_read_timeout`, `proxy_connect_timeout`) so that
//! the two proxies give a slow client the same time, plus `option
//! http-buffer-request` on `haproxy-reqbuf` and nothing else. What the
//! settings do, from HAProxy's `doc/configuration.txt`:
//! - each direction of a stream goes through one buffer of `tune.bufsize`
//!   (16384 bytes by default) and is forwarded as it arrives; HAProxy has
//!   no setting that reads a whole response before sending it, so a slow
//!   reader holds the server connection, and the app's handler, for its
//!   whole transfer, as NGINX `proxy_buffering off` does;
//! - `option http-buffer-request` makes it "wait until either the whole
//!   body is received or the request buffer is full" before it connects
//!   to the server: a body that fits (16 KiB less `tune.maxrewrite`) is
//!   taken off a slow client, a larger one is not;
//! - `timeout http-request` bounds the wait for a complete request head,
//!   which HAProxy reads whole before it connects to the server at all.
//!
//! At an HTTP/2 edge (`haproxy-h2`) the listener is `bind ... ssl crt
//! PEM alpn h2,http/1.1`, the run's certificate and key in one PEM file
//! as `crt` wants them; HAProxy's H2 multiplexer then turns each stream
//! into its own HTTP/1.1 request to the app, through the same one buffer
//! per direction: a stream's response leaves that buffer only as its
//! window allows (`src/mux_h2.c`, `h2_snd_buf` stops at the stream's
//! and the connection's windows), so a slow stream holds its upstream.

use std::net::SocketAddr;

use super::NGINX_TIMEOUT_S;
use super::edge::TlsListen;

/// Renders the `haproxy.cfg` of one run: listening on `listen`, proxying
/// to `upstream`, waiting for request bodies as asked; at a TLS edge
/// `tls.cert` is the PEM file of certificate and key together.
pub fn config(
    listen: SocketAddr,
    upstream: SocketAddr,
    buffer_requests: bool,
    tls: Option<TlsListen<'_>>,
) -> String {
    let ssl = tls.map_or(String::new(), |t| {
        format!(" ssl crt {} alpn {}", t.cert.display(), t.alpn().join(","))
    });
    let buffer = if buffer_requests {
        "\toption http-buffer-request\n"
    } else {
        ""
    };
    format!(
        "global
\tnbthread 1

defaults
\tmode http
\ttimeout connect {NGINX_TIMEOUT_S}s
\ttimeout client {NGINX_TIMEOUT_S}s
\ttimeout server {NGINX_TIMEOUT_S}s
\ttimeout http-request {NGINX_TIMEOUT_S}s
{buffer}
frontend slowlab
\tbind {listen}{ssl}
\tdefault_backend app

backend app
\tserver app {upstream}
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_is_pinned() {
        let listen = "127.0.0.1:8080".parse().unwrap();
        let upstream = "127.0.0.1:9000".parse().unwrap();
        assert_eq!(
            config(listen, upstream, false, None),
            "global\n\tnbthread 1\n\ndefaults\n\tmode http\n\ttimeout connect 60s\n\ttimeout client 60s\n\ttimeout server 60s\n\ttimeout http-request 60s\n\nfrontend slowlab\n\tbind 127.0.0.1:8080\n\tdefault_backend app\n\nbackend app\n\tserver app 127.0.0.1:9000\n"
        );
        let buffered = config(listen, upstream, true, None);
        assert!(
            buffered.contains("\ttimeout http-request 60s\n\toption http-buffer-request\n"),
            "{buffered}"
        );
        let v6 = config(
            "[::1]:8080".parse().unwrap(),
            "[::1]:9000".parse().unwrap(),
            false,
            None,
        );
        assert!(
            v6.contains("\tbind [::1]:8080\n") && v6.contains("server app [::1]:9000\n"),
            "{v6}"
        );
    }

    #[test]
    fn at_an_h2_edge_it_terminates_tls_and_offers_h2() {
        let c = config(
            "127.0.0.1:8443".parse().unwrap(),
            "127.0.0.1:9000".parse().unwrap(),
            false,
            Some(TlsListen {
                cert: std::path::Path::new("/s/tls/haproxy.pem"),
                key: std::path::Path::new("/s/tls/haproxy.pem"),
                http2: true,
            }),
        );
        assert!(
            c.contains("\tbind 127.0.0.1:8443 ssl crt /s/tls/haproxy.pem alpn h2,http/1.1\n"),
            "{c}"
        );
    }
}
