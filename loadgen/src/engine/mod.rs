//! The slow clients' engine: every slow reader, uploader and slowloris
//! client of a run is a state machine (`Machine`) driven by a few
//! event-loop threads, not an OS thread of its own.
//!
//! A thread per client paid a context switch, a `clock_nanosleep` and a
//! wake-up per read: about 64 µs of CPU per 8 KiB read measured with 1,024
//! readers, 1.6 cores for 1,024 readers at 256 KiB/s, which starved the
//! server it was measuring. Here each loop thread waits in one
//! `epoll_pwait2` (nanosecond timeout) for the earliest pacing deadline of
//! its clients or for a socket one of them waits on, and runs every client
//! that is due. A slow client rarely waits for its socket (the client is
//! the slow side: the bytes are there at its deadline), so a read costs one
//! `recv` and a share of one `epoll_pwait2`.
//!
//! What a client does on its socket is exactly what its model says, and
//! nothing the engine decides: a strict reader one `recv` of at most
//! `--read-chunk` per pacing deadline (the loop only finds the deadline), a
//! streamreader asyncio's transport (socket in the selector while reading
//! is not paused, one `recv(256 KiB)` per readiness, timers in whole
//! milliseconds rounded up), an uploader one paced write per piece. The
//! socket-level tests (`tests/reader_socket.rs`) hold the models to it.
//!
//! Sockets are non-blocking and registered `EPOLLONESHOT`: a client asks
//! for readiness only when it has to wait for it (a `recv` found nothing,
//! a write did not fit), so a paced reader whose bytes are waiting costs no
//! `epoll_ctl`. Timers are one binary heap per loop of (deadline, slot);
//! a client's stale deadlines are skipped when they come up.
//!
//! [`Engine::new`] starts the loops (one per [`CLIENTS_PER_LOOP`] clients,
//! at most one per core); `Engine::add` hands a machine to one of them,
//! round robin, and returns its [`Client`]: `start(t0)`, `stop()` (a
//! reader or an uploader is cut, its record saying so; a slowloris client
//! ends with the run), and `record().await`. Dropping the engine ends the
//! loops; a client still running is abandoned with its socket closed.

mod event_loop;
pub(crate) mod io;

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Instant;

use anyhow::Context;
use tokio::sync::oneshot;

pub(crate) use event_loop::Cx;

/// How many clients one loop thread serves before the engine starts
/// another (up to the host's cores): one loop moves some 50,000 reads a
/// second on this machine's cores.
pub const CLIENTS_PER_LOOP: usize = 2048;

/// What a client waits for next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Its socket's readiness (`Some`), a deadline (`Some`), or both,
    /// whichever comes first.
    For {
        io: Option<Interest>,
        until: Option<Instant>,
    },
    /// It has ended and sent its record.
    Done,
}

impl Wait {
    pub fn until(t: Instant) -> Wait {
        Wait::For {
            io: None,
            until: Some(t),
        }
    }

    /// Readiness for `io`, or `until` (the stall timeout) first.
    pub fn io(io: Interest, until: Instant) -> Wait {
        Wait::For {
            io: Some(io),
            until: Some(until),
        }
    }
}

/// The readiness a client waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interest {
    Read,
    Write,
}

/// A slow client, as the engine drives it. Each call returns what it waits
/// for next; a machine that returns [`Wait::Done`] has sent its record.
pub(crate) trait Machine: Send {
    /// t0 is the run's time zero; the client begins (creates its socket,
    /// starts its connect).
    fn start(&mut self, t0: Instant, cx: &mut Cx) -> Wait;
    /// Its socket is ready for what it asked (or has an error or EOF).
    fn ready(&mut self, cx: &mut Cx) -> Wait;
    /// Its deadline has come.
    fn timer(&mut self, cx: &mut Cx) -> Wait;
    /// The run is over: a transfer is cut, a slowloris client ends.
    fn stop(&mut self, cx: &mut Cx) -> Wait;
    /// The socket to watch, once it exists.
    fn fd(&self) -> Option<RawFd>;
}

/// A command to a loop thread.
enum Cmd {
    Add(u64, Box<dyn Machine>),
    Start(u64, Instant),
    Stop(u64),
}

/// What a loop thread shares with the engine.
struct Inbox {
    cmds: Mutex<Vec<Cmd>>,
    wake: io::EventFd,
    /// The engine is dropped: the loop ends, abandoning its clients.
    quit: AtomicBool,
}

impl Inbox {
    fn send(&self, cmd: Cmd) {
        let mut cmds = self.cmds.lock().unwrap_or_else(|e| e.into_inner());
        let was_empty = cmds.is_empty();
        cmds.push(cmd);
        drop(cmds);
        // One wake-up per batch: the loop drains the whole queue.
        if was_empty {
            self.wake.notify();
        }
    }

    fn take(&self) -> Vec<Cmd> {
        std::mem::take(&mut *self.cmds.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// One loop thread.
struct Loop {
    inbox: Arc<Inbox>,
    thread: Option<thread::JoinHandle<()>>,
}

/// The loop threads of a run.
pub struct Engine {
    loops: Vec<Loop>,
    next: AtomicUsize,
    ids: AtomicUsize,
}

impl Engine {
    /// Starts the loops for up to `clients` clients at once.
    pub fn new(clients: usize) -> anyhow::Result<Arc<Engine>> {
        let cores = thread::available_parallelism().map_or(1, |n| n.get());
        let n = clients.div_ceil(CLIENTS_PER_LOOP).clamp(1, cores);
        let mut loops = Vec::with_capacity(n);
        for i in 0..n {
            let inbox = Arc::new(Inbox {
                cmds: Mutex::new(Vec::new()),
                wake: io::EventFd::new().context("creating the engine's eventfd")?,
                quit: AtomicBool::new(false),
            });
            let thread = event_loop::spawn(i, inbox.clone())?;
            loops.push(Loop {
                inbox,
                thread: Some(thread),
            });
        }
        Ok(Arc::new(Engine {
            loops,
            next: AtomicUsize::new(0),
            ids: AtomicUsize::new(0),
        }))
    }

    /// The loop threads running.
    pub fn threads(&self) -> usize {
        self.loops.len()
    }

    /// Hands `machine` to a loop; it begins at [`Client::start`]. `record`
    /// is the receiver the machine sends its record on.
    pub(crate) fn add<R>(
        self: &Arc<Self>,
        machine: Box<dyn Machine>,
        record: oneshot::Receiver<R>,
    ) -> Client<R> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.loops.len();
        let id = self.ids.fetch_add(1, Ordering::Relaxed) as u64;
        self.loops[i].inbox.send(Cmd::Add(id, machine));
        Client {
            engine: self.clone(),
            lp: i,
            id,
            record,
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        for l in &mut self.loops {
            l.inbox.quit.store(true, Ordering::Release);
            l.inbox.wake.notify();
            if let Some(t) = l.thread.take() {
                let _ = t.join();
            }
        }
    }
}

/// One client in the engine and the record it will send.
#[derive(Debug)]
pub struct Client<R> {
    engine: Arc<Engine>,
    lp: usize,
    id: u64,
    record: oneshot::Receiver<R>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Engine({} loops)", self.loops.len())
    }
}

impl<R> Client<R> {
    /// Lets the client begin; t0 is the run's time zero.
    pub fn start(&self, t0: Instant) {
        self.engine.loops[self.lp]
            .inbox
            .send(Cmd::Start(self.id, t0));
    }

    /// Ends the client: a reader or an uploader is cut (its record says
    /// so), a slowloris client ends with the run.
    pub fn stop(&self) {
        self.engine.loops[self.lp].inbox.send(Cmd::Stop(self.id));
    }

    /// Waits for the record without blocking the runtime.
    pub async fn record(self) -> anyhow::Result<R> {
        self.record
            .await
            .context("a slow client ended without its record (the engine stopped)")
    }

    /// Stops the client once `stop` resolves, unless it ended first, and
    /// waits for its record.
    pub async fn record_when(mut self, stop: impl Future<Output = ()>) -> anyhow::Result<R> {
        let received = tokio::select! {
            r = &mut self.record => r,
            () = stop => {
                self.stop();
                (&mut self.record).await
            }
        };
        received.context("a slow client ended without its record (the engine stopped)")
    }
}
