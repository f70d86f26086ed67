//! `slowlab reproduce`: run the condition matrix with the real components
//! and the Rust replicas, capped and sampled, write the original's CSV files
//! and the cross-check.
//!
//! # Layout
//!
//! Presets, conditions and `--only` are the catalogue's
//! (`catalogue::preset`); the figures, the cross-check and the buffer model
//! the `analysis` crate's.
//!
//! - [`runner`]: one run: its stack and load, through [`lab::stack::run`].
//! - [`sample_rows`]: the sampler's rows as CSV.
//! - [`store`]: the results directory.
//! - [`shard`]: `--shard K/N`, one machine's part of a split matrix.
//! - [`console`]: progress and tables.

pub mod console;
pub mod runner;
pub mod sample_rows;
pub mod shard;
pub mod store;

use std::path::PathBuf;

use anyhow::Result;
use serde_json::json;

use catalogue::ProxyBuffers;
use lab::signals;
use lab::stack::policy::{CapChoice, CapPlan, LoadgenCaps, cap_plan};

use crate::session::{Ending, Needs, Opening, SAMPLE_INTERVAL, Session, utc_stamp};
use catalogue::preset::{self as matrix, Filter, Preset};
use runner::Status;
use store::Results;

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
    /// or route names, `slow=N`, `spc=N` (HTTP/2 streams per connection),
    /// and the others of the book's list (terms of one kind are
    /// alternatives).
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
    pub net: lab::netns::NetnsArgs,
}

/// Runs `slowlab reproduce`.
pub fn run(args: ReproduceArgs) -> Result<()> {
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
    let session = Session::open(Opening {
        kind: "run",
        out: args.out.clone(),
        name: preset_name.clone(),
        fresh: true,
        needs: Needs::All,
        announce_tools: true,
    })?;
    // Without namespaces each run is skipped with the reason (one line).
    let netns = args.net.spec();
    let mode = &session.cgroups;
    let (caps, choice) = cap_plan(mode, args.no_caps, LoadgenCaps::Capped);
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
    let naming = Naming {
        preset: &preset_name,
        shard: args.shard,
        // What environment.json records of the namespaces: the run-wide
        // request, else (conditions with their own) a pair at the host's
        // values.
        netns: netns.or_else(|| own_netns.then(Default::default)),
    };
    let ending = match run_matrix(&plan, &session, caps, &naming) {
        Ok(ending) => ending,
        Err(e) => Ending::Failed(e),
    };
    session.close(ending, !args.no_report, false)
}

/// What `environment.json` calls the plan: its presets and its shard,
/// and the namespaces its runs ask for.
struct Naming<'a> {
    preset: &'a str,
    shard: Option<shard::Shard>,
    netns: Option<lab::netns::NetSpec>,
}

fn run_matrix(
    plan: &[matrix::RunSpec],
    session: &Session,
    caps: CapPlan,
    naming: &Naming<'_>,
) -> Result<Ending> {
    let out = &session.out;
    let buffers = ProxyBuffers::EXPERIMENT;
    let mut results = Results::create(out, caps, buffers)?;
    session.mark(&format!("started; 0 of {} runs done", plan.len()))?;
    session.record_environment(
        out,
        serde_json::to_value(caps)?,
        json!({
            "preset": naming.preset,
            "shard": naming.shard.map(|s| s.to_string()),
            "runs_planned": plan.len(),
            "started_utc": utc_stamp(),
            "profiles": plan.iter().map(|r| (r.preset.name(), r.profile)).collect::<std::collections::BTreeMap<_, _>>(),
            "proxy_buffers": buffers,
            "sample_interval_ms": SAMPLE_INTERVAL.as_millis() as u64,
            "netns": lab::netns::environment(naming.netns.as_ref()),
        }),
    )?;
    eprintln!("slowlab: {} runs into {}", plan.len(), out.display());
    let ctx = runner::RunContext {
        lab: session.lab(),
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
        session.mark(&format!("{} of {} runs done", i + 1, plan.len()))?;
        bar.inc();
    }
    bar.finish();
    let conditions = results.conditions();
    println!("{}", console::conditions_table(&conditions));
    let body = plan[0].profile.body.large_bytes;
    println!(
        "{}",
        console::crosscheck_table(&analysis::crosscheck::rows(
            &conditions,
            2,
            body,
            buffers.capacity()
        ))
    );
    skipped.dedup();
    for s in &skipped {
        println!("skipped: {s}");
    }
    if let Err(e) = analysis::model::write(out, &buffers) {
        eprintln!("slowlab: model.csv could not be written: {e:#}");
    }
    let done = results.done.len();
    let interrupted = signals::requested()
        || results
            .done
            .iter()
            .any(|(d, _)| d.status == Status::Interrupted);
    if interrupted {
        return Ok(Ending::Interrupted(format!(
            "interrupted after {done} of {} runs; the files hold the runs that completed",
            plan.len()
        )));
    }
    if results.done.iter().all(|(d, _)| d.status != Status::Ok) {
        return Ok(Ending::Failed(anyhow::anyhow!(
            "no run completed; see runs.csv in {}",
            out.display()
        )));
    }
    Ok(Ending::Done)
}
