//! The Varnish 7.1 configuration of the `varnish` routes: a VCL that
//! passes every request to the app (`return (pass)`: nothing is cached,
//! so every `/fast` call reaches the app as through the other proxies),
//! plus `std.cache_req_body(32MB)` on `varnish-reqbuf`, and the
//! `varnishd` parameters the lab sets. What they do, from Varnish's
//! documentation (`doc/sphinx/reference/`):
//! - a passed response is fetched into Transient storage (memory, without
//!   limit unless `-s Transient=` sets one) as fast as the backend sends
//!   it, and delivered to the client from there while it arrives
//!   (`beresp.do_stream`, true by default, `vcl-var.rst`): the app's
//!   handler is released at memory speed, and each slow client costs
//!   Varnish a whole response of memory;
//! - the request body of a passed request streams to the backend;
//!   `std.cache_req_body(SIZE)` reads it whole first, up to SIZE
//!   (`vmod_std.vcc`), as NGINX's `client_max_body_size 32m` does on the
//!   request routes;
//! - `thread_pools=1` (one pool, as NGINX's one worker), `vsl_space=1M`
//!   (the shared-memory log, 80 MiB by default, is mapped memory that
//!   would count against the proxy's 96 MiB cgroup), `-j none` (no jail:
//!   Debian's `varnish` and `vcache` users are not created by an unpacked
//!   package), `-s malloc,256m` (Debian's default cache storage, unused by
//!   passed requests); VCL is compiled with the system's C compiler, as
//!   `varnishd` does.

use std::net::SocketAddr;

/// The size `cache_req_body` takes on `varnish-reqbuf`, the request
/// routes' 32 MiB.
pub const CACHE_REQ_BODY: &str = "32MB";

/// Renders the VCL of one run: every request passed to `upstream`, its
/// body read whole first when `cache_req_body`.
pub fn vcl(upstream: SocketAddr, cache_req_body: bool) -> String {
    let cache = if cache_req_body {
        format!("\tstd.cache_req_body({CACHE_REQ_BODY});\n")
    } else {
        String::new()
    };
    format!(
        "vcl 4.1;

import std;

backend app {{
\t.host = \"{host}\";
\t.port = \"{port}\";
}}

sub vcl_recv {{
{cache}\treturn (pass);
}}
",
        host = upstream.ip(),
        port = upstream.port()
    )
}

/// `varnishd`'s arguments: in the foreground, listening on `listen`, its
/// instance (working) directory `instance`, the VCL at `vcl`, and the
/// VMOD directory of an unpacked package when there is one.
pub fn args(
    listen: SocketAddr,
    instance: &std::path::Path,
    vcl: &std::path::Path,
    vmod_path: Option<&std::path::Path>,
) -> Vec<String> {
    let mut a: Vec<String> = [
        "-F",
        "-j",
        "none",
        "-n",
        &instance.to_string_lossy(),
        "-a",
        &listen.to_string(),
        "-f",
        &vcl.to_string_lossy(),
        "-s",
        "malloc,256m",
        "-p",
        "thread_pools=1",
        "-p",
        "vsl_space=1M",
    ]
    .map(String::from)
    .to_vec();
    if let Some(v) = vmod_path {
        a.extend(["-p".into(), format!("vmod_path={}", v.display())]);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vcl_and_the_arguments_are_pinned() {
        let up: SocketAddr = "127.0.0.1:9000".parse().unwrap();
        assert_eq!(
            vcl(up, false),
            "vcl 4.1;\n\nimport std;\n\nbackend app {\n\t.host = \"127.0.0.1\";\n\t.port = \"9000\";\n}\n\nsub vcl_recv {\n\treturn (pass);\n}\n"
        );
        assert!(vcl(up, true).contains("\tstd.cache_req_body(32MB);\n\treturn (pass);\n"));
        assert!(vcl("[::1]:9000".parse().unwrap(), false).contains(".host = \"::1\";"));
        let a = args(
            "127.0.0.1:8080".parse().unwrap(),
            std::path::Path::new("/s/varnish"),
            std::path::Path::new("/l/default.vcl"),
            Some(std::path::Path::new("/v/vmods")),
        );
        assert_eq!(
            a.join(" "),
            "-F -j none -n /s/varnish -a 127.0.0.1:8080 -f /l/default.vcl -s malloc,256m -p thread_pools=1 -p vsl_space=1M -p vmod_path=/v/vmods"
        );
    }
}
