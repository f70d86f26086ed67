//! Slow readers that keep running for the whole sweep: each slot downloads
//! the large path with [`crate::slow`] (`SO_RCVBUF` before connect, paced
//! reads, every byte verified) and starts the next download as soon as one
//! ends, until told to stop.
//!
//! A download in progress when the sweep ends is abandoned, not cut: its
//! thread ends with the download, or at its first read after the server
//! has gone (the process exits first when run as `slowlab sweep-load`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use tokio::runtime::Handle;

use crate::slow::{SlowContext, SlowReader};

/// The slots and their counts.
#[derive(Debug, Default)]
pub struct SlowPool {
    /// Downloads running now.
    pub active: AtomicUsize,
    pub completed: AtomicU64,
    pub failed: AtomicU64,
    stop: AtomicBool,
}

impl SlowPool {
    /// Starts `n` slots on `runtime`.
    pub fn start(
        n: usize,
        ctx: Arc<SlowContext>,
        read_chunk: usize,
        runtime: &Handle,
    ) -> Arc<SlowPool> {
        let pool = Arc::new(SlowPool::default());
        for slot in 0..n {
            runtime.spawn(run_slot(slot, pool.clone(), ctx.clone(), read_chunk));
        }
        pool
    }

    /// Starts no further downloads.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    pub fn active(&self) -> usize {
        self.active.load(Ordering::Acquire)
    }
}

async fn run_slot(slot: usize, pool: Arc<SlowPool>, ctx: Arc<SlowContext>, read_chunk: usize) {
    while !pool.stop.load(Ordering::Acquire) {
        let reader = match SlowReader::spawn(slot, ctx.clone(), read_chunk) {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(cause = %e, "a slow reader could not start; its slot stops");
                return;
            }
        };
        pool.active.fetch_add(1, Ordering::AcqRel);
        reader.start(Instant::now());
        let record = reader.record().await;
        pool.active.fetch_sub(1, Ordering::AcqRel);
        match record {
            Ok(r) if r.error.is_none() => {
                pool.completed.fetch_add(1, Ordering::Relaxed);
            }
            Ok(r) => {
                pool.failed.fetch_add(1, Ordering::Relaxed);
                if let Some(e) = r.error {
                    tracing::warn!(slot, error = %e, "a slow download failed; starting another");
                }
                // A target that refuses at once would otherwise be hammered
                // by a tight loop of failing downloads.
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(e) => {
                pool.failed.fetch_add(1, Ordering::Relaxed);
                tracing::error!(cause = %e, "a slow reader stopped; its slot stops");
                return;
            }
        }
    }
}
