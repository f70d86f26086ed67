//! `slowlab report`: the HTML and Markdown report of a results directory.
//!
//! `report.html` is one self-contained page (inline SVG charts, their data
//! embedded, one inline script, no scripts, fonts or styles from
//! elsewhere); `report.md` says
//! the same with each chart as an SVG file beside it. The page opens with a
//! lesson whose every number comes from the directory's data.
//!
//! # Layout
//! - this file: [`SECTIONS`], every section once (id, title, builder), and
//!   writing the files.
//! - [`data`]: loading the directory (through [`schema`]) and what
//!   each file is used for. Which conditions and runs each chart shows
//!   (`analysis::select`), and where the `/large` bytes are at each sample
//!   (`analysis::whereabouts`), are the `analysis` crate's.
//! - [`facts`]: the numbers the lesson quotes, computed from the data.
//! - [`lesson`]: the opening explanation, written from those facts.
//! - [`charts`]: the five charts, one file each.
//! - [`scrub`]: the view with a time slider over one run per route.
//! - [`tables`]: section 6, the cross-check and the published comparison.
//! - [`servers`]: section 7, which servers block (the `servers` preset).
//! - [`streams`]: one connection, many held workers (the `h2` preset's
//!   streams per connection at an HTTP/2 edge).
//! - [`request`]: the request direction (slow uploads, slowloris), with
//!   [`upload_bytes`], where the upload bytes are.
//! - [`notices`]: what is missing, and the machine the run was made on.
//! - [`sweep`]: the `slowlab sweep` section and its charts.
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
pub mod proxies;
pub mod request;
pub mod scrub;
pub mod servers;
pub mod streams;
pub mod sweep;
pub mod tables;
pub mod upload_bytes;

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
    let results = data::load(dir)?;
    let doc = build(&results);
    for f in doc.figures() {
        replace(&dir.join(&f.file), f.svg.as_bytes())?;
    }
    replace(&dir.join("report.md"), markdown::render(&doc).as_bytes())?;
    // The page last: a report.html is always whole, its charts beside it.
    replace(&dir.join("report.html"), html::render(&doc).as_bytes())
}

/// Writes `path` whole or not at all: into a temporary file beside it,
/// then renamed over it, so that a full disk or a kill never leaves half a
/// report where a whole one was.
fn replace(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write as _;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("writing {}", path.display()))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_data())
        .with_context(|| format!("writing {}", path.display()))?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// A function that fills one section from the results; a section it
/// leaves without blocks is left out of the report.
type SectionFn = fn(&Results, &mut Section) -> Result<()>;

/// Which results directories a section belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `slowlab reproduce` output (with or without sweeps).
    Reproduction,
    /// A reproduction's response direction (slow readers of `/large`):
    /// drawn unless every condition of the directory is of the request
    /// direction.
    Response,
    /// A reproduction's request direction: drawn only when the directory
    /// has request-direction conditions (the section itself checks).
    Request,
    /// `slowlab sweep` output and nothing of a reproduction.
    SweepOnly,
    /// `slowlab check` output.
    CheckOnly,
    Both,
}

/// One section of the report.
#[derive(Debug, Clone, Copy)]
pub struct SectionSpec {
    /// The HTML id; the tests look sections up by it.
    pub id: &'static str,
    pub title: &'static str,
    pub kind: Kind,
    pub build: SectionFn,
}

/// Every section, in the order of the report.
pub const SECTIONS: [SectionSpec; 18] = [
    SectionSpec {
        id: "missing",
        title: "What is missing from this directory",
        kind: Kind::Reproduction,
        build: notices::missing,
    },
    SectionSpec {
        id: "missing",
        title: "This sweep did not finish",
        kind: Kind::SweepOnly,
        build: notices::sweep_incomplete,
    },
    SectionSpec {
        id: "lesson",
        title: "What happened, and why",
        kind: Kind::Response,
        build: lesson::section,
    },
    SectionSpec {
        id: "p95",
        title: "1. p95 of /fast by route and number of slow connections",
        kind: Kind::Response,
        build: charts::p95::section,
    },
    SectionSpec {
        id: "write-receive",
        title: "2. App write time and client receive time",
        kind: Kind::Response,
        build: charts::write_receive::section,
    },
    SectionSpec {
        id: "timeline",
        title: "3. One run over time",
        kind: Kind::Response,
        build: charts::timeline::section,
    },
    SectionSpec {
        id: "temp-files",
        title: "4. Proxy temp files over time",
        kind: Kind::Response,
        build: charts::temp_files::section,
    },
    SectionSpec {
        id: "bytes",
        title: "5. Where the bytes are",
        kind: Kind::Response,
        build: charts::bytes::section,
    },
    SectionSpec {
        id: scrub::ID,
        title: scrub::TITLE,
        kind: Kind::Response,
        build: scrub::section,
    },
    SectionSpec {
        id: "model",
        title: "The buffer model: app write time predicted and observed",
        kind: Kind::Response,
        build: charts::model::section,
    },
    SectionSpec {
        id: "crosscheck",
        title: "6. Cross-check and published figures",
        kind: Kind::Reproduction,
        build: tables::section,
    },
    SectionSpec {
        id: servers::ID,
        title: servers::TITLE,
        kind: Kind::Response,
        build: servers::section,
    },
    SectionSpec {
        id: streams::ID,
        title: streams::TITLE,
        kind: Kind::Response,
        build: streams::section,
    },
    SectionSpec {
        id: request::ID,
        title: request::TITLE,
        kind: Kind::Request,
        build: request::section,
    },
    SectionSpec {
        id: proxies::ID,
        title: proxies::TITLE,
        kind: Kind::Reproduction,
        build: proxies::section,
    },
    SectionSpec {
        id: "sweep",
        title: "Rate sweep",
        kind: Kind::Both,
        build: sweep::section,
    },
    SectionSpec {
        id: check::ID,
        title: check::TITLE,
        kind: Kind::CheckOnly,
        build: check::section,
    },
    SectionSpec {
        id: "environment",
        title: "The machine and the load",
        kind: Kind::Both,
        build: notices::machine,
    },
];

/// Builds the document. A section that cannot be drawn becomes a note in
/// its place, so one bad file costs one chart, not the report.
pub fn build(r: &Results) -> Document {
    let kind = if r.is_check_only() {
        Kind::CheckOnly
    } else if r.is_sweep_only() {
        Kind::SweepOnly
    } else {
        Kind::Reproduction
    };
    // A directory of request-direction runs only has no response lesson.
    let response =
        r.runs.is_empty() && r.conditions.is_empty() || !analysis::select::conditions(r).is_empty();
    let sections = SECTIONS
        .iter()
        .filter(|spec| match spec.kind {
            Kind::Both => true,
            Kind::Response => kind == Kind::Reproduction && response,
            Kind::Request => kind == Kind::Reproduction,
            k => k == kind,
        })
        .filter_map(|spec| {
            let mut s = Section::new(spec.id, spec.title);
            if let Err(e) = (spec.build)(r, &mut s) {
                s.blocks.clear();
                s.note(&format!("This section could not be drawn: {e:#}"));
            }
            (!s.blocks.is_empty()).then_some(s)
        })
        .collect();
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
