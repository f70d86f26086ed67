//! The Rust replica of the experiment's WSGI app (`/fast`, `/large`) on hyper.
//!
//! [`spawn`] binds, starts one of three worker models on threads of its own
//! and returns a [`ServerHandle`]; `slowlab serve` ([`run`]) wraps it with
//! signals and the ready line.
//!
//! # Layout
//! - [`cli`]: `slowlab serve` arguments and its `run` entry point.
//! - [`app`]: the routes and their exact responses.
//! - [`large`]: the `/large` body, one block at a time, paced by the kernel.
//! - [`meter`]: the IO wrapper that sees what the kernel accepted, and when.
//! - [`upload`]: `POST /upload`, the request body read and verified.
//! - [`send_log`], [`recv_log`]: the `--send-log` and `--recv-log` CSVs,
//!   both a [`log_file::LogFile`].
//! - [`conn`]: serving one connection with hyper; shutdown grace.
//! - [`listener`]: binding with Gunicorn's backlog (the accept itself, and
//!   what to do when it fails, is `common::accept`).
//! - [`stream`]: the accepted socket, registered with the runtime only once
//!   it has to wait (or, just accepted, at its first read).
//! - [`models`]: the `sync`, `threads` and `async` worker models.

pub mod app;
pub mod cli;
pub mod conn;
pub mod large;
pub mod listener;
pub mod log_file;
pub mod meter;
pub mod models;
pub mod recv_log;
pub mod send_log;
pub mod stream;
pub mod upload;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tokio_util::sync::CancellationToken;

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
    /// Where `POST /upload` rows go (see [`recv_log`]).
    pub recv_log: Option<PathBuf>,
    /// Sync model: how long a worker may stay on one connection before it
    /// is aborted (Gunicorn's `--timeout`); `None`: never.
    pub worker_timeout: Option<Duration>,
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
            recv_log: None,
            worker_timeout: Some(models::sync::GUNICORN_TIMEOUT),
        }
    }

    /// The worker count this configuration runs with.
    pub fn effective_workers(&self) -> usize {
        self.workers.unwrap_or(match self.model {
            Model::Sync => 2,
            Model::Threads => 4,
            Model::Async => std::thread::available_parallelism().map_or(1, |n| n.get()),
        })
    }
}

/// How long [`ServerHandle`] waits for its threads before giving up on them.
const JOIN_DEADLINE: Duration = Duration::from_secs(2);

/// A running server. Dropping it stops the server (within 2 s) and joins its
/// threads, so a failing test leaves nothing behind.
#[derive(Debug)]
pub struct ServerHandle {
    local_addr: SocketAddr,
    model: Model,
    workers: usize,
    cancel: CancellationToken,
    threads: Vec<JoinHandle<()>>,
}

impl ServerHandle {
    /// The address the server is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The worker model it runs.
    pub fn model(&self) -> Model {
        self.model
    }

    /// Workers (sync), handlers (threads) or runtime threads (async).
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Stops the server and waits for its threads.
    pub fn shutdown(self) {
        // `Drop` does the work, so that a handle that is merely dropped (a
        // failing test) stops the server just the same.
        drop(self);
    }

    fn stop(&mut self) {
        self.cancel.cancel();
        let deadline = Instant::now() + JOIN_DEADLINE;
        // Polled rather than joined outright, so that a thread that does not
        // stop cannot hang the caller (a test, or a signalled `serve`).
        while !self.threads.iter().all(JoinHandle::is_finished) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        for thread in self.threads.drain(..) {
            if !thread.is_finished() {
                let name = thread.thread().name().unwrap_or("?").to_string();
                tracing::error!(thread = %name, "thread did not stop in time; left running");
                continue;
            }
            if thread.join().is_err() {
                tracing::error!("a server thread panicked");
            }
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Binds, starts the workers on their own threads and returns at once. Safe to
/// call from inside a tokio runtime: the server never uses the caller's.
pub fn spawn(config: ServerConfig) -> anyhow::Result<ServerHandle> {
    let started = Instant::now();
    let workers = config.effective_workers();
    anyhow::ensure!(workers >= 1, "workers must be at least 1");
    anyhow::ensure!(
        config.chunk_bytes >= 1,
        "chunk size must be at least 1 byte"
    );
    let listener = listener::bind(config.listen)?;
    let local_addr = listener
        .local_addr()
        .context("cannot read the bound address")?;
    let app = Arc::new(app::App::new(&config, started)?);
    // Built before any thread starts, so that a failure half-way through
    // stops the threads already started (in `Drop`).
    let mut handle = ServerHandle {
        local_addr,
        model: config.model,
        workers,
        cancel: CancellationToken::new(),
        threads: Vec::new(),
    };
    let start = match config.model {
        Model::Sync => models::sync::start,
        Model::Threads => models::threads::start,
        Model::Async => models::tasks::start,
    };
    start(
        &listener,
        &app,
        workers,
        &handle.cancel,
        &mut handle.threads,
    )?;
    tracing::info!(addr = %local_addr, model = config.model.name(), workers, "serving");
    Ok(handle)
}
