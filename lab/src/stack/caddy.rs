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

use std::net::SocketAddr;
use std::path::Path;

/// Renders the `Caddyfile` of one run: listening on `listen`, proxying to
/// `upstream`, buffering responses and request bodies as asked, its
/// storage under `data`.
pub fn config(
    listen: SocketAddr,
    upstream: SocketAddr,
    buffer_responses: bool,
    buffer_requests: bool,
    data: &Path,
) -> String {
    let mut directives = String::new();
    if buffer_responses {
        directives.push_str("\t\tbuffer_responses\n");
    }
    if buffer_requests {
        directives.push_str("\t\tbuffer_requests\n");
    }
    format!(
        "{{
\tadmin off
\tauto_https off
\tstorage file_system {data}
\tlog {{
\t\toutput stderr
\t\tlevel WARN
\t}}
}}
http://{listen} {{
\treverse_proxy {upstream} {{
{directives}\t}}
}}
",
        data = data.display()
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
            Path::new("/tmp/run/caddy"),
        );
        assert_eq!(
            c,
            "{\n\tadmin off\n\tauto_https off\n\tstorage file_system /tmp/run/caddy\n\tlog {\n\t\toutput stderr\n\t\tlevel WARN\n\t}\n}\nhttp://127.0.0.1:8080 {\n\treverse_proxy 127.0.0.1:9000 {\n\t\tbuffer_responses\n\t}\n}\n"
        );
        let default = config(
            "127.0.0.1:8080".parse().unwrap(),
            "127.0.0.1:9000".parse().unwrap(),
            false,
            false,
            Path::new("/d"),
        );
        assert!(!default.contains("buffer_"), "{default}");
        let req = config(
            "127.0.0.1:8080".parse().unwrap(),
            "127.0.0.1:9000".parse().unwrap(),
            false,
            true,
            Path::new("/d"),
        );
        assert!(req.contains("\t\tbuffer_requests\n") && !req.contains("buffer_responses"));
    }
}
