//! The Rust replica of the experiment's WSGI app (`/fast`, `/large`) on hyper.
//!
//! # Layout
//! - [`cli`]: `slowlab serve` arguments and its `run` entry point.

pub mod cli;

use std::net::SocketAddr;
use std::path::PathBuf;

pub use cli::{Model, ServeArgs, run};

/// Everything a server instance needs; `slowlab serve` builds it from its
/// flags, tests build it directly.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub model: Model,
    /// `None`: the model's default (sync 2, threads 4, async the core count).
    pub workers: Option<usize>,
    pub large_bytes: u64,
    pub chunk_bytes: usize,
    pub send_log: Option<PathBuf>,
}

impl ServerConfig {
    /// The experiment's values on `127.0.0.1:0` with the given model.
    pub fn new(model: Model, workers: Option<usize>) -> Self {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            model,
            workers,
            large_bytes: common::pattern::DEFAULT_TOTAL,
            chunk_bytes: common::pattern::DEFAULT_BLOCK,
            send_log: None,
        }
    }
}

/// A running server. Dropping it stops the server (within 2 s) and joins its
/// threads, so a failing test leaves nothing behind.
#[derive(Debug)]
pub struct ServerHandle {
    local_addr: SocketAddr,
}

impl ServerHandle {
    /// The address the server is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops the server and waits for its threads.
    pub fn shutdown(self) {}
}

/// Binds, starts the workers on their own threads and returns at once. Safe to
/// call from inside a tokio runtime: the server never uses the caller's.
pub fn spawn(config: ServerConfig) -> anyhow::Result<ServerHandle> {
    let _ = config;
    anyhow::bail!("server::spawn is not implemented yet")
}
