//! `slowlab report`: the HTML and Markdown report of a results directory.
//!
//! `report.html` is one self-contained page (inline SVG charts, their data
//! embedded, no scripts, fonts or styles from elsewhere); `report.md` says
//! the same with each chart as an SVG file beside it. The page opens with a
//! lesson whose every number comes from the directory's data.
//!
//! # Layout
//! - [`data`]: loading the directory, and what is missing from it.
//! - [`rows`]: the typed rows of each results file.
//! - [`select`]: which conditions and runs each chart shows, in what order.
//! - [`facts`]: the numbers the lesson quotes, computed from the data.
//! - [`lesson`]: the opening explanation, written from those facts.
//! - [`charts`]: the five charts, one file each.
//! - [`whereabouts`]: where the `/large` bytes are at each sample (chart 5).
//! - [`tables`]: section 6, the cross-check and the published comparison.
//! - [`notices`]: what is missing, and the machine the run was made on.
//! - [`sweep`]: the hook for `slowlab sweep` results.
//! - [`check`]: the section of `slowlab check` results.
//! - [`doc`]: the document model both renderers share.
//! - [`html`], [`markdown`]: the two renderers.
//! - [`fmt`]: how numbers are written.
//! - [`open`]: opening the page in a browser (`--open`).

pub mod charts;
pub mod check;
pub mod data;
pub mod doc;
pub mod facts;
pub mod fmt;
pub mod html;
pub mod lesson;
pub mod markdown;
pub mod notices;
pub mod open;
pub mod rows;
pub mod select;
pub mod sweep;
pub mod tables;
pub mod whereabouts;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use data::Results;
use doc::{Document, Section};

/// `slowlab report` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// A results directory written by `slowlab reproduce` or `slowlab sweep`.
    pub dir: PathBuf,
    /// Open the HTML report in a browser afterwards.
    #[arg(long)]
    pub open: bool,
}

/// Runs `slowlab report`.
pub fn run(args: ReportArgs) -> Result<()> {
    write(&args.dir)?;
    let html = args.dir.join("report.html");
    println!("report: {}", html.display());
    println!("markdown: {}", args.dir.join("report.md").display());
    if args.open {
        open::browser(&html);
    }
    Ok(())
}

/// Writes the report of the results in `dir`: `report.html`, `report.md`
/// and one `report-*.svg` per chart.
pub fn write(dir: &Path) -> Result<()> {
    let results = Results::load(dir)?;
    let doc = build(&results);
    let html_path = dir.join("report.html");
    fs::write(&html_path, html::render(&doc))
        .with_context(|| format!("writing {}", html_path.display()))?;
    for f in doc.figures() {
        let path = dir.join(&f.file);
        fs::write(&path, &f.svg).with_context(|| format!("writing {}", path.display()))?;
    }
    let md_path = dir.join("report.md");
    fs::write(&md_path, markdown::render(&doc))
        .with_context(|| format!("writing {}", md_path.display()))?;
    Ok(())
}

/// A function that builds one section from the results.
type SectionFn = fn(&Results) -> Result<Section>;

/// Builds the document. A section that cannot be drawn becomes a note in
/// its place, so one bad file costs one chart, not the report.
pub fn build(r: &Results) -> Document {
    let mut sections = Vec::new();
    if let Some(s) = check::section(r) {
        return document(r, vec![s, notices::machine(r)]);
    }
    if r.is_sweep_only() {
        // `slowlab sweep` output: no reproduction to miss or to explain.
        if let Some(why) = &r.incomplete {
            let mut s = Section::new("missing", "This sweep did not finish");
            s.note(&format!(
                "`INCOMPLETE`: {why}. The charts show the steps that were measured."
            ));
            sections.push(s);
        }
        sections.extend(sweep::section(r));
        sections.push(notices::machine(r));
        return document(r, sections);
    }
    if let Some(s) = notices::missing(r) {
        sections.push(s);
    }
    sections.push(lesson::section(r));
    let parts: [(&'static str, &str, SectionFn); 6] = [
        ("p95", "1. p95 of /fast", charts::p95::section),
        (
            "write-receive",
            "2. App write time and client receive time",
            charts::write_receive::section,
        ),
        (
            "timeline",
            "3. One run over time",
            charts::timeline::section,
        ),
        (
            "temp-files",
            "4. Proxy temp files over time",
            charts::temp_files::section,
        ),
        ("bytes", "5. Where the bytes are", charts::bytes::section),
        (
            "crosscheck",
            "6. Cross-check and published figures",
            tables::section,
        ),
    ];
    for (id, title, f) in parts {
        sections.push(f(r).unwrap_or_else(|e| {
            let mut s = Section::new(id, title);
            s.note(&format!("This section could not be drawn: {e:#}"));
            s
        }));
    }
    if let Some(s) = sweep::section(r) {
        sections.push(s);
    }
    sections.push(notices::machine(r));
    document(r, sections)
}

fn document(r: &Results, sections: Vec<Section>) -> Document {
    // `slowlab report .` should still be titled by the directory's name.
    let full = std::fs::canonicalize(&r.dir).unwrap_or_else(|_| r.dir.clone());
    let name = full
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| r.dir.display().to_string());
    Document {
        title: format!("slowlab report: {name}"),
        subtitle: notices::subtitle(r),
        sections,
    }
}
