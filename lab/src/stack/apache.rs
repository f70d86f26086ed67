//! The Apache httpd 2.4 configuration of the `apache` routes: the event
//! MPM with one child process (`ServerLimit 1`, `StartServers 1`, as
//! NGINX's one worker) of 25 threads (`ThreadsPerChild`, its default), in
//! the foreground (`-D FOREGROUND`), `mod_proxy_http` passing every path
//! to the app, NGINX's 60 s timeouts (`Timeout`, which `ProxyTimeout`
//! takes by default), its error log on standard error and its pid file
//! and runtime files in the run's scratch; it drops root to `www-data`
//! (Debian's base system has that user). The modules are loaded from the
//! package's own directory, by absolute path: the lab writes the whole
//! configuration and needs nothing of `/etc/apache2`. What the settings
//! do (`Route::Apache` cites the source):
//! - by default the core output filter writes blocking once more than
//!   `FlushMaxThreshold` (65,535 bytes) of a response waits for the
//!   client, so the proxy's thread, its upstream connection and the app's
//!   handler wait for a slow reader;
//! - `apache-buf` raises `FlushMaxThreshold` to 32 MiB: up to that much
//!   of a response is set aside in memory, and the upstream is read on;
//! - a request body with a Content-Length streams upstream once its
//!   first 16 KiB are read; `apache-reqbuf` puts `mod_buffer`'s input
//!   filter, which changes nothing, in its way (`SetInputFilter BUFFER`),
//!   and `mod_proxy_http`, no longer trusting the length, spools the whole
//!   body to a temp file under `TMPDIR` before it connects upstream; the
//!   child that serves, `www-data`, must be able to write there.
//!
//! At an HTTP/2 edge (`apache-h2`, `apache-h2-buf`) `mod_ssl` terminates
//! TLS with the run's certificate (read by the root parent before it
//! drops to `www-data`) and `mod_http2` speaks HTTP/2 (`Protocols h2
//! http/1.1`): each stream is served on a secondary connection by one of
//! its workers, and `mod_proxy_http` proxies it as on the cleartext routes.

use std::net::SocketAddr;
use std::path::Path;

use catalogue::ProxyKind;

use super::NGINX_TIMEOUT_S;
use super::edge::TlsListen;

/// Renders the `httpd.conf` of one run: listening on `listen`, proxying
/// to `upstream`, the modules from `modules`, its runtime files in
/// `scratch`, the output filter's threshold raised when `buffering`, a
/// filter on request bodies when `buffer_requests`.
pub fn config(
    listen: SocketAddr,
    upstream: SocketAddr,
    modules: &Path,
    scratch: &Path,
    buffering: bool,
    buffer_requests: bool,
    tls: Option<TlsListen<'_>>,
) -> String {
    let module =
        |name: &str, file: &str| format!("LoadModule {name} \"{}/{file}\"\n", modules.display());
    let mut tuning = String::new();
    if let Some(t) = tls {
        tuning.push_str(&module("ssl_module", "mod_ssl.so"));
        if t.http2 {
            tuning.push_str(&module("http2_module", "mod_http2.so"));
        }
        tuning.push_str(&format!(
            "SSLEngine on\nSSLCertificateFile \"{}\"\nSSLCertificateKeyFile \"{}\"\nProtocols {}\n",
            t.cert.display(),
            t.key.display(),
            t.alpn().join(" ")
        ));
    }
    if buffering {
        tuning.push_str(&format!(
            "FlushMaxThreshold {}\n",
            ProxyKind::APACHE_FLUSH_MAX
        ));
    }
    if buffer_requests {
        tuning.push_str(&module("buffer_module", "mod_buffer.so"));
        tuning.push_str("SetInputFilter BUFFER\n");
    }
    format!(
        "ServerRoot \"{scratch}\"
DefaultRuntimeDir \"{scratch}\"
PidFile \"{scratch}/httpd.pid\"
ServerName localhost
Listen {listen}
{mpm}{authz}{proxy}{proxy_http}User www-data
Group www-data
ErrorLog /dev/stderr
LogLevel warn
StartServers 1
ServerLimit 1
ThreadsPerChild 25
MaxRequestWorkers 25
Timeout {NGINX_TIMEOUT_S}
{tuning}ProxyPass \"/\" \"http://{upstream}/\"
",
        scratch = scratch.display(),
        mpm = module("mpm_event_module", "mod_mpm_event.so"),
        authz = module("authz_core_module", "mod_authz_core.so"),
        proxy = module("proxy_module", "mod_proxy.so"),
        proxy_http = module("proxy_http_module", "mod_proxy_http.so"),
    )
}

/// Its arguments: the configuration at `conf`, in the foreground.
pub fn args(conf: &Path) -> Vec<String> {
    vec![
        "-D".into(),
        "FOREGROUND".into(),
        "-f".into(),
        conf.to_string_lossy().into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_is_pinned() {
        let c = config(
            "127.0.0.1:8080".parse().unwrap(),
            "127.0.0.1:9000".parse().unwrap(),
            Path::new("/m"),
            Path::new("/s/apache"),
            false,
            false,
            None,
        );
        assert_eq!(
            c,
            "ServerRoot \"/s/apache\"\nDefaultRuntimeDir \"/s/apache\"\nPidFile \"/s/apache/httpd.pid\"\nServerName localhost\nListen 127.0.0.1:8080\nLoadModule mpm_event_module \"/m/mod_mpm_event.so\"\nLoadModule authz_core_module \"/m/mod_authz_core.so\"\nLoadModule proxy_module \"/m/mod_proxy.so\"\nLoadModule proxy_http_module \"/m/mod_proxy_http.so\"\nUser www-data\nGroup www-data\nErrorLog /dev/stderr\nLogLevel warn\nStartServers 1\nServerLimit 1\nThreadsPerChild 25\nMaxRequestWorkers 25\nTimeout 60\nProxyPass \"/\" \"http://127.0.0.1:9000/\"\n"
        );
        let buffered = config(
            "[::1]:8080".parse().unwrap(),
            "[::1]:9000".parse().unwrap(),
            Path::new("/m"),
            Path::new("/s"),
            true,
            false,
            None,
        );
        assert!(
            buffered.contains(
                "Timeout 60\nFlushMaxThreshold 33554432\nProxyPass \"/\" \"http://[::1]:9000/\"\n"
            ) && buffered.contains("Listen [::1]:8080\n"),
            "{buffered}"
        );
        let spooling = config(
            "127.0.0.1:8080".parse().unwrap(),
            "127.0.0.1:9000".parse().unwrap(),
            Path::new("/m"),
            Path::new("/s"),
            false,
            true,
            None,
        );
        assert!(
            spooling.contains("Timeout 60\nLoadModule buffer_module \"/m/mod_buffer.so\"\nSetInputFilter BUFFER\nProxyPass"),
            "{spooling}"
        );
        assert_eq!(
            args(Path::new("/l/httpd.conf")).join(" "),
            "-D FOREGROUND -f /l/httpd.conf"
        );
    }

    #[test]
    fn at_an_h2_edge_mod_ssl_and_mod_http2_terminate_it() {
        let c = config(
            "127.0.0.1:8443".parse().unwrap(),
            "127.0.0.1:9000".parse().unwrap(),
            Path::new("/m"),
            Path::new("/s"),
            true,
            false,
            Some(TlsListen {
                cert: Path::new("/s/tls/cert.pem"),
                key: Path::new("/s/tls/key.pem"),
                http2: true,
            }),
        );
        assert!(
            c.contains("Timeout 60\nLoadModule ssl_module \"/m/mod_ssl.so\"\nLoadModule http2_module \"/m/mod_http2.so\"\nSSLEngine on\nSSLCertificateFile \"/s/tls/cert.pem\"\nSSLCertificateKeyFile \"/s/tls/key.pem\"\nProtocols h2 http/1.1\nFlushMaxThreshold 33554432\n"),
            "{c}"
        );
    }
}
