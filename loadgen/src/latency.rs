//! Making one thread wake on time: the scheduler thread's kernel settings.
//!
//! Three things delay a thread that sleeps until an instant: the timer
//! slack the kernel may add to batch wake-ups (50 µs by default), the wait
//! for a CPU when other tasks are running, and CFS bandwidth throttling under
//! a CPU quota. The first is removed with `PR_SET_TIMERSLACK`. For the second,
//! EEVDF (Linux 6.6+) lets a waking task preempt the running one only when
//! its virtual deadline is earlier; with this kernel's `preempt=none` and
//! 250 Hz tick, a task that does not preempt can wait for the next tick, 4 ms.
//! A short custom slice (`sched_attr.sched_runtime`, Linux 6.12+, allowed
//! without privileges) and, where permitted, nice -20 give the thread an
//! early deadline so its wake-up preempts. Neither escapes a CPU quota: the
//! thread stays `SCHED_OTHER` in its cgroup. The third is avoided by using
//! little CPU (see `slow`).
//!
//! Measured on a busy 2-vCPU machine (other builds running), 200 wake-ups
//! at 125 ms: with these settings the median lag is ~50 µs and wake-ups
//! later than 1 ms drop from ~5% to ~1%, but EEVDF still sometimes runs
//! other tasks first for several ms (seen with `perf sched timehist`).
//! Only a real-time policy removed those (`--realtime`: `SCHED_FIFO`, max
//! 0.15 ms there); it is opt-in because a real-time thread is outside its
//! cgroup's CFS quota, and a cgroup v1 child needs `cpu.rt_runtime_us` to
//! allow it at all. When the machine is idle instead, the VM's host may wake
//! an idle virtual CPU milliseconds late whatever the policy; `--spin`
//! covers that by waking early and busy-waiting (opt-in: it costs CPU, and
//! under a CFS quota a spin longer than the quota's share is throttled).

use std::io;
use std::time::{Duration, Instant};

/// The custom slice asked for: the shortest the kernel accepts.
pub const SLICE: Duration = Duration::from_micros(100);
/// The nice value asked for (needs CAP_SYS_NICE; skipped without it).
pub const NICE: i32 = -20;

/// The real-time priority asked for with `--realtime`: the lowest, enough
/// to run before every `SCHED_OTHER` task.
pub const FIFO_PRIORITY: i32 = 1;

/// The scheduling policy the thread ended up with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// `SCHED_OTHER` (CFS/EEVDF), possibly with nice and slice settings.
    #[default]
    Other,
    /// `SCHED_FIFO` at [`FIFO_PRIORITY`].
    Fifo,
}

impl Policy {
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Other => "other",
            Policy::Fifo => "fifo",
        }
    }
}

/// How the scheduler thread is asked to keep time (`--realtime`, `--spin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimingOptions {
    /// Try `SCHED_FIFO` first.
    pub realtime: bool,
    /// Wake this long early and busy-wait the rest.
    pub spin: Duration,
}

/// What [`tune_current_thread`] managed to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Tuning {
    pub policy: Policy,
    /// The busy-wait before each start (0: none).
    pub spin_us: u64,
    pub timer_slack_ns: Option<u64>,
    pub nice: Option<i32>,
    pub slice_us: Option<u64>,
}

/// The `struct sched_attr` of `sched_setattr(2)`, version 1 (56 bytes).
#[repr(C)]
#[derive(Debug, Default)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
    sched_util_min: u32,
    sched_util_max: u32,
}

/// Applies the settings to the calling thread, best effort: each one that
/// the kernel or our privileges refuse is left out of the result. With
/// `realtime`, tries `SCHED_FIFO` first.
pub fn tune_current_thread(slice: Duration, nice: i32, realtime: bool) -> Tuning {
    let mut t = Tuning::default();
    if set_timer_slack_ns(1).is_ok() {
        t.timer_slack_ns = Some(1);
    }
    if realtime {
        let param = libc::sched_param {
            sched_priority: FIFO_PRIORITY,
        };
        // SAFETY: pid 0 is the calling thread; the kernel reads one live
        // sched_param.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0 {
            t.policy = Policy::Fifo;
            return t;
        }
    }
    let slice_ns = u64::try_from(slice.as_nanos()).unwrap_or(u64::MAX);
    // Negative nice needs CAP_SYS_NICE; the slice alone does not.
    for (nice, runtime) in [(nice, slice_ns), (0, slice_ns), (nice, 0)] {
        if sched_setattr(nice, runtime).is_ok() {
            t.nice = Some(nice);
            t.slice_us = (runtime > 0).then_some(runtime / 1000);
            break;
        }
    }
    t
}

/// Sleeps until `spin` before `at`, then busy-waits until `at`.
///
/// On a VM whose CPUs are idle, the host may deliver a timer interrupt
/// milliseconds late (measured here: up to ~5 ms, even for `SCHED_FIFO`);
/// a thread already running when the instant comes does not depend on it.
/// Costs `spin` of CPU per call.
pub fn sleep_then_spin_until(at: Instant, spin: Duration) {
    if let Some(early) = at.checked_sub(spin).filter(|_| !spin.is_zero()) {
        sleep_until(early);
        while Instant::now() < at {
            std::hint::spin_loop();
        }
    } else {
        sleep_until(at);
    }
}

/// Sleeps until `at`; `thread::sleep` may return early on some platforms,
/// so loop until the clock agrees.
pub fn sleep_until(at: Instant) {
    loop {
        let now = Instant::now();
        if now >= at {
            return;
        }
        std::thread::sleep(at - now);
    }
}

/// Sets the calling thread's timer slack (50 µs by default).
pub fn set_timer_slack_ns(ns: libc::c_ulong) -> io::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes one unsigned long by value and touches
    // no memory of ours.
    match unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns, 0, 0, 0) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

fn sched_setattr(nice: i32, runtime_ns: u64) -> io::Result<()> {
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        sched_policy: libc::SCHED_OTHER as u32,
        sched_nice: nice,
        sched_runtime: runtime_ns,
        ..SchedAttr::default()
    };
    // SAFETY: the kernel reads `size` bytes of a live, correctly laid out
    // sched_attr; pid 0 is the calling thread; flags 0.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleep_until_never_wakes_early() {
        for ms in [0u64, 1, 3] {
            let at = Instant::now() + Duration::from_millis(ms);
            sleep_until(at);
            assert!(Instant::now() >= at);
        }
    }

    #[test]
    fn spinning_ends_at_the_instant() {
        for spin in [
            Duration::ZERO,
            Duration::from_micros(200),
            Duration::from_secs(5),
        ] {
            let at = Instant::now() + Duration::from_millis(2);
            sleep_then_spin_until(at, spin);
            assert!(Instant::now() >= at);
        }
    }

    #[test]
    fn the_attr_has_the_kernel_layout() {
        assert_eq!(std::mem::size_of::<SchedAttr>(), 56);
    }

    #[test]
    fn tuning_applies_what_it_can() {
        std::thread::spawn(|| {
            let t = tune_current_thread(Duration::from_micros(100), 0, false);
            assert_eq!(t.timer_slack_ns, Some(1));
            assert_eq!(t.policy, Policy::Other);
            // SAFETY: PR_GET_TIMERSLACK takes no arguments and returns the value.
            let slack = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
            assert_eq!(slack, 1);
        })
        .join()
        .expect("thread");
    }
}
