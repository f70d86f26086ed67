//! One loop thread: its clients, their registrations and deadlines, and
//! the turn that runs whatever is ready or due.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::os::fd::RawFd;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::Instant;

use anyhow::Context;

use super::io::Epoll;
use super::{Cmd, Inbox, Interest, Machine, Wait};

/// The epoll data of the loop's own eventfd (client slots are indexes).
const WAKE: u64 = u64::MAX;
/// Events taken from the kernel per `epoll_pwait2`.
const EVENTS: usize = 256;

/// What a client is given when it runs: the loop's read buffer.
pub(crate) struct Cx {
    scratch: Vec<u8>,
}

impl Cx {
    /// The loop's buffer, at least `n` bytes long: readers `recv` into it
    /// and feed what they read on at once, so one buffer serves them all.
    pub fn scratch(&mut self, n: usize) -> &mut [u8] {
        if self.scratch.len() < n {
            self.scratch.resize(n, 0);
        }
        &mut self.scratch[..n]
    }
}

/// A client and what the loop knows of it.
struct Entry {
    id: u64,
    machine: Box<dyn Machine>,
    /// The descriptor registered with epoll, if any.
    registered: Option<RawFd>,
    /// The interest armed (`EPOLLONESHOT`: cleared when it fires).
    armed: Option<Interest>,
    /// The readiness the client waits for now.
    wants: Option<Interest>,
    /// Its deadline now; the heap may hold older ones, skipped.
    due: Option<Instant>,
}

struct EventLoop {
    epoll: Epoll,
    inbox: Arc<Inbox>,
    slots: Vec<Option<Entry>>,
    free: Vec<usize>,
    by_id: HashMap<u64, usize>,
    timers: BinaryHeap<Reverse<(Instant, usize, u64)>>,
    cx: Cx,
}

/// Starts loop thread `i`.
pub(super) fn spawn(i: usize, inbox: Arc<Inbox>) -> anyhow::Result<thread::JoinHandle<()>> {
    let epoll = Epoll::new().context("creating the engine's epoll")?;
    epoll
        .watch(inbox.wake.fd(), WAKE)
        .context("registering the engine's eventfd")?;
    thread::Builder::new()
        .name(format!("slowlab-slow{i}"))
        .spawn(move || {
            // Deadlines to the nanosecond: without it a wait may end 50 µs
            // late; failing costs only that.
            let _ = crate::latency::set_timer_slack_ns(1);
            EventLoop {
                epoll,
                inbox,
                slots: Vec::new(),
                free: Vec::new(),
                by_id: HashMap::new(),
                timers: BinaryHeap::new(),
                cx: Cx {
                    scratch: Vec::new(),
                },
            }
            .run();
        })
        .context("starting a slow-client loop thread")
}

impl EventLoop {
    fn run(&mut self) {
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS];
        let mut due = Vec::new();
        loop {
            let timeout = self
                .timers
                .peek()
                .map(|Reverse((t, _, _))| t.saturating_duration_since(Instant::now()));
            let n = self.epoll.wait(&mut events, timeout);
            for ev in &events[..n] {
                if ev.u64 == WAKE {
                    self.inbox.wake.drain();
                    if self.inbox.quit.load(Ordering::Acquire) {
                        return;
                    }
                    for cmd in self.inbox.take() {
                        self.command(cmd);
                    }
                    continue;
                }
                let slot = ev.u64 as usize;
                let Some(e) = self.slots.get_mut(slot).and_then(Option::as_mut) else {
                    continue;
                };
                e.armed = None;
                // Readiness it no longer waits for (it ran on its deadline
                // meanwhile) is left for the next time it asks.
                if e.wants.take().is_some() {
                    self.drive(slot, |m, cx| m.ready(cx));
                }
            }
            // The deadlines passed by now; those set while running them
            // wait for the next turn, so no client holds the loop.
            let now = Instant::now();
            while let Some(&Reverse((t, slot, id))) = self.timers.peek() {
                if t > now {
                    break;
                }
                self.timers.pop();
                due.push((t, slot, id));
            }
            for (t, slot, id) in due.drain(..) {
                let Some(e) = self.slots.get_mut(slot).and_then(Option::as_mut) else {
                    continue;
                };
                if e.id != id || e.due != Some(t) {
                    continue;
                }
                e.due = None;
                self.drive(slot, |m, cx| m.timer(cx));
            }
        }
    }

    fn command(&mut self, cmd: Cmd) {
        match cmd {
            Cmd::Add(id, machine) => {
                let entry = Entry {
                    id,
                    machine,
                    registered: None,
                    armed: None,
                    wants: None,
                    due: None,
                };
                let slot = match self.free.pop() {
                    Some(s) => {
                        self.slots[s] = Some(entry);
                        s
                    }
                    None => {
                        self.slots.push(Some(entry));
                        self.slots.len() - 1
                    }
                };
                self.by_id.insert(id, slot);
            }
            Cmd::Start(id, t0) => {
                if let Some(&slot) = self.by_id.get(&id) {
                    self.drive(slot, |m, cx| m.start(t0, cx));
                }
            }
            Cmd::Stop(id) => {
                if let Some(&slot) = self.by_id.get(&id) {
                    self.drive(slot, |m, cx| m.stop(cx));
                }
            }
        }
    }

    /// Runs one client and arranges what it waits for next.
    fn drive(&mut self, slot: usize, f: impl FnOnce(&mut dyn Machine, &mut Cx) -> Wait) {
        let Some(e) = self.slots[slot].as_mut() else {
            return;
        };
        let (io, until) = match f(e.machine.as_mut(), &mut self.cx) {
            Wait::Done => {
                // Dropping the machine closes its socket, which leaves
                // epoll by itself.
                let id = e.id;
                self.slots[slot] = None;
                self.free.push(slot);
                self.by_id.remove(&id);
                return;
            }
            Wait::For { io, until } => (io, until),
        };
        let fd = e.machine.fd();
        if fd != e.registered {
            // A client has one socket: none yet, or closed (and gone from
            // epoll with it).
            e.registered = None;
            e.armed = None;
        }
        e.wants = io;
        if let (Some(interest), Some(fd)) = (io, fd)
            && e.armed != Some(interest)
        {
            match self
                .epoll
                .arm(fd, slot as u64, interest, e.registered.is_some())
            {
                Ok(()) => {
                    e.registered = Some(fd);
                    e.armed = Some(interest);
                }
                // Not watched, the client still has its deadline (the
                // stall timeout) and fails on it.
                Err(err) => tracing::warn!(%err, "epoll_ctl failed for a slow client"),
            }
        }
        if until != e.due
            && let Some(t) = until
        {
            self.timers.push(Reverse((t, slot, e.id)));
        }
        e.due = until;
    }
}
