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
use common::units::{Size, format_duration, parse_duration};
use tokio::signal::unix::{SignalKind, signal};

use crate::config::{BufferConfig, ProxyConfig, parse_buffers};

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
    /// proxy_buffer_size: the first part of the response.
    #[arg(long, default_value = "16k")]
    pub buffer_size: Size,
    /// proxy_buffers, as COUNTxSIZE.
    #[arg(long, default_value = "4x16k")]
    pub buffers: String,
    /// proxy_busy_buffers_size.
    #[arg(long, default_value = "32k")]
    pub busy_buffers_size: Size,
    /// proxy_max_temp_file_size per response; 0 disables spilling.
    #[arg(long, default_value = "32m")]
    pub max_temp_file_size: Size,
    /// proxy_temp_file_write_size.
    #[arg(long, default_value = "64k")]
    pub temp_file_write_size: Size,
    /// proxy_temp_path (default: the system's temp directory).
    #[arg(long)]
    pub temp_path: Option<PathBuf>,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// proxy_read_timeout.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub read_timeout: Duration,
    /// proxy_send_timeout.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub send_timeout: Duration,
    /// Append one CSV row per response to this file.
    #[arg(long)]
    pub stats_log: Option<PathBuf>,
    /// Append one CSV row per open response every --gauge-interval.
    #[arg(long)]
    pub gauge_log: Option<PathBuf>,
    /// Sampling interval of --gauge-log.
    #[arg(long, default_value = "100ms", value_parser = parse_duration)]
    pub gauge_interval: Duration,
    /// Allow --listen and --upstream addresses outside 127.0.0.0/8 and ::1.
    #[arg(long)]
    pub allow_remote: bool,
}

/// A `--listen` or `--upstream` address outside loopback without
/// `--allow-remote`: bad input (exit status 2), refused before any socket
/// exists.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "refusing --{flag} {addr}: it is outside 127.0.0.0/8 and ::1; pass --allow-remote if you really mean {meaning}"
)]
pub struct RemoteRefused {
    pub flag: &'static str,
    pub addr: SocketAddr,
    meaning: &'static str,
}

/// Whether `ip` is in 127.0.0.0/8 or is ::1 (also as an IPv4-mapped address).
fn is_loopback(ip: std::net::IpAddr) -> bool {
    ip.to_canonical().is_loopback()
}

impl ProxyArgs {
    /// The lab's loopback-only rule for both addresses, unless
    /// `--allow-remote`.
    pub fn check_loopback(&self) -> Result<(), RemoteRefused> {
        if self.allow_remote {
            return Ok(());
        }
        let checks = [
            (
                "listen",
                self.listen,
                "to accept connections from other hosts",
            ),
            ("upstream", self.upstream, "to proxy to that host"),
        ];
        match checks.into_iter().find(|(_, a, _)| !is_loopback(a.ip())) {
            Some((flag, addr, meaning)) => Err(RemoteRefused {
                flag,
                addr,
                meaning,
            }),
            None => Ok(()),
        }
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
        ];
        for (flag, path) in [
            ("--temp-path", temp_path),
            ("--stats-log", stats_log),
            ("--gauge-log", gauge_log),
        ] {
            if let Some(path) = path {
                a.extend([flag.into(), path.into()]);
            }
        }
        if *allow_remote {
            a.push("--allow-remote".into());
        }
        a
    }

    /// Checks what clap cannot and names the flag at fault.
    pub fn to_config(&self) -> anyhow::Result<ProxyConfig> {
        self.check_loopback()?;
        let (buffers, buffer_bytes) = parse_buffers(&self.buffers)?;
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
/// A refused address ends the process with status 2 (bad input) after one
/// `slowlab: ...` line on stderr, as a bad flag does; other errors are
/// returned.
pub fn run(args: ProxyArgs) -> anyhow::Result<()> {
    if let Err(refused) = args.check_loopback() {
        eprintln!("slowlab: {refused}");
        std::process::exit(2);
    }
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
        "buffering {}, buffers {}+{}x{}, max temp file {}, {} thread{}",
        config.buffering.name(),
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

            let allowed = parse_with(&["--listen", listen, "--upstream", upstream, "--allow-remote"]);
            assert!(allowed.allow_remote);
            assert_eq!(allowed.check_loopback(), Ok(()));
            // Parsed and checked, never started: no socket is made here.
            let config = allowed.to_config().expect("accepted with --allow-remote");
            assert_eq!(config.upstream, upstream.parse().unwrap());
            assert_eq!(config.listen, listen.parse().unwrap());
        }
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
        };
        for args in [defaults, all] {
            assert_eq!(parse(args.to_args()), args);
        }
    }
}
