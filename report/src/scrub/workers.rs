//! The app's workers of one run as lanes, busy or free, derived from the
//! send log (`app-sends.csv`): a worker is busy from the start of a
//! `/large` body until the kernel accepted its last byte. Servers without a
//! fixed pool (async) get no lanes and a note that says so.

use serde::Serialize;

use super::data::ms;
use crate::data::Results;
use analysis::select;
use schema::{LargeRow, ServerName};

/// Servers with more handlers than this (gevent's greenlets) get no lanes.
const MAX_LANES: u32 = 8;

/// How the worker lanes are derived, as the section says it.
pub const WORKERS_DERIVED: &str = "Worker lanes are derived from `app-sends.csv`: a worker is busy from \
     the start of a `/large` body until the kernel accepted its last byte (`app_send_s`), or, where the \
     app did not finish writing, until the client's connection ended; the milliseconds a worker spends \
     on each `/fast` request are too short to draw. Where a server's workers are not a fixed pool \
     (async servers), the panel says so and draws no lanes.";

/// The app's workers.
#[derive(Debug, Clone, Serialize)]
pub struct Workers {
    /// Whether the lanes are the server's whole pool.
    pub known: bool,
    /// How the lanes were derived, or why there are none.
    pub note: String,
    pub lanes: Vec<Lane>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Lane {
    /// The worker as the send log names it; empty for a worker that wrote
    /// no `/large` response.
    pub name: String,
    pub spans: Vec<Span>,
}

/// A worker busy with one `/large` response.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Span {
    pub start_ms: f64,
    pub end_ms: f64,
    /// The slow client it wrote to (the lab pairs responses with the send
    /// log by start order, `large-responses.csv`'s `app_worker`).
    pub client: Option<u32>,
    /// What ended it: `app_send_s` (the kernel took the last byte), the
    /// `connection` end, or the `run` end.
    pub until: &'static str,
}

/// The worker lanes of the run `run_id` of `server`, whose slow responses
/// are `large`; spans that never ended end at `end` s, the run's end.
pub fn lanes(
    r: &Results,
    server: &ServerName,
    run_id: &str,
    large: &[&LargeRow],
    end: f64,
) -> Workers {
    let handlers = select::handlers(server);
    let count = match handlers {
        None => {
            return Workers {
                known: false,
                note: format!(
                    "{server} has no fixed pool of workers (one task per connection): which handler is busy is not known, so no lanes are drawn"
                ),
                lanes: Vec::new(),
            };
        }
        Some(n) if n > MAX_LANES => {
            return Workers {
                known: false,
                note: format!("{server} has {n} handlers, too many to draw as lanes"),
                lanes: Vec::new(),
            };
        }
        Some(n) => n,
    };
    let mut sends: Vec<_> = r.app_sends.iter().filter(|a| a.run_id == run_id).collect();
    sends.sort_by(|a, b| {
        a.t_s
            .unwrap_or(f64::MAX)
            .total_cmp(&b.t_s.unwrap_or(f64::MAX))
    });
    let mut lanes: Vec<Lane> = Vec::new();
    for (i, a) in sends.iter().enumerate() {
        let Some(start) = a.t_s else { continue };
        // A send log without worker names gets a lane per response.
        let name = a
            .worker
            .clone()
            .unwrap_or_else(|| format!("response {}", i + 1));
        let pair = large.iter().find(|l| {
            l.app_worker == a.worker && l.app_send_s == a.app_send_s && a.worker.is_some()
        });
        let (stop, until) = match (a.end_s(), pair.and_then(|l| l.end_s())) {
            (Some(e), _) => (e, "app_send_s"),
            (None, Some(e)) => (e, "connection"),
            (None, None) => (end, "run"),
        };
        let span = Span {
            start_ms: ms(start),
            end_ms: ms(stop),
            client: pair.map(|l| l.client),
            until,
        };
        match lanes.iter_mut().find(|l| l.name == name) {
            Some(l) => l.spans.push(span),
            None => lanes.push(Lane {
                name,
                spans: vec![span],
            }),
        }
    }
    while lanes.len() < count as usize {
        lanes.push(Lane {
            name: String::new(),
            spans: Vec::new(),
        });
    }
    Workers {
        known: true,
        note: format!(
            "{server}: {count} workers; busy from a /large body's start to app_send_s (app-sends.csv)"
        ),
        lanes,
    }
}
