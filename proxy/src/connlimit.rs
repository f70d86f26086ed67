//! NGINX's `worker_connections`: the most connections the proxy holds at
//! once, client and upstream sockets alike (the listening socket takes
//! one too), which is what bounds its memory when clients come faster
//! than it answers them.
//!
//! As in `ngx_get_connection` and `ngx_drain_connections` (NGINX 1.19.1
//! and later: "reusing connections in advance"): while no more than 1/16
//! of the connections are free, each new one first closes the oldest idle
//! kept-open client connections, an eighth of them (at least 1, at most
//! 32); if still none is free, an accepted client is closed at once and
//! an upstream connection is not made (NGINX then answers 500), with
//! "worker_connections are not enough" in the log. NGINX also counts an
//! accepted connection that has sent nothing yet as reusable; here only
//! idle kept-open ones are.
//!
//! An idle kept-open connection parks its [`Slot`] here while it waits,
//! so that draining frees the slot at once; the connection itself sees its
//! wait end and closes.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::oneshot;

/// The most idle connections closed for one new connection
/// (`ngx_drain_connections`).
const DRAIN: usize = 32;

/// The proxy's connections, counted against the limit.
#[derive(Debug)]
pub struct Connections {
    limit: usize,
    in_use: AtomicUsize,
    parked: Mutex<Parked>,
    /// The second of the last "not enough" warning: one per second at most.
    warned_s: AtomicU64,
}

#[derive(Debug, Default)]
struct Parked {
    next: u64,
    /// Oldest first; dropping an entry frees its slot and ends the wait.
    idle: BTreeMap<u64, (Slot, oneshot::Sender<()>)>,
}

/// One connection's place; freed when dropped.
#[derive(Debug)]
pub struct Slot {
    conns: Arc<Connections>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.conns.in_use.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A parked idle connection: the wait that ends when it is drained. Its
/// slot comes back with [`Idle::unpark`]; dropped otherwise (the wait
/// timed out, the client left, the proxy stops), it frees the slot.
pub struct Idle<'a> {
    conns: &'a Connections,
    /// `None` once unparked.
    key: Option<u64>,
    pub drained: oneshot::Receiver<()>,
}

impl Idle<'_> {
    /// The slot back, unless the connection was drained meanwhile.
    pub fn unpark(mut self) -> Option<Slot> {
        self.key.take().and_then(|key| self.conns.take(key))
    }
}

impl Drop for Idle<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            drop(self.conns.take(key));
        }
    }
}

impl Connections {
    /// `limit` connections, the listening socket's included.
    pub fn new(limit: usize) -> Arc<Connections> {
        Arc::new(Connections {
            limit,
            in_use: AtomicUsize::new(1),
            parked: Mutex::new(Parked::default()),
            warned_s: AtomicU64::new(0),
        })
    }

    /// A slot for a new connection (`what` names it in the warning), after
    /// closing idle ones when few are free; `None` when all are busy.
    pub fn acquire(self: &Arc<Self>, what: &str) -> Option<Slot> {
        let free = self
            .limit
            .saturating_sub(self.in_use.load(Ordering::Relaxed));
        if free <= self.limit / 16 {
            self.drain();
        }
        let slot = self.try_acquire();
        if slot.is_none() {
            self.warn(what);
        }
        slot
    }

    /// Closes the oldest idle connections: an eighth of them, 1 to 32.
    fn drain(&self) {
        let drained: Vec<_> = {
            let mut parked = self.parked.lock().unwrap_or_else(|e| e.into_inner());
            let n = (parked.idle.len() / 8).clamp(1, DRAIN);
            let keys: Vec<u64> = parked.idle.keys().take(n).copied().collect();
            keys.iter().filter_map(|k| parked.idle.remove(k)).collect()
        };
        let closed = drained.len();
        // Outside the lock: each slot returns to the pool as it drops.
        drop(drained);
        if closed > 0 {
            tracing::debug!(closed, "idle kept-open connections closed for new ones");
        }
    }

    fn try_acquire(self: &Arc<Self>) -> Option<Slot> {
        let taken = self
            .in_use
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < self.limit).then_some(n + 1)
            });
        taken.ok().map(|_| Slot {
            conns: Arc::clone(self),
        })
    }

    /// Parks an idle connection's slot until [`Idle::unpark`].
    pub fn park(&self, slot: Slot) -> Idle<'_> {
        let (tx, rx) = oneshot::channel();
        let mut parked = self.parked.lock().unwrap_or_else(|e| e.into_inner());
        let key = parked.next;
        parked.next += 1;
        parked.idle.insert(key, (slot, tx));
        Idle {
            conns: self,
            key: Some(key),
            drained: rx,
        }
    }

    fn take(&self, key: u64) -> Option<Slot> {
        let mut parked = self.parked.lock().unwrap_or_else(|e| e.into_inner());
        parked.idle.remove(&key).map(|(slot, _)| slot)
    }

    /// Connections held now, the listening socket's included.
    pub fn in_use(&self) -> usize {
        self.in_use.load(Ordering::Relaxed)
    }

    fn warn(&self, what: &str) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if self.warned_s.swap(now, Ordering::Relaxed) != now {
            tracing::warn!(
                limit = self.limit,
                refused = what,
                "{} worker_connections are not enough",
                self.limit
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_counts_the_listener_and_frees_on_drop() {
        let c = Connections::new(3);
        let a = c.acquire("client").expect("first");
        let b = c.acquire("client").expect("second");
        assert!(c.acquire("client").is_none(), "the listener holds one");
        drop(a);
        let _a = c.acquire("client").expect("freed");
        drop(b);
        assert_eq!(c.in_use(), 2);
    }

    /// Which of `idle` were closed by a drain.
    fn drained(idle: &mut [Idle]) -> Vec<bool> {
        idle.iter_mut()
            .map(|w| {
                w.drained
                    .try_recv()
                    .is_err_and(|e| e == oneshot::error::TryRecvError::Closed)
            })
            .collect()
    }

    /// `n` connections taken and parked, oldest first.
    fn all_idle(c: &Arc<Connections>, n: usize) -> Vec<Idle<'_>> {
        (0..n)
            .map(|_| c.park(c.acquire("client").unwrap()))
            .collect()
    }

    #[test]
    fn a_nearly_full_pool_closes_the_oldest_eighth_of_the_idle_ones() {
        let c = Connections::new(1 + 320);
        let mut idle = all_idle(&c, 320);
        // None free: a new connection closes 320 / 8 = 40, at most 32.
        let fresh = c.acquire("client").expect("an idle one gave way");
        assert_eq!(c.in_use(), 1 + 320 - 32 + 1);
        let gone = drained(&mut idle);
        assert!(gone.iter().take(32).all(|&g| g) && gone.iter().skip(32).all(|&g| !g));
        // 31 free, more than 321 / 16 = 20: the next takes a free one.
        let next = c.acquire("client").unwrap();
        assert_eq!(drained(&mut idle).iter().filter(|&&g| g).count(), 32);
        // A drained one cannot take its slot back; a kept one can.
        let kept = idle.pop().unwrap();
        let first = idle.remove(0);
        assert!(first.unpark().is_none());
        let slot = kept.unpark().expect("still parked");
        drop((slot, fresh, next));
        assert_eq!(c.in_use(), 1 + 320 - 32 - 1);
        // A wait that ends otherwise (timeout, close, stop) frees its slot.
        drop(idle);
        assert_eq!(c.in_use(), 1);
    }

    #[test]
    fn few_idle_ones_are_closed_one_at_a_time() {
        let c = Connections::new(1 + 4);
        let mut idle = all_idle(&c, 4);
        let _fresh = c.acquire("client").expect("the oldest gave way");
        assert_eq!(drained(&mut idle), [true, false, false, false]);
    }

    #[test]
    fn a_pool_busy_with_active_connections_refuses() {
        let c = Connections::new(2);
        let _busy = c.acquire("client").unwrap();
        assert!(c.acquire("upstream").is_none());
    }
}
