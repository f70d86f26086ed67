//! `slowlab proxy`: the command-line contract.
//!
//! Prints exactly one line to stdout once the socket accepts connections,
//! `listening on <ip:port> (buffering on, ...)`, logs everything else through
//! `tracing` on stderr, and stops on SIGTERM or SIGINT. Addresses outside
//! loopback are refused (exit status 2) unless `--allow-remote`.

use std::ffi::OsString;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use common::bounds::{MAX_DURATION, MAX_THREADS, duration_in, int_in, size_in};
use common::exit::BadInput;
use common::loopback;
use common::units::{Size, format_duration};
use tokio::signal::unix::{SignalKind, signal};

use crate::config::{BufferConfig, KeepAlive, ProxyConfig, RequestConfig, parse_buffers};

pub use crate::config::Buffering;

/// Reverse-proxy HTTP/1.1 to one upstream, buffering like NGINX.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct ProxyArgs {
    /// Address to listen on (IP:port); port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// The upstream server (IP:port).
    #[arg(long)]
    pub upstream: SocketAddr,
    /// proxy_buffering.
    #[arg(long, value_enum)]
    pub buffering: Buffering,
    /// proxy_buffer_size: the first part of the response (1 to 64MiB).
    #[arg(long, default_value = "16k", value_parser = size_in(1, MAX_BUFFER_BYTES))]
    pub buffer_size: Size,
    /// proxy_buffers, as COUNTxSIZE (2 to 1024 buffers of 1 to 64MiB, at
    /// most 1GiB with --buffer-size).
    #[arg(long, default_value = "4x16k")]
    pub buffers: String,
    /// proxy_busy_buffers_size (1 to 64MiB).
    #[arg(long, default_value = "32k", value_parser = size_in(1, MAX_BUFFER_BYTES))]
    pub busy_buffers_size: Size,
    /// proxy_max_temp_file_size per response; 0 disables spilling.
    #[arg(long, default_value = "32m")]
    pub max_temp_file_size: Size,
    /// proxy_temp_file_write_size (1 to 64MiB).
    #[arg(long, default_value = "64k", value_parser = size_in(1, MAX_BUFFER_BYTES))]
    pub temp_file_write_size: Size,
    /// proxy_temp_path (default: the system's temp directory).
    #[arg(long)]
    pub temp_path: Option<PathBuf>,
    /// Worker threads (1 to 1024).
    #[arg(long, default_value_t = 1, value_parser = int_in(1, MAX_THREADS))]
    pub threads: usize,
    /// proxy_read_timeout (1ms to 1day).
    #[arg(long, default_value = "60s", value_parser = duration_in(Duration::from_millis(1), MAX_DURATION))]
    pub read_timeout: Duration,
    /// proxy_send_timeout (1ms to 1day).
    #[arg(long, default_value = "60s", value_parser = duration_in(Duration::from_millis(1), MAX_DURATION))]
    pub send_timeout: Duration,
    /// Append one CSV row per response to this file.
    #[arg(long)]
    pub stats_log: Option<PathBuf>,
    /// Append one CSV row per open response every --gauge-interval.
    #[arg(long)]
    pub gauge_log: Option<PathBuf>,
    /// Sampling interval of --gauge-log (1ms to 1day).
    #[arg(long, default_value = "100ms", value_parser = duration_in(Duration::from_millis(1), MAX_DURATION))]
    pub gauge_interval: Duration,
    /// Allow --listen and --upstream addresses outside 127.0.0.0/8 and ::1.
    #[arg(long)]
    pub allow_remote: bool,
    /// proxy_request_buffering: `on` reads the whole request body before
    /// connecting upstream; `off` (the default here, unlike NGINX's) streams
    /// it. A chunked body is read whole either way.
    #[arg(long, value_enum, default_value = "off")]
    pub request_buffering: Buffering,
    /// client_body_buffer_size: the request body in memory, beyond it a
    /// temp file (1 to 64MiB).
    #[arg(long, default_value = "16k", value_parser = size_in(1, MAX_BUFFER_BYTES))]
    pub client_body_buffer_size: Size,
    /// client_max_body_size: longer request bodies get 413; 0 disables the
    /// check (0 to 1024GiB).
    #[arg(long, default_value = "1m", value_parser = size_in(0, MAX_BODY_BYTES))]
    pub client_max_body_size: Size,
    /// client_header_timeout: the whole request head within this time of
    /// the accept, else the connection is closed (1ms to 1day).
    #[arg(long, default_value = "60s", value_parser = duration_in(Duration::from_millis(1), MAX_DURATION))]
    pub client_header_timeout: Duration,
    /// client_body_timeout: the longest wait between two request body
    /// reads (1ms to 1day).
    #[arg(long, default_value = "60s", value_parser = duration_in(Duration::from_millis(1), MAX_DURATION))]
    pub client_body_timeout: Duration,
    /// keepalive_timeout: how long a client connection waits idle for its
    /// next request; 0 closes every connection after its response (0 to
    /// 1day).
    #[arg(long, default_value = "75s", value_parser = duration_in(Duration::ZERO, MAX_DURATION))]
    pub keepalive_timeout: Duration,
    /// keepalive_requests: the most requests one client connection serves
    /// (1 to 1000000).
    #[arg(long, default_value_t = 1000, value_parser = int_in(1, MAX_KEEPALIVE_REQUESTS))]
    pub keepalive_requests: u32,
    /// keepalive_time: a request that starts on a connection older than
    /// this is its last (1ms to 1day).
    #[arg(long, default_value = "1h", value_parser = duration_in(Duration::from_millis(1), MAX_DURATION))]
    pub keepalive_time: Duration,
    /// worker_connections: client and upstream connections held at once
    /// per thread, the listening socket's included; beyond it idle
    /// kept-open connections are closed, then new clients (2 to 1000000).
    #[arg(long, default_value_t = 1024, value_parser = int_in(2, MAX_WORKER_CONNECTIONS))]
    pub worker_connections: usize,
    /// Terminate TLS towards the clients with this certificate chain (PEM;
    /// with --tls-key), as NGINX's `listen ... ssl`.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Offer HTTP/2 in ALPN (needs --tls-cert), as NGINX's `listen ... ssl
    /// http2`: each stream is proxied as its own request to the HTTP/1.0
    /// upstream, with the same buffering.
    #[arg(long, requires = "tls_cert")]
    pub http2: bool,
}

pub use common::loopback::RemoteRefused;

/// The largest `--buffer-size`, `--buffers` size, `--busy-buffers-size` and
/// `--temp-file-write-size`: each is memory a response may hold.
pub const MAX_BUFFER_BYTES: u64 = 64 << 20;
/// The most `--buffers`; with [`MAX_BUFFER_BYTES`] each, one response may
/// hold at most [`MAX_RESPONSE_MEMORY`].
pub const MAX_BUFFERS: usize = 1024;
/// The most memory `--buffer-size` plus all `--buffers` may hold per
/// response.
pub const MAX_RESPONSE_MEMORY: u64 = 1 << 30;
/// The most `--worker-connections`.
pub const MAX_WORKER_CONNECTIONS: usize = 1_000_000;
/// The most `--keepalive-requests`.
pub const MAX_KEEPALIVE_REQUESTS: u32 = 1_000_000;
/// The largest `--client-max-body-size`.
pub const MAX_BODY_BYTES: u64 = 1 << 40;

impl ProxyArgs {
    /// The lab's loopback-only rule for both addresses, unless
    /// `--allow-remote`.
    pub fn check_loopback(&self) -> Result<(), RemoteRefused> {
        loopback::check(
            self.allow_remote,
            [
                ("listen", self.listen, loopback::LISTEN_MEANING),
                ("upstream", self.upstream, "to proxy to that host"),
            ],
        )
    }

    /// The flags that parse back into these arguments, for a harness that
    /// starts `slowlab proxy`. Every field is named, so a field added or
    /// renamed here fails to compile until it is written too.
    pub fn to_args(&self) -> Vec<OsString> {
        let ProxyArgs {
            listen,
            upstream,
            buffering,
            buffer_size,
            buffers,
            busy_buffers_size,
            max_temp_file_size,
            temp_file_write_size,
            temp_path,
            threads,
            read_timeout,
            send_timeout,
            stats_log,
            gauge_log,
            gauge_interval,
            allow_remote,
            request_buffering,
            client_body_buffer_size,
            client_max_body_size,
            client_header_timeout,
            client_body_timeout,
            keepalive_timeout,
            keepalive_requests,
            keepalive_time,
            worker_connections,
            tls_cert,
            tls_key,
            http2,
        } = self;
        let mut a: Vec<OsString> = vec![
            "--listen".into(),
            listen.to_string().into(),
            "--upstream".into(),
            upstream.to_string().into(),
            "--buffering".into(),
            buffering.name().into(),
            "--buffer-size".into(),
            buffer_size.to_string().into(),
            "--buffers".into(),
            buffers.into(),
            "--busy-buffers-size".into(),
            busy_buffers_size.to_string().into(),
            "--max-temp-file-size".into(),
            max_temp_file_size.to_string().into(),
            "--temp-file-write-size".into(),
            temp_file_write_size.to_string().into(),
            "--threads".into(),
            threads.to_string().into(),
            "--read-timeout".into(),
            format_duration(*read_timeout).into(),
            "--send-timeout".into(),
            format_duration(*send_timeout).into(),
            "--gauge-interval".into(),
            format_duration(*gauge_interval).into(),
            "--request-buffering".into(),
            request_buffering.name().into(),
            "--client-body-buffer-size".into(),
            client_body_buffer_size.to_string().into(),
            "--client-max-body-size".into(),
            client_max_body_size.to_string().into(),
            "--client-header-timeout".into(),
            format_duration(*client_header_timeout).into(),
            "--client-body-timeout".into(),
            format_duration(*client_body_timeout).into(),
            "--keepalive-timeout".into(),
            format_duration(*keepalive_timeout).into(),
            "--keepalive-requests".into(),
            keepalive_requests.to_string().into(),
            "--keepalive-time".into(),
            format_duration(*keepalive_time).into(),
            "--worker-connections".into(),
            worker_connections.to_string().into(),
        ];
        for (flag, path) in [
            ("--temp-path", temp_path),
            ("--stats-log", stats_log),
            ("--gauge-log", gauge_log),
            ("--tls-cert", tls_cert),
            ("--tls-key", tls_key),
        ] {
            if let Some(path) = path {
                a.extend([flag.into(), path.into()]);
            }
        }
        if *allow_remote {
            a.push("--allow-remote".into());
        }
        if *http2 {
            a.push("--http2".into());
        }
        a
    }

    /// Checks what clap cannot and names the flag at fault; every error is
    /// [`BadInput`] (exit status 2), found before any socket exists.
    pub fn to_config(&self) -> anyhow::Result<ProxyConfig> {
        // A refusal stays typed for callers that match it; the binary maps
        // it to exit status 2 as it does `BadInput`.
        self.check_loopback()?;
        self.check()
            .map_err(|e| BadInput::new(format!("{e:#}")).into())
    }

    fn check(&self) -> anyhow::Result<ProxyConfig> {
        let (buffers, buffer_bytes) = parse_buffers(&self.buffers)?;
        anyhow::ensure!(
            buffers <= MAX_BUFFERS,
            "--buffers {}: at most {MAX_BUFFERS} buffers",
            self.buffers
        );
        anyhow::ensure!(
            (1..=MAX_BUFFER_BYTES).contains(&(buffer_bytes as u64)),
            "--buffers {}: each buffer must be from 1 to {}",
            self.buffers,
            Size(MAX_BUFFER_BYTES)
        );
        let memory = self.buffer_size.bytes() + (buffers as u64) * (buffer_bytes as u64);
        anyhow::ensure!(
            memory <= MAX_RESPONSE_MEMORY,
            "--buffer-size {} plus --buffers {} hold {} per response, more than {}",
            self.buffer_size,
            self.buffers,
            Size(memory),
            Size(MAX_RESPONSE_MEMORY)
        );
        let temp_path = self.temp_path.clone().unwrap_or_else(std::env::temp_dir);
        let config = ProxyConfig {
            listen: self.listen,
            upstream: self.upstream,
            buffering: self.buffering,
            buffers: BufferConfig {
                buffer_size: self.buffer_size.as_usize(),
                buffers,
                buffer_bytes,
                busy_buffers_size: self.busy_buffers_size.as_usize(),
                max_temp_file_size: self.max_temp_file_size.bytes(),
                temp_file_write_size: self.temp_file_write_size.as_usize(),
                temp_path,
            },
            request: RequestConfig {
                buffering: self.request_buffering,
                body_buffer_size: self.client_body_buffer_size.as_usize(),
                max_body_size: self.client_max_body_size.bytes(),
                header_timeout: self.client_header_timeout,
                body_timeout: self.client_body_timeout,
            },
            keepalive: KeepAlive {
                timeout: self.keepalive_timeout,
                requests: self.keepalive_requests,
                time: self.keepalive_time,
            },
            worker_connections: self.worker_connections,
            tls: match (&self.tls_cert, &self.tls_key) {
                (Some(cert), Some(key)) => Some(crate::edge::TlsEdge::new(cert, key, self.http2)?),
                _ => None,
            },
            threads: self.threads,
            read_timeout: self.read_timeout,
            send_timeout: self.send_timeout,
            stats_log: self.stats_log.clone(),
            gauge_log: self.gauge_log.clone(),
            gauge_interval: self.gauge_interval,
            ..ProxyConfig::new(self.upstream, self.buffering)
        };
        config.validate()?;
        Ok(config)
    }
}

/// Runs `slowlab proxy` until SIGTERM or SIGINT.
///
/// Bad input, a refused address included, is a [`BadInput`] error (exit
/// status 2, one `slowlab: ...` line on stderr, as a bad flag); other
/// errors are returned as they are.
pub fn run(args: ProxyArgs) -> anyhow::Result<()> {
    let config = args.to_config()?;
    // Signals are watched from this thread, on a runtime of their own, and
    // registered before the ready line so that a stop sent right after it
    // is never lost.
    let signals = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the signal runtime")?;
    let (mut term, mut int) = signals
        .block_on(async {
            Ok::<_, std::io::Error>((
                signal(SignalKind::terminate())?,
                signal(SignalKind::interrupt())?,
            ))
        })
        .context("installing signal handlers")?;
    let details = format!(
        "buffering {}, request buffering {}, buffers {}+{}x{}, max temp file {}, {} thread{}",
        config.buffering.name(),
        config.request.buffering.name(),
        Size(config.buffers.buffer_size as u64),
        config.buffers.buffers,
        Size(config.buffers.buffer_bytes as u64),
        Size(config.buffers.max_temp_file_size),
        config.threads,
        if config.threads == 1 { "" } else { "s" },
    );
    let handle = crate::server::spawn(config)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening on {} ({details})", handle.local_addr())
        .and_then(|()| out.flush())
        .context("writing the ready line")?;
    drop(out);
    let signal = signals.block_on(async {
        tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        }
    });
    tracing::info!(signal, "stopping");
    handle.shutdown();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        args: ProxyArgs,
    }

    fn parse(words: Vec<OsString>) -> ProxyArgs {
        Cmd::try_parse_from(std::iter::once(OsString::from("proxy")).chain(words))
            .expect("parses")
            .args
    }

    fn parse_with(args: &[&str]) -> ProxyArgs {
        let words = ["--buffering", "on"].iter().chain(args);
        parse(words.map(OsString::from).collect())
    }

    #[test]
    fn loopback_addresses_pass_and_others_need_allow_remote() {
        for (listen, upstream) in [
            ("127.0.0.1:0", "127.0.0.1:8000"),
            ("127.3.4.5:0", "[::1]:8000"),
            ("[::ffff:127.0.0.1]:0", "127.0.0.1:1"),
        ] {
            let args = parse_with(&["--listen", listen, "--upstream", upstream]);
            assert_eq!(args.check_loopback(), Ok(()), "{listen} {upstream}");
        }
        for (listen, upstream, flag) in [
            ("127.0.0.1:0", "10.1.2.3:80", "upstream"),
            ("0.0.0.0:8080", "127.0.0.1:8000", "listen"),
            ("[::]:8080", "127.0.0.1:8000", "listen"),
            ("127.0.0.1:0", "[2001:db8::1]:80", "upstream"),
            ("192.168.1.1:0", "8.8.8.8:80", "listen"),
        ] {
            let args = parse_with(&["--listen", listen, "--upstream", upstream]);
            let err = args.check_loopback().expect_err(upstream);
            assert_eq!(err.flag, flag, "{listen} {upstream}");
            let text = err.to_string();
            assert!(text.starts_with(&format!("refusing --{flag} ")), "{text}");
            assert!(text.contains("--allow-remote"), "{text}");
            let e = args.to_config().expect_err("to_config refuses too");
            assert!(e.downcast_ref::<RemoteRefused>().is_some(), "{e}");

            let allowed =
                parse_with(&["--listen", listen, "--upstream", upstream, "--allow-remote"]);
            assert!(allowed.allow_remote);
            assert_eq!(allowed.check_loopback(), Ok(()));
            // Parsed and checked, never started: no socket is made here.
            let config = allowed.to_config().expect("accepted with --allow-remote");
            assert_eq!(config.upstream, upstream.parse().unwrap());
            assert_eq!(config.listen, listen.parse().unwrap());
        }
    }

    fn try_parse(extra: &[&str]) -> Result<ProxyArgs, clap::Error> {
        let words = ["proxy", "--buffering", "on", "--upstream", "127.0.0.1:1"];
        Cmd::try_parse_from(words.iter().chain(extra)).map(|c| c.args)
    }

    #[test]
    fn every_number_has_a_range() {
        for (flag, ok, bad) in [
            ("--threads", "1024", "1025"),
            ("--threads", "1", "0"),
            ("--read-timeout", "24h", "99999999999999s"),
            ("--read-timeout", "1ms", "0s"),
            ("--send-timeout", "24h", "25h"),
            ("--gauge-interval", "1ms", "0s"),
            ("--buffer-size", "64MiB", "65MiB"),
            ("--busy-buffers-size", "1", "0"),
            ("--temp-file-write-size", "64MiB", "1GiB"),
            ("--client-body-buffer-size", "64MiB", "0"),
            ("--client-max-body-size", "1024GiB", "1025GiB"),
            ("--client-header-timeout", "1ms", "0s"),
            ("--client-body-timeout", "24h", "25h"),
            ("--keepalive-timeout", "0s", "25h"),
            ("--keepalive-requests", "1000000", "1000001"),
            ("--keepalive-requests", "1", "0"),
            ("--keepalive-time", "1ms", "0s"),
            ("--worker-connections", "2", "1"),
            ("--worker-connections", "1000000", "1000001"),
        ] {
            assert!(try_parse(&[flag, ok]).is_ok(), "{flag} {ok}");
            let err = try_parse(&[flag, bad]).expect_err(bad).to_string();
            assert!(err.contains(flag) && err.contains("from"), "{err}");
        }
        let err = try_parse(&["--threads", "100000"]).expect_err("too many");
        assert!(err.to_string().contains("1 to 1024"), "{err}");
        // --buffers is one string: its count, size and total are checked
        // in to_config, still before any socket or thread.
        for (buffers, needle) in [
            ("1025x16k", "at most 1024 buffers"),
            ("4x65m", "each buffer must be from 1 to 64MiB"),
            ("1000x64m", "more than 1GiB"),
        ] {
            let args = try_parse(&["--buffers", buffers]).expect("parses");
            let err = args.to_config().expect_err(buffers);
            assert!(err.is::<BadInput>(), "{err}");
            assert!(err.to_string().contains(needle), "{err}");
        }
        let fine = try_parse(&["--buffers", "1024x64k", "--busy-buffers-size", "64k"]);
        let fine = fine.expect("parses").to_config();
        assert!(fine.is_ok(), "{fine:?}");
    }

    #[test]
    fn to_args_parses_back_into_the_same_arguments() {
        let defaults = parse(vec![
            "--upstream".into(),
            "127.0.0.1:8000".into(),
            "--buffering".into(),
            "off".into(),
        ]);
        let all = ProxyArgs {
            listen: "127.0.0.1:0".parse().unwrap(),
            upstream: "127.0.0.1:8001".parse().unwrap(),
            buffering: Buffering::On,
            buffer_size: Size(16 << 10),
            buffers: "8x4KiB".into(),
            busy_buffers_size: Size(32 << 10),
            max_temp_file_size: Size(32 << 20),
            temp_file_write_size: Size(65537),
            temp_path: Some(PathBuf::from("/tmp/a run/proxy-temp")),
            threads: 3,
            read_timeout: Duration::from_millis(2500),
            send_timeout: Duration::from_secs(61),
            stats_log: Some(PathBuf::from("stats.csv")),
            gauge_log: Some(PathBuf::from("gauge.csv")),
            gauge_interval: Duration::from_micros(100_250),
            allow_remote: true,
            request_buffering: Buffering::On,
            client_body_buffer_size: Size(8 << 10),
            client_max_body_size: Size(0),
            client_header_timeout: Duration::from_millis(1500),
            client_body_timeout: Duration::from_secs(7),
            keepalive_timeout: Duration::ZERO,
            keepalive_requests: 7,
            keepalive_time: Duration::from_millis(90_500),
            worker_connections: 77,
            tls_cert: Some(PathBuf::from("/tmp/a run/cert.pem")),
            tls_key: Some(PathBuf::from("/tmp/a run/key.pem")),
            http2: true,
        };
        for args in [defaults, all] {
            assert_eq!(parse(args.to_args()), args);
        }
    }
}
