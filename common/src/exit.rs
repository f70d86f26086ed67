//! The exit-status contract of every `slowlab` verb (the book, "Exit status"):
//! 0 success, 1 the measurement itself failed, 2 bad input of any kind
//! (flags or values, found before anything is sent), 3 a verdict of
//! "denied", 4 a verdict of "inconclusive" (the tester or the host ran out,
//! not the system under test), 130/143 interrupted by SIGINT/SIGTERM. A verb signals these by
//! returning an error whose chain holds a [`BadInput`] (or a
//! [`crate::loopback::RemoteRefused`]), a [`Denied`] or an [`Interrupted`];
//! the binary maps the chain with [`code_of`].

use std::error::Error;

/// Everything went as asked.
pub const SUCCESS: u8 = 0;
/// The measurement ran and failed (for `load`: no `/fast` request
/// succeeded, or the load generator ran out of file descriptors).
pub const FAILED: u8 = 1;
/// A flag or value is wrong; nothing was started or sent.
pub const BAD_INPUT: u8 = 2;
/// A verb that gives verdicts gave "denied".
pub const DENIED: u8 = 3;
/// A verb that gives verdicts could not give one: the load generator or
/// the host ran out (CPU, memory, descriptors, scheduling), so what was
/// measured says nothing of the system under test.
pub const INCONCLUSIVE: u8 = 4;
/// Stopped by SIGINT (128 + 2, as a shell reports it); partial results kept.
pub const INTERRUPTED_INT: u8 = 130;
/// Stopped by SIGTERM (128 + 15); partial results kept.
pub const INTERRUPTED_TERM: u8 = 143;

/// Bad input, described in one line (lower case, no trailing period).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

impl BadInput {
    pub fn new(message: impl Into<String>) -> BadInput {
        BadInput(message.into())
    }

    /// Any error as bad input, its causes joined on one line.
    pub fn of(err: &(dyn Error + 'static)) -> BadInput {
        let mut line = err.to_string();
        let mut source = err.source();
        while let Some(cause) = source {
            line.push_str(": ");
            line.push_str(&cause.to_string());
            source = cause.source();
        }
        BadInput(line)
    }
}

/// A verdict of "denied" (exit status [`DENIED`]), with its reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("denied: {0}")]
pub struct Denied(pub String);

/// A verdict of "inconclusive" (exit status [`INCONCLUSIVE`]), naming what
/// ran out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("inconclusive: {0}")]
pub struct Inconclusive(pub String);

/// The verb stopped because it received `signal` (SIGINT or SIGTERM); `what`
/// says what was kept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("interrupted by {}; {what}", signal_name(*.signal))]
pub struct Interrupted {
    pub signal: i32,
    pub what: String,
}

impl Interrupted {
    /// The exit status: 130 for SIGINT, 143 for SIGTERM, 128 + n otherwise.
    pub fn code(&self) -> u8 {
        u8::try_from(128 + self.signal.clamp(1, 127)).unwrap_or(INTERRUPTED_INT)
    }
}

/// `SIGINT`, `SIGTERM` or `signal N`.
pub fn signal_name(signal: i32) -> String {
    match signal {
        2 => "SIGINT".into(),
        15 => "SIGTERM".into(),
        n => format!("signal {n}"),
    }
}

/// The exit status of a verb that failed with `err` (any error in its chain
/// decides; the first of them wins): [`Interrupted::code`], [`DENIED`],
/// [`BAD_INPUT`], else [`FAILED`].
pub fn code_of<'a>(chain: impl IntoIterator<Item = &'a (dyn Error + 'static)>) -> u8 {
    for e in chain {
        if let Some(i) = e.downcast_ref::<Interrupted>() {
            return i.code();
        }
        if e.is::<Denied>() {
            return DENIED;
        }
        if e.is::<Inconclusive>() {
            return INCONCLUSIVE;
        }
        if e.is::<BadInput>() || e.is::<crate::loopback::RemoteRefused>() {
            return BAD_INPUT;
        }
    }
    FAILED
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] BadInput);

    #[test]
    fn the_chain_decides_the_status() {
        let bad = BadInput::new("--slow must be 0 to 1024");
        assert_eq!(code_of([&bad as &(dyn Error + 'static)]), BAD_INPUT);
        let outer = Outer(bad.clone());
        assert_eq!(code_of([&outer as &(dyn Error + 'static), &bad]), BAD_INPUT);
        assert_eq!(BadInput::of(&outer).0, "outer: --slow must be 0 to 1024");
        let denied = Denied("p95 above 1 s".into());
        assert_eq!(code_of([&denied as &(dyn Error + 'static)]), DENIED);
        let unsure = Inconclusive("the load generator used 1.2 cores".into());
        assert_eq!(code_of([&unsure as &(dyn Error + 'static)]), INCONCLUSIVE);
        let io = std::io::Error::other("disk full");
        assert_eq!(code_of([&io as &(dyn Error + 'static)]), FAILED);
        assert_eq!(code_of([]), FAILED);
    }

    #[test]
    fn interrupts_exit_as_a_shell_reports_them() {
        let int = Interrupted {
            signal: 2,
            what: "partial results in x".into(),
        };
        assert_eq!(int.code(), INTERRUPTED_INT);
        assert_eq!(
            int.to_string(),
            "interrupted by SIGINT; partial results in x"
        );
        let term = Interrupted {
            signal: 15,
            what: String::new(),
        };
        assert_eq!(term.code(), INTERRUPTED_TERM);
        assert_eq!(code_of([&term as &(dyn Error + 'static)]), 143);
    }
}
