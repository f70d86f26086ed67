//! The Caddy 2.6 configuration of the `caddy` routes: one process
//! (`GOMAXPROCS=1`, as NGINX's one worker), no admin endpoint, no
//! automatic HTTPS and no storage outside the run's scratch directory;
//! `reverse_proxy` to the app with Caddy's defaults, plus
//! `buffer_responses` (`caddy-buf`) or `buffer_requests` (`caddy-reqbuf`)
//! and nothing else. Where the setting lives and what it does, in the
//! source of the packaged version (v2.6.2,
//! `modules/caddyhttp/reverseproxy/`):
//! - by default the response is copied to the client through one 32 KiB
//!   buffer as it arrives (`streaming.go`:169-188, `defaultBufferSize`
//!   366), so a slow client holds the upstream connection, and the app's
//!   handler, for its whole transfer;
//! - `buffer_responses` reads the whole response into memory first
//!   (`reverseproxy.go`:856-858, `bufferedBody` 1128-1148: `io.Copy` to a
//!   `bytes.Buffer`, without limit unless `max_buffer_size`), so the app is
//!   released at memory speed and each slow client costs the proxy a whole
//!   response of memory;
//! - `buffer_requests` does the same for the request body before the
//!   upstream request (`reverseproxy.go`:625-627).
//!
//! At an HTTP/2 edge (`caddy-h2`, `caddy-h2-buf`) the site is `https://`
//! with the run's certificate (`tls CERT KEY`: with `auto_https off` Caddy
//! manages no certificate of its own) and the server speaks `h1 h2`
//! (`protocols`; 2.6 adds `h3` by default, over UDP, which the lab does
//! not speak). Go's HTTP/2 server writes a stream's body only as its
//! window allows (`http2/server.go` of `golang.org/x/net`, `writeDataFromHandler`
//! waits for flow control), so `reverse_proxy`'s copy, and the upstream
//! behind it, waits for a slow stream as for a slow HTTP/1.1 reader.
//! Every listener binds its address only (`bind`): a site address alone
//! names the host to match, and Caddy would listen on every interface.

use std::net::SocketAddr;
use std::path::Path;

use super::edge::TlsListen;

/// Renders the `Caddyfile` of one run: listening on `listen`, proxying to
/// `upstream`, buffering responses and request bodies as asked, its
/// storage under `data`.
pub fn config(
    listen: SocketAddr,
    upstream: SocketAddr,
    buffer_responses: bool,
    buffer_requests: bool,
    tls: Option<TlsListen<'_>>,
    data: &Path,
) -> String {
    let mut directives = String::new();
    if buffer_responses {
        directives.push_str("\t\tbuffer_responses\n");
    }
    if buffer_requests {
        directives.push_str("\t\tbuffer_requests\n");
    }
    let (scheme, servers, site_tls) = match tls {
        None => ("http", String::new(), String::new()),
        Some(t) => (
            "https",
            format!(
                "\tservers {{\n\t\tprotocols {}\n\t}}\n",
                if t.http2 { "h1 h2" } else { "h1" }
            ),
            format!("\ttls {} {}\n", t.cert.display(), t.key.display()),
        ),
    };
    format!(
        "{{
\tadmin off
\tauto_https off
\tstorage file_system {data}
{servers}\tlog {{
\t\toutput stderr
\t\tlevel WARN
\t}}
}}
{scheme}://{listen} {{
\tbind {ip}
{site_tls}\treverse_proxy {upstream} {{
{directives}\t}}
}}
",
        data = data.display(),
        ip = listen.ip(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caddyfile_is_pinned() {
        let c = config(
            "127.0.0.1:8080".parse().unwrap(),
            "127.0.0.1:9000".parse().unwrap(),
            true,
            false,
            None,
            Path::new("/tmp/run/caddy"),
        );
        assert_eq!(
            c,
            "{\n\tadmin off\n\tauto_https off\n\tstorage file_system /tmp/run/caddy\n\tlog {\n\t\toutput stderr\n\t\tlevel WARN\n\t}\n}\nhttp://127.0.0.1:8080 {\n\tbind 127.0.0.1\n\treverse_proxy 127.0.0.1:9000 {\n\t\tbuffer_responses\n\t}\n}\n"
        );
        let default = config(
            "127.0.0.1:8080".parse().unwrap(),
            "127.0.0.1:9000".parse().unwrap(),
            false,
            false,
            None,
            Path::new("/d"),
        );
        assert!(!default.contains("buffer_"), "{default}");
        let req = config(
            "127.0.0.1:8080".parse().unwrap(),
            "127.0.0.1:9000".parse().unwrap(),
            false,
            true,
            None,
            Path::new("/d"),
        );
        assert!(req.contains("\t\tbuffer_requests\n") && !req.contains("buffer_responses"));
    }

    #[test]
    fn at_an_h2_edge_the_site_is_https_with_the_run_s_certificate_and_h1_h2() {
        let c = config(
            "[::1]:8443".parse().unwrap(),
            "[::1]:9000".parse().unwrap(),
            false,
            false,
            Some(TlsListen {
                cert: Path::new("/s/tls/cert.pem"),
                key: Path::new("/s/tls/key.pem"),
                http2: true,
            }),
            Path::new("/d"),
        );
        assert!(c.contains("\tservers {\n\t\tprotocols h1 h2\n\t}\n"), "{c}");
        assert!(
            c.contains("https://[::1]:8443 {\n\tbind ::1\n\ttls /s/tls/cert.pem /s/tls/key.pem\n\treverse_proxy [::1]:9000 {"),
            "{c}"
        );
    }
}
