//! `slowlab check`: does *your* server block on slow clients? Starts it
//! (`--server-cmd`, `--server`) or uses one that runs (`--target`), runs
//! the pre-flight checks, then searches its capacity level by level against
//! slow clients of one `--direction` (readers, uploaders, slowloris),
//! directly and, with `--through`, behind the experiment's proxies, through
//! the same lifecycle as `reproduce` ([`lab::stack::run`]): one stack
//! started per route, one short `slowlab load` per level and per recovery
//! check. Each level is judged from the fast path, then from the evidence:
//! inconclusive when the tester or the host ran out, else with the cause
//! of anything but "held"; the boundary levels are measured again.
//!
//! # Layout
//! - this file: the run from the flags to the exit status.
//! - [`args`]: the flags and their value parsers.
//! - [`route`]: one route: its stack, pre-flight, baseline, search,
//!   repetitions.
//! - [`preflight`]: descriptors, the large path, the kernel's buffers, the
//!   readers' rate.
//! - [`search`]: the levels, the verdicts, the bisection, the boundary
//!   (pure).
//! - [`level`]: one load through the started stack, and its figures.
//! - [`evidence`]: what a level showed besides its fast path, and its
//!   cause (pure).
//! - [`answer`]: `check.csv` rows, the lines, `--json`.
//! - [`explain`]: the answer in words and the remedy.

pub mod answer;
pub mod args;
pub mod evidence;
pub mod explain;
pub mod level;
pub mod preflight;
pub mod route;
pub mod search;

use std::time::Duration;

use anyhow::{Result, bail};
use common::exit::BadInput;
use serde_json::json;

use catalogue::{Body, ProxyBuffers, Route};
use lab::cgroup::Mode;
use lab::signals;
use lab::stack::launch::RunPaths;
use lab::stack::policy::CapPlan;
use lab::stack::run::StackSpec;
use lab::stack::{App, ProxyCommand, ServerCommand};
use schema::{Appender, CHECK_CSV, CheckRow, Direction};

use crate::session::{Ending, Needs, Opening, Session};
pub use args::CheckArgs;
use level::Plan;
use preflight::{Finding, Status};
use route::RouteCheck;

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
        (Direction::Download, None) if args.server.is_none() => bail!(BadInput::new(
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
    check_path("--upload-path", &up.upload_path)?;
    let calls = args.fast_rate * args.level_duration.as_secs_f64();
    if calls < MIN_CALLS_PER_LEVEL {
        bail!(BadInput::new(format!(
            "--fast-rate {} for --level-duration {} is {calls:.1} /fast calls per level; a level's p95 needs at least {MIN_CALLS_PER_LEVEL}",
            args.fast_rate,
            common::units::format_duration(args.level_duration)
        )));
    }
    Ok(())
}

/// The fewest `/fast` calls a level may make: its p95 is the call before
/// the last of ten.
pub const MIN_CALLS_PER_LEVEL: f64 = 10.0;

/// The routes of the check: direct, and each `--through` as it reads in
/// the check's direction ([`Route::for_direction`]), once each.
fn routes_of(args: &CheckArgs) -> Vec<Route> {
    let mut routes = vec![Route::Direct];
    for r in &args.through {
        let r = r.for_direction(args.direction);
        if !routes.contains(&r) {
            routes.push(r);
        }
    }
    routes
}

/// The name of the route to the server itself: `--label`, else `target`
/// for a server slowlab did not start, else `direct`.
fn direct_label(args: &CheckArgs) -> String {
    match (&args.label, &args.target) {
        (Some(l), _) => l.clone(),
        (None, Some(_)) => "target".into(),
        (None, None) => Route::Direct.name().into(),
    }
}

/// A route's name in the answer and in `check.csv`.
fn label_of(route: Route, args: &CheckArgs) -> String {
    match route {
        Route::Direct => direct_label(args),
        r => r.name().into(),
    }
}

/// One route of a check: a lab route (direct, or a proxy slowlab
/// starts with the experiment's config), or the user's own proxy.
struct Checked {
    route: Route,
    through_cmd: Option<ProxyCommand>,
    label: String,
}

/// The routes a check runs, in order: direct, the `--through` routes, then
/// `--through-cmd`'s.
fn checks_of(args: &CheckArgs, routes: &[Route]) -> Result<Vec<Checked>> {
    let mut checks: Vec<Checked> = routes
        .iter()
        .map(|&route| Checked {
            route,
            through_cmd: None,
            label: label_of(route, args),
        })
        .collect();
    if let Some(line) = &args.through_cmd {
        let cmd = ProxyCommand::new(line).map_err(BadInput::new)?;
        let label = args.through_label.clone().unwrap_or("through-cmd".into());
        if checks.iter().any(|c| c.label == label) || label.parse::<Route>().is_ok() {
            bail!(BadInput::new(format!(
                "--through-label {label}: another route is called so; name your proxy's route otherwise"
            )));
        }
        checks.push(Checked {
            route: Route::Direct,
            through_cmd: Some(cmd),
            label,
        });
    }
    Ok(checks)
}

/// Checks `--gate` against the routes checked.
fn check_gate(args: &CheckArgs, checks: &[Checked]) -> Result<()> {
    let names: Vec<String> = checks.iter().map(|c| c.label.clone()).collect();
    if let Some(g) = args.gate.iter().find(|g| !names.contains(g)) {
        bail!(BadInput::new(format!(
            "--gate {g}: not a route of this check (it checks {})",
            names.join(", ")
        )));
    }
    Ok(())
}

/// The lab's tools a check runs: its server's (`--server`) and its
/// proxies'.
fn ran(app: &App, routes: &[Route]) -> Vec<&'static str> {
    let server = match app {
        App::Server(s) => s.needs(),
        _ => None,
    };
    let mut tools: Vec<&'static str> = server
        .into_iter()
        .chain(routes.iter().filter_map(|r| r.proxy()?.0.needs()))
        .map(|t| t.name())
        .collect();
    tools.sort_unstable();
    tools.dedup();
    tools
}

/// How long the check takes at most, level by level: the search's
/// doubling levels and its bisection, each with a recovery, plus the
/// repetitions of the boundary, per route.
fn expected(args: &CheckArgs, routes: usize) -> Duration {
    let levels = search::doubling(args.max_slow).len() as u32;
    let bisection = args.max_slow.max(2).ilog2() + 1;
    let per_level = level::FAST_START + args.level_duration * 2 + Duration::from_secs(2);
    let per_route = per_level * (levels + bisection + 2 * args.repeat.saturating_sub(1))
        + Duration::from_secs(5);
    per_route * routes as u32
}

/// Runs `slowlab check`. Exit status: 0 when every gated route held or
/// degraded, 3 ([`common::exit::Denied`]) when one was denied, 4
/// ([`common::exit::Inconclusive`]) when none was denied and one could not
/// be judged, 2 for bad input, 1 when the check itself failed (the server
/// stopped, a load measured nothing), 130/143 interrupted.
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
    let routes_checked = routes_of(&args);
    let checks = checks_of(&args, &routes_checked)?;
    check_gate(&args, &checks)?;
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
    let needed = preflight::descriptors_needed(args.max_slow, args.fast_rate, timeout);
    match preflight::descriptors(needed) {
        Ok(f) => findings.push(f),
        Err(e) => {
            findings.push(Finding::new("descriptors", Status::Error, format!("{e:#}")));
            answer::print(&args, &what, &findings, &[]);
            return Err(e);
        }
    }
    let took = expected(&args, checks.len());
    findings.push(Finding::new(
        "duration",
        Status::Ok,
        format!(
            "{} route(s), levels up to {} {}, each level {} (--level-duration) with its recovery: at most about {} min",
            checks.len(),
            args.max_slow,
            answer::clients(args.direction),
            common::units::format_duration(args.level_duration),
            took.as_secs().div_ceil(60)
        ),
    ));
    // A packaged proxy (NGINX, Caddy) needs the tools `prepare` fetches.
    let packaged = routes_checked
        .iter()
        .any(|r| r.proxy().and_then(|(kind, _)| kind.needs()).is_some());
    let mut session = Session::open(Opening {
        kind: "check",
        out: args.out.clone(),
        name: "check".into(),
        fresh: false,
        needs: match args.server.is_some() || packaged {
            true => Needs::All,
            false => Needs::None("not used by check"),
        },
        announce_tools: false,
    })?;
    session.launcher.ready_timeout = args.ready_timeout;
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
    let labels: Vec<String> = checks.iter().map(|c| c.label.clone()).collect();
    session.record_environment(
        &out,
        serde_json::to_value(caps)?,
        json!({
            "check": what,
            "command": std::env::args().collect::<Vec<_>>(),
            // The tools of the lab's that this check runs (the report
            // names their versions, and no others).
            "ran": ran(&app, &routes_checked),
            "started": match &app {
                App::Server(s) => json!({"lab_server": s.name(), "describe": s.describe()}),
                App::Command(c) => json!({"server_cmd": c.line}),
                App::Running { addr, .. } => json!({"target": addr.to_string()}),
            },
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
            "slow_rate_bytes": args.slow_rate.map(|r| r.bytes()),
            "rcvbuf_bytes": args.rcvbuf.bytes(),
            "reader": args.reader,
            "fast_rate": args.fast_rate,
            "level_duration_s": args.level_duration.as_secs_f64(),
            "noise_floor_ms": args.noise_floor.as_secs_f64() * 1000.0,
            "timeout_s": timeout.as_secs_f64(),
            "repeat": args.repeat,
            "routes": labels,
            "gate": if args.gate.is_empty() { labels.clone() } else { args.gate.clone() },
            "through": routes_checked.get(1).map(|r| r.to_string()),
            "through_cmd": args.through_cmd,
            "netns": lab::netns::environment(netns.as_ref()),
        }),
    )?;
    let lab = session.lab();
    let mut plan = Plan {
        direction: args.direction,
        // In the request direction no slow reader fetches it.
        large_path: target.path(args.large_path.as_deref().unwrap_or("/large")),
        fast_path: target.path(&args.fast_path),
        slow_rate: args.slow_rate.map_or(2 << 20, |r| r.bytes()),
        rcvbuf: args.rcvbuf.bytes(),
        reader: args.reader,
        link: args.net.link,
        fast_rate: args.fast_rate,
        level_duration: args.level_duration,
        timeout,
        large_bytes: 0,
        ready_timeout: args.ready_timeout,
        max_slow: args.max_slow,
        noise_floor_ms: args.noise_floor.as_secs_f64() * 1000.0,
        upload: loadgen::upload_args::UploadArgs {
            upload_path: target.path(&args.upload.upload_path),
            ..args.upload.clone()
        },
        app_caps: caps.app,
        loadgen_caps: caps.loadgen,
        proxy_caps: caps.proxy,
        handlers: match &app {
            App::Server(s) => evidence::Handlers::of(*s),
            App::Command(_) | App::Running { .. } => evidence::Handlers::Unknown,
        },
    };
    let mut csv = Appender::<CheckRow>::new(out.join(CHECK_CSV));
    let mut routes = Vec::new();
    let mut ending = Ending::Done;
    for Checked {
        route,
        through_cmd,
        label,
    } in checks
    {
        let spec = StackSpec {
            streams: lab::stack::edge::Streams {
                per_conn: match route.edge().http2 {
                    true => args.streams_per_conn,
                    false => 1,
                },
                window: None,
            },
            server: app.clone(),
            route,
            proxy_cmd: through_cmd,
            body: Body {
                large_bytes: 16 << 20,
                chunk_bytes: 64 << 10,
            },
            buffers: ProxyBuffers::EXPERIMENT,
            caps,
            cgroup_prefix: format!("check-{label}"),
            paths: RunPaths::new(&out.join(&label), &session.scratch().join(&label))?,
            // A per-client link makes room for the most slow clients, and
            // uploaders are shaped at the client's end too.
            netns: netns
                .as_ref()
                .map(|n| n.for_load(args.direction, args.max_slow)),
        };
        let c = RouteCheck {
            lab: &lab,
            spec: &spec,
            label,
            what: &what,
            target: &target,
            repeat: args.repeat,
            slow_rate: args.slow_rate.map(|r| r.bytes()),
        };
        match route::check_route(&c, &mut plan, &mut findings, &mut csv) {
            Ok(r) => routes.push(r),
            // A load stopped by the user's signal measured nothing: that
            // is the interrupt, not a failure of the check.
            Err(_) if signals::requested() => {
                ending = Ending::Interrupted(format!(
                    "interrupted; {} of the routes checked",
                    routes.len()
                ));
                break;
            }
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
    answer::print(&args, &what, &findings, &routes);
    answer::write(&out, &args, &what, &findings, &routes);
    let finished = matches!(ending, Ending::Done);
    session.close(ending, true, args.json)?;
    if !finished {
        return Ok(());
    }
    if let Some(line) = explain::denied_line(&routes, &args) {
        return Err(common::exit::Denied(line).into());
    }
    match explain::inconclusive_line(&routes, &args) {
        Some(line) => Err(common::exit::Inconclusive(line).into()),
        None => Ok(()),
    }
}
