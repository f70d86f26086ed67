//! The Apache Traffic Server 9.2 configuration of the `ats` routes: a
//! reverse proxy (`map / http://app/`, remapping required) with nothing
//! cached (`proxy.config.http.cache.http 0`, no storage), one event
//! thread (`exec_thread.limit 1`, as NGINX's one worker), NGINX's 60 s
//! inactivity timeouts (30 s by default), its diagnostics on standard
//! error and no transaction log, run in the foreground as root without
//! switching user (`admin.user_id #-1`: the unpacked package creates no
//! `trafficserver` user) and without its crash-log helper. Every path is
//! relocated by a runroot (`TS_RUNROOT`, `runroot.yaml`): the package's
//! tree for its programs and error pages, the run's config directory for
//! the config files, the scratch for its runtime files. What the settings
//! do, from `doc/admin-guide/files/records.config.en.rst` and the source
//! of 9.2.9:
//! - the tunnel reads from the origin while less than
//!   `default_buffer_water_mark` (32,768 bytes) waits for the client
//!   ("Number of bytes TS is allowed to read ahead of the client from the
//!   origin", records.config.en.rst:1237-1243; `HttpSM.cc`:6589,
//!   `I_IOBuffer.h`:1077-1079): by default a slow reader holds the app's
//!   handler; `ats-buf` raises it to 32 MiB, and the whole response is read
//!   off the app into memory;
//! - a request body streams to the origin unless `request_buffer_enabled`,
//!   which makes "no outbound connection ... until the entire POST request
//!   has been buffered" (records.config.en.rst:1250-1256,
//!   `HttpTransact.cc`:1559-1562, `HttpSM.cc`:947-986), up to
//!   `post_copy_size` (2,048 bytes by default; a longer body fails), 32 MiB
//!   on `ats-reqbuf` as NGINX's `client_max_body_size 32m`.
//!
//! At an HTTP/2 edge (`ats-h2`, `ats-h2-buf`) the server port is an `ssl`
//! one, with the run's certificate and key in `ssl_multicert.config`;
//! Traffic Server offers `h2` and `http/1.1` there by default
//! (`proxy.config.http.server_ports`, records.config.en.rst), and each
//! stream goes through the same state machine and tunnel to the origin.

use std::net::SocketAddr;
use std::path::Path;

use super::NGINX_TIMEOUT_S;
use super::edge::TlsListen;

/// `default_buffer_water_mark` of `ats-buf` and `post_copy_size` of
/// `ats-reqbuf`: 32 MiB.
pub const BUFFER: u64 = 32 << 20;

/// The config files of one run, by name, all written into the config
/// directory: listening on `listen`, mapping every path to `upstream`,
/// the package's error pages under `root`, reading ahead a whole response
/// when `buffering`, a whole request body when `buffer_requests`. The
/// optional files Traffic Server looks for are there and empty.
pub fn files(
    listen: SocketAddr,
    upstream: SocketAddr,
    root: &Path,
    buffering: bool,
    buffer_requests: bool,
    tls: Option<TlsListen<'_>>,
) -> Vec<(&'static str, String)> {
    let mut records = format!(
        "CONFIG proxy.config.http.server_ports STRING {port}{v6}{ssl}:ip-in={ip}
CONFIG proxy.config.reverse_proxy.enabled INT 1
CONFIG proxy.config.url_remap.remap_required INT 1
CONFIG proxy.config.http.cache.http INT 0
CONFIG proxy.config.exec_thread.autoconfig INT 0
CONFIG proxy.config.exec_thread.limit INT 1
CONFIG proxy.config.admin.user_id STRING #-1
CONFIG proxy.config.crash_log_helper STRING /bin/true
CONFIG proxy.config.diags.logfile.filename STRING stderr
CONFIG proxy.config.log.logging_enabled INT 0
CONFIG proxy.config.http.transaction_no_activity_timeout_in INT {NGINX_TIMEOUT_S}
CONFIG proxy.config.http.transaction_no_activity_timeout_out INT {NGINX_TIMEOUT_S}
CONFIG proxy.config.body_factory.template_sets_dir STRING {root}/etc/trafficserver/body_factory
",
        port = listen.port(),
        v6 = if listen.is_ipv6() { ":ipv6" } else { "" },
        ssl = if tls.is_some() { ":ssl" } else { "" },
        ip = match listen {
            SocketAddr::V4(a) => a.ip().to_string(),
            SocketAddr::V6(a) => format!("[{}]", a.ip()),
        },
        root = root.to_string_lossy().trim_end_matches('/'),
    );
    if buffering {
        records.push_str(&format!(
            "CONFIG proxy.config.http.default_buffer_water_mark INT {BUFFER}\n"
        ));
    }
    if buffer_requests {
        records.push_str(&format!(
            "CONFIG proxy.config.http.request_buffer_enabled INT 1\nCONFIG proxy.config.http.post_copy_size INT {BUFFER}\n"
        ));
    }
    let loopback = if listen.is_ipv6() {
        "::1"
    } else {
        "127.0.0.0/8"
    };
    let mut f = vec![
        ("records.config", records),
        ("remap.config", format!("map / http://{upstream}/\n")),
        (
            "ip_allow.yaml",
            format!(
                "ip_allow:\n  - apply: in\n    ip_addrs: {loopback}\n    action: allow\n    methods: ALL\n"
            ),
        ),
    ];
    for empty in [
        "storage.config",
        "cache.config",
        "parent.config",
        "plugin.config",
        "volume.config",
    ] {
        f.push((empty, String::new()));
    }
    f.push((
        "ssl_multicert.config",
        tls.map_or(String::new(), |t| {
            format!(
                "dest_ip=* ssl_cert_name={} ssl_key_name={}\n",
                t.cert.display(),
                t.key.display()
            )
        }),
    ));
    f
}

/// The runroot that relocates Traffic Server: its programs and libraries
/// under `root`, its config in `conf`, its runtime files in `state`.
pub fn runroot(root: &Path, conf: &Path, state: &Path) -> String {
    let r = root.to_string_lossy();
    let r = r.trim_end_matches('/');
    let s = state.display();
    format!(
        "prefix: {r}/usr
exec_prefix: {r}/usr
bindir: {r}/usr/bin
sbindir: {r}/usr/sbin
sysconfdir: {conf}
datadir: {r}/usr/share/trafficserver
includedir: {r}/usr/include
libdir: {r}/usr/lib/trafficserver
libexecdir: {r}/usr/lib/trafficserver/modules
localstatedir: {s}
runtimedir: {s}
logdir: {s}
cachedir: {s}
",
        conf = conf.display(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_is_pinned() {
        let f = files(
            "127.0.0.1:8080".parse().unwrap(),
            "127.0.0.1:9000".parse().unwrap(),
            Path::new("/p"),
            false,
            false,
            None,
        );
        let names: Vec<&str> = f.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            [
                "records.config",
                "remap.config",
                "ip_allow.yaml",
                "storage.config",
                "cache.config",
                "parent.config",
                "plugin.config",
                "volume.config",
                "ssl_multicert.config"
            ]
        );
        assert_eq!(
            f[0].1,
            "CONFIG proxy.config.http.server_ports STRING 8080:ip-in=127.0.0.1\nCONFIG proxy.config.reverse_proxy.enabled INT 1\nCONFIG proxy.config.url_remap.remap_required INT 1\nCONFIG proxy.config.http.cache.http INT 0\nCONFIG proxy.config.exec_thread.autoconfig INT 0\nCONFIG proxy.config.exec_thread.limit INT 1\nCONFIG proxy.config.admin.user_id STRING #-1\nCONFIG proxy.config.crash_log_helper STRING /bin/true\nCONFIG proxy.config.diags.logfile.filename STRING stderr\nCONFIG proxy.config.log.logging_enabled INT 0\nCONFIG proxy.config.http.transaction_no_activity_timeout_in INT 60\nCONFIG proxy.config.http.transaction_no_activity_timeout_out INT 60\nCONFIG proxy.config.body_factory.template_sets_dir STRING /p/etc/trafficserver/body_factory\n"
        );
        assert_eq!(f[1].1, "map / http://127.0.0.1:9000/\n");
        assert!(f[2].1.contains("ip_addrs: 127.0.0.0/8\n"), "{}", f[2].1);
        assert!(f[3..].iter().all(|(_, c)| c.is_empty()));
        let both = files(
            "[::1]:8080".parse().unwrap(),
            "[::1]:9000".parse().unwrap(),
            Path::new("/"),
            true,
            true,
            None,
        );
        let records = &both[0].1;
        assert!(
            records.contains("server_ports STRING 8080:ipv6:ip-in=[::1]\n")
                && records.contains("STRING /etc/trafficserver/body_factory\n")
                && records.ends_with("CONFIG proxy.config.http.default_buffer_water_mark INT 33554432\nCONFIG proxy.config.http.request_buffer_enabled INT 1\nCONFIG proxy.config.http.post_copy_size INT 33554432\n"),
            "{records}"
        );
        assert_eq!(both[1].1, "map / http://[::1]:9000/\n");
        assert_eq!(
            runroot(Path::new("/p"), Path::new("/c"), Path::new("/s")),
            "prefix: /p/usr\nexec_prefix: /p/usr\nbindir: /p/usr/bin\nsbindir: /p/usr/sbin\nsysconfdir: /c\ndatadir: /p/usr/share/trafficserver\nincludedir: /p/usr/include\nlibdir: /p/usr/lib/trafficserver\nlibexecdir: /p/usr/lib/trafficserver/modules\nlocalstatedir: /s\nruntimedir: /s\nlogdir: /s\ncachedir: /s\n"
        );
    }

    #[test]
    fn at_an_h2_edge_the_port_is_ssl_with_the_run_s_certificate() {
        let f = files(
            "127.0.0.1:8443".parse().unwrap(),
            "127.0.0.1:9000".parse().unwrap(),
            Path::new("/p"),
            false,
            false,
            Some(TlsListen {
                cert: Path::new("/s/tls/cert.pem"),
                key: Path::new("/s/tls/key.pem"),
                http2: true,
            }),
        );
        assert!(
            f[0].1.starts_with(
                "CONFIG proxy.config.http.server_ports STRING 8443:ssl:ip-in=127.0.0.1\n"
            ),
            "{}",
            f[0].1
        );
        let multicert = f
            .iter()
            .find(|(n, _)| *n == "ssl_multicert.config")
            .unwrap();
        assert_eq!(
            multicert.1,
            "dest_ip=* ssl_cert_name=/s/tls/cert.pem ssl_key_name=/s/tls/key.pem\n"
        );
    }
}
