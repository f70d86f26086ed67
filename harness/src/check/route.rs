//! One route of a check: its stack started, its pre-flight checks, its
//! baseline, the search over its levels (each judged from the fast path and
//! then from the evidence: inconclusive when the tester ran out, else the
//! cause of anything but "held"), the boundary levels measured again
//! (`--repeat`), and the stack stopped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use catalogue::Route;
use common::exit::BadInput;
use common::units::Size;
use lab::signals;
use lab::stack::App;
use lab::stack::run::{self as lifecycle, Lab, Stack, StackSpec};
use schema::{Appender, CheckRow, Direction, LevelVerdict};

use super::answer::{self, RouteResult};
use super::evidence::{self, Cause};
use super::level::{self, Figures, Plan};
use super::preflight::{self, Finding, Status};
use super::search::{self, Judge, Step};

/// What a route's run needs besides its stack.
pub struct RouteCheck<'a> {
    pub lab: &'a Lab<'a>,
    pub spec: &'a StackSpec,
    /// The route's name in the answer and `check.csv` (`--label` for the
    /// route to the server itself).
    pub label: String,
    /// What was checked: the `--server-cmd` line, the `--target` URL or
    /// the lab's server.
    pub what: &'a str,
    pub target: &'a loadgen::target::Target,
    /// `--repeat`.
    pub repeat: u32,
    /// `--slow-rate`, when given; else the pre-flight picks one.
    pub slow_rate: Option<u64>,
}

/// The levels of one started route: each measured, judged and written to
/// `check.csv` as it ends.
struct Levels<'a, 'b> {
    stack: &'b mut Stack<'a>,
    plan: &'b Plan,
    judge: Judge,
    check: &'b RouteCheck<'a>,
    dir: PathBuf,
    /// Whether the route's proxy buffers what the slow clients move.
    buffering: bool,
    rows: Vec<CheckRow>,
    /// Every verdict of each level, in the order measured.
    verdicts: BTreeMap<u32, Vec<LevelVerdict>>,
    csv: &'b mut Appender<CheckRow>,
}

impl Levels<'_, '_> {
    /// Measures a level of `n` slow clients (its `repetition`-th
    /// measurement) and its recovery, judges it and records it.
    fn level(&mut self, n: u32, repetition: u32) -> Result<Step> {
        if signals::requested() {
            return Ok(Step::Stop);
        }
        if let Some(why) = self.stack.exited() {
            bail!("the server stopped before the level of {n}: {why}");
        }
        let name = match repetition {
            1 => format!("level-{n}"),
            r => format!("level-{n}-{r}"),
        };
        let labels = labels(&self.check.label, self.plan.direction, n);
        let f = level::measure(
            self.stack,
            self.plan,
            n,
            self.plan.level_duration,
            &self.dir.join(&name),
            labels.clone(),
        )?;
        // A server that died during the level gets no verdict: what the
        // fast path saw was its absence, not its capacity.
        if let Some(why) = self.stack.exited() {
            bail!(
                "the server stopped during the level of {n} {}: {why}",
                answer::clients(self.plan.direction)
            );
        }
        let (verdict, cause) = judged(&f, &self.judge, self.plan.direction, self.buffering, n);
        let recovery = match n {
            0 => None,
            _ => Some(recover(
                self.stack,
                self.plan,
                &self.dir.join(format!("{name}-recovery")),
                &self.judge,
                labels,
            )?),
        };
        let row = answer::Level {
            route: &self.check.label,
            direction: self.plan.direction,
            server: self.check.what,
            slow: n,
            order: self.rows.len() as u32 + 1,
            figures: &f,
            judge: &self.judge,
            verdict,
            cause,
            repetition,
            edge: self.stack.edge(),
            streams_per_conn: self.check.spec.streams.per_conn,
            recovery: recovery.as_ref(),
            dir: &format!("{}/{name}", self.check.label),
        }
        .row();
        eprintln!("{}", answer::level_line(&row));
        self.csv.append(std::slice::from_ref(&row))?;
        self.rows.push(row);
        self.verdicts.entry(n).or_default().push(verdict);
        Ok(match recovery {
            Some((_, false)) => Step::Last(verdict),
            _ => Step::Level(verdict),
        })
    }
}

/// The labels of a level's load files.
fn labels(route: &str, direction: Direction, n: u32) -> Vec<String> {
    vec![
        format!("route={route}"),
        format!("direction={direction}"),
        format!("slow_readers={n}"),
    ]
}

/// A level's verdict and its cause: the fast path's verdict, unless the
/// tester or the host ran out (then inconclusive, whatever the fast path
/// did: a held level stays held, as nothing that ran out hid a denial);
/// anything but "held" with the server-side cause the evidence shows.
pub fn judged(
    f: &Figures,
    judge: &Judge,
    direction: Direction,
    buffering: bool,
    n: u32,
) -> (LevelVerdict, Cause) {
    let v = f.verdict(judge);
    if v == LevelVerdict::Held {
        return (v, Cause::None);
    }
    if let Some(c) = evidence::tester_ran_out(&f.evidence) {
        return (LevelVerdict::Inconclusive, c);
    }
    (v, evidence::cause(&f.evidence, direction, buffering, n))
}

/// Whether `route`'s proxy buffers what slow clients of `direction` move:
/// responses (downloads), request bodies of `upload_bytes` (uploads: a
/// proxy that waits for one buffer's worth of a longer body, as HAProxy's
/// `option http-buffer-request` does, passes the rest through), or heads.
pub fn buffers(route: Route, direction: Direction, upload_bytes: u64) -> bool {
    match direction {
        // Apache's `FlushMaxThreshold` does nothing at its HTTP/2 edge.
        Direction::Download => route.buffers_here(),
        Direction::Upload => route.absorbs_request(upload_bytes),
        // Every proxy of the lab waits for the whole head.
        Direction::Headers => route.proxy().is_some(),
    }
}

/// Starts the route's stack, runs its pre-flight checks and its search,
/// repeats its boundary levels, and stops it.
pub fn check_route(
    c: &RouteCheck<'_>,
    plan: &mut Plan,
    findings: &mut Vec<Finding>,
    csv: &mut Appender<CheckRow>,
) -> Result<RouteResult> {
    let route = c.spec.route;
    let mut stack = lifecycle::start(c.lab, c.spec)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("starting the stack of {}", c.label))?;
    // The user's proxy (`--through-cmd`) rides on the direct route's
    // pre-flight: direct is always checked first.
    let own_proxy = c.spec.proxy_cmd.is_some();
    if route == Route::Direct && !own_proxy {
        // Direct is always cleartext HTTP/1.1, which the pre-flight's
        // own requests speak.
        let url = stack.url();
        let entry =
            loadgen::target::Target::resolve(&url, true).map_err(|e| anyhow::anyhow!("{e}"))?;
        let host = match &c.spec.server {
            App::Running { .. } => &c.target.parsed.authority,
            _ => &entry.parsed.authority,
        };
        preflight_direct(&stack, entry.addr, host, plan, c.slow_rate, findings)?;
    }
    let dir = c.spec.paths.logs().to_path_buf();
    let base = level::measure(
        &stack,
        plan,
        0,
        plan.level_duration,
        &dir.join("baseline"),
        labels(&c.label, plan.direction, 0),
    )?;
    let judge = baseline(&base, plan, &c.label, findings)?;
    let mut levels = Levels {
        stack: &mut stack,
        plan,
        judge,
        check: c,
        dir,
        // What the user's proxy buffers is not known: the evidence says.
        buffering: !own_proxy && buffers(route, plan.direction, plan.upload.upload_bytes.0),
        rows: Vec::new(),
        verdicts: BTreeMap::new(),
        csv,
    };
    let mut outcome = search::search(plan.max_slow, |n| levels.level(n, 1))?;
    // The boundary measured again; one that its repeats overturn (a
    // transient denial) is searched above, until one repeats or the top.
    loop {
        if outcome.stopped || c.repeat < 2 {
            break;
        }
        let bounds = search::boundary(&outcome);
        for repetition in 2..=c.repeat {
            for n in bounds.iter().flatten() {
                if let Step::Stop = levels.level(*n, repetition)? {
                    break;
                }
            }
        }
        let settled = search::settle(&outcome, &levels.verdicts);
        let Some(floor) = search::overturned(&outcome, &settled, plan.max_slow) else {
            break;
        };
        let more = search::search_from(Some(floor), plan.max_slow, |n| levels.level(n, 1))?;
        outcome = search::resumed(outcome, more);
    }
    let (rows, verdicts) = (levels.rows, levels.verdicts);
    stack.stop();
    // Behind a shared link, the share of the most clients a level has.
    let rate = plan.client_rate(plan.max_slow);
    let body_bytes = match plan.direction {
        Direction::Download => plan.large_bytes,
        _ => plan.upload.upload_bytes.bytes(),
    };
    Ok(RouteResult {
        route,
        own_proxy,
        label: c.label.clone(),
        direction: plan.direction,
        baseline_ms: judge.baseline_ms,
        settled: search::settle(&outcome, &verdicts),
        outcome,
        rows,
        body_bytes,
        rate,
    })
}

/// The route's judge from its baseline load: the fast path must answer
/// quickly with no slow client, or nothing can be judged.
fn baseline(
    base: &Figures,
    plan: &Plan,
    label: &str,
    findings: &mut Vec<Finding>,
) -> Result<Judge> {
    let judge = match (base.p95_ms, base.error_count()) {
        (Some(p), 0) if p < search::DENIED_MS => Judge {
            baseline_ms: p,
            noise_floor_ms: plan.noise_floor_ms,
        },
        (p, errors) => {
            let answers = match base.statuses.iter().max_by_key(|(_, n)| **n) {
                Some((status, n)) => format!(
                    "it answers {status} ({n} of {} calls), not 200",
                    base.requests
                ),
                None => format!(
                    "it does not answer quickly (p95 {}, {errors} errors of {} requests)",
                    p.map_or("none".into(), |p| format!("{p:.1} ms")),
                    base.requests
                ),
            };
            let message = format!(
                "the fast path {} without slow clients through {label}: {answers}",
                plan.fast_path
            );
            findings.push(Finding::new("baseline", Status::Error, message.clone()));
            bail!(BadInput::new(message));
        }
    };
    findings.push(Finding::new(
        "baseline",
        Status::Ok,
        format!(
            "{label}: p95 of {} is {:.3} ms with no {} (a level is held up to {:.3} ms)",
            plan.fast_path,
            judge.baseline_ms,
            answer::client(plan.direction),
            judge.held_limit_ms()
        ),
    ));
    Ok(judge)
}

/// The pre-flight checks of the direct route, asked from where the slow
/// clients will be (the client namespace): in the download direction the
/// large path, the kernel's buffers and the readers' rate (the lowest that
/// still holds a handler through a level, unless `--slow-rate` gave one),
/// in the upload direction the upload path; and whether a slow client
/// holds its handler for a whole level.
fn preflight_direct(
    stack: &Stack<'_>,
    addr: std::net::SocketAddr,
    host: &str,
    plan: &mut Plan,
    slow_rate: Option<u64>,
    findings: &mut Vec<Finding>,
) -> Result<()> {
    let client = stack.netlab().map(|n| n.client.path());
    let window = (level::FAST_START + plan.level_duration).as_secs_f64();
    let hold = match plan.direction {
        Direction::Download => {
            let large = lab::netns::within(client.as_deref(), || {
                preflight::large_path(addr, host, &plan.large_path, plan.ready_timeout)
            })
            .inspect_err(|e| {
                findings.push(Finding::new("large_path", Status::Error, format!("{e:#}")))
            })?;
            plan.large_bytes = large.bytes;
            if let Some(software) = &large.server {
                findings.push(Finding::new(
                    "server_software",
                    Status::Ok,
                    software.clone(),
                ));
            }
            findings.push(Finding::new(
                "large_path",
                Status::Ok,
                format!(
                    "{} answers 200 with {} bytes ({}, {})",
                    plan.large_path,
                    large.bytes,
                    Size(large.bytes),
                    match large.framing {
                        "content-length" => "its Content-Length".to_string(),
                        f => format!("no Content-Length: measured by reading it, {f}-framed"),
                    }
                ),
            ));
            // Behind --link the readers read unpaced.
            let behind_link = plan.link.is_some();
            let buffers = preflight::buffers(plan.rcvbuf, behind_link, stack.netlab())?;
            let fits = preflight::fits(large.bytes, &buffers, behind_link, &plan.large_path)
                .inspect_err(|e| {
                    findings.push(Finding::new("buffers", Status::Error, format!("{e:#}")))
                })?;
            findings.push(fits);
            if !behind_link {
                let (rate, finding) =
                    preflight::slow_rate(large.bytes, &buffers, window, slow_rate);
                plan.slow_rate = rate;
                findings.push(finding);
            }
            Some(preflight::hold_s(
                large.bytes,
                &buffers,
                plan.client_rate(1),
            ))
        }
        Direction::Upload => {
            let path = &plan.upload.upload_path;
            let f = lab::netns::within(client.as_deref(), || {
                preflight::upload_path(addr, host, path, plan.ready_timeout)
            })
            .inspect_err(|e| {
                findings.push(Finding::new("upload_path", Status::Error, format!("{e:#}")))
            })?;
            findings.push(f);
            // The server reads a body as it arrives: its handler is held
            // for the whole upload, whatever the kernel buffers.
            Some(plan.transfer(1).as_secs_f64())
        }
        // A slowloris client never lets go before the level ends.
        Direction::Headers => None,
    };
    if let Some(hold) = hold.filter(|h| *h < window) {
        let who = match plan.direction {
            Direction::Upload => "uploader",
            _ => "reader",
        };
        let rate = plan.client_rate(1);
        let f = Finding::new(
            "level_length",
            Status::Warning,
            format!(
                "a slow {who} holds a handler for about {hold:.1} s at {}/s, less than a level ({window:.2} s): lower --{} or --level-duration",
                Size(rate),
                match (plan.link.is_some(), who) {
                    (true, _) => "link's rate",
                    (false, "uploader") => "upload-rate",
                    (false, _) => "slow-rate",
                }
            ),
        );
        eprintln!("slowlab: warning: {}", f.message);
        findings.push(f);
    }
    Ok(())
}

/// Attempts of the recovery check after a level before the search stops.
const RECOVERY_ATTEMPTS: u32 = 3;

/// After a level, waits until the fast path is back to held against the
/// baseline (a short load with no slow reader, up to
/// [`RECOVERY_ATTEMPTS`] times, a second apart): its last p95, and
/// whether it recovered.
fn recover(
    stack: &Stack<'_>,
    plan: &Plan,
    dir: &Path,
    judge: &Judge,
    labels: Vec<String>,
) -> Result<(Figures, bool)> {
    let duration = plan.level_duration.min(Duration::from_secs(1));
    let mut last = None;
    for attempt in 1..=RECOVERY_ATTEMPTS {
        let f = level::measure(stack, plan, 0, duration, dir, labels.clone())?;
        if f.verdict(judge) == LevelVerdict::Held {
            return Ok((f, true));
        }
        last = Some(f);
        if attempt < RECOVERY_ATTEMPTS && !signals::requested() {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    // The loop ran at least once.
    Ok((last.expect("at least one attempt"), false))
}
