//! `slowlab merge OUT DIR...`: one results directory from several, for a
//! matrix split across machines with `reproduce --shard K/N` (or runs made
//! at different times). Every per-run row is read through its struct,
//! renumbered, and appended as a reproduction appends it; `conditions.csv`
//! and `crosscheck.csv` are aggregated again from the merged `runs.csv` by
//! the same code a reproduction uses, so merging the shards of a plan
//! gives what one unsharded run would have written from the same rows.
//! Every machine's `environment.json` is kept, and the settings on which
//! they differ are named (the report shows them).
//!
//! # Layout
//! - this file: the verb, the renumbering, the merged directory.
//! - [`env`]: the machines' environments and their differences.

pub mod env;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use common::exit::BadInput;
use serde_json::{Value, json};

use catalogue::ProxyBuffers;
use schema::{self, Appenders, Ident, PerRun, ResultSet, read_dir};

/// `slowlab merge` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct MergeArgs {
    /// The merged results directory (new, or empty).
    pub out: PathBuf,
    /// The results directories of `slowlab reproduce` to merge, in order.
    #[arg(required = true, num_args = 1..)]
    pub dirs: Vec<PathBuf>,
    /// Do not write the HTML/Markdown report of the merged directory.
    #[arg(long)]
    pub no_report: bool,
}

/// Runs `slowlab merge`.
pub fn run(args: MergeArgs) -> Result<()> {
    check_paths(&args.out, &args.dirs)?;
    let sets: Vec<ResultSet> = args.dirs.iter().map(|d| read_dir(d)).collect();
    for set in &sets {
        if !set.has(schema::RUNS_CSV) || set.runs.is_empty() {
            return Err(BadInput::new(format!(
                "{} holds no runs (no readable runs.csv, or none in it): merge takes results directories of `slowlab reproduce`",
                set.dir.display()
            ))
            .into());
        }
        for s in &set.skipped {
            eprintln!(
                "slowlab: {}: {} row(s) of {} could not be read and are left out ({})",
                set.dir.display(),
                s.rows,
                s.file,
                s.first
            );
        }
    }
    check_no_run_twice(&sets)?;
    let merged = merge(&sets);
    write(&args.out, &sets, &merged)?;
    eprintln!(
        "slowlab: merged {} runs from {} directories into {}",
        merged.set.runs.len(),
        sets.len(),
        args.out.display()
    );
    for d in &merged.differences {
        eprintln!("slowlab: the machines differ in {d}");
    }
    if !args.no_report {
        if let Err(e) = report::write(&args.out) {
            eprintln!("slowlab: the report could not be written: {e:#}");
        }
    }
    println!("results: {}", args.out.display());
    Ok(())
}

/// Refuses a run that two inputs both hold (a directory given twice under
/// another path, or a copy of a shard): the same `runs.csv` row, its id,
/// condition, start and figures alike, would count twice in every median.
/// Two reproductions of one plan share run ids but not their rows.
fn check_no_run_twice(sets: &[ResultSet]) -> Result<()> {
    // Runs by id and start, each with the directory that holds it.
    type Seen<'a> = HashMap<(&'a str, Option<&'a str>), Vec<(&'a schema::RunRow, &'a Path)>>;
    let mut seen: Seen = HashMap::new();
    for set in sets {
        for r in &set.runs {
            let same = seen
                .entry((r.run_id.as_str(), r.started_utc.as_deref()))
                .or_default();
            if let Some((_, first)) = same.iter().find(|(other, _)| *other == r) {
                return Err(BadInput::new(format!(
                    "run {} ({} {} {} slow, started {}) is in both {} and {}: a run merged twice would count twice",
                    r.run_id,
                    r.server,
                    r.route,
                    r.slow_clients,
                    r.started_utc.as_deref().unwrap_or("at an unknown time"),
                    first.display(),
                    set.dir.display()
                ))
                .into());
            }
            same.push((r, &set.dir));
        }
    }
    Ok(())
}

/// Refuses what cannot be merged before anything is written.
fn check_paths(out: &Path, dirs: &[PathBuf]) -> Result<()> {
    let out_abs = fs::canonicalize(out).ok();
    let mut given = Vec::new();
    for d in dirs {
        if !d.is_dir() {
            return Err(BadInput::new(format!("{} is not a directory", d.display())).into());
        }
        let abs = fs::canonicalize(d).unwrap_or_else(|_| d.clone());
        if given.contains(&abs) {
            return Err(BadInput::new(format!(
                "{} is given twice: its runs would count twice",
                d.display()
            ))
            .into());
        }
        given.push(abs);
        if out_abs.is_some() && fs::canonicalize(d).ok() == out_abs {
            return Err(BadInput::new(format!(
                "{} is both the output and an input; merge into a new directory",
                d.display()
            ))
            .into());
        }
    }
    if out.exists()
        && fs::read_dir(out)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(BadInput::new(format!(
            "{} is not empty; choose another output directory",
            out.display()
        ))
        .into());
    }
    // An output that cannot be written is refused before any input is read.
    schema::file::probe_as(out, "OUT")
}

/// The merged rows, and how each input's runs were renumbered.
#[derive(Debug)]
pub struct Merged {
    pub set: ResultSet,
    /// Per input, its run ids and their new ids, in the order of its rows.
    pub renumbered: Vec<Vec<(String, String)>>,
    pub differences: Vec<env::Difference>,
}

/// The new id of every run. Inputs whose run ids are all distinct (the
/// shards of one plan) keep the plan's order: runs sort by id, so merging
/// every shard numbers the runs as the unsharded plan did. Otherwise the
/// inputs follow each other in the order given.
fn renumber(sets: &[ResultSet]) -> Vec<Vec<(String, String)>> {
    let mut all: Vec<(usize, usize, &str)> = sets
        .iter()
        .enumerate()
        .flat_map(|(s, set)| {
            set.runs
                .iter()
                .enumerate()
                .map(move |(i, r)| (s, i, r.run_id.as_str()))
        })
        .collect();
    let mut ids: Vec<&str> = all.iter().map(|x| x.2).collect();
    ids.sort();
    ids.dedup();
    if ids.len() == all.len() {
        // Numeric ids compare as numbers ("99" before "100").
        all.sort_by(|a, b| {
            let key = |id: &str| (id.parse::<u64>().ok(), id.to_string());
            key(a.2).cmp(&key(b.2))
        });
    }
    let width = all.len().to_string().len().max(3);
    let mut out: Vec<Vec<(String, String)>> = sets.iter().map(|_| Vec::new()).collect();
    for (new, (s, _, old)) in all.iter().enumerate() {
        out[*s].push((old.to_string(), format!("{:0width$}", new + 1)));
    }
    out
}

/// Merges the rows of every input into one set with new run ids.
pub fn merge(sets: &[ResultSet]) -> Merged {
    let renumbered = renumber(sets);
    // Per input, the rank and the new identity of each of its runs.
    let index: Vec<HashMap<&str, (usize, Ident)>> = sets
        .iter()
        .zip(&renumbered)
        .map(|(set, ids)| {
            set.runs
                .iter()
                .zip(ids)
                .map(|(run, (old, new))| {
                    let rank = new.parse::<usize>().expect("new run ids are numbers") - 1;
                    let ident = Ident {
                        run_id: new.clone(),
                        ..run.ident()
                    };
                    (old.as_str(), (rank, ident))
                })
                .collect()
        })
        .collect();
    // Rows of a run that `runs.csv` does not list (a reproduction killed
    // between appending a run's rows and its `runs.csv` row) are left out.
    let (set, left_out) =
        ResultSet::concat(sets, |s, id| index[s].get(id.run_id.as_str()).cloned());
    if left_out > 0 {
        eprintln!("slowlab: {left_out} row(s) of runs that runs.csv does not list were left out");
    }
    let envs: Vec<Value> = sets.iter().map(|s| s.environment.clone()).collect();
    Merged {
        set,
        renumbered,
        differences: env::differences(&envs),
    }
}

/// The `/large` body size and the proxy's capacity the runs were planned
/// with, from `environment.json` (the experiment's when it does not say).
fn plan_sizes(env: &Value) -> (u64, u64) {
    let run = env.get("run");
    let body = run
        .and_then(|r| r.get("profiles"))
        .and_then(Value::as_object)
        .and_then(|p| p.values().next())
        .and_then(|p| p.get("body")?.get("large_bytes")?.as_u64())
        .unwrap_or(16 << 20);
    let capacity = run
        .and_then(|r| r.get("proxy_buffers"))
        .and_then(|b| {
            let n = |k: &str| b.get(k)?.as_u64();
            Some(
                n("buffer_size")?
                    + n("buffers_count")? * n("buffers_size")?
                    + n("max_temp_file_size")?,
            )
        })
        .unwrap_or(ProxyBuffers::EXPERIMENT.capacity());
    (body, capacity)
}

/// Writes the merged directory: the per-run files, the summaries, the
/// environments and, when an input was incomplete, `INCOMPLETE`.
fn write(out: &Path, sets: &[ResultSet], merged: &Merged) -> Result<()> {
    Appenders::create(out)?.append(&merged.set)?;
    let (body, capacity) = plan_sizes(&sets[0].environment);
    analysis::summaries::write(out, &merged.set.runs, body, capacity)?;

    let sources: Vec<Value> = sets
        .iter()
        .zip(&merged.renumbered)
        .map(|(set, ids)| {
            json!({
                "dir": fs::canonicalize(&set.dir).unwrap_or_else(|_| set.dir.clone()),
                "runs": set.runs.len(),
                "run_ids": ids.iter().map(|(o, n)| (o.clone(), Value::from(n.clone()))).collect::<serde_json::Map<_, _>>(),
                "incomplete": set.incomplete,
                "environment": set.environment,
            })
        })
        .collect();
    // The first machine's environment stays at the top, so that a reader
    // of one directory's environment reads a merged one alike.
    let mut environment = match &sets[0].environment {
        Value::Object(m) => Value::Object(m.clone()),
        _ => json!({}),
    };
    environment["merged"] = json!({
        "sources": sources,
        "differences": merged.differences,
    });
    let text = serde_json::to_string_pretty(&environment)?;
    fs::write(out.join(schema::ENVIRONMENT_JSON), text + "\n")
        .context("writing environment.json")?;
    analysis::model::write(out, &ProxyBuffers::EXPERIMENT)?;

    let incomplete: Vec<String> = sets
        .iter()
        .filter_map(|s| {
            s.incomplete
                .as_ref()
                .map(|r| format!("{} ({r})", s.dir.display()))
        })
        .collect();
    let reason = (!incomplete.is_empty()).then(|| {
        format!(
            "merged from {} directories, {} of them incomplete: {}",
            sets.len(),
            incomplete.len(),
            incomplete.join("; ")
        )
    });
    schema::mark_incomplete(out, reason.as_deref())
}
