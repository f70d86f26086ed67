//! `slowlab check`: does *your* server block on slow clients? Starts it
//! (`--server-cmd`) or uses one that runs (`--target`), runs the
//! pre-flight checks, then searches its capacity level by level against
//! slow clients of one `--direction` (readers, uploaders, slowloris),
//! directly and, with `--through`, behind one of the experiment's proxies, through
//! the same lifecycle as `reproduce` ([`lab::stack::run`]): one stack
//! started per route, one short `slowlab load` per level and per recovery
//! check.
//!
//! # Layout
//! - this file: the flags, and the run from pre-flight to exit status.
//! - [`preflight`]: descriptors, the large path, the kernel's buffers.
//! - [`search`]: the levels, the verdicts, the bisection (pure).
//! - [`level`]: one load through the started stack, and its figures.
//! - [`answer`]: the answer in words, `--json`, and `check.csv` rows.

pub mod answer;
pub mod level;
pub mod preflight;
pub mod search;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use common::exit::BadInput;
use common::units::{Size, parse_duration};
use serde_json::json;

use catalogue::Body;
use catalogue::{ProxyBuffers, Route};
use lab::cgroup::{Caps, Mode};
use lab::signals;
use lab::stack::launch::RunPaths;
use lab::stack::policy::CapPlan;
use lab::stack::run::{self as lifecycle, Lab, Stack, StackSpec};
use lab::stack::{App, ServerCommand};
use schema::{Appender, CHECK_CSV, CheckRow, Direction, LevelVerdict};

use crate::session::{Ending, Needs, Opening, Session};
use answer::RouteResult;
use level::{Figures, Plan};
use preflight::{Finding, Status};
use search::Step;

/// `slowlab check` arguments.
///
/// The request direction's flags are `slowlab load`'s own ([`UploadArgs`]);
/// its counts (`--slow-upload`, `--slow-headers`) are each level's, so they
/// are hidden here and refused when given.
///
/// [`UploadArgs`]: loadgen::upload_args::UploadArgs
#[derive(Debug, Clone, clap::Args)]
#[command(
    mut_arg("slow_upload", |a| a.hide(true)),
    mut_arg("slow_headers", |a| a.hide(true))
)]
pub struct CheckArgs {
    /// URL of a server that already runs, e.g. http://127.0.0.1:8000
    /// (loopback only unless --allow-remote).
    #[arg(
        long,
        conflicts_with_all = ["server_cmd", "server"],
        required_unless_present_any = ["server_cmd", "server"]
    )]
    pub target: Option<String>,
    /// One of the lab's own servers instead of yours (gunicorn-sync2,
    /// uvicorn, rust-sync2, ...; as `reproduce --only` names them), started
    /// as `reproduce` starts it; its large path is /large.
    #[arg(long, conflicts_with = "server_cmd")]
    pub server: Option<catalogue::Server>,
    /// Shell command that starts your server; slowlab fills in {host}, the
    /// address it must bind, and {port}, a port free there: 127.0.0.1;
    /// with --netns the command runs in the server namespace, and {host}
    /// is its 198.18.0.1 on the direct route, its own 127.0.0.1 behind a
    /// --through proxy. Its whole process group is stopped afterwards.
    #[arg(long, value_name = "CMD")]
    pub server_cmd: Option<String>,
    /// Working directory of --server-cmd.
    #[arg(long, requires = "server_cmd")]
    pub server_dir: Option<PathBuf>,
    /// A path that answers 200 with a large body of known length (needed
    /// with --direction download, the default).
    #[arg(long)]
    pub large_path: Option<String>,
    /// Which way the slow clients are slow: download (slow readers of
    /// --large-path), upload (slow uploaders that POST --upload-path) or
    /// headers (slowloris clients that never finish their request head).
    #[arg(long, default_value = "download", value_parser = direction_arg)]
    pub direction: Direction,
    /// The uploaders' and slowloris clients' flags, as `slowlab load`
    /// takes them.
    #[command(flatten)]
    pub upload: loadgen::upload_args::UploadArgs,
    /// A quick path, called open-loop during every level.
    #[arg(long, default_value = "/fast")]
    pub fast_path: String,
    /// The most slow clients to try (1 to 10000).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub max_slow: u32,
    /// Read rate of each slow reader (1KiB to 1GiB per second).
    #[arg(long, default_value = "2MiB", value_parser = slow_rate_arg)]
    pub slow_rate: Size,
    /// SO_RCVBUF requested by each slow reader (1 byte to 64MiB).
    #[arg(long, default_value = "8KiB", value_parser = rcvbuf_arg)]
    pub rcvbuf: Size,
    /// How each slow reader reads: strict (one recv at each pacing
    /// deadline) or streamreader (asyncio's StreamReader, limit 16KiB), as
    /// `slowlab load --reader`.
    #[arg(long, value_enum, default_value = "strict")]
    pub reader: loadgen::ReaderModel,
    /// Fast requests per second (0.5 to 1000).
    #[arg(long, default_value_t = 8.0, value_parser = fast_rate_arg)]
    pub fast_rate: f64,
    /// How long the fast path is called at each level (200ms to 10min).
    #[arg(long, default_value = "5s", value_parser = level_duration_arg)]
    pub level_duration: Duration,
    /// A level is held when its p95 is at most 10x the baseline or the
    /// baseline plus this, whichever is larger (0ms to 500ms): room for
    /// the scheduling noise of a busy machine.
    #[arg(
        long,
        default_value = "20ms",
        value_parser = common::bounds::duration_in(Duration::ZERO, Duration::from_millis(500))
    )]
    pub noise_floor: Duration,
    /// Also check behind this proxy, started by slowlab with the
    /// experiment's config; with --direction upload or headers, its
    /// buffering is request buffering (nginx-on is nginx-reqbuf-on).
    #[arg(long, value_parser = through_arg)]
    pub through: Option<Route>,
    /// Cap the server's and the proxy's cgroups: app=CORES[/MEM],proxy=CORES[/MEM]
    /// (MEM defaults to the experiment's 128MiB and 96MiB), or `experiment`.
    #[arg(long, value_parser = caps_arg)]
    pub caps: Option<CapPlan>,
    /// Results directory (default results/<UTC time>-check).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print one JSON object on stdout instead of the words.
    #[arg(long)]
    pub json: bool,
    /// Allow a --target outside 127.0.0.0/8 and ::1.
    #[arg(long)]
    pub allow_remote: bool,
    /// With --server-cmd or --server: the proxy and the app run in the
    /// server namespace, {host} is its 198.18.0.1 on the direct route and
    /// its 127.0.0.1 behind a proxy, and the slow clients run in the
    /// client namespace.
    #[command(flatten)]
    pub net: lab::netns::NetnsArgs,
}

fn slow_rate_arg(s: &str) -> Result<Size, String> {
    let v: Size = s.parse().map_err(|e| format!("{e}"))?;
    match v.bytes() {
        1024..=0x4000_0000 => Ok(v),
        _ => Err(format!("{s} is out of range (1KiB to 1GiB per second)")),
    }
}

fn rcvbuf_arg(s: &str) -> Result<Size, String> {
    let v: Size = s.parse().map_err(|e| format!("{e}"))?;
    match v.bytes() {
        1..=0x400_0000 => Ok(v),
        _ => Err(format!("{s} is out of range (1 byte to 64MiB)")),
    }
}

fn fast_rate_arg(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if (0.5..=1000.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{s} is out of range (0.5 to 1000 per second)"))
    }
}

fn level_duration_arg(s: &str) -> Result<Duration, String> {
    let v = parse_duration(s).map_err(|e| format!("{e}"))?;
    if (Duration::from_millis(200)..=Duration::from_secs(600)).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{s} is out of range (200ms to 10min)"))
    }
}

fn direction_arg(s: &str) -> Result<Direction, String> {
    schema::names::parse_known(s, "direction")
}

fn through_arg(s: &str) -> Result<Route, String> {
    match s.parse::<Route>()? {
        Route::Direct => Err("direct is always checked; name a proxy route".into()),
        r => Ok(r),
    }
}

/// `experiment`, or `app=0.25[/128MiB],proxy=0.2[/96MiB]`.
fn caps_arg(s: &str) -> Result<CapPlan, String> {
    let experiment = CapPlan::experiment();
    if s == "experiment" {
        return Ok(CapPlan {
            loadgen: None,
            ..experiment
        });
    }
    let mut plan = CapPlan::none();
    for part in s.split(',') {
        let (who, value) = part
            .split_once('=')
            .ok_or_else(|| format!("`{part}`: expected app=CORES[/MEM] or proxy=CORES[/MEM]"))?;
        let (cores, mem) = match value.split_once('/') {
            Some((c, m)) => (c, Some(m)),
            None => (value, None),
        };
        let cores: f64 = cores
            .parse()
            .ok()
            .filter(|c| (0.01..=1024.0).contains(c))
            .ok_or_else(|| format!("`{part}`: cores must be a number from 0.01 to 1024"))?;
        let memory = |default: Option<Caps>| -> Result<u64, String> {
            match mem {
                Some(m) => m
                    .parse::<Size>()
                    .ok()
                    .map(|m| m.bytes())
                    .filter(|b| *b >= 16 << 20)
                    .ok_or_else(|| format!("`{part}`: memory must be a size of at least 16MiB")),
                None => Ok(default.map(|c| c.memory_bytes).unwrap_or(128 << 20)),
            }
        };
        let caps = |default| -> Result<Option<Caps>, String> {
            Ok(Some(Caps {
                memory_bytes: memory(default)?,
                ..Caps::new(cores, 0)
            }))
        };
        match who {
            "app" => plan.app = caps(experiment.app)?,
            "proxy" => plan.proxy = caps(experiment.proxy)?,
            other => return Err(format!("`{other}`: only app and proxy can be capped")),
        }
    }
    Ok(plan)
}

/// The app under check.
fn app_of(args: &CheckArgs) -> Result<(App, String, loadgen::target::Target)> {
    if let Some(server) = args.server {
        let t = loadgen::target::Target::resolve("http://127.0.0.1:1", false)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        return Ok((App::Server(server), server.to_string(), t));
    }
    match (&args.target, &args.server_cmd) {
        (Some(url), None) => {
            let t = loadgen::target::Target::resolve(url, args.allow_remote)
                .map_err(|e| BadInput::new(format!("--target {e}")))?;
            let app = App::Running {
                addr: t.addr,
                ready_path: args.fast_path.clone(),
            };
            Ok((app, url.clone(), t))
        }
        (None, Some(line)) => {
            let cmd = ServerCommand::new(line, args.server_dir.clone(), &args.fast_path)
                .map_err(BadInput::new)?;
            // The address is known once it runs; the policy holds by
            // construction (loopback).
            let t = loadgen::target::Target::resolve("http://127.0.0.1:1", false)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            Ok((App::Command(cmd), line.clone(), t))
        }
        _ => bail!(BadInput::new(
            "give one of --target, --server-cmd or --server"
        )),
    }
}

fn check_path(flag: &str, p: &str) -> Result<()> {
    if !p.starts_with('/') || p.contains(char::is_whitespace) {
        bail!(BadInput::new(format!(
            "{flag} must start with / and hold no spaces: `{p}`"
        )));
    }
    Ok(())
}

/// The flags of the direction: a large path to download, an upload path
/// to POST, and no level counts of `slowlab load`'s own.
fn check_direction(args: &CheckArgs) -> Result<()> {
    let up = &args.upload;
    if up.slow_upload > 0 || up.slow_headers > 0 {
        bail!(BadInput::new(
            "--slow-upload and --slow-headers are set by each level of check: give --direction upload or headers and --max-slow"
        ));
    }
    match (args.direction, &args.large_path) {
        (Direction::Download, None) => bail!(BadInput::new(
            "--large-path is needed with --direction download: a path that answers 200 with a large body"
        )),
        (_, Some(p)) => check_path("--large-path", p)?,
        (_, None) => {}
    }
    if args.direction == Direction::Upload && up.upload_bytes.bytes() == 0 {
        // As a response that fits in the kernel's buffers: it could only
        // ever be "held".
        bail!(BadInput::new(
            "--upload-bytes 0: an empty upload holds no handler, so the upload direction needs a body"
        ));
    }
    check_path("--upload-path", &up.upload_path)
}

/// The routes of the check: direct, and `--through` as it reads in the
/// check's direction ([`Route::for_direction`]).
fn routes_of(args: &CheckArgs) -> Vec<Route> {
    std::iter::once(Route::Direct)
        .chain(args.through.map(|r| r.for_direction(args.direction)))
        .collect()
}

/// Runs `slowlab check`. Exit status: 0 when every level held or degraded,
/// 3 ([`common::exit::Denied`]) when some level was denied, 2 for bad
/// input, 1 when the check itself failed.
pub fn run(args: CheckArgs) -> Result<()> {
    check_direction(&args)?;
    check_path("--fast-path", &args.fast_path)?;
    if let Some(dir) = &args.server_dir {
        if !dir.is_dir() {
            bail!(BadInput::new(format!(
                "--server-dir {} is not a directory",
                dir.display()
            )));
        }
    }
    let (app, what, target) = app_of(&args)?;
    let netns = args.net.spec();
    if netns.is_some() && matches!(app, App::Running { .. }) {
        bail!(BadInput::new(
            "--netns, --sysctl and --link need --server-cmd or --server: a running --target stays on the host's loopback"
        ));
    }
    if let Some(why) = netns.as_ref().and_then(|_| lab::netns::unavailable()) {
        eprintln!("slowlab: {why}; the --netns check is skipped");
        return Ok(());
    }
    let timeout = args.level_duration.max(Duration::from_secs(2));
    let mut findings = Vec::new();
    let report = |findings: &[Finding], routes: &[RouteResult]| {
        answer::print(&args, &what, findings, routes);
    };
    let needed = preflight::descriptors_needed(args.max_slow, args.fast_rate, timeout);
    match preflight::descriptors(needed) {
        Ok(f) => findings.push(f),
        Err(e) => {
            findings.push(Finding::new("descriptors", Status::Error, format!("{e:#}")));
            report(&findings, &[]);
            return Err(e);
        }
    }
    let routes_checked = routes_of(&args);
    let nginx = routes_checked
        .iter()
        .any(|r| matches!(r.proxy(), Some((catalogue::ProxyKind::Nginx, _))));
    let session = Session::open(Opening {
        kind: "check",
        out: args.out.clone(),
        name: "check".into(),
        fresh: false,
        needs: match args.server.is_some() || nginx {
            true => Needs::All,
            false => Needs::None("not used by check"),
        },
        announce_tools: false,
    })?;
    let caps = match (&session.cgroups, args.caps) {
        (Mode::None { reason }, Some(_)) => {
            let e = BadInput::new(format!(
                "--caps needs cgroups, and this machine has none usable ({reason})"
            ));
            return session.close(Ending::Failed(e.into()), false, true);
        }
        (_, Some(c)) => c,
        (_, None) => CapPlan::none(),
    };
    let out = session.out.clone();
    session.record_environment(
        &out,
        serde_json::to_value(caps)?,
        json!({
            "check": what,
            "direction": args.direction.name(),
            "upload": (args.direction != Direction::Download).then(|| json!({
                "upload_path": args.upload.upload_path,
                "upload_bytes": args.upload.upload_bytes.bytes(),
                "upload_rate_bytes": args.upload.upload_rate.bytes(),
                "sndbuf_bytes": args.upload.sndbuf.bytes(),
                "header_interval_s": args.upload.header_interval.as_secs_f64(),
            })),
            "large_path": args.large_path,
            "fast_path": args.fast_path,
            "max_slow": args.max_slow,
            "slow_rate_bytes": args.slow_rate.bytes(),
            "rcvbuf_bytes": args.rcvbuf.bytes(),
            "reader": args.reader,
            "fast_rate": args.fast_rate,
            "level_duration_s": args.level_duration.as_secs_f64(),
            "noise_floor_ms": args.noise_floor.as_secs_f64() * 1000.0,
            "timeout_s": timeout.as_secs_f64(),
            "through": routes_checked.get(1).map(|r| r.to_string()),
            "netns": lab::netns::environment(netns.as_ref()),
        }),
    )?;
    let lab = session.lab();
    let mut plan = Plan {
        direction: args.direction,
        // In the request direction no slow reader fetches it.
        large_path: target.path(args.large_path.as_deref().unwrap_or("/large")),
        fast_path: target.path(&args.fast_path),
        slow_rate: args.slow_rate.bytes(),
        rcvbuf: args.rcvbuf.bytes(),
        reader: args.reader,
        link: args.net.link,
        fast_rate: args.fast_rate,
        level_duration: args.level_duration,
        timeout,
        large_bytes: 0,
        max_slow: args.max_slow,
        noise_floor_ms: args.noise_floor.as_secs_f64() * 1000.0,
        upload: loadgen::upload_args::UploadArgs {
            upload_path: target.path(&args.upload.upload_path),
            ..args.upload.clone()
        },
    };
    let mut csv = Appender::<CheckRow>::new(out.join(CHECK_CSV));
    let mut routes = Vec::new();
    let mut ending = Ending::Done;
    for route in routes_checked {
        let spec = StackSpec {
            server: app.clone(),
            route,
            body: Body {
                large_bytes: 16 << 20,
                chunk_bytes: 64 << 10,
            },
            buffers: ProxyBuffers::EXPERIMENT,
            caps,
            cgroup_prefix: format!("check-{route}"),
            paths: RunPaths::new(
                &out.join(route.name()),
                &session.scratch().join(route.name()),
            )?,
            // A per-client link makes room for the most slow clients, and
            // uploaders are shaped at the client's end too.
            netns: netns
                .as_ref()
                .map(|n| n.for_load(args.direction, args.max_slow)),
        };
        let r = check_route(
            &lab,
            &spec,
            &mut plan,
            &what,
            &target,
            &mut findings,
            &mut csv,
        );
        match r {
            Ok(r) => routes.push(r),
            Err(e) => {
                ending = Ending::Failed(e);
                break;
            }
        }
        if signals::requested() {
            ending = Ending::Interrupted(format!(
                "interrupted; {} of the routes checked",
                routes.len()
            ));
            break;
        }
    }
    report(&findings, &routes);
    let interrupted = matches!(ending, Ending::Interrupted(_));
    session.close(ending, true, args.json)?;
    if interrupted {
        return Ok(());
    }
    match answer::denied_line(&routes) {
        Some(line) => Err(common::exit::Denied(line).into()),
        None => Ok(()),
    }
}

/// Starts the stack of one route, runs its pre-flight checks and its
/// search, and stops it.
#[allow(clippy::too_many_arguments)]
fn check_route(
    lab: &Lab<'_>,
    spec: &StackSpec,
    plan: &mut Plan,
    what: &str,
    target: &loadgen::target::Target,
    findings: &mut Vec<Finding>,
    csv: &mut Appender<CheckRow>,
) -> Result<RouteResult> {
    let route = spec.route;
    let mut stack = lifecycle::start(lab, spec)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("starting the stack of {route}"))?;
    let url = stack.url();
    let entry = loadgen::target::Target::resolve(&url, true).map_err(|e| anyhow::anyhow!("{e}"))?;
    if route == Route::Direct {
        let host = match &spec.server {
            App::Running { .. } => &target.parsed.authority,
            _ => &entry.parsed.authority,
        };
        preflight_direct(&stack, entry.addr, host, plan, findings)?;
    }
    let dir = spec.paths.logs().to_path_buf();
    let labels = |n: u32| {
        vec![
            format!("route={route}"),
            format!("direction={}", plan.direction),
            format!("slow_readers={n}"),
        ]
    };
    let base = level::measure(
        &stack,
        plan,
        0,
        plan.level_duration,
        &dir.join("baseline"),
        labels(0),
    )?;
    let judge = match (base.p95_ms, base.error_count()) {
        (Some(p), 0) if p < search::DENIED_MS => search::Judge {
            baseline_ms: p,
            noise_floor_ms: plan.noise_floor_ms,
        },
        (p, errors) => {
            let message = format!(
                "the fast path {} does not answer quickly without slow clients through {route} (p95 {}, {errors} errors of {} requests)",
                plan.fast_path,
                p.map_or("none".into(), |p| format!("{p:.1} ms")),
                base.requests
            );
            findings.push(Finding::new("baseline", Status::Error, message.clone()));
            bail!(BadInput::new(message));
        }
    };
    findings.push(Finding::new(
        "baseline",
        Status::Ok,
        format!(
            "{route}: p95 of {} is {:.3} ms with no {} (a level is held up to {:.3} ms)",
            plan.fast_path,
            judge.baseline_ms,
            answer::client(plan.direction),
            judge.held_limit_ms()
        ),
    ));
    let mut rows: Vec<CheckRow> = Vec::new();
    let outcome = search::search(plan.max_slow, |n| {
        if signals::requested() {
            return Ok(Step::Stop);
        }
        if let Some(why) = stack.exited() {
            bail!("{why}");
        }
        let level_dir = dir.join(format!("level-{n}"));
        let f = level::measure(&stack, plan, n, plan.level_duration, &level_dir, labels(n))?;
        let v = f.verdict(&judge);
        let recovery = match n {
            0 => None,
            _ => Some(recover(
                &stack,
                plan,
                &dir.join(format!("level-{n}-recovery")),
                &judge,
                labels(0),
            )?),
        };
        let row = answer::Level {
            route,
            direction: plan.direction,
            server: what,
            slow: n,
            order: rows.len() as u32 + 1,
            figures: &f,
            judge: &judge,
            verdict: v,
            recovery: recovery.as_ref(),
            dir: &format!("{route}/level-{n}"),
        }
        .row();
        eprintln!("{}", answer::level_line(&row));
        csv.append(std::slice::from_ref(&row))?;
        rows.push(row);
        match recovery {
            Some((_, false)) => Ok(Step::Last(v)),
            _ => Ok(Step::Level(v)),
        }
    })?;
    stack.stop();
    // Behind a shared link, the share of the most clients a level has.
    let rate = plan.client_rate(plan.max_slow);
    let body_bytes = match plan.direction {
        Direction::Download => plan.large_bytes,
        _ => plan.upload.upload_bytes.bytes(),
    };
    Ok(RouteResult {
        route,
        direction: plan.direction,
        baseline_ms: judge.baseline_ms,
        outcome,
        rows,
        body_bytes,
        rate,
    })
}

/// The pre-flight checks of the direct route, asked from where the slow
/// clients will be (the client namespace): in the download direction the
/// large path and the kernel's buffers, in the upload direction the
/// upload path; and whether a slow client holds its handler for a whole
/// level.
fn preflight_direct(
    stack: &Stack<'_>,
    addr: std::net::SocketAddr,
    host: &str,
    plan: &mut Plan,
    findings: &mut Vec<Finding>,
) -> Result<()> {
    let client = stack.netlab().map(|n| n.client.path());
    let hold = match plan.direction {
        Direction::Download => {
            let large = lab::netns::within(client.as_deref(), || {
                preflight::large_path(addr, host, &plan.large_path)
            })
            .inspect_err(|e| {
                findings.push(Finding::new("large_path", Status::Error, format!("{e:#}")))
            })?;
            plan.large_bytes = large.bytes;
            findings.push(Finding::new(
                "large_path",
                Status::Ok,
                format!(
                    "{} answers 200 with {} bytes ({})",
                    plan.large_path,
                    large.bytes,
                    Size(large.bytes)
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
            Some(preflight::hold_s(
                large.bytes,
                &buffers,
                plan.client_rate(1),
            ))
        }
        Direction::Upload => {
            let path = &plan.upload.upload_path;
            let f = lab::netns::within(client.as_deref(), || {
                preflight::upload_path(addr, host, path)
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
    let window = (level::FAST_START + plan.level_duration).as_secs_f64();
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
    judge: &search::Judge,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_name_cores_and_memory_per_component() {
        let p = caps_arg("app=0.5,proxy=0.25/64MiB").unwrap();
        let app = p.app.unwrap();
        assert_eq!((app.cpu_cores, app.memory_bytes), (0.5, 128 << 20));
        assert_eq!(app.quota_us(), 5000);
        let proxy = p.proxy.unwrap();
        assert_eq!((proxy.cpu_cores, proxy.memory_bytes), (0.25, 64 << 20));
        assert_eq!(p.loadgen, None);
        let e = caps_arg("experiment").unwrap();
        assert_eq!(e.app, CapPlan::experiment().app);
        assert_eq!(e.loadgen, None, "the load generator is never capped");
        for bad in ["loadgen=1", "app", "app=0", "app=0.5/1MiB", "app=x"] {
            assert!(caps_arg(bad).is_err(), "{bad}");
        }
        assert_eq!(through_arg("pingora-on"), Ok(Route::PingoraOn));
        assert_eq!(direction_arg("upload"), Ok(Direction::Upload));
        assert!(
            direction_arg("sideways")
                .unwrap_err()
                .contains("download, upload, headers")
        );
        assert!(through_arg("direct").is_err());
        assert!(slow_rate_arg("100").is_err());
        assert!(rcvbuf_arg("128MiB").is_err());
        assert_eq!(fast_rate_arg("8"), Ok(8.0));
    }
}
