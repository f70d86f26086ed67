//! Clients that keep running for the whole sweep: slow readers
//! ([`crate::slow`]), slow uploaders and slowloris clients
//! ([`crate::upload`]), each the same client as `slowlab load`'s. A pool
//! has a fixed number of slots; each slot runs one client at a time and
//! starts the next as soon as one ends, until the pool is stopped. Every
//! client that ends leaves its record in the pool (an upload's is a row of
//! `uploads.csv`, a slowloris client's one of `slow-headers.csv`).
//!
//! When the pool stops, a download or an upload in progress is abandoned
//! and leaves no record: it runs on in the slow clients' engine until it
//! ends or the engine is dropped with the sweep, which closes its socket.
//! A slowloris client is told to stop, ends with `ended` `run_end`, and
//! leaves its record.

use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::runtime::Handle;
use tokio::sync::watch;

use crate::engine::Client;
use crate::error::Failure;
use crate::record::{LargeRecord, SlowHeaderRecord, UploadRecord};
use crate::slow::SlowReader;

/// How long a slot waits after a client failed before it starts the next,
/// so that a target that refuses at once is not hammered by a tight loop.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// Resolves when the pool is stopped.
#[derive(Debug, Clone)]
pub struct Stopped(watch::Receiver<bool>);

impl Stopped {
    pub async fn wait(mut self) {
        // A dropped sender is a stopped pool too.
        let _ = self.0.wait_for(|stopped| *stopped).await;
    }
}

/// A client a pool runs: a client of the engine, added before
/// [`PoolClient::begin`], that ends with one record.
pub trait PoolClient: Send + 'static {
    type Record: Send + 'static;
    /// Lets it begin; t0 is the sweep's time zero (its records' clock).
    fn begin(&self, t0: Instant);
    /// Its record when it ends; `None` when it was abandoned because the
    /// pool stopped.
    fn outcome(
        self,
        stopped: Stopped,
    ) -> impl Future<Output = Option<anyhow::Result<Self::Record>>> + Send;
    /// Why the client failed, if it did.
    fn failure(record: &Self::Record) -> Option<&Failure>;
}

/// The record, or `None` when the pool stops first.
async fn unless_stopped<R>(
    record: impl Future<Output = anyhow::Result<R>>,
    stopped: Stopped,
) -> Option<anyhow::Result<R>> {
    tokio::select! {
        r = record => Some(r),
        () = stopped.wait() => None,
    }
}

impl PoolClient for SlowReader {
    type Record = LargeRecord;
    fn begin(&self, t0: Instant) {
        self.start(t0);
    }
    async fn outcome(self, stopped: Stopped) -> Option<anyhow::Result<LargeRecord>> {
        unless_stopped(self.record(), stopped).await
    }
    fn failure(record: &LargeRecord) -> Option<&Failure> {
        record.error.as_ref()
    }
}

impl PoolClient for Client<UploadRecord> {
    type Record = UploadRecord;
    fn begin(&self, t0: Instant) {
        self.start(t0);
    }
    async fn outcome(self, stopped: Stopped) -> Option<anyhow::Result<UploadRecord>> {
        unless_stopped(self.record(), stopped).await
    }
    fn failure(record: &UploadRecord) -> Option<&Failure> {
        record.error.as_ref()
    }
}

impl PoolClient for Client<SlowHeaderRecord> {
    type Record = SlowHeaderRecord;
    fn begin(&self, t0: Instant) {
        self.start(t0);
    }
    async fn outcome(self, stopped: Stopped) -> Option<anyhow::Result<SlowHeaderRecord>> {
        Some(self.record_when(stopped.wait()).await)
    }
    fn failure(record: &SlowHeaderRecord) -> Option<&Failure> {
        record.error.as_ref()
    }
}

/// The slots of one kind of client, their counts and records.
#[derive(Debug)]
pub struct Pool<R> {
    /// Clients running now.
    active: AtomicUsize,
    /// Slot tasks not yet ended.
    slots: AtomicUsize,
    pub completed: AtomicU64,
    pub failed: AtomicU64,
    records: Mutex<Vec<R>>,
    stop: watch::Sender<bool>,
}

/// Counts a slot task until it ends, however it ends.
struct Slot<R>(Arc<Pool<R>>);

impl<R> Drop for Slot<R> {
    fn drop(&mut self) {
        self.0.slots.fetch_sub(1, Ordering::AcqRel);
    }
}

impl<R: Send + 'static> Pool<R> {
    /// Starts `n` slots on `runtime`; `spawn(slot)` makes each client.
    pub fn start<C, F>(n: usize, t0: Instant, runtime: &Handle, spawn: F) -> Arc<Pool<R>>
    where
        C: PoolClient<Record = R>,
        F: Fn(usize) -> anyhow::Result<C> + Send + Sync + 'static,
    {
        let pool = Arc::new(Pool {
            active: AtomicUsize::new(0),
            slots: AtomicUsize::new(n),
            completed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            records: Mutex::new(Vec::new()),
            stop: watch::Sender::new(false),
        });
        let spawn = Arc::new(spawn);
        for slot in 0..n {
            runtime.spawn(run_slot(slot, t0, Slot(pool.clone()), spawn.clone()));
        }
        pool
    }

    /// Starts no further clients, and waits (up to `limit`) for the slots
    /// to end: at once for abandoned transfers, within a wake-up for
    /// slowloris clients.
    pub fn stop(&self, limit: Duration) {
        self.stop.send_replace(true);
        let start = Instant::now();
        while self.slots.load(Ordering::Acquire) > 0 && start.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    pub fn active(&self) -> usize {
        self.active.load(Ordering::Acquire)
    }

    /// The records of the clients that ended, in the order they ended.
    pub fn take_records(&self) -> Vec<R> {
        std::mem::take(&mut *self.records.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

async fn run_slot<C, F>(slot: usize, t0: Instant, guard: Slot<C::Record>, spawn: Arc<F>)
where
    C: PoolClient,
    F: Fn(usize) -> anyhow::Result<C> + Send + Sync + 'static,
{
    let pool = &guard.0;
    let stopped = || Stopped(pool.stop.subscribe());
    while !*pool.stop.borrow() {
        let client = match spawn(slot) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(cause = %e, "a sweep client could not start; its slot stops");
                return;
            }
        };
        pool.active.fetch_add(1, Ordering::AcqRel);
        client.begin(t0);
        let outcome = client.outcome(stopped()).await;
        pool.active.fetch_sub(1, Ordering::AcqRel);
        let record = match outcome {
            None => return,
            Some(Ok(r)) => r,
            Some(Err(e)) => {
                pool.failed.fetch_add(1, Ordering::Relaxed);
                tracing::error!(cause = %e, "a sweep client stopped; its slot stops");
                return;
            }
        };
        let failed = C::failure(&record).map(ToString::to_string);
        pool.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(record);
        match failed {
            None => {
                pool.completed.fetch_add(1, Ordering::Relaxed);
            }
            Some(error) => {
                pool.failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(slot, %error, "a sweep client failed; starting another");
                tokio::select! {
                    () = tokio::time::sleep(RETRY_PAUSE) => {}
                    () = stopped().wait() => {}
                }
            }
        }
    }
}
