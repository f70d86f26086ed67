//! The exit-status contract of every `slowlab` verb (README "Exit status"):
//! 0 success, 1 the measurement itself failed, 2 bad input of any kind
//! (flags or values, found before anything is sent), 130/143 interrupted.
//! A verb signals bad input by returning a [`BadInput`] error; the binary
//! maps it to [`BAD_INPUT`].

/// The measurement ran and failed (for `load`: no `/fast` request
/// succeeded).
pub const FAILED: u8 = 1;
/// A flag or value is wrong; nothing was started or sent.
pub const BAD_INPUT: u8 = 2;
/// `slowlab check`: some level of slow readers was denied.
pub const DENIED: u8 = 3;

/// `slowlab check` found a level denied (exit status [`DENIED`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Denied(pub String);

impl Denied {
    pub fn new(message: impl Into<String>) -> Denied {
        Denied(message.into())
    }
}

/// Bad input, described in one line (lower case, no trailing period).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

impl BadInput {
    pub fn new(message: impl Into<String>) -> BadInput {
        BadInput(message.into())
    }
}
