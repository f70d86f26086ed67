//! What one proxy instance needs, checked the way NGINX checks its
//! `proxy_buffer*` directives.
//!
//! The checks are NGINX's own (ngx_http_proxy_module's merge of the location
//! configuration). They are not pedantry: [`crate::spool`] relies on
//! `busy_buffers_size <= (count - 1) * size` to prove that the client side can
//! always page data back from the temp file when memory is full.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use common::units::Size;

/// NGINX's `proxy_buffering`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Buffering {
    On,
    Off,
}

impl Buffering {
    /// The name used on the command line and in the stats log.
    pub fn name(self) -> &'static str {
        match self {
            Buffering::On => "on",
            Buffering::Off => "off",
        }
    }
}

/// The memory and temp-file limits of one response (NGINX's directives).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferConfig {
    /// `proxy_buffer_size`: the response head and the first part of the body;
    /// with buffering off, the only buffer.
    pub buffer_size: usize,
    /// `proxy_buffers` count.
    pub buffers: usize,
    /// `proxy_buffers` size: one upstream read goes into one such buffer.
    pub buffer_bytes: usize,
    /// `proxy_busy_buffers_size`: the most the client side holds at once.
    pub busy_buffers_size: usize,
    /// `proxy_max_temp_file_size`: bytes written to the temp file per
    /// response; 0 disables spilling.
    pub max_temp_file_size: u64,
    /// `proxy_temp_file_write_size`: bytes per write to the temp file.
    pub temp_file_write_size: usize,
    /// `proxy_temp_path`.
    pub temp_path: PathBuf,
}

impl BufferConfig {
    /// The experiment's NGINX values, with the temp file in `temp_path`.
    pub fn experiment(temp_path: PathBuf) -> Self {
        BufferConfig {
            buffer_size: 16 * 1024,
            buffers: 4,
            buffer_bytes: 16 * 1024,
            busy_buffers_size: 32 * 1024,
            max_temp_file_size: 32 << 20,
            temp_file_write_size: 64 * 1024,
            temp_path,
        }
    }

    /// All memory one buffered response may hold: the first buffer plus
    /// `count x size`.
    pub fn memory_limit(&self) -> usize {
        self.buffer_size + self.buffers * self.buffer_bytes
    }

    /// Applies NGINX's consistency rules; the messages name our flags.
    pub fn validate(&self) -> anyhow::Result<()> {
        ensure!(
            self.buffer_size > 0,
            "--buffer-size must be at least 1 byte"
        );
        ensure!(
            self.buffers >= 2,
            "--buffers needs at least 2 buffers, as in NGINX"
        );
        ensure!(
            self.buffer_bytes > 0,
            "--buffers size must be at least 1 byte"
        );
        let largest = self.buffer_size.max(self.buffer_bytes);
        ensure!(
            self.busy_buffers_size >= largest,
            "--busy-buffers-size must be at least the larger of --buffer-size and one of --buffers"
        );
        ensure!(
            self.busy_buffers_size <= (self.buffers - 1) * self.buffer_bytes,
            "--busy-buffers-size must not exceed all --buffers minus one buffer"
        );
        ensure!(
            self.temp_file_write_size >= largest,
            "--temp-file-write-size must be at least the larger of --buffer-size and one of --buffers"
        );
        ensure!(
            self.max_temp_file_size == 0 || self.max_temp_file_size >= largest as u64,
            "--max-temp-file-size must be 0 or at least the larger of --buffer-size and one of --buffers"
        );
        Ok(())
    }
}

/// Parses `--buffers` as `COUNTxSIZE` (`4x16k`); NGINX writes `4 16k`, which
/// is accepted too.
pub fn parse_buffers(s: &str) -> anyhow::Result<(usize, usize)> {
    let t = s.trim();
    let (count, size) = t
        .split_once(['x', 'X', ' '])
        .with_context(|| format!("--buffers `{s}` is not COUNTxSIZE, e.g. 4x16k"))?;
    let count: usize = count
        .trim()
        .parse()
        .with_context(|| format!("--buffers `{s}`: bad count"))?;
    let size: Size = size
        .trim()
        .parse()
        .with_context(|| format!("--buffers `{s}`: bad size"))?;
    Ok((count, size.as_usize()))
}

/// What the proxy does with a request before and while it talks to the
/// upstream: NGINX's `proxy_request_buffering` and `client_*` directives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestConfig {
    /// `proxy_request_buffering`: `On` reads the whole body before the
    /// upstream is connected; `Off` streams it as it arrives. A chunked
    /// body is read whole either way (NGINX does so for an HTTP/1.0
    /// upstream, which needs a `Content-Length`).
    pub buffering: Buffering,
    /// `client_body_buffer_size`: the body in memory; a longer one goes
    /// to the temp file.
    pub body_buffer_size: usize,
    /// `client_max_body_size`: a longer body is answered 413; 0 disables
    /// the check.
    pub max_body_size: u64,
    /// `client_header_timeout`: the whole request head must arrive within
    /// this time from the connection's accept, else the connection is
    /// closed without an answer.
    pub header_timeout: Duration,
    /// `client_body_timeout`: the longest wait between two reads of the
    /// body.
    pub body_timeout: Duration,
}

impl RequestConfig {
    /// NGINX's defaults: buffering on, `client_body_buffer_size 16k`
    /// (two pages on x86-64), `client_max_body_size 1m`, 60 s timeouts.
    pub fn nginx_defaults() -> Self {
        RequestConfig {
            buffering: Buffering::On,
            body_buffer_size: 16 * 1024,
            max_body_size: 1 << 20,
            header_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(60),
        }
    }

    /// Whether a body longer than `len` bytes is refused.
    pub fn too_large(&self, len: u64) -> bool {
        self.max_body_size != 0 && len > self.max_body_size
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        ensure!(
            self.body_buffer_size > 0,
            "--client-body-buffer-size must be at least 1 byte"
        );
        ensure!(
            !self.header_timeout.is_zero(),
            "--client-header-timeout must be positive"
        );
        ensure!(
            !self.body_timeout.is_zero(),
            "--client-body-timeout must be positive"
        );
        Ok(())
    }
}

/// Client connections kept open between requests: NGINX's
/// `keepalive_timeout`, `keepalive_requests` and `keepalive_time`, with
/// their defaults. A connection is kept only where the client asked for it
/// (HTTP/1.1 without `Connection: close`, or HTTP/1.0 with
/// `Connection: keep-alive`) and its response was delivered whole with a
/// known length; the upstream connection is never kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeepAlive {
    /// `keepalive_timeout`: how long an idle connection waits for the next
    /// request; zero turns keep-alive off.
    pub timeout: Duration,
    /// `keepalive_requests`: the most requests one connection serves; the
    /// last one's response says `Connection: close`.
    pub requests: u32,
    /// `keepalive_time`: a request that starts on a connection older than
    /// this is its last.
    pub time: Duration,
}

impl KeepAlive {
    /// NGINX 1.22's defaults: 75 s, 1000 requests, 1 h.
    pub fn nginx_defaults() -> Self {
        KeepAlive {
            timeout: Duration::from_secs(75),
            requests: 1000,
            time: Duration::from_secs(3600),
        }
    }

    /// Every connection closes after its first response.
    pub fn off() -> Self {
        KeepAlive {
            timeout: Duration::ZERO,
            ..KeepAlive::nginx_defaults()
        }
    }

    /// Whether the `nth` request (from 1) of a connection accepted `age`
    /// ago may leave the connection open for another one (NGINX decides
    /// this as the request starts: `ngx_http_update_location_config`).
    pub fn allows_another(&self, nth: u32, age: Duration) -> bool {
        !self.timeout.is_zero() && nth < self.requests && age <= self.time
    }
}

/// Everything a proxy instance needs; `slowlab proxy` builds it from its
/// flags, tests build it directly.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    pub listen: SocketAddr,
    pub upstream: SocketAddr,
    pub buffering: Buffering,
    pub buffers: BufferConfig,
    /// The request side; its body's temp file goes to
    /// `buffers.temp_path` too.
    pub request: RequestConfig,
    /// Client connections kept open between requests.
    pub keepalive: KeepAlive,
    /// `worker_connections` per thread: client and upstream connections
    /// held at once (the listening socket takes one).
    pub worker_connections: usize,
    /// Tokio worker threads (NGINX: worker processes).
    pub threads: usize,
    /// `proxy_read_timeout`, also used for connecting and sending the request.
    pub read_timeout: Duration,
    /// `send_timeout`: the longest a write to the client may stall.
    pub send_timeout: Duration,
    pub stats_log: Option<PathBuf>,
    pub gauge_log: Option<PathBuf>,
    pub gauge_interval: Duration,
    /// How long in-flight responses may go on after a stop request before
    /// they are cut.
    pub shutdown_grace: Duration,
    /// TLS (and HTTP/2) towards the clients (`--tls-cert`, `--tls-key`,
    /// `--http2`); none: cleartext HTTP/1.1, as NGINX's `listen` without
    /// `ssl`.
    pub tls: Option<crate::edge::TlsEdge>,
}

impl ProxyConfig {
    /// The experiment's values: listen on `127.0.0.1:0`, temp files in the
    /// system's temp directory; request bodies streamed as before request
    /// buffering existed, with NGINX's other request defaults.
    pub fn new(upstream: SocketAddr, buffering: Buffering) -> Self {
        ProxyConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            upstream,
            buffering,
            buffers: BufferConfig::experiment(std::env::temp_dir()),
            request: RequestConfig {
                buffering: Buffering::Off,
                ..RequestConfig::nginx_defaults()
            },
            keepalive: KeepAlive::nginx_defaults(),
            // The lab's nginx.conf (NGINX's own default is 512).
            worker_connections: 1024,
            threads: 1,
            read_timeout: Duration::from_secs(60),
            send_timeout: Duration::from_secs(60),
            stats_log: None,
            gauge_log: None,
            gauge_interval: Duration::from_millis(100),
            shutdown_grace: Duration::from_millis(500),
            tls: None,
        }
    }

    /// Checks what the types cannot.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.buffers.validate()?;
        self.request.validate()?;
        ensure!(self.threads >= 1, "--threads must be at least 1");
        ensure!(
            self.worker_connections >= 2,
            "--worker-connections must be at least 2: the listening socket takes one"
        );
        ensure!(
            self.keepalive.requests >= 1,
            "--keepalive-requests must be at least 1"
        );
        ensure!(
            !self.read_timeout.is_zero(),
            "--read-timeout must be positive"
        );
        ensure!(
            !self.send_timeout.is_zero(),
            "--send-timeout must be positive"
        );
        ensure!(
            !self.gauge_interval.is_zero(),
            "--gauge-interval must be positive"
        );
        let dir = &self.buffers.temp_path;
        ensure!(
            dir.is_dir(),
            "--temp-path {} is not a directory",
            dir.display()
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keepalive_ends_at_nginx_limits() {
        let k = KeepAlive::nginx_defaults();
        assert!(k.allows_another(1, Duration::ZERO));
        assert!(k.allows_another(999, Duration::from_secs(3600)));
        // keepalive_requests 1000: the 1000th response closes.
        assert!(!k.allows_another(1000, Duration::ZERO));
        assert!(!k.allows_another(1, Duration::from_secs(3601)));
        assert!(!KeepAlive::off().allows_another(1, Duration::ZERO));
    }

    #[test]
    fn buffers_parse_both_spellings() {
        assert_eq!(parse_buffers("4x16k").unwrap(), (4, 16384));
        assert_eq!(parse_buffers("8 4k").unwrap(), (8, 4096));
        assert!(parse_buffers("16k").is_err());
        assert!(parse_buffers("ax16k").is_err());
    }

    #[test]
    fn experiment_values_pass_nginx_rules() {
        let c = BufferConfig::experiment(std::env::temp_dir());
        c.validate().unwrap();
        assert_eq!(c.memory_limit(), 80 * 1024);
    }

    #[test]
    fn nginx_rules_refuse_inconsistent_buffers() {
        let base = BufferConfig::experiment(std::env::temp_dir());
        let too_busy = BufferConfig {
            busy_buffers_size: 64 * 1024,
            ..base.clone()
        };
        assert!(too_busy.validate().is_err());
        let small_write = BufferConfig {
            temp_file_write_size: 4096,
            ..base.clone()
        };
        assert!(small_write.validate().is_err());
        let tiny_cap = BufferConfig {
            max_temp_file_size: 100,
            ..base.clone()
        };
        assert!(tiny_cap.validate().is_err());
        let no_spill = BufferConfig {
            max_temp_file_size: 0,
            ..base.clone()
        };
        no_spill.validate().unwrap();
        let one_buffer = BufferConfig { buffers: 1, ..base };
        assert!(one_buffer.validate().is_err());
    }
}
