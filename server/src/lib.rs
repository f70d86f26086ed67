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
//!
//! # Design
//!
//! The Rust replica of the WSGI app on hyper 1.x, with three worker models
//! (`models/sync.rs`, `threads.rs`, `tasks.rs`) and the `--send-log`. Knows
//! nothing about measurement files except its send log.
//! - `sync`: each worker is a thread with its own current-thread runtime and
//!   its own listener cloned from one socket; it accepts a connection and
//!   awaits it to the end before accepting again, so a write that the kernel
//!   will not take blocks the worker like Gunicorn's `sendall`. The accept is
//!   a blocking `accept4` outside the runtime (the kernel wakes one waiting
//!   worker per connection; epoll would wake every idle one), with a 50 ms
//!   receive timeout on the socket so that an idle worker sees the stop.
//!   `serve_or_abort` bounds a connection by `--worker-timeout` (Gunicorn's
//!   arbiter timeout): past it, the 500 Gunicorn's aborted worker writes
//!   (`ABORT_RESPONSE`) goes out on a second descriptor, without blocking, and
//!   the connection closes.
//! - `large.rs` yields block k+1 only after the socket wrapper (`meter.rs`)
//!   reports every earlier body byte accepted by the kernel, so at most one
//!   block sits between the app and the kernel; `meter.rs` also timestamps the
//!   write that completes the body, which is `app_send_s` (hyper's body stream
//!   ends while a block may still sit in hyper's buffer). Only `/large` needs
//!   the meter: it is armed (and `TCP_NODELAY` turned on) when a `/large` body
//!   starts, before its head is written; other responses leave in one write
//!   and cost the meter one atomic load.
//! - `async` with one worker runs tokio's current-thread scheduler on a thread
//!   named `async-0`; with more, the multi-thread scheduler.
//! - Every model accepts with one `accept4` (`common::accept`; the listener
//!   with Gunicorn's backlog is `listener.rs`; `sync` blocks in it, `threads`
//!   and `async` wait for it through an `AsyncFd`) and hands
//!   hyper a `stream.rs` `LazyStream`: a plain non-blocking socket that
//!   registers with the current runtime only when a read or write would
//!   block. A request in hand is read, answered and closed without
//!   `epoll_ctl` (tokio would add it and remove it again); a connection that
//!   waits is an ordinary tokio `TcpStream` from then on, so what blocks a
//!   worker is unchanged. After each connection the `AsyncFd` accept reads the
//!   listener's accept queue length (`TCP_INFO`, lockless for a listener) and
//!   waits for epoll when it is empty instead of trying `accept4` again: an
//!   `accept4` that finds nothing costs the kernel a socket and a file
//!   allocated and freed. When the queue was empty, `async` starts the
//!   connection `LazyStream::fresh` (`LazyStream::accepted` makes the
//!   choice): taken as its handshake completed, its
//!   request is most likely not sent yet, so its first read registers it and
//!   waits for epoll instead of finding nothing (an `EAGAIN` `recvfrom`).
//!   Each `async` connection task is boxed and shares the stop token through
//!   an `Arc`. The `threads` and `async` loops (and the proxy's) step with
//!   `accept::until`, holding one wait for their stop signal throughout.

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
