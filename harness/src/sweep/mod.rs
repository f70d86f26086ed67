//! `slowlab sweep`: autobench-style rate sweeps to saturation. One stack
//! (server and route) is started with the caps of the experiment; `slowlab
//! sweep-load` steps the connection rate from low to high in its own cgroup
//! while the sampler watches every component; each step becomes one row of
//! `sweep.csv` with the CPU each component used during it.
//!
//! The load generator is accounted but not capped here: a rate sweep must
//! measure the server, and 0.20 of a core would make the client the
//! bottleneck long before a fast server saturates. Its CPU is reported per
//! step, and a step where it ran out of CPU or fell behind its schedule is
//! flagged.
//!
//! Each sweep keeps its logs in `OUT/sweeps/<sweep_id>/`; a sweep whose
//! stack did not start leaves the reason there in `FAILED`.
//!
//! # Layout
//! - this file: arguments, the sweep's stack and load (run through
//!   [`lab::stack::run`]).
//! - [`steps`]: merging the load generator's steps with the samples, and
//!   the summary of a sweep.

pub mod steps;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Result, bail};
use common::bounds::{MAX_DURATION, MAX_SLOW_READERS, duration_in, int_in};
use common::exit::BadInput;
use common::units::Size;
use loadgen::config::SlowReaderArgs;
use loadgen::sweep::SweepLoadArgs;
use loadgen::sweep::args::Rates;
use loadgen::upload_args::UploadArgs;
use serde_json::json;

use crate::session::{Ending, Needs, Opening, Session};
use catalogue::preset::LoadProfile;
use catalogue::{ProxyBuffers, Route, Server};
use lab::signals;
use lab::stack::launch::RunPaths;
use lab::stack::policy::{CapPlan, LoadgenCaps, cap_plan, missing_tool};
use lab::stack::run::{self as lifecycle, LoadCommand, LoadExit, StackSpec};
use schema::Direction;

/// The shortest `--step-duration`: a step shorter than a few reply-rate
/// intervals measures nothing (the same bound as `sweep-load`'s).
const MIN_STEP_DURATION: Duration = loadgen::sweep::args::MIN_STEP_DURATION;

/// The value parser of `--low`, `--high` and `--step`: what `sweep-load
/// --rates` accepts, so that a sweep never starts a stack with rates its load
/// generator would refuse.
fn rate_arg() -> impl Fn(&str) -> Result<u32, String> + Clone + Send + Sync {
    int_in(1, loadgen::sweep::args::MAX_RATE as u32)
}

/// `slowlab sweep` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct SweepArgs {
    /// The server: gunicorn-sync2, gunicorn-gthread4, rust-sync2,
    /// rust-threads4 or rust-async.
    #[arg(long)]
    pub server: Server,
    /// The route: direct, nginx-off, nginx-on, pingora-off or pingora-on.
    #[arg(long, default_value = "direct")]
    pub route: Route,
    /// First connection rate (connections per second, 1 to 1000000).
    #[arg(long, default_value_t = 50, value_parser = rate_arg())]
    pub low: u32,
    /// Last connection rate (1 to 1000000).
    #[arg(long, default_value_t = 2000, value_parser = rate_arg())]
    pub high: u32,
    /// Rate increment between steps (1 to 1000000).
    #[arg(long, default_value_t = 50, value_parser = rate_arg())]
    pub step: u32,
    /// Sequential /fast requests per connection (httperf --num-calls).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub calls_per_conn: u32,
    /// How long each step sends (100ms to 1day).
    #[arg(long, default_value = "10s", value_parser = duration_in(MIN_STEP_DURATION, MAX_DURATION))]
    pub step_duration: Duration,
    /// A request unanswered after this long counts as an error (1ms to 1day).
    #[arg(long, default_value = "5s", value_parser = duration_in(Duration::from_millis(1), MAX_DURATION))]
    pub timeout: Duration,
    /// Slow readers of /large kept running during the whole sweep (0 to
    /// 25000).
    #[arg(long, default_value_t = 0, value_parser = int_in(0, MAX_SLOW_READERS as u32))]
    pub slow: u32,
    /// Slow uploaders (--slow-upload) and slowloris clients (--slow-headers)
    /// kept running during the whole sweep: `slowlab load`'s flags, passed
    /// to `sweep-load` as they are.
    #[command(flatten)]
    pub upload: UploadArgs,
    /// Run the server and proxy without CPU and memory caps.
    #[arg(long)]
    pub no_caps: bool,
    /// Keep stepping after the server saturated (by default the sweep stops
    /// after two consecutive steps with more than 10% errors).
    #[arg(long)]
    pub keep_going: bool,
    /// Results directory; several sweeps may share one (default:
    /// results/<UTC time>-sweep/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub net: lab::netns::NetnsArgs,
}

impl SweepArgs {
    /// The demanded connection rates, low to high.
    ///
    /// Bad input (exit status 2) when `--low` is above `--high` or the
    /// steps are more than a sweep may have; checked before any stack
    /// starts; so is a route whose edge is not cleartext HTTP/1.1, which
    /// `sweep-load` does not speak.
    pub fn rates(&self) -> Result<Vec<u32>, BadInput> {
        if self.route.edge() != catalogue::Edge::CLEARTEXT_HTTP1 {
            return Err(BadInput::new(format!(
                "--route {} speaks {} at its edge; sweep-load speaks cleartext HTTP/1.1 only",
                self.route,
                self.route.edge().protocol()
            )));
        }
        if self.low > self.high {
            return Err(BadInput::new(format!(
                "--low {} is above --high {}",
                self.low, self.high
            )));
        }
        let steps = (self.high - self.low) / self.step + 1;
        if steps as usize > loadgen::sweep::args::MAX_STEPS {
            return Err(BadInput::new(format!(
                "{steps} steps is more than {}; raise --step",
                loadgen::sweep::args::MAX_STEPS
            )));
        }
        Ok((self.low..=self.high).step_by(self.step as usize).collect())
    }

    /// The name of this sweep inside its results directory: `-u N` and
    /// `-h N` after the slow readers only with uploaders or slowloris
    /// clients, so that the names of the other sweeps stay what they were.
    pub fn sweep_id(&self) -> String {
        let mut request = String::new();
        if self.upload.slow_upload > 0 {
            request += &format!("-u{}", self.upload.slow_upload);
        }
        if self.upload.slow_headers > 0 {
            request += &format!("-h{}", self.upload.slow_headers);
        }
        format!(
            "{}-{}-s{}{request}-{}",
            self.server,
            self.route,
            self.slow,
            if self.no_caps { "uncapped" } else { "capped" }
        )
    }

    /// The namespaces of the sweep, their client side shaped too when it
    /// uploads over a `--link`.
    fn net(&self) -> Option<lab::netns::NetSpec> {
        self.net.spec().map(|n| {
            let up = &self.upload;
            // Uploaders beside slow readers still shape the client's end;
            // the lab makes room for the most clients of any kind.
            let direction = if up.slow_upload > 0 {
                Direction::Upload
            } else if up.slow_headers > 0 {
                Direction::Headers
            } else {
                Direction::Download
            };
            n.for_load(
                direction,
                self.slow.max(clients(up.slow_upload.max(up.slow_headers))),
            )
        })
    }
}

/// A count of request-direction clients as the lab's client count
/// (`NetSpec::for_load` caps it anyway).
fn clients(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Runs `slowlab sweep`.
pub fn run(args: SweepArgs) -> Result<()> {
    signals::install();
    let rates = args.rates()?;
    // The load generator's own checks, before any stack starts: the same
    // arguments it will get (the target is only resolved, never contacted)
    // and the descriptors they need, which it inherits from this process.
    let probe = load_args(
        &args,
        &rates,
        Path::new("."),
        "http://127.0.0.1:1",
        &LoadProfile::experiment(),
    );
    loadgen::sweep::SweepConfig::from_args(&probe)?.ensure_descriptors()?;
    if let Some(why) = args.net().and_then(|_| lab::netns::unavailable()) {
        eprintln!("slowlab: {why}; the --netns sweep is skipped");
        return Ok(());
    }
    let session = Session::open(Opening {
        kind: "sweep",
        out: args.out.clone(),
        name: "sweep".into(),
        fresh: false,
        needs: Needs::All,
        announce_tools: false,
    })?;
    let ending = sweep_in(&session, &args, &rates);
    session.close(ending, true, false)
}

/// The sweep of `args` into the session's directory: its own directory
/// under `sweeps/`, marked running until it ends.
fn sweep_in(session: &Session, args: &SweepArgs, rates: &[u32]) -> Ending {
    if let Some(m) = missing_tool(session.tools(), args.server, args.route) {
        return Ending::Failed(anyhow::anyhow!(
            "{} needs {}, which is not available: {}",
            m.needed_by,
            m.tool.name(),
            m.why
        ));
    }
    let (caps, _) = cap_plan(&session.cgroups, args.no_caps, LoadgenCaps::Uncapped);
    let id = args.sweep_id();
    let dir = match unique_dir(&session.out.join("sweeps"), &id)
        .and_then(|dir| session.mark(&format!("sweep {id} running")).map(|()| dir))
    {
        Ok(dir) => dir,
        Err(e) => return Ending::Failed(e),
    };
    match sweep(session, args, rates, &dir, caps) {
        Ok(summary) => {
            println!("{}", steps::console_summary(&summary));
            if signals::requested() {
                Ending::Interrupted(format!("sweep {id} interrupted"))
            } else {
                Ending::Done
            }
        }
        Err(e) => {
            // Say so beside the sweep's logs; the directory's other sweeps
            // are whole, so it is not marked incomplete for this one.
            fs::write(dir.join("FAILED"), format!("{e:#}\n")).ok();
            let _ = schema::mark_incomplete(&session.out, None);
            if signals::requested() {
                Ending::Interrupted(format!("sweep {id} interrupted: {e:#}"))
            } else {
                Ending::Failed(e)
            }
        }
    }
}

fn sweep(
    session: &Session,
    args: &SweepArgs,
    rates: &[u32],
    dir: &Path,
    caps: CapPlan,
) -> Result<steps::SweepSummary> {
    let id = args.sweep_id();
    let out = &session.out;
    let env = session.record_environment(
        dir,
        serde_json::to_value(caps)?,
        json!({
            "sweep": id,
            "rates": rates,
            "calls_per_conn": args.calls_per_conn,
            "step_duration_s": args.step_duration.as_secs_f64(),
            "timeout_s": args.timeout.as_secs_f64(),
            "slow": args.slow,
            "slow_upload": args.upload.slow_upload,
            "slow_headers": args.upload.slow_headers,
            "loadgen_capped": false,
            "netns": lab::netns::environment(args.net().as_ref()),
        }),
    )?;
    if !out.join(schema::ENVIRONMENT_JSON).exists() {
        lab::envinfo::write(out, &env)?;
    }
    let profile = LoadProfile::experiment();
    let stack = StackSpec {
        server: args.server.into(),
        route: args.route,
        proxy_cmd: None,
        body: profile.body,
        buffers: ProxyBuffers::EXPERIMENT,
        caps,
        cgroup_prefix: "sweep".into(),
        paths: RunPaths::new(dir, session.scratch())?,
        netns: args.net(),
        streams: lab::stack::edge::Streams::ONE,
    };
    let lab = session.lab();
    let per_step = args.step_duration + args.timeout * args.calls_per_conn + Duration::from_secs(5);
    let limit = per_step * rates.len() as u32 + Duration::from_secs(60);
    let measured = lifecycle::run(&lab, &stack, limit, |target| {
        LoadCommand::SweepLoad(load_args(args, rates, dir, target, &profile))
    })?;
    let summary = steps::merge(out, dir, args, &measured.samples, caps)?;
    match measured.exit {
        LoadExit::Exited { status, .. } if status.success() => {}
        LoadExit::Exited { status, last_error } => {
            eprintln!("slowlab: sweep-load exited with {status}: {last_error}")
        }
        LoadExit::Interrupted => {}
        LoadExit::TimedOut(limit) => {
            eprintln!("slowlab: sweep-load did not finish within {limit:?}; stopped it")
        }
    }
    Ok(summary)
}

/// `sweeps/<id>`, or `sweeps/<id>-2`, ... when a sweep of that name exists.
fn unique_dir(parent: &Path, id: &str) -> Result<PathBuf> {
    fs::create_dir_all(parent)?;
    for n in 1..1000 {
        let name = if n == 1 {
            id.to_string()
        } else {
            format!("{id}-{n}")
        };
        let dir = parent.join(name);
        if fs::create_dir(&dir).is_ok() {
            return Ok(dir);
        }
    }
    bail!("too many sweeps named {id} in {}", parent.display())
}

/// The `slowlab sweep-load` of a sweep against `target`.
fn load_args(
    args: &SweepArgs,
    rates: &[u32],
    dir: &Path,
    target: &str,
    profile: &LoadProfile,
) -> SweepLoadArgs {
    SweepLoadArgs {
        target: target.into(),
        rates: Rates(rates.iter().map(|&r| f64::from(r)).collect()),
        calls_per_conn: args.calls_per_conn,
        step_duration: args.step_duration,
        timeout: args.timeout,
        slow: args.slow as usize,
        slow_reader: SlowReaderArgs {
            slow_rate: Size(lab::netns::reader_rate(
                args.net().as_ref(),
                profile.slow_rate,
            )),
            rcvbuf: Size(profile.rcvbuf),
            read_chunk: Size(profile.read_chunk),
            large_path: "/large".into(),
            reader: profile.reader,
            loop_lag: Duration::ZERO,
        },
        upload: UploadArgs {
            upload_rate: Size(lab::netns::reader_rate(
                args.net().as_ref(),
                args.upload.upload_rate.bytes(),
            )),
            ..args.upload.clone()
        },
        out: dir.join("load"),
        stop_when_saturated: !args.keep_going,
        fast_path: "/fast".into(),
        allow_remote: false,
        json: false,
        // The stack's run sets them in its namespaces.
        bind: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use lab::netns::Side;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        args: SweepArgs,
    }

    fn parse(extra: &[&str]) -> SweepArgs {
        let words = ["sweep", "--server", "rust-sync2"];
        Cmd::try_parse_from(words.iter().chain(extra))
            .expect("parses")
            .args
    }

    #[test]
    fn a_sweeps_namespaces_make_room_for_its_most_clients_and_shape_uploads() {
        let link = ["--link", "rate=4MiB,per=client"];
        let net = |extra: &[&str]| {
            let words: Vec<&str> = link.iter().chain(extra).copied().collect();
            parse(&words).net().expect("a link asks for namespaces")
        };
        let readers = net(&["--slow", "2"]);
        assert_eq!((readers.clients, readers.uploads), (2, false));
        let both = net(&["--slow", "2", "--slow-upload", "3"]);
        assert_eq!((both.clients, both.uploads), (3, true));
        assert_eq!(both.shaped(), [Side::Server, Side::Client]);
        let slowloris = net(&["--slow", "1", "--slow-headers", "4"]);
        assert_eq!((slowloris.clients, slowloris.uploads), (4, false));
        assert!(parse(&["--slow", "2"]).net().is_none());
    }

    #[test]
    fn the_upload_flags_go_to_sweep_load_as_they_are() {
        let plain = parse(&[]);
        assert_eq!(plain.sweep_id(), "rust-sync2-direct-s0-capped");
        let up = parse(&[
            "--slow-upload",
            "2",
            "--upload-bytes",
            "4MiB",
            "--upload-rate",
            "1MiB",
            "--slow-headers",
            "3",
            "--header-interval",
            "250ms",
            "--no-caps",
        ]);
        assert_eq!(up.sweep_id(), "rust-sync2-direct-s0-u2-h3-uncapped");
        let load = load_args(
            &up,
            &[10],
            Path::new("/tmp/x"),
            "http://127.0.0.1:1",
            &LoadProfile::experiment(),
        );
        assert_eq!(load.upload, up.upload);
        assert_eq!(
            (load.upload.upload_bytes.bytes(), load.upload.slow_headers),
            (4 << 20, 3)
        );
        // Checked by sweep-load's own rules before any stack starts.
        let bad = parse(&["--upload-path", "up"]);
        let probe = load_args(
            &bad,
            &[10],
            Path::new("."),
            "http://127.0.0.1:1",
            &LoadProfile::experiment(),
        );
        let err = loadgen::sweep::SweepConfig::from_args(&probe).expect_err("refused");
        assert!(err.to_string().contains("--upload-path"), "{err}");
    }
}
