//! The lesson that opens the report, for a reader who has never heard of
//! backpressure: why a worker writing to a slow reader is stuck, how much
//! the kernel's buffers absorb, why buffering off helps only partly, why
//! buffering on or more handlers relieve it, and what that costs.
//!
//! Every number comes from [`Facts`], that is from the directory's data; a
//! sentence whose numbers are missing is left out rather than guessed.

use super::data::Results;
use super::doc::{Block, Section, text};
use super::facts::{self, Facts, RouteFacts};
use super::fmt;
use catalogue::Server;
use catalogue::published::TEMP_PEAK_MIB;

/// Joins the sentences that could be written.
fn para(sentences: Vec<Option<String>>) -> Option<String> {
    let s: Vec<String> = sentences.into_iter().flatten().collect();
    (!s.is_empty()).then(|| s.join(" "))
}

fn triple(v: [f64; 3]) -> String {
    format!("{:.0} {:.0} {:.0}", v[0], v[1], v[2])
}

fn route_name(f: &RouteFacts) -> String {
    f.cond
        .as_ref()
        .map(|c| c.route.to_string())
        .unwrap_or_default()
}

/// Whether the slow clients can occupy every handler of the server the
/// lesson follows (the original's case).
fn blockable(f: &Facts) -> bool {
    f.handlers.is_some_and(|h| h <= f.slow)
}

fn verdict(r: &RouteFacts) -> String {
    r.verdict
        .as_ref()
        .map(|v| format!(" (observed: {v})"))
        .unwrap_or_default()
}

/// What happened, in the reader's terms.
fn setup(f: &Facts) -> Option<String> {
    let server = f.server.as_ref()?;
    let describe = server.known().map(|s| s.describe().to_string());
    para(vec![
        match (f.body, f.slow_rate) {
            (Some(b), Some(rate)) => Some(format!(
                "In this run, {} clients each download a {} response (`/large`) and read it slowly, at {}, so one download takes about {}.",
                f.slow,
                fmt::bytes(b),
                fmt::rate(rate),
                fmt::secs1(b / rate)
            )),
            _ => Some(format!(
                "In this run, {} clients each download a large response (`/large`) slowly.",
                f.slow
            )),
        },
        Some(match f.fast_rate {
            Some(rate) => format!(
                "Meanwhile another client calls a tiny API (`/fast`, 12 bytes) {rate} times a second, on a new connection each time, and never waits for earlier calls before sending the next."
            ),
            None => {
                "Meanwhile another client calls a tiny API (`/fast`) on a fixed schedule.".into()
            }
        }),
        Some(match (describe, f.handlers) {
            (Some(d), Some(h)) => format!(
                "The server followed here is `{server}` ({d}): it has {h} handlers, and each handles one request at a time, from reading it to writing the last byte of the answer."
            ),
            _ => format!("The server followed here is `{server}`."),
        }),
    ])
}

/// Why a worker writing to a slow reader is stuck.
fn stuck(f: &Facts) -> Option<String> {
    let d = &f.direct;
    let measured = match (d.app_send_s, d.client_receive_s, d.p95, d.baseline_p95) {
        (Some(a), Some(c), Some(p), Some(b)) => Some(format!(
            "Here, going direct with {} slow downloads, the app needed {} to hand its response to the kernel and the client {} to read it; the p95 of `/fast` went from {} with no slow client to {} ({} as long).",
            f.slow,
            fmt::secs(a),
            fmt::secs(c),
            fmt::ms(b),
            fmt::ms(p),
            fmt::times(p / b)
        )),
        (_, _, Some(p), _) => Some(format!(
            "Here, going direct with {} slow downloads, the p95 of `/fast` was {}.",
            f.slow,
            fmt::ms(p)
        )),
        _ => None,
    };
    para(vec![
        Some(
            "A worker sends a response by writing it into its connection's socket. The kernel copies the bytes into the \
             socket's send buffer and on into the receiver's receive buffer; when both are full because the client \
             reads slowly, the write waits for room. That waiting is **backpressure**: the slow reader pushes back all \
             the way into the worker, which stays inside its write call, unable to take another request, until nearly \
             the whole response has been read."
                .into(),
        ),
        f.handlers.map(|h| {
            let queue = match d.max_accept_backlog {
                Some(n) if n > 0.0 && h <= f.slow => format!(
                    ", and new `/fast` connections wait in the kernel's accept queue (up to {n:.0} at once in the samples of the direct run)"
                ),
                _ if h <= f.slow => ", and new `/fast` connections wait in the kernel's accept queue".into(),
                _ => String::new(),
            };
            if h <= f.slow {
                format!("With {} slow downloads and {h} handlers, every handler is stuck that way{queue}.", f.slow)
            } else {
                format!(
                    "With {} slow downloads and {h} handlers, {} handlers are stuck that way but {} stay free to answer `/fast`.",
                    f.slow,
                    f.slow,
                    h - f.slow
                )
            }
        }),
        measured,
    ])
}

/// Which kernel buffers absorb how much.
fn buffers(f: &Facts) -> Option<String> {
    let d = &f.direct;
    let est = match (f.body, d.in_flight_at_app_end, f.slow_rate, d.app_send_s) {
        (Some(b), Some(fl), Some(rate), Some(a)) if fl > 0.0 => Some(format!(
            "So the worker is stuck until the client has read all but those {}: {} at {} is about {}, close to the measured {}.",
            fmt::bytes(fl),
            fmt::bytes(b - fl),
            fmt::rate(rate),
            fmt::secs1((b - fl) / rate),
            fmt::secs(a)
        )),
        _ => None,
    };
    para(vec![
        f.wmem.map(|w| {
            format!(
                "How much do the kernel's buffers absorb? This machine's `net.ipv4.tcp_wmem` is `{}` (min, default, max): a socket's send buffer starts at {} and the kernel may grow it to {}.",
                triple(w),
                fmt::bytes(w[1]),
                fmt::bytes(w[2])
            )
        }),
        d.max_app_sndbuf.map(|b| {
            let max = f
                .wmem
                .map(|w| format!(" (`tcp_wmem` max {})", fmt::bytes(w[2])))
                .unwrap_or_default();
            format!(
                "Direct, the app's send buffer grew to {}{max} in the median run (sock_diag's `sndbuf_bytes`).",
                fmt::bytes(b)
            )
        }),
        f.rmem.map(|r| format!("`net.ipv4.tcp_rmem` is `{}`.", triple(r))),
        match (f.rcvbuf_requested, f.rcvbuf_granted) {
            (Some(a), Some(b)) => Some(format!(
                "The slow clients asked for a receive buffer (`SO_RCVBUF`) of {} and Linux granted {} (it counts its bookkeeping too).",
                fmt::bytes(a),
                fmt::bytes(b)
            )),
            _ => None,
        },
        match (d.max_app_queue, d.max_client_queue) {
            (Some(a), Some(c)) => Some(format!(
                "In the samples of the direct run, one app socket's send queue held up to {} and one client's receive queue up to {}.",
                fmt::bytes(a),
                fmt::bytes(c)
            )),
            _ => None,
        },
        match (d.read_at_app_end, d.in_flight_at_app_end) {
            (Some(read), Some(fl)) => Some(format!(
                "When the app handed over its last byte, each client had read about {}; the other {} were in those buffers.",
                fmt::bytes(read),
                fmt::bytes(fl)
            )),
            _ => None,
        },
        est,
    ])
}

/// Why buffering off helps only partly.
fn off(f: &Facts) -> Option<String> {
    let o = &f.off;
    let route = route_name(o);
    o.cond.as_ref()?;
    let kernel = match (
        o.max_app_queue,
        o.max_upstream_queue,
        o.max_proxy_send_queue,
    ) {
        (Some(a), Some(u), Some(p)) => Some(format!(
            "In the samples, one app socket's send queue held up to {}, one of the proxy's receive queues from the app up to {}, and one of its send queues to a client up to {}.",
            fmt::bytes(a),
            fmt::bytes(u),
            fmt::bytes(p)
        )),
        _ => None,
    };
    para(vec![
        Some(format!(
            "With the proxy's buffering off (`{route}`), the proxy passes bytes on as it reads them and keeps only a small buffer of its own. \
             But it adds a second pair of kernel buffers: between the app and the proxy, and between the proxy and the client."
        )),
        kernel,
        match (o.in_flight_at_app_end, f.direct.in_flight_at_app_end) {
            (Some(a), Some(b)) => Some(format!(
                "When the app finished, about {} were on the way instead of {} direct.",
                fmt::bytes(a),
                fmt::bytes(b)
            )),
            _ => None,
        },
        match (o.app_send_s, f.direct.app_send_s, o.p95) {
            (Some(a), Some(b), Some(p)) if blockable(f) => Some(format!(
                "So the app was done after {} instead of {}: shorter, but its workers are still stuck for most of each download, and `/fast` still waited: p95 {}{}.",
                fmt::secs(a),
                fmt::secs(b),
                fmt::ms(p),
                verdict(o)
            )),
            (Some(a), Some(b), Some(p)) => Some(format!(
                "So the app was done after {} instead of {}; `/fast` had a p95 of {}{}, since this server kept handlers free anyway.",
                fmt::secs(a),
                fmt::secs(b),
                fmt::ms(p),
                verdict(o)
            )),
            _ => None,
        },
    ])
}

/// Why buffering on, or more handlers, relieves it.
fn relief(f: &Facts, slow: u32) -> Option<String> {
    let o = &f.on;
    let on = o.cond.as_ref().map(|_| {
        let route = route_name(o);
        let mut s = format!(
            "With buffering on (`{route}`), the proxy reads the whole response as fast as the app writes it, into memory buffers and then a temp file, and feeds the client at the client's pace."
        );
        if let (Some(a), Some(p)) = (o.app_send_s, o.p95) {
            s.push_str(&format!(
                " The app finished in {}, its workers were free again, and `/fast` kept a p95 of {}{}.",
                fmt::secs(a),
                fmt::ms(p),
                o.baseline_p95.map(|b| format!(" (with no slow client: {})", fmt::ms(b))).unwrap_or_default()
            ));
        }
        s
    });
    let more = if f.more_handlers.is_empty() {
        Some(format!(
            "More handlers than slow clients would relieve it too, without a proxy; this directory has no such server with {slow} slow clients (the `cross` preset runs `rust-threads4` and `rust-async`)."
        ))
    } else {
        let list: Vec<String> = f
            .more_handlers
            .iter()
            .map(|(s, p)| {
                let h = s.known().and_then(Server::handlers);
                let hs = h
                    .map(|h| format!("{h} handlers"))
                    .unwrap_or_else(|| "a task per connection".into());
                format!("`{s}` ({hs}): p95 {}", fmt::or_dash(*p, fmt::ms))
            })
            .collect();
        Some(format!(
            "More handlers than slow clients relieve it too, without a proxy: the stuck handlers wait while free ones answer `/fast`. Direct with {slow} slow downloads: {}.",
            list.join("; ")
        ))
    };
    para(vec![on, more])
}

/// What the relief costs.
fn cost(f: &Facts) -> Option<String> {
    let o = &f.on;
    para(vec![
        o.temp_peak_mib.map(|t| {
            format!(
                "The relief is not free: the proxy holds what the clients have not read yet. Its open temp files peaked at {} here (the original measured about {}).",
                fmt::mib(t),
                fmt::mib(TEMP_PEAK_MIB)
            )
        }),
        match (o.proxy_memory_peak, f.off.proxy_memory_peak) {
            (Some(a), Some(b)) => Some(format!(
                "The proxy's cgroup memory peaked at {} with buffering on against {} with it off (cgroup memory counts the temp files' page cache: a file is not free of memory).",
                fmt::bytes(a),
                fmt::bytes(b)
            )),
            _ => None,
        },
        f.app_cpu_max.map(|c| {
            format!(
                "And the stuck workers cost no CPU: the app used at most {} on average in any run. It was waiting, not computing, which is why a CPU graph would not show the problem.",
                fmt::cores_percent(c)
            )
        }),
    ])
}

/// A queue "fills" when one socket (or the tbf) held at least this much in
/// one sample: four times the clients' granted receive buffer of the
/// experiment, well above a queue that only passes bytes on.
const FILLED: f64 = 64.0 * 1024.0;

/// How the picture differs behind a shaped link from paced reads: which
/// queues filled, and whether the worker was freed earlier or later.
fn link(f: &Facts) -> Option<String> {
    let l = f.kinds.iter().find(|k| k.kind == "link")?;
    let pace = f.kinds.iter().find(|k| k.kind == "pace");
    let peaks = |k: &facts::KindFacts| -> Vec<(&'static str, f64)> {
        [
            ("one app socket's send queue", k.max_app_queue),
            ("the link's qdisc (tbf or htb)", k.max_link_backlog),
            ("one client's receive queue", k.max_client_queue),
        ]
        .into_iter()
        .filter_map(|(what, v)| Some((what, v?)))
        .collect()
    };
    let list = |k: &facts::KindFacts| -> String {
        peaks(k)
            .iter()
            .map(|(what, v)| format!("{what} up to {}", fmt::bytes(*v)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let filled = |k: &facts::KindFacts| -> String {
        let full: Vec<&str> = peaks(k)
            .into_iter()
            .filter(|(_, v)| *v >= FILLED)
            .map(|(what, _)| what)
            .collect();
        if full.is_empty() {
            "none of them held 64 KiB".into()
        } else {
            format!("{} filled", full.join(" and "))
        }
    };
    let link_name = l
        .link
        .as_ref()
        .map(|x| format!(" (`{x}`)"))
        .unwrap_or_default();
    let drops = match l.link_drops {
        Some(d) if d > 0.0 => format!(" The tbf dropped {d:.0} packets, which TCP sent again."),
        Some(_) => " The tbf dropped no packet.".into(),
        None => String::new(),
    };
    let mut s = format!(
        "Behind a shaped link{link_name} instead of paced reads, the {} slow clients read as fast as they can and the link is the bottleneck. In the samples of the direct {} (`{}`): {}; so {}.{drops}",
        f.slow,
        if l.runs == 1 {
            "run".to_string()
        } else {
            format!("{} runs", l.runs)
        },
        f.server.as_ref().map(|s| s.to_string()).unwrap_or_default(),
        list(l),
        filled(l),
    );
    if let Some(p) = pace {
        s.push_str(&format!(
            " With paced reads on an unshaped path: {}; so {}.",
            list(p),
            filled(p)
        ));
        if let (Some(a), Some(b)) = (l.app_send_s, p.app_send_s) {
            let when = if (a - b).abs() <= 0.05 * b {
                "at about the same time"
            } else if a < b {
                "earlier"
            } else {
                "later"
            };
            s.push_str(&format!(
                " The app handed its response to the kernel after {} behind the link against {} with paced reads (median `app_send_s`): its worker was freed {when}.",
                fmt::secs(a),
                fmt::secs(b)
            ));
        }
    } else if let Some(a) = l.app_send_s {
        s.push_str(&format!(
            " The app handed its response to the kernel after {} (median `app_send_s`); this directory has no direct run with paced reads to compare.",
            fmt::secs(a)
        ));
    }
    Some(s)
}

/// Builds the lesson section.
pub fn section(r: &Results, s: &mut Section) -> anyhow::Result<()> {
    let f = facts::gather(r);
    if f.server.is_none() {
        s.note("There are no conditions with slow clients in this directory, so there is no lesson to draw from it yet.");
        return Ok(());
    }
    let parts = [
        setup(&f),
        stuck(&f),
        buffers(&f),
        off(&f),
        relief(&f, f.slow),
        cost(&f),
        link(&f),
    ];
    for p in parts.into_iter().flatten() {
        s.push(Block::Para(text(&p)));
    }
    Ok(())
}
