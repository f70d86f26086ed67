//! `--only`: which conditions of a plan run.

use crate::cells::Kind;
use crate::condition::Condition;
use crate::net::SlowKind;
use crate::profile::LoadProfile;
use crate::reader::ReaderModel;
use crate::route::Route;
use crate::server::Server;

/// `--only`: comma-separated terms that must all match a condition. A term
/// is a server name, a route name, `slow=N`, `server=`/`route=` with a
/// name, `reader=strict|streamreader` (the reader the run uses, the
/// preset's when the condition names none), `wmem=SIZE`/`rmem=SIZE` or
/// `wmem=host`/`rmem=host` (the condition's buffer cell; `host`: it sets
/// none), `kind=pace|link` (the condition's slow-client kind; one without
/// a kind of its own is `pace`, and becomes `link` only under a run-wide
/// `--link`), `spc=N` (the condition's HTTP/2 streams per connection;
/// 1 on every HTTP/1 route).
#[derive(Debug, Clone, Default)]
pub struct Filter {
    terms: Vec<Term>,
}

#[derive(Debug, Clone, PartialEq)]
enum Term {
    Server(Server),
    Route(Route),
    Slow(u32),
    Reader(ReaderModel),
    Wmem(Option<u64>),
    Rmem(Option<u64>),
    Kind(SlowKind),
    StreamsPerConn(u32),
}

impl Term {
    fn matches(&self, c: &Condition, profile: &LoadProfile) -> bool {
        match self {
            Term::Server(s) => *s == c.server,
            Term::Route(r) => *r == c.route,
            Term::Slow(n) => *n == c.slow,
            Term::Reader(r) => *r == profile.reader_of(c),
            Term::Wmem(w) => *w == c.buffers.wmem,
            Term::Rmem(r) => *r == c.buffers.rmem,
            Term::Kind(k) => *k == c.kind.map_or(SlowKind::Pace, Kind::slow_kind),
            Term::StreamsPerConn(n) => *n == c.streams_per_conn,
        }
    }
}

/// `SIZE` or `host` of a `wmem=`/`rmem=` term.
fn cell_size(key: &str, v: &str) -> Result<Option<u64>, String> {
    if v == "host" {
        return Ok(None);
    }
    common::units::parse_size(v)
        .map(Some)
        .map_err(|_| format!("`{key}={v}`: expected a size such as 16M, or host"))
}

impl std::str::FromStr for Filter {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut terms = Vec::new();
        for raw in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let term = match raw.split_once('=') {
                Some(("server", v)) => Term::Server(v.parse()?),
                Some(("route", v)) => Term::Route(v.parse()?),
                Some(("slow", v)) => Term::Slow(
                    v.parse()
                        .map_err(|_| format!("`slow={v}`: expected a number"))?,
                ),
                Some(("reader", v)) => Term::Reader(
                    <ReaderModel as clap::ValueEnum>::from_str(v, false)
                        .map_err(|_| format!("`reader={v}`: expected strict or streamreader"))?,
                ),
                Some(("spc", v)) => Term::StreamsPerConn(
                    v.parse()
                        .map_err(|_| format!("`spc={v}`: expected a number"))?,
                ),
                Some(("wmem", v)) => Term::Wmem(cell_size("wmem", v)?),
                Some(("rmem", v)) => Term::Rmem(cell_size("rmem", v)?),
                Some(("kind", "pace")) => Term::Kind(SlowKind::Pace),
                Some(("kind", "link")) => Term::Kind(SlowKind::Link),
                Some(("kind", v)) => return Err(format!("`kind={v}`: expected pace or link")),
                Some((k, _)) => {
                    return Err(format!(
                        "unknown filter key `{k}` (server, route, slow, reader, wmem, rmem, kind, spc)"
                    ));
                }
                None => match (raw.parse::<Server>(), raw.parse::<Route>()) {
                    (Ok(s), _) => Term::Server(s),
                    (_, Ok(r)) => Term::Route(r),
                    _ => {
                        return Err(format!(
                            "`{raw}` is neither a server nor a route (or use slow=N)"
                        ));
                    }
                },
            };
            terms.push(term);
        }
        if terms.is_empty() {
            return Err("empty filter".into());
        }
        Ok(Filter { terms })
    }
}

impl Filter {
    /// Whether `c`, run under `profile`, matches. Terms of the same kind
    /// are alternatives (`rust-sync2,gunicorn-sync2`); terms of different
    /// kinds must all hold.
    pub fn matches(&self, c: &Condition, profile: &LoadProfile) -> bool {
        let mut kinds: Vec<(std::mem::Discriminant<Term>, bool)> = Vec::new();
        for t in &self.terms {
            let (d, m) = (std::mem::discriminant(t), t.matches(c, profile));
            match kinds.iter_mut().find(|(k, _)| *k == d) {
                Some(kind) => kind.1 |= m,
                None => kinds.push((d, m)),
            }
        }
        kinds.iter().all(|(_, m)| *m)
    }
}
