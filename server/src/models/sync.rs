//! `sync`: N workers, each serving one connection at a time from accept to
//! close, like Gunicorn's sync worker processes.
//!
//! Each worker is a thread with its own current-thread runtime and its own
//! tokio listener on a clone of the one listening socket. A worker calls
//! `accept` only between connections, and awaits the whole connection
//! (including every block of a `/large` body) before accepting again. While
//! the kernel does not take the next block, the only future of that runtime
//! is pending, so the worker is blocked just as a `sendall` would block it.
//! With every worker busy nobody accepts, and new connections wait in the
//! kernel's listen backlog.

use std::net::TcpListener as StdListener;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context as _;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::{current_thread_runtime, spawn_thread};
use crate::app::App;
use crate::{conn, listener};

/// Starts `workers` worker threads on `listener`, pushing them to `threads`.
pub fn start(
    listener: &StdListener,
    app: &Arc<App>,
    workers: usize,
    cancel: &CancellationToken,
    threads: &mut Vec<JoinHandle<()>>,
) -> anyhow::Result<()> {
    for i in 0..workers {
        let runtime = current_thread_runtime()?;
        let own = listener.try_clone().context("cannot clone the listener")?;
        let own = {
            // Registers the socket with this worker's runtime, not the caller's.
            let _enter = runtime.get().enter();
            TcpListener::from_std(own).context("cannot register the listener")?
        };
        let (app, cancel) = (app.clone(), cancel.clone());
        threads.push(spawn_thread(format!("sync-{i}"), move || {
            runtime.block_on(worker(own, app, cancel));
            runtime.finish(Duration::from_millis(100));
        })?);
    }
    Ok(())
}

async fn worker(listener: TcpListener, app: Arc<App>, cancel: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            biased;
            () = cancel.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            // Not spawned: the worker does nothing else until it is closed.
            Ok((stream, _)) => conn::serve(stream, app.clone(), &cancel).await,
            Err(err) => listener::after_accept_error(&err).await,
        }
    }
}
