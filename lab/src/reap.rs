//! One reaper for everything a harness leaves behind when it is killed
//! with SIGKILL and cannot clean up: its cgroups (`slowlab-<pid>`), its
//! scratch directories (`$TMPDIR/slowlab-<kind>-<pid>-*`) and its network
//! namespaces and veths (`slowlab-<pid>-<n>-<side>`, `sl<pid>-<n><end>`).
//! Each kind names its own things with the harness's pid; whatever carries
//! the pid of a process that is gone is removed at the next start of any
//! verb that opens a session.

use crate::cgroup::{self, Mode};

pub use crate::procfs::gone as dead;

/// What one pass of the reaper removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reaped {
    pub cgroups: usize,
    pub scratch: usize,
    pub namespaces: usize,
}

impl Reaped {
    /// One line per kind that had leftovers, for the console.
    pub fn lines(&self) -> Vec<String> {
        [
            (self.cgroups, "cgroup(s)"),
            (self.scratch, "scratch directory(ies)"),
            (self.namespaces, "network namespace(s) or veth(s)"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("removed {n} {what} left by an earlier harness that was killed"))
        .collect()
    }
}

/// Removes every kind of leftover of harnesses that no longer run.
pub fn stale(mode: &Mode) -> Reaped {
    Reaped {
        cgroups: cgroup::reap_stale(mode),
        scratch: crate::scratch::reap_stale(),
        namespaces: crate::netns::reap_stale(),
    }
}
