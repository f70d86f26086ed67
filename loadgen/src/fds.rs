//! File descriptors: what a run needs, and the open-files limit that must
//! allow it.
//!
//! Every connection holds a descriptor. Running out in the middle of a run
//! would show up as failed requests that look like the target's fault, so
//! `load` and `sweep-load` count the most they can hold at once before
//! anything is sent, raise the soft `RLIMIT_NOFILE` towards the hard limit
//! when it is lower (and say so on stderr), raise the hard limit too when
//! it is lower and the kernel's ceiling (`/proc/sys/fs/nr_open`) allows the
//! need (only a privileged process, root or `CAP_SYS_RESOURCE`, may), and
//! refuse to start (bad input, exit status 2) with one line naming the need
//! and the limit otherwise. An `EMFILE` or
//! `ENFILE` that still happens during a run is recorded as its own kind,
//! `fd_exhausted` ([`crate::error::ErrorKind::FdExhausted`]).

use std::io;

use common::exit::BadInput;

/// Descriptors beyond the connections: stdio, the runtime's epoll and
/// wake-up descriptors, an output file, a `/proc` read, with room to spare.
pub const RESERVE: u64 = 32;

/// The open-files limit of this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub soft: u64,
    pub hard: u64,
}

impl Limit {
    /// `getrlimit(RLIMIT_NOFILE)`.
    pub fn current() -> io::Result<Limit> {
        // SAFETY: rlimit is plain old data; getrlimit only writes into it.
        let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
        // SAFETY: a valid resource and a live, writable rlimit.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Limit {
            soft: lim.rlim_cur,
            hard: lim.rlim_max,
        })
    }

    /// Sets both limits to `n` (raising the hard limit needs privilege).
    pub fn set_both(n: u64) -> io::Result<Limit> {
        let lim = libc::rlimit {
            rlim_cur: n,
            rlim_max: n,
        };
        // SAFETY: a valid resource and a live rlimit that the kernel reads.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Limit { soft: n, hard: n })
    }

    /// Sets the soft limit to `soft` (at most the hard limit).
    pub fn set_soft(self, soft: u64) -> io::Result<Limit> {
        let lim = libc::rlimit {
            rlim_cur: soft.min(self.hard),
            rlim_max: self.hard,
        };
        // SAFETY: a valid resource and a live rlimit that the kernel reads.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Limit {
            soft: lim.rlim_cur,
            hard: self.hard,
        })
    }
}

/// Descriptors this process holds now (`/proc/self/fd`, less the one the
/// listing itself uses).
pub fn open_now() -> u64 {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| (d.count() as u64).saturating_sub(1))
        .unwrap_or(0)
}

/// What [`ensure`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The soft limit already allows the need.
    Enough,
    /// The soft limit must be raised to the hard limit.
    Raise,
    /// The hard limit is too low, but the kernel's ceiling allows the
    /// need: both limits must be raised to it (which takes privilege).
    RaiseHard,
    /// Even the kernel's ceiling (or, unknown, the hard limit) is too low.
    Refuse,
}

/// The kernel's ceiling of any open-files limit (`/proc/sys/fs/nr_open`).
pub fn nr_open() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The pure rule: compare `need` with the limit and the kernel's ceiling.
pub fn decide(need: u64, limit: Limit, nr_open: Option<u64>) -> Decision {
    if need <= limit.soft {
        Decision::Enough
    } else if need <= limit.hard {
        Decision::Raise
    } else if nr_open.is_some_and(|n| need <= n) {
        Decision::RaiseHard
    } else {
        Decision::Refuse
    }
}

/// Makes sure this process may open `connections` more descriptors (plus
/// what it holds and [`RESERVE`]): raises the soft limit to the hard one
/// when needed, saying so on stderr, or refuses with [`BadInput`] naming
/// the flags (`what`) that ask for them. Returns the limit in force.
pub fn ensure(connections: u64, what: &str) -> anyhow::Result<Limit> {
    let limit = Limit::current()?;
    let need = open_now() + RESERVE + connections;
    let ceiling = nr_open();
    let refuse = |why: String| -> anyhow::Error {
        BadInput::new(format!(
            "{what} may hold up to {need} open descriptors, but {why}; lower them or raise the limit"
        ))
        .into()
    };
    match decide(need, limit, ceiling) {
        Decision::Enough => Ok(limit),
        Decision::Raise => {
            let raised = limit.set_soft(limit.hard)?;
            eprintln!(
                "slowlab: raised the open-files limit (RLIMIT_NOFILE) from {} to {}: {what} may hold up to {need} descriptors",
                limit.soft, raised.soft
            );
            Ok(raised)
        }
        Decision::RaiseHard => match Limit::set_both(need) {
            Ok(raised) => {
                eprintln!(
                    "slowlab: raised the hard open-files limit (RLIMIT_NOFILE) from {} to {need}: {what} may hold up to {need} descriptors",
                    limit.hard
                );
                Ok(raised)
            }
            Err(e) => Err(refuse(format!(
                "the hard open-files limit (ulimit -Hn) is {} and raising it failed ({e}; it takes root or CAP_SYS_RESOURCE)",
                limit.hard
            ))),
        },
        Decision::Refuse => Err(refuse(match ceiling {
            Some(n) => format!(
                "the hard open-files limit (ulimit -Hn) is {} and the kernel allows at most {n} (fs.nr_open)",
                limit.hard
            ),
            None => format!("the hard open-files limit (ulimit -Hn) is {}", limit.hard),
        })),
    }
}

/// Whether an I/O error is the process or the system running out of
/// descriptors (`EMFILE`, `ENFILE`).
pub fn is_exhausted(err: &io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_need_is_compared_with_both_limits() {
        let limit = Limit {
            soft: 64,
            hard: 1024,
        };
        assert_eq!(decide(64, limit, None), Decision::Enough);
        assert_eq!(decide(65, limit, None), Decision::Raise);
        assert_eq!(decide(1024, limit, None), Decision::Raise);
        assert_eq!(decide(1025, limit, None), Decision::Refuse);
    }

    #[test]
    fn above_the_hard_limit_the_kernel_ceiling_decides() {
        // This machine's case: a default sweep needs about 20,037 against a
        // hard limit of 20,000 and fs.nr_open 1,048,576.
        let limit = Limit {
            soft: 1024,
            hard: 20_000,
        };
        let ceiling = Some(1 << 20);
        assert_eq!(decide(20_000, limit, ceiling), Decision::Raise);
        assert_eq!(decide(20_037, limit, ceiling), Decision::RaiseHard);
        assert_eq!(decide(1 << 20, limit, ceiling), Decision::RaiseHard);
        assert_eq!(decide((1 << 20) + 1, limit, ceiling), Decision::Refuse);
        assert_eq!(decide(20_037, limit, None), Decision::Refuse);
    }

    #[test]
    fn exhaustion_is_emfile_or_enfile() {
        assert!(is_exhausted(&io::Error::from_raw_os_error(libc::EMFILE)));
        assert!(is_exhausted(&io::Error::from_raw_os_error(libc::ENFILE)));
        assert!(!is_exhausted(&io::Error::from_raw_os_error(
            libc::ECONNREFUSED
        )));
        assert!(!is_exhausted(&io::Error::other("x")));
    }

    #[test]
    fn this_process_has_a_limit_and_descriptors() {
        let limit = Limit::current().expect("getrlimit");
        assert!(limit.soft <= limit.hard);
        // stdin, stdout, stderr at least.
        assert!(open_now() >= 3);
        // A need of nothing passes without changing the limit.
        assert_eq!(ensure(0, "nothing").expect("enough"), limit);
        let refused = ensure(u64::MAX / 2, "--slow 9").expect_err("refused");
        assert!(refused.is::<BadInput>());
        assert!(
            refused.to_string().starts_with("--slow 9 may hold up to "),
            "{refused}"
        );
        assert!(refused.to_string().contains("fs.nr_open"), "{refused}");
    }
}
