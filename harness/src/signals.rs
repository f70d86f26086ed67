//! Ctrl-C and SIGTERM: the harness notes the request and stops at the next
//! check, so that its guards stop every child and the files written so far
//! stay on disk, marked incomplete.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: nothing else is async-signal-safe here.
    REQUESTED.store(true, Ordering::SeqCst);
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
    REQUESTED.load(Ordering::SeqCst)
}
