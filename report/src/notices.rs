//! What the reader must know about the data before trusting the charts:
//! what is missing (an interrupted run, absent files, failed runs), and the
//! machine and load the numbers were measured with.

use super::data::{Results, used_for};
use super::doc::{Block, Section, Table, text};
use super::fmt;

/// The line under the title.
pub fn subtitle(r: &Results) -> String {
    let mut parts = Vec::new();
    if let Some(p) = r.env_str(&["run", "preset"]) {
        parts.push(format!("preset {p}"));
    }
    if r.is_sweep_only() {
        parts.push("rate sweeps".into());
    } else if !r.check.is_empty() || !r.check_answer.is_null() {
        parts.push("slowlab check".into());
    } else {
        let ok = r.runs.iter().filter(|x| x.ok()).count();
        parts.push(format!("{} runs ({ok} completed)", r.runs.len()));
    }
    if let (Some(k), Some(m)) = (r.env_str(&["kernel"]), r.env_str(&["machine"])) {
        parts.push(format!("Linux {k} {m}"));
    }
    if let Some(t) = r.env_str(&["run", "started_utc"]) {
        parts.push(format!("started {t}"));
    }
    if r.incomplete.is_some() {
        parts.push("INCOMPLETE".into());
    }
    parts.join(" · ")
}

/// The section listing what is missing; empty (and left out) when
/// nothing is.
pub fn missing(r: &Results, s: &mut Section) -> anyhow::Result<()> {
    let mut items = Vec::new();
    if let Some(why) = &r.incomplete {
        let why = if why.is_empty() {
            "no reason recorded"
        } else {
            why.as_str()
        };
        items.push(text(&format!(
            "The reproduction did not finish (`INCOMPLETE`: {why}). The report shows the runs that completed."
        )));
    }
    for m in &r.missing {
        items.push(text(&match &m.error {
            None => format!(
                "`{}` is missing; it is needed for {}.",
                m.file,
                used_for(m.file)
            ),
            Some(e) => format!(
                "`{}` could not be read ({e}); it is needed for {}.",
                m.file,
                used_for(m.file)
            ),
        }));
    }
    for k in &r.skipped {
        items.push(text(&format!(
            "`{}`: {} row{} could not be read and {} left out (first: {}).",
            k.file,
            k.rows,
            if k.rows == 1 { "" } else { "s" },
            if k.rows == 1 { "was" } else { "were" },
            k.first
        )));
    }
    items.extend(sampling_gaps(r));
    if let Some(planned) = r.env_f64(&["run", "runs_planned"]) {
        let planned = planned as usize;
        if r.runs.len() < planned && r.has("runs.csv") {
            items.push(text(&format!(
                "`runs.csv` holds {} of the {planned} planned runs.",
                r.runs.len()
            )));
        }
    }
    for run in r.runs.iter().filter(|x| !x.ok()) {
        let reason = run.reason.clone().unwrap_or_default();
        items.push(text(&format!(
            "Run {} ({} {} {} slow, repetition {}) {}{}; it is left out of every figure.",
            run.run_id,
            run.server,
            run.route,
            run.slow_clients,
            run.repetition,
            run.status,
            if reason.is_empty() {
                String::new()
            } else {
                format!(": {reason}")
            },
        )));
    }
    if items.is_empty() {
        return Ok(());
    }
    s.note("Some data is missing. The charts below are drawn from what is there; each says when something it needs is absent.");
    s.push(Block::List(items));
    Ok(())
}

/// For a sweep directory: that a sweep did not finish, if one did not.
pub fn sweep_incomplete(r: &Results, s: &mut Section) -> anyhow::Result<()> {
    if let Some(why) = &r.incomplete {
        s.note(&format!(
            "`INCOMPLETE`: {why}. The charts show the steps that were measured."
        ));
    }
    Ok(())
}

/// Runs whose ~200 ms samples have a gap of more than a second: the
/// sampler fell behind (a busy machine), so the charts built from samples
/// have holes there.
fn sampling_gaps(r: &Results) -> Vec<super::doc::Text> {
    let interval = r.env_f64(&["run", "sample_interval_ms"]).unwrap_or(200.0) / 1000.0;
    let limit = (5.0 * interval).max(1.0);
    let mut by: std::collections::BTreeMap<&str, Vec<f64>> = std::collections::BTreeMap::new();
    for x in &r.resources {
        by.entry(x.run_id.as_str()).or_default().push(x.t_s);
    }
    let mut out = Vec::new();
    for (run, mut ts) in by {
        ts.sort_by(f64::total_cmp);
        ts.dedup();
        let worst = ts
            .windows(2)
            .map(|w| (w[0], w[1]))
            .max_by(|a, b| (a.1 - a.0).total_cmp(&(b.1 - b.0)));
        if let Some((a, b)) = worst.filter(|(a, b)| b - a > limit) {
            out.push(text(&format!(
                "Run {run}: no resource or socket sample between {a:.1} s and {b:.1} s (the sampler fell behind; it aims at one every {:.0} ms), so its sampled charts have a hole there.",
                interval * 1000.0
            )));
        }
    }
    out
}

fn row(t: &mut Table, k: &str, v: Option<String>) {
    if let Some(v) = v {
        t.rows.push(vec![k.to_string(), v]);
    }
}

/// The machine and load the numbers depend on, from `environment.json`.
/// For a directory of `slowlab merge`: how many machines, and the settings
/// on which they differ (`environment.json` `merged.differences`).
fn merged_machines(r: &Results, s: &mut Section) {
    let Some(m) = r.environment.get("merged") else {
        return;
    };
    let n = m["sources"].as_array().map_or(0, Vec::len);
    let diffs: Vec<String> = m["differences"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            let values: Vec<&str> = d["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str())
                .collect();
            format!(
                "{}: {}",
                d["key"].as_str().unwrap_or("?"),
                values.join(" / ")
            )
        })
        .collect();
    if diffs.is_empty() {
        s.para(&format!(
            "These runs were merged from {n} results directories (`slowlab merge`) whose machines \
             agree on every recorded setting, so the values below hold for all of them."
        ));
    } else {
        s.note(&format!(
            "These runs were merged from {n} results directories whose machines differ, so runs \
             of different machines are not strictly comparable. They differ in {}. The values \
             below are the first directory's.",
            diffs.join("; ")
        ));
    }
}

pub fn machine(r: &Results, s: &mut Section) -> anyhow::Result<()> {
    if r.environment.is_null() {
        s.note("`environment.json` is missing, so the kernel, its buffer sysctls and the load profile are unknown.");
        return Ok(());
    }
    s.para(
        "The absolute numbers depend on the kernel, its TCP buffer sysctls, the CPU and the caps; \
         the shape is the finding. From `environment.json`:",
    );
    merged_machines(r, s);
    let mut t = Table {
        header: vec!["what".into(), "value".into()],
        ..Table::default()
    };
    let e = |p: &[&str]| r.env_str(p);
    row(
        &mut t,
        "kernel",
        e(&["kernel"]).map(|k| format!("{k} ({})", e(&["machine"]).unwrap_or_default())),
    );
    row(
        &mut t,
        "CPU",
        e(&["cpu_model"]).map(|m| {
            let n = r
                .env_f64(&["cpu_cores"])
                .map(|n| format!(", {n} cores"))
                .unwrap_or_default();
            format!("{m}{n}")
        }),
    );
    row(&mut t, "memory", e(&["memory_total"]));
    row(&mut t, "glibc", e(&["glibc"]));
    row(&mut t, "cgroups", e(&["cgroup", "mode"]));
    for c in schema::Component::ALL.iter().map(|c| c.name()) {
        let cores = r.env_f64(&["caps", c, "cpu_cores"]);
        let mem = r.env_f64(&["caps", c, "memory_bytes"]);
        let v = match (cores, mem) {
            (Some(a), Some(b)) => Some(format!("{a} core, {}", fmt::bytes(b))),
            _ if r.environment.get("caps").is_some() => Some("uncapped".into()),
            _ => None,
        };
        row(&mut t, &format!("cap of {c}"), v);
    }
    if let Some(sysctls) = r.environment.get("sysctls").and_then(|v| v.as_object()) {
        for (k, v) in sysctls {
            row(
                &mut t,
                k,
                Some(
                    v.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| "unknown".into()),
                ),
            );
        }
    }
    if let Some(v) = r.environment.get("versions").and_then(|v| v.as_object()) {
        // A check names the versions of the lab's parts that it ran only
        // (its user's own server is said in its section).
        let ran: Option<Vec<&str>> = r.environment["run"]["ran"]
            .as_array()
            .map(|a| a.iter().filter_map(|t| t.as_str()).collect());
        let shown = |k: &str| match &ran {
            None => true,
            Some(ran) => {
                let python = ran.iter().any(|t| {
                    catalogue::Tool::ALL
                        .iter()
                        .any(|tool| tool.name() == *t && tool.python().is_some())
                });
                ["slowlab", "git_commit", "rustc"].contains(&k)
                    || (k == "python" && python)
                    || ran
                        .iter()
                        .any(|t| k == *t || k.starts_with(&format!("{t}_")))
            }
        };
        for (k, v) in v.iter().filter(|(k, _)| shown(k)) {
            if let Some(s) = v.as_str() {
                row(&mut t, &format!("version of {k}"), Some(s.to_string()));
            }
        }
    }
    let p = |k: &[&str]| r.profile_f64(k);
    row(
        &mut t,
        "/large body",
        p(&["body", "large_bytes"]).map(|b| {
            let chunk = p(&["body", "chunk_bytes"])
                .map(|c| format!(", written in {} chunks", fmt::bytes(c)))
                .unwrap_or_default();
            format!("{}{chunk}", fmt::bytes(b))
        }),
    );
    row(
        &mut t,
        "slow reader",
        p(&["slow_rate"]).map(|rate| {
            let rcv = p(&["rcvbuf"])
                .map(|b| format!(", SO_RCVBUF {}", fmt::bytes(b)))
                .unwrap_or_default();
            let chunk = p(&["read_chunk"])
                .map(|b| format!(", reads of at most {}", fmt::bytes(b)))
                .unwrap_or_default();
            format!("{}{rcv}{chunk}", fmt::rate(rate))
        }),
    );
    row(
        &mut t,
        "/fast",
        p(&["fast_rate"]).map(|rate| {
            let d = p(&["fast_duration"])
                .map(|d| format!(" for {d} s"))
                .unwrap_or_default();
            let st = p(&["fast_start"])
                .map(|d| format!(", starting {} ms after the slow readers", d * 1000.0))
                .unwrap_or_default();
            format!("{rate} requests/s{d}{st}")
        }),
    );
    s.push(Block::Table(t));
    Ok(())
}

/// How this directory's load differs from the original's, which the
/// published figures were measured with; `None` when it does not.
pub fn profile_difference(r: &Results) -> Option<String> {
    let original = catalogue::LoadProfile::experiment();
    let mut diffs = Vec::new();
    if let Some(rate) = r.profile_f64(&["slow_rate"]) {
        let o = original.slow_rate as f64;
        if (rate - o).abs() > 0.5 {
            diffs.push(format!(
                "the slow clients read at {} (the original: {})",
                fmt::rate(rate),
                fmt::rate(o)
            ));
        }
    }
    if let Some(b) = r.profile_f64(&["body", "large_bytes"]) {
        let o = original.body.large_bytes as f64;
        if (b - o).abs() > 0.5 {
            diffs.push(format!(
                "`/large` is {} (the original: {})",
                fmt::bytes(b),
                fmt::bytes(o)
            ));
        }
    }
    if let Some(d) = r.profile_f64(&["fast_duration"]) {
        let o = original.fast_duration.as_secs_f64();
        if (d - o).abs() > 1e-6 {
            diffs.push(format!("`/fast` ran for {d} s (the original: {o} s)"));
        }
    }
    (!diffs.is_empty()).then(|| {
        format!(
            "This directory's load differs from the original's: {}. Compare shapes and verdicts with the published figures, not seconds.",
            diffs.join("; ")
        )
    })
}
