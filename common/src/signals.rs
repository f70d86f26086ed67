//! Ctrl-C and SIGTERM: the harness notes the request and stops at the next
//! check, so that its guards stop every child and the files written so far
//! stay on disk, marked incomplete. The verb then ends with
//! [`interrupted`], which the binary turns into exit status 130 or 143.
//! Every process that keeps what it measured on a stop uses it: the
//! harness, and `slowlab load` on its own.

use std::sync::atomic::{AtomicI32, Ordering};

/// The signal received, 0 for none yet.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    // Only an atomic store: nothing else is async-signal-safe here.
    RECEIVED.store(signal, Ordering::SeqCst);
}

/// Installs the handlers for SIGINT and SIGTERM.
pub fn install() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only performs an atomic store.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// Whether a stop was requested.
pub fn requested() -> bool {
    received().is_some()
}

/// The last stop signal received, if any.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The error a verb ends with when it was stopped: it names the signal
/// (SIGINT when a run was interrupted without one reaching the harness)
/// and says what was kept.
pub fn interrupted(what: String) -> crate::exit::Interrupted {
    crate::exit::Interrupted {
        signal: received().unwrap_or(libc::SIGINT),
        what,
    }
}
