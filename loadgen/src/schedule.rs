//! The open-loop scheduler: a dedicated thread that starts every `/fast`
//! request on time and hands it to the runtime.
//!
//! Tokio's timer wheel has 1 ms resolution and its thread also runs the
//! requests in flight, so a request timed there starts up to a millisecond
//! or more late. This thread instead sleeps with `clock_nanosleep`, tuned by
//! [`latency`] (1 ns timer slack, a short scheduler slice, nice -20 where
//! allowed), and does only what cannot wait between two requests: create a
//! non-blocking socket, note the actual start, start the connect, and spawn
//! the rest onto the runtime (`Handle::spawn` only queues the task and wakes
//! the runtime). Nothing on the loop does I/O that can block; memory for the
//! join handles is reserved before t0.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::error::Failure;
use crate::fast::{self, FastContext, Launch};
use crate::latency::{self, TimingOptions, Tuning};
use crate::net;
use crate::record::FastRecord;

/// The scheduler thread, waiting for t0 until [`Scheduler::start`].
#[derive(Debug)]
pub struct Scheduler {
    /// When each request is due, from t0 (a record of one cut in flight).
    offsets: Vec<Duration>,
    protocol: catalogue::Edge,
    go: mpsc::Sender<(Instant, Duration)>,
    /// The thread's tuning, the schedule's shift and every request's task.
    launched: oneshot::Receiver<(Tuning, Duration, Vec<JoinHandle<FastRecord>>)>,
    thread: thread::JoinHandle<()>,
}

impl Scheduler {
    /// Starts the thread; it sleeps until [`Scheduler::start`] gives it t0.
    pub fn spawn(
        offsets: Vec<Duration>,
        addr: SocketAddr,
        bind: Option<IpAddr>,
        ctx: Arc<FastContext>,
        runtime: Handle,
        timing: TimingOptions,
    ) -> anyhow::Result<Scheduler> {
        let (go, go_rx) = mpsc::channel::<(Instant, Duration)>();
        let (done, launched) = oneshot::channel();
        let kept = offsets.clone();
        let protocol = ctx.edge.protocol();
        let thread = thread::Builder::new()
            .name("slowlab-schedule".into())
            .spawn(move || {
                let mut tuning =
                    latency::tune_current_thread(latency::SLICE, latency::NICE, timing.realtime);
                tuning.spin_us = u64::try_from(timing.spin.as_micros()).unwrap_or(u64::MAX);
                tracing::debug!(?tuning, "scheduler thread tuned");
                let mut handles = Vec::with_capacity(offsets.len());
                // A closed channel means the run was abandoned before t0.
                let Ok((t0, shift)) = go_rx.recv() else {
                    return;
                };
                for (seq, offset) in offsets.iter().enumerate() {
                    let scheduled = t0 + shift + *offset;
                    // Ctrl-C or SIGTERM: no request is started after it;
                    // those started keep their records.
                    if stopped_before(scheduled) {
                        break;
                    }
                    latency::sleep_then_spin_until(scheduled, timing.spin);
                    let launch = launch(seq, t0, scheduled, addr, bind);
                    handles.push(runtime.spawn(fast::complete(launch, ctx.clone())));
                }
                // The receiver is gone only if the run was abandoned.
                let _ = done.send((tuning, shift, handles));
            })
            .context("starting the scheduler thread")?;
        Ok(Scheduler {
            offsets: kept,
            protocol,
            go,
            launched,
            thread,
        })
    }

    /// Lets the schedule run from `t0`, every request `shift` later than
    /// its offset (the wait for the slow readers, `--fast-settle`).
    pub fn start(&self, t0: Instant, shift: Duration) {
        // The thread only stops listening after it has received t0.
        let _ = self.go.send((t0, shift));
    }

    /// Waits for every request's record, in schedule order, and tells how
    /// the thread was tuned.
    pub async fn records(self) -> anyhow::Result<(Tuning, Vec<FastRecord>)> {
        let (tuning, shift, handles) = self
            .launched
            .await
            .context("the scheduler thread stopped early")?;
        let mut records = Vec::with_capacity(handles.len());
        for (seq, mut h) in handles.into_iter().enumerate() {
            // Stopped by Ctrl-C or SIGTERM: a request still in flight is
            // cut (its record says so) rather than waited for up to its
            // timeout.
            let record = tokio::select! {
                r = &mut h => r.context("a /fast request task failed")?,
                () = stop_requested() => {
                    h.abort();
                    cut(&self.offsets, shift, seq, self.protocol)
                }
            };
            records.push(record);
        }
        // It has sent its handles, so it is at its end and joins at once.
        self.thread
            .join()
            .map_err(|_| anyhow::anyhow!("the scheduler thread panicked"))?;
        Ok((tuning, records))
    }
}

/// The record of request `seq`, cut in flight by a stop: its start and
/// connect are not known here, so it starts as scheduled.
fn cut(offsets: &[Duration], shift: Duration, seq: usize, protocol: catalogue::Edge) -> FastRecord {
    let at = offsets.get(seq).map_or(0.0, |o| (shift + *o).as_secs_f64());
    FastRecord {
        seq,
        scheduled_s: at,
        started_s: at,
        schedule_lag_ms: 0.0,
        connect_ms: None,
        first_byte_ms: None,
        latency_ms: None,
        status: None,
        bytes: 0,
        error: Some(Failure::new(
            crate::error::ErrorKind::Cut,
            "in flight when the load was stopped",
        )),
        tls_ms: None,
        protocol,
    }
}

/// Resolves once Ctrl-C or SIGTERM has come.
pub async fn stop_requested() {
    while !common::signals::requested() {
        tokio::time::sleep(STOP_CHECK).await;
    }
}

/// How often a scheduler that waits for a far request looks for a stop.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// Waits until shortly before `scheduled`, in steps that look for a stop
/// (Ctrl-C, SIGTERM); whether one came. The last step is the caller's
/// precise sleep.
fn stopped_before(scheduled: Instant) -> bool {
    loop {
        if common::signals::requested() {
            return true;
        }
        let left = scheduled.saturating_duration_since(Instant::now());
        if left <= STOP_CHECK {
            return false;
        }
        thread::sleep((left - STOP_CHECK).min(STOP_CHECK));
    }
}

/// Creates the socket (bound to `bind`, if any), notes the actual start
/// and starts the connect.
fn launch(
    seq: usize,
    t0: Instant,
    scheduled: Instant,
    addr: SocketAddr,
    bind: Option<IpAddr>,
) -> Launch {
    let socket = net::socket(addr).and_then(|s| crate::bind::bind(&s, bind).map(|()| s));
    let started = Instant::now();
    let socket = match socket {
        Err(e) => Err(Failure::local("socket", &e)),
        Ok(s) => match net::start_connect(&s, addr) {
            Ok(()) => Ok(s),
            Err(e) => Err(Failure::connect(&e)),
        },
    };
    Launch {
        seq,
        t0,
        scheduled,
        started,
        socket,
    }
}
