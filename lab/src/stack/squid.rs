//! The Squid 5.7 configuration of the `squid` routes: a reverse proxy
//! (`http_port ... accel`) with the app as its only parent
//! (`cache_peer ... originserver`, `never_direct allow all`), nothing
//! cached (`cache deny all`, no `cache_dir`), one process in the
//! foreground (`-N`), NGINX's 60 s timeouts in place of Squid's longer
//! ones, plus `read_ahead_gap 32 MB` on `squid-buf`. Cited from
//! `src/cf.data.pre` and the source of the tag SQUID_5_7:
//! - Squid reads from the upstream only while what it holds is less than
//!   `read_ahead_gap` (16 KB by default) beyond what the slowest client
//!   has taken (`MemObject::readAheadPolicyCanRead`, `src/MemObject.cc`:
//!   309-321; `src/http.cc`:1238-1247, 1643-1652): by default the app's
//!   handler waits for a slow reader;
//! - with a gap of at least the body, it reads the whole response off the
//!   upstream into memory (4 KB `mem_node` pages), not bounded by
//!   `cache_mem` ("Squid will exceed this limit", `cf.data.pre`:4050-4056)
//!   and never written to disk; `read_ahead_gap none` stops every read
//!   (`cache_cf.cc`:1204-1207), so the lab gives a size;
//! - a request body streams upstream through a 64 KB `BodyPipe` as it
//!   arrives (`src/http.cc`:2375-2411, `src/BodyPipe.h`:100): Squid has no
//!   setting that reads a whole body first.
//!
//! Squid refuses to run as root and drops to `cache_effective_user`
//! (`proxy`, in Debian's base system) before it opens its logs and pid
//! file (`src/main.cc`:1076-1081, 1642-1678): its state directory is the
//! proxy user's. Its helper programs and data are found in the package's
//! own tree, cache digests are off (else it asks the app for
//! `/squid-internal-periodic/store_digest` at start), and it exits at once
//! on SIGTERM (`shutdown_lifetime 0`, 30 s by default).

use std::net::SocketAddr;
use std::path::Path;

use super::NGINX_TIMEOUT_S;

/// `read_ahead_gap` of `squid-buf`: twice the experiment's 16 MiB
/// response, as NGINX's temp-file cap.
pub const READ_AHEAD_GAP: u64 = 32 << 20;

/// The user Squid drops root to.
pub const USER: &str = "proxy";

/// Renders the `squid.conf` of one run: listening on `listen`, its parent
/// `upstream`, the package's tree at `root` (`/` for the system's), its
/// logs and pid file in `state`, reading ahead a whole response when
/// `buffering`.
pub fn config(
    listen: SocketAddr,
    upstream: SocketAddr,
    root: &Path,
    state: &Path,
    buffering: bool,
) -> String {
    // "{r}/usr/...": the package's tree, or `/usr/...` for the system's.
    let r = root.to_string_lossy();
    let r = r.trim_end_matches('/');
    let s = state.display();
    let gap = if buffering {
        format!("read_ahead_gap {} MB\n", READ_AHEAD_GAP >> 20)
    } else {
        String::new()
    };
    let timeouts: String = [
        "read_timeout",
        "write_timeout",
        "request_timeout",
        "request_start_timeout",
        "connect_timeout",
        "peer_connect_timeout",
        "client_idle_pconn_timeout",
        "server_idle_pconn_timeout",
    ]
    .iter()
    .map(|t| format!("{t} {NGINX_TIMEOUT_S} seconds\n"))
    .collect();
    format!(
        "http_port {listen} accel defaultsite={listen} no-vhost
cache_peer {up_host} parent {up_port} 0 no-query no-digest originserver name=app
never_direct allow all
cache deny all
http_access allow all
workers 1
cache_mem 8 MB
{gap}pinger_enable off
digest_generation off
dns_nameservers 127.0.0.1
visible_hostname slowlab-squid
shutdown_lifetime 0 seconds
pinger_program {r}/usr/lib/squid/pinger
unlinkd_program {r}/usr/lib/squid/unlinkd
diskd_program {r}/usr/lib/squid/diskd
netdb_filename none
error_directory {r}/usr/share/squid/errors/en
err_page_stylesheet {r}/etc/squid/errorpage.css
mime_table {r}/usr/share/squid/mime.conf
icon_directory {r}/usr/share/squid/icons
cache_effective_user {USER}
pid_filename {s}/squid.pid
access_log none
cache_store_log none
cache_log {s}/cache.log
coredump_dir {s}
{timeouts}",
        up_host = upstream.ip(),
        up_port = upstream.port(),
    )
}

/// Its arguments: one process in the foreground (`-N`), the cache log's
/// important lines on standard error too (`-d 1`), the config at `conf`.
pub fn args(conf: &Path) -> Vec<String> {
    vec![
        "-N".into(),
        "-d".into(),
        "1".into(),
        "-f".into(),
        conf.to_string_lossy().into(),
    ]
}

/// The uid and gid of `user` in `passwd` (the text of `/etc/passwd`).
pub fn ids(passwd: &str, user: &str) -> Option<(u32, u32)> {
    passwd.lines().find_map(|l| {
        let mut f = l.split(':');
        (f.next()? == user).then_some(())?;
        let _password = f.next()?;
        Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_is_pinned() {
        let c = config(
            "127.0.0.1:8080".parse().unwrap(),
            "127.0.0.1:9000".parse().unwrap(),
            Path::new("/p"),
            Path::new("/s/squid"),
            false,
        );
        assert_eq!(
            c,
            "http_port 127.0.0.1:8080 accel defaultsite=127.0.0.1:8080 no-vhost\ncache_peer 127.0.0.1 parent 9000 0 no-query no-digest originserver name=app\nnever_direct allow all\ncache deny all\nhttp_access allow all\nworkers 1\ncache_mem 8 MB\npinger_enable off\ndigest_generation off\ndns_nameservers 127.0.0.1\nvisible_hostname slowlab-squid\nshutdown_lifetime 0 seconds\npinger_program /p/usr/lib/squid/pinger\nunlinkd_program /p/usr/lib/squid/unlinkd\ndiskd_program /p/usr/lib/squid/diskd\nnetdb_filename none\nerror_directory /p/usr/share/squid/errors/en\nerr_page_stylesheet /p/etc/squid/errorpage.css\nmime_table /p/usr/share/squid/mime.conf\nicon_directory /p/usr/share/squid/icons\ncache_effective_user proxy\npid_filename /s/squid/squid.pid\naccess_log none\ncache_store_log none\ncache_log /s/squid/cache.log\ncoredump_dir /s/squid\nread_timeout 60 seconds\nwrite_timeout 60 seconds\nrequest_timeout 60 seconds\nrequest_start_timeout 60 seconds\nconnect_timeout 60 seconds\npeer_connect_timeout 60 seconds\nclient_idle_pconn_timeout 60 seconds\nserver_idle_pconn_timeout 60 seconds\n"
        );
        let buffered = config(
            "[::1]:8080".parse().unwrap(),
            "[::1]:9000".parse().unwrap(),
            Path::new("/"),
            Path::new("/s"),
            true,
        );
        assert!(
            buffered.contains("cache_mem 8 MB\nread_ahead_gap 32 MB\npinger_enable off\n")
                && buffered.contains("http_port [::1]:8080 accel")
                && buffered.contains("cache_peer ::1 parent 9000 ")
                && buffered.contains("unlinkd_program /usr/lib/squid/unlinkd\n"),
            "{buffered}"
        );
        assert_eq!(
            args(Path::new("/l/squid.conf")).join(" "),
            "-N -d 1 -f /l/squid.conf"
        );
    }

    #[test]
    fn the_proxy_user_is_found_in_passwd() {
        let passwd =
            "root:x:0:0:root:/root:/bin/bash\nproxy:x:13:13:proxy:/bin:/usr/sbin/nologin\n";
        assert_eq!(ids(passwd, "proxy"), Some((13, 13)));
        assert_eq!(ids(passwd, "nobody"), None);
        assert_eq!(ids("proxy:x:zz:1:", "proxy"), None);
    }
}
