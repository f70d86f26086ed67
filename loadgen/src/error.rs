//! What went wrong with one request or download, by kind.
//!
//! Every failure is recorded on its row, never dropped: the `error` column
//! holds the kind's name (a closed set, so scripts can group by it) and the
//! detail goes to the human summary and the logs.

use std::io;

/// The kind of a failed request or download; the `error` column's values.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, thiserror::Error, serde::Serialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Not answered (or, for a slow reader, no bytes) within `--timeout`.
    #[error("timeout")]
    Timeout,
    /// The target refused the TCP connection.
    #[error("connect_refused")]
    ConnectRefused,
    /// Any other failure to establish the TCP connection.
    #[error("connect_failed")]
    ConnectFailed,
    /// The connection was reset or aborted while sending or receiving.
    #[error("reset")]
    Reset,
    /// The connection closed before the body announced by the head was whole.
    #[error("short_body")]
    ShortBody,
    /// The response was well-formed but its status was not 200.
    #[error("bad_status")]
    BadStatus,
    /// The response was not valid HTTP/1.x as we read it.
    #[error("malformed")]
    Malformed,
    /// A `/large` byte broke the documented pattern.
    #[error("verify_failed")]
    VerifyFailed,
    /// Any other local I/O error (out of sockets, for example).
    #[error("io")]
    Io,
}

impl ErrorKind {
    /// The name written in the `error` column and used as a JSON key.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Timeout => "timeout",
            ErrorKind::ConnectRefused => "connect_refused",
            ErrorKind::ConnectFailed => "connect_failed",
            ErrorKind::Reset => "reset",
            ErrorKind::ShortBody => "short_body",
            ErrorKind::BadStatus => "bad_status",
            ErrorKind::Malformed => "malformed",
            ErrorKind::VerifyFailed => "verify_failed",
            ErrorKind::Io => "io",
        }
    }
}

/// A failure with its kind and a human-readable detail.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {detail}")]
pub struct Failure {
    pub kind: ErrorKind,
    pub detail: String,
}

impl Failure {
    pub fn new(kind: ErrorKind, detail: impl Into<String>) -> Self {
        Failure {
            kind,
            detail: detail.into(),
        }
    }

    /// Classifies an error of `connect(2)` or of completing a connect.
    pub fn connect(err: &io::Error) -> Self {
        let kind = match err.kind() {
            io::ErrorKind::ConnectionRefused => ErrorKind::ConnectRefused,
            io::ErrorKind::TimedOut => ErrorKind::Timeout,
            _ => ErrorKind::ConnectFailed,
        };
        Failure::new(kind, format!("connect: {err}"))
    }

    /// Classifies an error of reading or writing an established connection.
    pub fn transfer(what: &str, err: &io::Error) -> Self {
        let kind = match err.kind() {
            io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe => ErrorKind::Reset,
            io::ErrorKind::TimedOut => ErrorKind::Timeout,
            io::ErrorKind::UnexpectedEof => ErrorKind::ShortBody,
            _ => ErrorKind::Io,
        };
        Failure::new(kind, format!("{what}: {err}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_map_to_kinds() {
        let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
        assert_eq!(Failure::connect(&refused).kind, ErrorKind::ConnectRefused);
        let other = io::Error::from(io::ErrorKind::AddrNotAvailable);
        assert_eq!(Failure::connect(&other).kind, ErrorKind::ConnectFailed);
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        assert_eq!(Failure::transfer("read", &reset).kind, ErrorKind::Reset);
        let pipe = io::Error::from(io::ErrorKind::BrokenPipe);
        assert_eq!(Failure::transfer("write", &pipe).kind, ErrorKind::Reset);
    }

    #[test]
    fn names_match_display_and_serde() {
        for kind in [
            ErrorKind::Timeout,
            ErrorKind::ConnectRefused,
            ErrorKind::ConnectFailed,
            ErrorKind::Reset,
            ErrorKind::ShortBody,
            ErrorKind::BadStatus,
            ErrorKind::Malformed,
            ErrorKind::VerifyFailed,
            ErrorKind::Io,
        ] {
            assert_eq!(kind.to_string(), kind.as_str());
            let json = serde_json::to_string(&kind).expect("serializes");
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
        }
    }
}
