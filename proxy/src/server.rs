//! Runs a [`ProxyApp`] on its own tokio runtime: bind, accept, stop.
//!
//! We accept connections ourselves instead of using pingora's `Server` and
//! listening `Service`: those bind inside the runtime and panic when the port
//! is taken, cannot tell us the port picked for `:0`, install their own
//! signal handlers, exit the process from `run_forever`, and count shutdown
//! grace in whole seconds. The accept is `serve`'s, `common::accept` (one
//! `accept4` per connection, none that finds the queue empty, and the same
//! policy when it fails). Each accepted socket is registered with the
//! runtime at once as a tokio `TcpStream` (`from_std`, which starts with
//! no readiness: the first read waits for epoll, as NGINX's does, where
//! the stream of tokio's own accept tried the socket first and, under
//! wrk, often found nothing) and becomes a pingora [`Stream`]
//! (our [`ClientIo`]) and a pingora HTTP/1 `ServerSession`, served by
//! [`ProxyApp::serve_connection`].

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context as _;
use common::accept::{self, Accepted};
use pingora_core::protocols::Stream;
use tokio::sync::{mpsc, watch};

use crate::app::ProxyApp;
use crate::client::ClientIo;
use crate::config::ProxyConfig;
use crate::connlimit::Connections;
use crate::pipe::stopped;
use crate::stats::{GaugeLog, Gauges, STATS_FLUSH_EVERY, StatsLog};

/// The listen backlog: NGINX's on Linux (`NGX_LISTEN_BACKLOG`, 511). std's
/// `bind` listens with 128, and under a CPU cap the accept queue overflows
/// (SYNs dropped, clients retrying after 1 s) at a lower rate than NGINX's.
const LISTEN_BACKLOG: i32 = 511;

/// How long tasks cut at the end of the grace period get to write their
/// stats rows before the runtime is dropped.
const CUT_WAIT: Duration = Duration::from_millis(300);

/// A running proxy. Dropping it stops the proxy (within
/// `shutdown_grace` plus well under a second) and joins its threads.
#[derive(Debug)]
pub struct ProxyHandle {
    local_addr: SocketAddr,
    stop: Option<watch::Sender<bool>>,
    thread: Option<JoinHandle<()>>,
}

impl ProxyHandle {
    /// The address the proxy is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops the proxy and waits for its threads.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
        if let Some(thread) = self.thread.take() {
            if thread.join().is_err() {
                tracing::error!("proxy thread panicked");
            }
        }
    }
}

impl Drop for ProxyHandle {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Binds, opens the logs, starts the runtime and returns at once. Safe to
/// call from inside a tokio runtime: the proxy never uses the caller's.
pub fn spawn(config: ProxyConfig) -> anyhow::Result<ProxyHandle> {
    config.validate()?;
    let listener = std::net::TcpListener::bind(config.listen)
        .with_context(|| format!("binding {}", config.listen))?;
    // SAFETY: listen(2) on the socket bound just above, which this function
    // owns; on a listening socket it only changes the backlog.
    if unsafe { libc::listen(listener.as_raw_fd(), LISTEN_BACKLOG) } != 0 {
        return Err(std::io::Error::last_os_error()).context("setting the listen backlog");
    }
    listener
        .set_nonblocking(true)
        .context("making the listening socket non-blocking")?;
    let local_addr = listener.local_addr().context("reading the bound address")?;
    let stats = config
        .stats_log
        .as_deref()
        .map(StatsLog::open)
        .transpose()?;
    let gauge_log = config
        .gauge_log
        .as_deref()
        .map(GaugeLog::open)
        .transpose()?;
    let runtime = runtime(config.threads).context("starting the proxy runtime")?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let config = Arc::new(config);
    let thread = std::thread::Builder::new()
        .name("slowlab-proxy-main".into())
        .spawn(move || {
            // The accept loop runs on a worker (with one thread, on this
            // thread itself), so `--threads 1` means one thread doing all the
            // proxy work, as one NGINX worker does.
            let serve = runtime.spawn(serve(listener, config, stats, gauge_log, stop_rx));
            if let Err(e) = runtime.block_on(serve) {
                tracing::error!(cause = %e, "proxy accept loop failed");
            }
            runtime.shutdown_timeout(Duration::from_millis(100));
        })
        .context("starting the proxy thread")?;
    Ok(ProxyHandle {
        local_addr,
        stop: Some(stop_tx),
        thread: Some(thread),
    })
}

/// The proxy's runtime. One thread is tokio's current-thread scheduler,
/// driven by the proxy's own thread: the multi-thread scheduler would add a
/// worker thread beside it and, on every spawn and wake-up, the run-queue
/// atomics and idle-worker checks of work stealing, which one worker has no
/// use for (the `async` server model makes the same choice).
fn runtime(threads: usize) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = if threads == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(threads).thread_name("slowlab-proxy");
        b
    };
    builder.enable_all().build()
}

async fn serve(
    listener: std::net::TcpListener,
    cfg: Arc<ProxyConfig>,
    stats: Option<StatsLog>,
    gauge_log: Option<GaugeLog>,
    mut stop: watch::Receiver<bool>,
) {
    let listener = match accept::register(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(cause = %e, "registering the listening socket");
            return;
        }
    };
    // Responses are registered only when someone samples them.
    let gauges = gauge_log.as_ref().map(|_| Arc::new(Gauges::default()));
    // `cut` tells in-flight responses to stop; it is also the ShutdownWatch
    // pingora hands to the app.
    let (cut_tx, cut_rx) = watch::channel(false);
    let gauge_task = gauge_log.zip(gauges.clone()).map(|(log, gauges)| {
        let mut cut = cut_rx.clone();
        let stop = async move { stopped(&mut cut).await };
        tokio::spawn(log.run(gauges, cfg.gauge_interval, stop))
    });
    // The stats rows are written in batches (see `StatsLog`); this task
    // writes them out while the proxy runs, once more when it stops.
    let flush_task = stats.clone().map(|log| {
        let mut cut = cut_rx.clone();
        let stop = async move { stopped(&mut cut).await };
        tokio::spawn(log.run_flusher(STATS_FLUSH_EVERY, stop))
    });
    let conns = Connections::new(cfg.worker_connections.saturating_mul(cfg.threads));
    let app = Arc::new(ProxyApp::new(cfg.clone(), stats, gauges, conns.clone()));
    // Every connection task holds a clone; recv() returns None once all
    // are gone (mini-redis's shutdown pattern).
    let (alive_tx, mut alive_rx) = mpsc::channel::<()>(1);
    // Idle kept-open connections close as soon as the stop comes.
    let idle_stop = stop.clone();
    let stop = stopped(&mut stop);
    tokio::pin!(stop);
    while let Some(Accepted { stream, caught_up }) = accept::until(&listener, stop.as_mut()).await {
        if !caught_up {
            // More are waiting: take the next one after the connections
            // already ready have had their turn, not now. NGINX (with
            // `multi_accept off`, its default and the lab's) accepts one
            // connection per pass of its event loop, so when it falls
            // behind, new connections wait in the backlog (and past it,
            // their SYNs are dropped and retried) while the accepted ones
            // are served. Accepting them all at once instead (up to
            // tokio's budget of 128) let a saturated proxy hold so many
            // connections that it closed idle kept-open ones for room
            // (`Connections::acquire`), and the clients' next requests on
            // them were reset.
            tokio::task::yield_now().await;
        }
        // NGINX closes a connection it has no room for at once.
        let Some(slot) = conns.acquire("client") else {
            drop(stream);
            continue;
        };
        let tcp = match tokio::net::TcpStream::from_std(stream) {
            Ok(tcp) => tcp,
            Err(e) => {
                accept::after_accept_error(&e).await;
                continue;
            }
        };
        if let Some(edge) = &cfg.tls {
            let (app, cut, alive, stop) = (
                app.clone(),
                cut_rx.clone(),
                alive_tx.clone(),
                idle_stop.clone(),
            );
            let edge = edge.clone();
            tokio::spawn(Box::pin(async move {
                let _alive = alive;
                crate::edge::serve(app, tcp, edge, slot, cut, stop).await;
            }));
            continue;
        }
        // TCP_NODELAY is set by ClientIo before the first write that needs
        // it.
        let stream: Stream = Box::new(ClientIo::new(tcp));
        let app = app.clone();
        let cut = cut_rx.clone();
        let alive = alive_tx.clone();
        let mut stop = idle_stop.clone();
        // Boxed: the task then holds a pointer, not the connection's
        // kilobytes of state, which tokio would otherwise copy into its task
        // cell at spawn and over again when the task finishes, and allocate
        // with the cell's cache-line alignment (glibc's slow memalign path).
        tokio::spawn(Box::pin(async move {
            let _alive = alive;
            app.serve_connection(stream, slot, &cut, &mut stop).await;
        }));
    }
    drop(listener);
    drop(alive_tx);
    if let Some(log) = app.stats() {
        // The rows so far reach the file before the grace period starts.
        log.flush();
    }
    tracing::info!("stopping: no new connections");
    let all_done = tokio::time::timeout(cfg.shutdown_grace, alive_rx.recv()).await;
    if all_done.is_err() {
        tracing::info!("cutting responses still in flight");
        let _ = cut_tx.send(true);
        let _ = tokio::time::timeout(CUT_WAIT, alive_rx.recv()).await;
    }
    let _ = cut_tx.send(true);
    if let Some(task) = gauge_task {
        let _ = task.await;
    }
    if let Some(task) = flush_task {
        let _ = task.await;
    }
}
