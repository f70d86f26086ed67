//! `slowlab proxy`: the command-line contract.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use common::units::{Size, parse_duration};

/// NGINX's `proxy_buffering`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Buffering {
    On,
    Off,
}

/// Reverse-proxy HTTP/1.1 to one upstream, buffering like NGINX.
#[derive(Debug, Clone, clap::Args)]
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
}

/// Runs `slowlab proxy` until SIGTERM or SIGINT.
pub fn run(args: ProxyArgs) -> anyhow::Result<()> {
    let _ = args;
    anyhow::bail!("slowlab proxy is not implemented yet")
}
