//! `async`: a tokio runtime with `workers` threads and one task per
//! connection. A slow download is a pending task that costs no thread, so
//! `/fast` is answered while any number of downloads wait.
//!
//! With one worker the runtime is tokio's current-thread scheduler on a
//! thread named `async-0`: the same single thread running every connection
//! task, without the multi-thread scheduler's work-stealing bookkeeping,
//! which one thread has no use for.

use std::net::TcpListener as StdListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context as _;
use common::accept;
use tokio::io::unix::AsyncFd;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{OwnRuntime, current_thread_runtime, register, spawn_thread};
use crate::app::App;
use crate::conn;
use crate::stream::LazyStream;

/// Starts the runtime and the thread that drives its accept loop, pushing it
/// to `threads`; the runtime's own threads are stopped by that thread.
pub fn start(
    listener: &StdListener,
    app: &Arc<App>,
    workers: usize,
    cancel: &CancellationToken,
    threads: &mut Vec<JoinHandle<()>>,
) -> anyhow::Result<()> {
    if workers == 1 {
        let runtime = current_thread_runtime()?;
        let own = register(listener, &runtime)?;
        let (app, cancel) = (app.clone(), cancel.clone());
        threads.push(spawn_thread("async-0".into(), move || {
            runtime.block_on(acceptor(own, app, cancel));
            runtime.finish(Duration::from_millis(200));
        })?);
        return Ok(());
    }
    let counter = AtomicUsize::new(0);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name_fn(move || format!("async-{}", counter.fetch_add(1, Ordering::Relaxed)))
        .enable_all()
        .build()
        .map(OwnRuntime::new)
        .context("cannot build the tokio runtime")?;
    let own = register(listener, &runtime)?;
    let (app, cancel) = (app.clone(), cancel.clone());
    threads.push(spawn_thread("async-accept".into(), move || {
        // The accept loop runs as a task on a runtime thread, so each
        // connection task it spawns lands in that thread's own queue and
        // starts without waking another thread.
        let accept = runtime.get().spawn(acceptor(own, app, cancel));
        if let Err(err) = runtime.block_on(accept) {
            tracing::error!(cause = %err, "accept loop failed");
        }
        // The tasks have stopped or were aborted; whatever is left (a
        // blocking call) must not hold up the stop.
        runtime.finish(Duration::from_millis(200));
    })?);
    Ok(())
}

async fn acceptor(listener: AsyncFd<StdListener>, app: Arc<App>, cancel: CancellationToken) {
    // Shared by reference count: a token's own clone locks its tree node,
    // once to clone and once to drop, for every connection.
    let cancel = Arc::new(cancel);
    // Every connection task holds a clone; recv() returns None once all are
    // gone (mini-redis's shutdown pattern). Unlike a JoinSet, nothing is
    // locked or woken here when a connection ends.
    let (alive_tx, mut alive_rx) = mpsc::channel::<()>(1);
    let cancelled = cancel.cancelled();
    tokio::pin!(cancelled);
    while let Some(accepted) = accept::until(&listener, cancelled.as_mut()).await {
        let (app, cancel, alive) = (app.clone(), Arc::clone(&cancel), alive_tx.clone());
        // Boxed, as the proxy's are: the task holds a pointer, not the
        // connection's state, which tokio would otherwise copy into the task
        // at spawn and over again as it finishes.
        tokio::spawn(Box::pin(async move {
            let _alive = alive;
            let stream = LazyStream::accepted(accepted);
            conn::serve(stream, app, &cancel, Some(conn::HEADER_READ_TIMEOUT)).await;
        }));
    }
    drop(alive_tx);
    // Every connection sees the same token and ends within the grace period;
    // the margin covers scheduling on a loaded machine. Whatever is left is
    // dropped with the runtime, which closes its sockets.
    let drain = alive_rx.recv();
    if tokio::time::timeout(conn::SHUTDOWN_GRACE + Duration::from_millis(300), drain)
        .await
        .is_err()
    {
        tracing::warn!("connections still open at shutdown are cut");
    }
}
