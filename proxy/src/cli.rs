//! `slowlab proxy`: the command-line contract.
//!
//! Prints exactly one line to stdout once the socket accepts connections,
//! `listening on <ip:port> (buffering on, ...)`, logs everything else through
//! `tracing` on stderr, and stops on SIGTERM or SIGINT.

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
}

impl ProxyArgs {
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
        a
    }

    /// Checks what clap cannot and names the flag at fault.
    pub fn to_config(&self) -> anyhow::Result<ProxyConfig> {
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
        };
        for args in [defaults, all] {
            assert_eq!(parse(args.to_args()), args);
        }
    }
}
