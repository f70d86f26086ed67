//! `slowlab reproduce`: run the condition matrix with the real components
//! and the Rust replicas, capped and sampled, write the original's CSV files
//! and the cross-check.
//!
//! # Layout
//! - [`matrix`]: presets, load profiles, `--only`.
//! - [`dims`]: a condition's reader, buffer cell and slow-client kind, and
//!   its run's namespaces.
//! - [`runner`]: one run: its stack and load, through [`crate::stack::run`].
//! - [`table`]: CSV reading by column name and appending.
//! - [`sample_rows`]: the sampler's rows as CSV.
//! - [`aggregate`]: per-run and per-condition figures.
//! - [`crosscheck`]: predicted against observed verdicts.
//! - [`published`]: the original's figures.
//! - [`results`]: the results directory.
//! - [`shard`]: `--shard K/N`, one machine's part of a split matrix.
//! - [`console`]: progress and tables.

pub mod aggregate;
pub mod console;
pub mod crosscheck;
pub mod dims;
pub mod matrix;
pub mod published;
pub mod results;
pub mod runner;
pub mod sample_rows;
pub mod shard;
pub mod table;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::json;

use crate::cgroup::{self, Mode};
use crate::prepare::{self, state_dir};
use crate::stack::ProxyBuffers;
use crate::stack::launch::Launcher;
use crate::stack::policy::{CapChoice, CapPlan, LoadgenCaps, cap_plan};
use crate::stack::run::Lab;
use crate::{envinfo, signals};
use matrix::{Filter, Preset};
use results::Results;
use runner::Status;

/// `slowlab reproduce` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct ReproduceArgs {
    /// Which matrix to run; without it, `seed` then `replica`.
    #[arg(long, value_enum)]
    pub preset: Option<Preset>,
    /// Runs per condition (default: 3; quick: 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: Option<u32>,
    /// Results directory (default: results/<UTC time>-<preset>/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run without CPU and memory caps (still accounted where cgroups work).
    #[arg(long)]
    pub no_caps: bool,
    /// Only conditions matching all of these comma-separated terms: server
    /// or route names, `slow=N` (terms of one kind are alternatives).
    #[arg(long, value_name = "FILTER")]
    pub only: Option<Filter>,
    /// Do not write the HTML/Markdown report at the end.
    #[arg(long)]
    pub no_report: bool,
    /// Run only shard K of N of the plan (runs K, K+N, K+2N, ... keeping
    /// their ids), e.g. one Slurm array task or Kubernetes Indexed Job pod
    /// per shard; `slowlab merge` joins the shards' directories.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<shard::Shard>,
    #[command(flatten)]
    pub net: crate::netns::NetnsArgs,
}

/// Runs `slowlab reproduce`.
pub fn run(args: ReproduceArgs) -> Result<()> {
    signals::install();
    let presets = match args.preset {
        Some(p) => vec![p],
        None => vec![Preset::Seed, Preset::Replica],
    };
    let plan = matrix::plan(&presets, args.runs, args.only.as_ref());
    if plan.is_empty() {
        return Err(common::exit::BadInput::new("no condition matches --only").into());
    }
    // A run-wide flag that contradicts a condition's own dimension is bad
    // input before anything runs; the first such condition is named.
    let wide = args.net.spec();
    let own_netns = plan
        .iter()
        .map(|r| r.condition.net_spec(wide.as_ref()))
        .collect::<Result<Vec<_>, String>>()
        .map_err(common::exit::BadInput::new)?
        .iter()
        .any(|n| n.is_some());
    let planned = plan.len();
    let plan = match args.shard {
        Some(s) => s.select(plan),
        None => plan,
    };
    if plan.is_empty() {
        return Err(common::exit::BadInput::new(format!(
            "--shard {}: the plan has only {planned} runs, so this shard has none",
            args.shard.map(|s| s.to_string()).unwrap_or_default()
        ))
        .into());
    }
    let preset_name = presets
        .iter()
        .map(|p| p.name())
        .collect::<Vec<_>>()
        .join("+");
    let out = match args.out {
        Some(o) => o,
        None => PathBuf::from("results").join(format!("{}-{preset_name}", utc_stamp())),
    };
    if out.exists()
        && out
            .read_dir()
            .map(|mut d| d.next().is_some())
            .unwrap_or(false)
    {
        return Err(common::exit::BadInput::new(format!(
            "{} is not empty; choose another --out",
            out.display()
        ))
        .into());
    }

    let tools = prepare::prepare(&state_dir());
    for line in tools.describe() {
        eprintln!("slowlab: {line}");
    }
    let mode = cgroup::detect();
    let reaped = cgroup::reap_stale(&mode);
    if reaped > 0 {
        eprintln!("slowlab: removed {reaped} cgroup(s) left by an earlier harness that was killed");
    }
    let reaped = crate::scratch::reap_stale();
    if reaped > 0 {
        eprintln!(
            "slowlab: removed {reaped} scratch directory(ies) left by an earlier harness that was killed"
        );
    }
    crate::netns::reap_and_report();
    // Without namespaces each run is skipped with the reason (one line).
    let netns = args.net.spec();
    let (caps, choice) = cap_plan(&mode, args.no_caps, LoadgenCaps::Capped);
    match choice {
        // cap_plan has said so.
        CapChoice::NoCgroups { .. } => {}
        CapChoice::NoCapsFlag => eprintln!(
            "slowlab: running uncapped (--no-caps); cgroup {} accounting only",
            mode.name()
        ),
        CapChoice::Experiment => eprintln!(
            "slowlab: caps through cgroup {}: app 0.25 core/128 MiB, proxy 0.20/96 MiB, loadgen 0.20/128 MiB, period 10 ms",
            mode.name()
        ),
    }
    let result = run_matrix(
        &plan,
        &out,
        &tools,
        &mode,
        caps,
        &Naming {
            preset: &preset_name,
            shard: args.shard,
            // What environment.json records of the namespaces: the
            // run-wide request, else (conditions with their own) a pair at
            // the host's values.
            netns: netns.or_else(|| own_netns.then(Default::default)),
        },
        args.no_report,
    );
    cgroup::remove_base(&mode);
    result
}

/// What `environment.json` calls the plan: its presets and its shard,
/// and the namespaces its runs ask for.
struct Naming<'a> {
    preset: &'a str,
    shard: Option<shard::Shard>,
    netns: Option<crate::netns::NetSpec>,
}

fn run_matrix(
    plan: &[matrix::RunSpec],
    out: &std::path::Path,
    tools: &prepare::Tools,
    mode: &Mode,
    caps: CapPlan,
    naming: &Naming<'_>,
    no_report: bool,
) -> Result<()> {
    let preset_name = naming.preset;
    let buffers = ProxyBuffers::EXPERIMENT;
    let mut results = Results::create(out, caps, buffers)?;
    results.mark(Some(&format!("started; 0 of {} runs done", plan.len())))?;
    let scratch = crate::scratch::tempdir("app")?;
    let launcher = Launcher {
        exe: std::env::current_exe().context("locating the slowlab binary")?,
        tools,
        app_dir: Launcher::write_app(scratch.path())?,
    };
    let env = envinfo::collect(
        tools,
        mode,
        serde_json::to_value(caps)?,
        json!({
            "preset": preset_name,
            "shard": naming.shard.map(|s| s.to_string()),
            "runs_planned": plan.len(),
            "started_utc": utc_stamp(),
            "profiles": plan.iter().map(|r| (r.preset.name(), r.profile)).collect::<std::collections::BTreeMap<_, _>>(),
            "proxy_buffers": buffers,
            "sample_interval_ms": 200,
            "netns": crate::netns::environment(naming.netns.as_ref()),
        }),
    );
    envinfo::write(out, &env)?;
    eprintln!("slowlab: {} runs into {}", plan.len(), out.display());
    let ctx = runner::RunContext {
        lab: Lab {
            launcher: &launcher,
            cgroups: mode,
            sample_interval: Duration::from_millis(200),
        },
        caps,
        buffers,
        netns: naming.netns.clone(),
    };
    let mut bar = console::Progress::new(plan.len() as u64);
    let mut skipped = Vec::new();
    for (i, spec) in plan.iter().enumerate() {
        if signals::requested() {
            break;
        }
        bar.set_message(format!("{} rep {}", spec.condition, spec.repetition));
        let data = runner::run(&ctx, spec, out);
        let status = data.status.clone();
        let figures = results.record(data)?;
        match &status {
            Status::Ok => bar.println(format!(
                "run {} {} rep {}: p95 {}, app_send {} s",
                spec.run_id,
                spec.condition,
                spec.repetition,
                match (figures.p95_ms, &figures.p95_error) {
                    (Some(v), _) => format!("{v:.2} ms"),
                    (None, Some(kinds)) => kinds.clone(),
                    (None, None) => "- ms".into(),
                },
                figures
                    .app_send_s
                    .map(|v| format!("{v:.3}"))
                    .unwrap_or_else(|| "-".into()),
            )),
            Status::Skipped(r) => {
                skipped.push(format!("{}: {r}", spec.condition));
                bar.println(format!(
                    "run {} {} skipped: {r}",
                    spec.run_id, spec.condition
                ));
            }
            other => bar.println(format!(
                "run {} {} {}: {}",
                spec.run_id,
                spec.condition,
                other.label(),
                other.reason()
            )),
        }
        results.mark(Some(&format!("{} of {} runs done", i + 1, plan.len())))?;
        bar.inc();
    }
    bar.finish();
    let conditions = results.conditions();
    println!("{}", console::conditions_table(&conditions));
    let body = plan[0].profile.body.large_bytes;
    println!(
        "{}",
        console::crosscheck_table(&crosscheck::rows(&conditions, 2, body, buffers.capacity()))
    );
    skipped.dedup();
    for s in &skipped {
        println!("skipped: {s}");
    }
    if let Err(e) = crate::model::write(out, &buffers) {
        eprintln!("slowlab: model.csv could not be written: {e:#}");
    }
    let done = results.done.len();
    let interrupted = signals::requested()
        || results
            .done
            .iter()
            .any(|(d, _)| d.status == Status::Interrupted);
    if interrupted {
        results.mark(Some(&format!(
            "interrupted after {done} of {} runs; the files hold the runs that completed",
            plan.len()
        )))?;
    } else {
        results.mark(None)?;
    }
    if !no_report {
        if let Err(e) = crate::report::write(out) {
            eprintln!("slowlab: the report could not be written: {e:#}");
        }
    }
    println!("results: {}", out.display());
    if interrupted {
        return Err(signals::interrupted(format!(
            "partial results in {} (marked INCOMPLETE)",
            out.display()
        )));
    }
    if results.done.iter().all(|(d, _)| d.status != Status::Ok) {
        bail!("no run completed; see runs.csv in {}", out.display());
    }
    Ok(())
}

fn utc_stamp() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        .to_string()
        .replace(':', "")
}
