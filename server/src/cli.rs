//! `slowlab serve`: the command-line contract.

use std::net::SocketAddr;
use std::path::PathBuf;

use common::units::Size;

/// How connections are handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Model {
    /// N workers, each serving one connection at a time from accept to close.
    Sync,
    /// One acceptor and a pool of N handlers (like Gunicorn gthread).
    Threads,
    /// A tokio multi-thread runtime, one task per connection.
    Async,
}

/// Serve the replica of the experiment's app: `GET /fast` and `GET /large`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (IP:port); port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:8000")]
    pub listen: SocketAddr,
    /// Worker model.
    #[arg(long, value_enum, default_value = "sync")]
    pub model: Model,
    /// Workers (sync), handlers (threads) or runtime threads (async; default:
    /// the number of cores).
    #[arg(long)]
    pub workers: Option<usize>,
    /// Size of the /large body.
    #[arg(long, default_value = "16MiB")]
    pub large_bytes: Size,
    /// Size of each block written for /large.
    #[arg(long, default_value = "64KiB")]
    pub chunk_bytes: Size,
    /// Append one CSV row per /large response to this file.
    #[arg(long)]
    pub send_log: Option<PathBuf>,
}

/// Runs `slowlab serve` until SIGTERM or SIGINT.
pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let _ = args;
    anyhow::bail!("slowlab serve is not implemented yet")
}
