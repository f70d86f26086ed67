//! `threads`: one acceptor and a pool of N handlers, like Gunicorn's
//! `gthread` worker with one process.
//!
//! The acceptor accepts as fast as connections arrive and queues them; each
//! handler thread (its own current-thread runtime) takes one connection from
//! the queue, serves it to the end, and takes the next. With every handler
//! busy, accepted connections wait in the queue instead of the backlog.

use std::net::TcpListener as StdListener;
use std::net::TcpStream as StdStream;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use common::accept::{self, Accepted};
use tokio::io::unix::AsyncFd;
use tokio::sync::{Mutex, mpsc};
use tokio_util::sync::CancellationToken;

use super::{current_thread_runtime, register, spawn_thread};
use crate::app::App;
use crate::conn;
use crate::stream::LazyStream;

/// The handlers share one receiver; the one holding the lock is the idle
/// handler next in line.
type Queue = Arc<Mutex<mpsc::UnboundedReceiver<StdStream>>>;

/// Starts the acceptor and `workers` handler threads, pushing them to
/// `threads`.
pub fn start(
    listener: &StdListener,
    app: &Arc<App>,
    workers: usize,
    cancel: &CancellationToken,
    threads: &mut Vec<JoinHandle<()>>,
) -> anyhow::Result<()> {
    // Unbounded like gthread's queue: the acceptor never pushes back.
    let (tx, rx) = mpsc::unbounded_channel();
    let queue: Queue = Arc::new(Mutex::new(rx));
    for i in 0..workers {
        let runtime = current_thread_runtime()?;
        let (app, cancel, queue) = (app.clone(), cancel.clone(), queue.clone());
        threads.push(spawn_thread(format!("threads-{i}"), move || {
            runtime.block_on(handler(queue, app, cancel));
            runtime.finish(Duration::from_millis(100));
        })?);
    }
    let runtime = current_thread_runtime()?;
    let own = register(listener, &runtime)?;
    let cancel = cancel.clone();
    threads.push(spawn_thread("threads-accept".into(), move || {
        runtime.block_on(acceptor(own, tx, cancel));
        runtime.finish(Duration::from_millis(100));
    })?);
    Ok(())
}

async fn acceptor(
    listener: AsyncFd<StdListener>,
    queue: mpsc::UnboundedSender<StdStream>,
    cancel: CancellationToken,
) {
    let cancelled = cancel.cancelled();
    tokio::pin!(cancelled);
    // Registered with no runtime yet: the handler's adopts it if it has to
    // wait. Its first read is tried whatever the accept queue said: a
    // connection may wait in the handlers' queue until its request is there.
    while let Some(Accepted { stream, .. }) = accept::until(&listener, cancelled.as_mut()).await {
        if queue.send(stream).is_err() {
            return; // every handler has stopped
        }
    }
}

async fn handler(queue: Queue, app: Arc<App>, cancel: CancellationToken) {
    loop {
        let next = tokio::select! {
            biased;
            () = cancel.cancelled() => return,
            next = async { queue.lock().await.recv().await } => next,
        };
        let Some(stream) = next else {
            return; // the acceptor has stopped
        };
        conn::serve(
            LazyStream::new(stream),
            app.clone(),
            &cancel,
            Some(conn::HEADER_READ_TIMEOUT),
        )
        .await;
    }
}
