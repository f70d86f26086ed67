//! Ctrl-C and SIGTERM: `common::signals`, the one handler of every
//! `slowlab` process, as the lab's modules name it.

pub use common::signals::{install, received, requested};

/// The error a verb ends with when it was stopped: it names the signal
/// and says what was kept.
pub fn interrupted(what: String) -> anyhow::Error {
    common::signals::interrupted(what).into()
}
