//! What went wrong with one request or download, by kind: one taxonomy for
//! `slowlab load` and `slowlab sweep-load`, and the one mapping from
//! [`io::Error`] to it.
//!
//! Every failure is recorded, never dropped. `load` writes the kind's name
//! on the failed row (the `error` column, a closed set, so scripts can group
//! by it) and the detail goes to the human summary and the logs;
//! `sweep-load` counts each kind in one of the `err_*` columns of
//! `steps.csv` ([`ErrorKind::sweep_column`]). Both sets of names are
//! documented in the book's results files and pinned by a test below.

use std::io;

/// The kind of a failed request or download.
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
    /// The connection closed before the body announced by the head was whole
    /// (or before any response).
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
    /// Any other local I/O error.
    #[error("io")]
    Io,
    /// This process or the system ran out of file descriptors (`EMFILE`,
    /// `ENFILE`): the load generator's limit, not the target's. A run with
    /// one is not comparable (its percentiles are left empty) and exits 1.
    #[error("fd_exhausted")]
    FdExhausted,
    /// `connect` failed with `EADDRNOTAVAIL`: this host ran out of ephemeral
    /// ports (typically held by TIME_WAIT). The client's limit, not the
    /// server's. `load` has no name of its own for it (see
    /// [`ErrorKind::in_load`]).
    #[error("ports_exhausted")]
    PortsExhausted,
    /// A slow client still running when the run ended was cut
    /// (`--end-with-fast`): not the server's failure, and not a whole
    /// transfer.
    #[error("cut")]
    Cut,
    /// The TLS handshake failed (a certificate not trusted, no common
    /// protocol), or the server did not choose HTTP/2 in ALPN when the
    /// load asked for it.
    #[error("tls")]
    Tls,
}

/// Where an I/O error happened, for the errors that fit no named kind: a
/// failed connect while connecting, a local I/O error afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Creating the socket, connecting, or completing the connect.
    Connect,
    /// Writing the request or reading the response.
    Transfer,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 13] = [
        ErrorKind::Timeout,
        ErrorKind::ConnectRefused,
        ErrorKind::ConnectFailed,
        ErrorKind::Reset,
        ErrorKind::ShortBody,
        ErrorKind::BadStatus,
        ErrorKind::Malformed,
        ErrorKind::VerifyFailed,
        ErrorKind::Io,
        ErrorKind::FdExhausted,
        ErrorKind::PortsExhausted,
        ErrorKind::Cut,
        ErrorKind::Tls,
    ];

    /// The kind's name: the `error` column of `load`'s files and the keys
    /// of its summary's `errors`.
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
            ErrorKind::FdExhausted => "fd_exhausted",
            ErrorKind::PortsExhausted => "ports_exhausted",
            ErrorKind::Cut => "cut",
            ErrorKind::Tls => "tls",
        }
    }

    /// The one classification of an I/O error of a socket.
    ///
    /// `WouldBlock` is a timeout: a blocking socket returns it when
    /// `SO_RCVTIMEO` or `SO_SNDTIMEO` expires (non-blocking sockets never
    /// let it escape their drivers).
    pub fn of_io(err: &io::Error, phase: Phase) -> ErrorKind {
        if crate::fds::is_exhausted(err) {
            return ErrorKind::FdExhausted;
        }
        match err.kind() {
            io::ErrorKind::AddrNotAvailable => ErrorKind::PortsExhausted,
            io::ErrorKind::ConnectionRefused => ErrorKind::ConnectRefused,
            io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe => ErrorKind::Reset,
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ErrorKind::Timeout,
            io::ErrorKind::UnexpectedEof => ErrorKind::ShortBody,
            _ => match phase {
                Phase::Connect => ErrorKind::ConnectFailed,
                Phase::Transfer => ErrorKind::Io,
            },
        }
    }

    /// The kind as `load` records it. Its documented names (the book's results files,
    /// `requests.csv`) have none for exhausted ports: there it is one more
    /// failed connect, as it always was.
    pub fn in_load(self) -> ErrorKind {
        match self {
            ErrorKind::PortsExhausted => ErrorKind::ConnectFailed,
            kind => kind,
        }
    }

    /// The `err_*` column of `steps.csv` that counts this kind. A connection
    /// that ends before the whole response is a reset there (httperf's
    /// "connection reset"); everything without a column of its own is
    /// `err_other`.
    pub fn sweep_column(self) -> SweepColumn {
        match self {
            ErrorKind::Timeout => SweepColumn::Timeout,
            ErrorKind::ConnectRefused => SweepColumn::ConnectRefused,
            ErrorKind::Reset | ErrorKind::ShortBody => SweepColumn::Reset,
            ErrorKind::PortsExhausted => SweepColumn::PortsExhausted,
            ErrorKind::ConnectFailed
            | ErrorKind::BadStatus
            | ErrorKind::Malformed
            | ErrorKind::VerifyFailed
            | ErrorKind::Io
            | ErrorKind::FdExhausted
            | ErrorKind::Cut
            | ErrorKind::Tls => SweepColumn::Other,
        }
    }
}

/// The `err_*` columns of `steps.csv`: the groups of [`ErrorKind`] that
/// `sweep-load` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepColumn {
    Timeout,
    ConnectRefused,
    Reset,
    PortsExhausted,
    Other,
}

impl SweepColumn {
    pub const ALL: [SweepColumn; 5] = [
        SweepColumn::Timeout,
        SweepColumn::ConnectRefused,
        SweepColumn::Reset,
        SweepColumn::PortsExhausted,
        SweepColumn::Other,
    ];

    /// The column's name in `steps.csv`.
    pub fn name(self) -> &'static str {
        match self {
            SweepColumn::Timeout => "err_timeout",
            SweepColumn::ConnectRefused => "err_connect_refused",
            SweepColumn::Reset => "err_reset",
            SweepColumn::PortsExhausted => "err_ports_exhausted",
            SweepColumn::Other => "err_other",
        }
    }

    /// The column's position in [`SweepColumn::ALL`].
    pub fn index(self) -> usize {
        self as usize
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

    /// A failure of `load` from an error of `connect(2)` or of completing a
    /// connect.
    pub fn connect(err: &io::Error) -> Self {
        Failure::io(Phase::Connect, "connect", err)
    }

    /// A failure of `load` from an error of reading or writing an
    /// established connection; `what` says which.
    pub fn transfer(what: &str, err: &io::Error) -> Self {
        Failure::io(Phase::Transfer, what, err)
    }

    fn io(phase: Phase, what: &str, err: &io::Error) -> Self {
        Failure::new(ErrorKind::of_io(err, phase), format!("{what}: {err}")).in_load()
    }

    /// A failure of a local call that is not a transfer (creating a socket,
    /// setting an option): `fd_exhausted` when out of descriptors, else `io`.
    pub fn local(what: &str, err: &io::Error) -> Self {
        let kind = if crate::fds::is_exhausted(err) {
            ErrorKind::FdExhausted
        } else {
            ErrorKind::Io
        };
        Failure::new(kind, format!("{what}: {err}"))
    }

    /// The failure as `load` records it (see [`ErrorKind::in_load`]).
    pub fn in_load(self) -> Self {
        Failure {
            kind: self.kind.in_load(),
            ..self
        }
    }

    /// What a whole response with `status` fails as: nothing for a 200.
    pub fn of_status(status: Option<u16>) -> Option<Self> {
        match status {
            Some(200) => None,
            Some(s) => Some(Failure::new(ErrorKind::BadStatus, format!("status {s}"))),
            None => Some(Failure::new(ErrorKind::Malformed, "no status")),
        }
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
        for kind in ErrorKind::ALL {
            assert_eq!(kind.to_string(), kind.as_str());
            let json = serde_json::to_string(&kind).expect("serializes");
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
        }
    }

    #[test]
    fn os_errors_map_to_one_kind_for_both_verbs() {
        use ErrorKind as K;
        let os = io::Error::from_raw_os_error;
        for (errno, connect, transfer) in [
            (libc::EADDRNOTAVAIL, K::PortsExhausted, K::PortsExhausted),
            (libc::ECONNREFUSED, K::ConnectRefused, K::ConnectRefused),
            (libc::ECONNRESET, K::Reset, K::Reset),
            (libc::ECONNABORTED, K::Reset, K::Reset),
            (libc::EPIPE, K::Reset, K::Reset),
            (libc::ETIMEDOUT, K::Timeout, K::Timeout),
            (libc::EAGAIN, K::Timeout, K::Timeout),
            (libc::EMFILE, K::FdExhausted, K::FdExhausted),
            (libc::ENFILE, K::FdExhausted, K::FdExhausted),
            (libc::ENETUNREACH, K::ConnectFailed, K::Io),
        ] {
            let e = os(errno);
            assert_eq!(ErrorKind::of_io(&e, Phase::Connect), connect, "{e}");
            assert_eq!(ErrorKind::of_io(&e, Phase::Transfer), transfer, "{e}");
        }
        let eof = io::Error::from(io::ErrorKind::UnexpectedEof);
        assert_eq!(ErrorKind::of_io(&eof, Phase::Transfer), K::ShortBody);
        // What `sweep-load` counts for these (its classes before they were
        // merged into this enum).
        let column = |errno| ErrorKind::of_io(&os(errno), Phase::Connect).sweep_column();
        assert_eq!(column(libc::EADDRNOTAVAIL), SweepColumn::PortsExhausted);
        assert_eq!(column(libc::ECONNREFUSED), SweepColumn::ConnectRefused);
        assert_eq!(column(libc::EPIPE), SweepColumn::Reset);
        assert_eq!(column(libc::ETIMEDOUT), SweepColumn::Timeout);
        assert_eq!(column(libc::EMFILE), SweepColumn::Other);
        let emfile = os(libc::EMFILE);
        assert_eq!(Failure::local("socket", &emfile).kind, K::FdExhausted);
        assert_eq!(Failure::connect(&emfile).kind, K::FdExhausted);
        assert_eq!(Failure::local("socket", &os(libc::ENOBUFS)).kind, K::Io);
        let eof = ErrorKind::of_io(&eof, Phase::Transfer);
        assert_eq!(eof.sweep_column(), SweepColumn::Reset);
    }

    /// Every name written into a file, pinned: `load`'s `error` column and
    /// summary keys, and the `err_*` column `sweep-load` counts each kind in.
    /// The book documents them; renaming one breaks readers of old results.
    #[test]
    fn every_label_is_pinned() {
        use ErrorKind as K;
        let table = [
            (K::Timeout, "timeout", "err_timeout"),
            (K::ConnectRefused, "connect_refused", "err_connect_refused"),
            (K::ConnectFailed, "connect_failed", "err_other"),
            (K::Reset, "reset", "err_reset"),
            (K::ShortBody, "short_body", "err_reset"),
            (K::BadStatus, "bad_status", "err_other"),
            (K::Malformed, "malformed", "err_other"),
            (K::VerifyFailed, "verify_failed", "err_other"),
            (K::Io, "io", "err_other"),
            (K::FdExhausted, "fd_exhausted", "err_other"),
            (K::PortsExhausted, "connect_failed", "err_ports_exhausted"),
            (K::Cut, "cut", "err_other"),
            (K::Tls, "tls", "err_other"),
        ];
        assert_eq!(table.map(|r| r.0), ErrorKind::ALL, "every kind, in order");
        for (kind, load, sweep) in table {
            assert_eq!(kind.in_load().as_str(), load, "{kind:?} in load");
            assert_eq!(kind.sweep_column().name(), sweep, "{kind:?} in sweep-load");
            // The summary's JSON keys are the same names.
            let json = serde_json::to_string(&kind.in_load()).expect("serializes");
            assert_eq!(json, format!("\"{load}\""));
        }
        assert_eq!(
            SweepColumn::ALL.map(SweepColumn::name),
            [
                "err_timeout",
                "err_connect_refused",
                "err_reset",
                "err_ports_exhausted",
                "err_other"
            ]
        );
        for (i, c) in SweepColumn::ALL.into_iter().enumerate() {
            assert_eq!(c.index(), i);
        }
        // And the book's results files document exactly these.
        let readme = include_str!("../../book/src/reference/results-files.md");
        let load_names = "`timeout`, `connect_refused`, `connect_failed`, `reset`, \
                          `short_body`, `bad_status`, `malformed`, `io`, `fd_exhausted`, `tls` |";
        assert!(readme.contains(load_names), "requests.csv `error`");
        assert!(
            readme.contains("| as in `requests.csv`, plus `verify_failed` and `cut` |"),
            "large-responses.csv `error`"
        );
        let sweep_names = SweepColumn::ALL.map(|c| format!("`{}`", c.name()));
        assert!(
            readme.contains(&format!("| {} |", sweep_names.join(", "))),
            "steps.csv err_* columns"
        );
    }
}
