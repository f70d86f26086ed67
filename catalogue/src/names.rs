//! Names in results files parsed once, when a file is read: a server, a
//! route, a component, a run's status, a verdict. A name this version does
//! not know (a file written by another version) is kept as written, so the
//! report still draws it, under its own name.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A closed set of names with a canonical spelling.
pub trait Name: Copy + Eq + 'static {
    const ALL: &'static [Self];
    fn name(self) -> &'static str;
}

/// A name read from a file: one of `T`, or one this version does not know.
/// Known names sort before unknown ones, in the order of `T`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Named<T> {
    Known(T),
    Unknown(String),
}

impl<T: Name> Named<T> {
    pub fn parse(s: &str) -> Named<T> {
        T::ALL
            .iter()
            .copied()
            .find(|v| v.name() == s)
            .map(Named::Known)
            .unwrap_or_else(|| Named::Unknown(s.to_string()))
    }

    /// The known value, if it is one.
    pub fn known(&self) -> Option<T> {
        match self {
            Named::Known(v) => Some(*v),
            Named::Unknown(_) => None,
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Named::Known(v) => v.name(),
            Named::Unknown(s) => s,
        }
    }
}

/// The known name `s` of a `T`, or the one-line error a flag gives for
/// another: "unknown WHAT `s` (expected one of ...)".
pub fn parse_known<T: Name>(s: &str, what: &str) -> Result<T, String> {
    T::ALL
        .iter()
        .copied()
        .find(|v| v.name() == s)
        .ok_or_else(|| {
            let names: Vec<&str> = T::ALL.iter().map(|v| v.name()).collect();
            format!(
                "unknown {what} `{s}` (expected one of {})",
                names.join(", ")
            )
        })
}

impl<T: Name> Default for Named<T> {
    fn default() -> Self {
        Named::Unknown(String::new())
    }
}

impl<T: Name> From<T> for Named<T> {
    fn from(v: T) -> Self {
        Named::Known(v)
    }
}

impl<T: Name> PartialEq<T> for Named<T> {
    fn eq(&self, other: &T) -> bool {
        self.known() == Some(*other)
    }
}

impl<T: Name> fmt::Display for Named<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<T: Name> FromStr for Named<T> {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Named::parse(s))
    }
}

impl<T: Name> Serialize for Named<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de, T: Name> Deserialize<'de> for Named<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(Named::parse(s.trim()))
    }
}

/// A sampled component as read from a results file.
pub type ComponentName = Named<Component>;
/// A run's status as read from `runs.csv`.
pub type StatusName = Named<RunStatus>;
/// A verdict as read from `crosscheck.csv`.
pub type VerdictName = Named<Verdict>;
/// The kind of a check in `crosscheck.csv`.
pub type CheckName = Named<Check>;
/// Which way a condition's slow clients are slow, as read from a file.
pub type DirectionName = Named<Direction>;
/// Whether a sweep ran under the experiment's caps.
pub type CapsName = Named<CapsMode>;

/// Declares a closed set of names: the enum, its canonical spellings and
/// [`Name`].
macro_rules! names {
    ($(#[$doc:meta])* $t:ident { $($(#[$vdoc:meta])* $v:ident = $s:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $t { $($(#[$vdoc])* $v),+ }

        impl $t {
            pub const ALL: &'static [$t] = &[$($t::$v),+];

            /// The name as files write it.
            pub fn name(self) -> &'static str {
                match self { $($t::$v => $s),+ }
            }
        }

        impl Name for $t {
            const ALL: &'static [$t] = $t::ALL;
            fn name(self) -> &'static str {
                $t::name(self)
            }
        }

        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

names!(
    /// A sampled part of the data path.
    Component {
        App = "app",
        Proxy = "proxy",
        Loadgen = "loadgen",
    }
);

names!(
    /// How a run ended, as `runs.csv` writes it.
    RunStatus {
        Ok = "ok",
        Failed = "failed",
        /// A tool it needs is missing on this machine.
        Skipped = "skipped",
        Interrupted = "interrupted",
    }
);

names!(
    /// A verdict about `/fast` under slow clients.
    Verdict {
        Blocked = "blocked",
        Partial = "partial",
        Relieved = "relieved",
    }
);

names!(
    /// Which way a condition's slow clients are slow (`direction` of
    /// `runs.csv`, `conditions.csv`, `crosscheck.csv`; empty in files
    /// before it means `download`).
    Direction {
        /// Slow readers of `/large` (`slowlab load --slow`).
        Download = "download",
        /// Slow uploaders of `POST /upload` (`--slow-upload`).
        Upload = "upload",
        /// Slowloris clients that never finish the head (`--slow-headers`).
        Headers = "headers",
    }
);

impl Serialize for Direction {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl DirectionName {
    /// The direction, `download` when empty (files before the column).
    pub fn or_download(&self) -> Option<Direction> {
        match self {
            Named::Unknown(s) if s.is_empty() => Some(Direction::Download),
            n => n.known(),
        }
    }
}

names!(
    /// Whether the experiment's caps were in force (`caps` of the sweep
    /// files).
    CapsMode {
        Capped = "capped",
        Uncapped = "uncapped",
    }
);

names!(
    /// What a row of `crosscheck.csv` checks.
    Check {
        /// The rule's prediction against the observation.
        Prediction = "prediction",
        /// A Rust stack against its Gunicorn/NGINX counterpart.
        Replica = "replica",
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::{Route, RouteName};
    use crate::server::{Server, ServerName};

    #[test]
    fn known_names_parse_and_unknown_ones_are_kept() {
        assert_eq!(ServerName::parse("rust-sync2"), Server::RustSync2);
        assert_eq!(RouteName::parse("nginx-on").known(), Some(Route::NginxOn));
        let odd = RouteName::parse("haproxy-on");
        assert_eq!(odd, Named::Unknown("haproxy-on".into()));
        assert_eq!(odd.to_string(), "haproxy-on");
        let order: Vec<ServerName> = ["zzz", "rust-async", "aaa", "gunicorn-sync2", "rust-sync2"]
            .iter()
            .map(|n| Named::parse(n))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let names: Vec<&str> = order.iter().map(Named::as_str).collect();
        assert_eq!(
            names,
            ["gunicorn-sync2", "rust-sync2", "rust-async", "aaa", "zzz"],
            "known names in the harness's order, then unknown ones"
        );
        assert_eq!(StatusName::parse("ok"), RunStatus::Ok);
        assert_eq!(ComponentName::parse("loadgen"), Component::Loadgen);
    }
}
