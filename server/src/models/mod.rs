//! The three worker models. Each one adopts the bound listener, starts its
//! own threads and runtimes (never the caller's) and stops when the shared
//! cancellation token fires.
//!
//! - [`sync`]: N workers, each owning one connection from accept to close.
//! - [`threads`]: one acceptor feeding a queue, N handlers taking from it.
//! - [`tasks`]: the `async` model, a multi-thread runtime with a task per
//!   connection.

pub mod sync;
pub mod tasks;
pub mod threads;

use std::future::Future;
use std::net::TcpListener;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context as _;
use common::accept;
use tokio::io::unix::AsyncFd;
use tokio::runtime::Runtime;

/// A runtime owned by one server thread.
///
/// Runtimes are built on the caller's thread, which may be inside a tokio
/// runtime (a `#[tokio::test]`), and dropping a runtime there panics. So an
/// error between building one and handing it to its thread shuts it down in
/// the background instead of dropping it.
struct OwnRuntime(Option<Runtime>);

impl OwnRuntime {
    fn new(runtime: Runtime) -> Self {
        OwnRuntime(Some(runtime))
    }

    fn get(&self) -> &Runtime {
        // Only `finish` and `Drop` take the runtime out, and both consume it.
        self.0.as_ref().expect("runtime present until finished")
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.get().block_on(future)
    }

    /// Stops the runtime from its own thread, waiting at most `timeout` for
    /// blocking work it may still run.
    fn finish(mut self, timeout: Duration) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_timeout(timeout);
        }
    }
}

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// A clone of the listening socket, registered with `runtime` for
/// [`common::accept::accept`].
fn register(listener: &TcpListener, runtime: &OwnRuntime) -> anyhow::Result<AsyncFd<TcpListener>> {
    let own = listener.try_clone().context("cannot clone the listener")?;
    let _enter = runtime.get().enter();
    accept::register(own).context("cannot register the listener")
}

/// A single-threaded runtime for one worker, handler or acceptor thread.
fn current_thread_runtime() -> anyhow::Result<OwnRuntime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map(OwnRuntime::new)
        .context("cannot build a tokio runtime")
}

/// Starts a named thread; the name shows in `top -H`, in logs and in the send
/// log's `worker` column.
fn spawn_thread(
    name: String,
    body: impl FnOnce() + Send + 'static,
) -> anyhow::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(body)
        .with_context(|| format!("cannot start thread {name}"))
}
