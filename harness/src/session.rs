//! The one session of a verb that runs stacks (`reproduce`, `sweep`,
//! `check`, and the verbs to come): it installs the signal handlers,
//! resolves and checks `--out`, finds the tools, reaps what a killed
//! harness left (cgroups, scratch directories, namespaces), makes the
//! scratch directory and the launcher, records the environment, keeps the
//! `INCOMPLETE` marker, and at the end removes the cgroup base, writes the
//! report and turns an interrupt into exit status 130/143.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use common::exit::BadInput;
use lab::cgroup::{self, Mode};
use lab::prepare::{self, Tools};
use lab::stack::launch::Launcher;
use lab::stack::run::Lab;
use lab::{envinfo, reap, scratch, signals};
use schema::INCOMPLETE;
use serde_json::Value;
use tempfile::TempDir;

/// How often the sampler reads every component.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(200);

/// Which tools a session needs found.
#[derive(Debug, Clone, Copy)]
pub enum Needs<'a> {
    /// Every tool the catalogue pins (installed when missing).
    All,
    /// None: the verb starts none of them (the reason is recorded).
    None(&'a str),
}

/// What a verb asks of its session.
#[derive(Debug, Clone)]
pub struct Opening<'a> {
    /// The verb's kind of scratch directory (`lab::scratch::KINDS`).
    pub kind: &'static str,
    /// `--out`; without it, `results/<UTC time>-<name>`.
    pub out: Option<PathBuf>,
    pub name: String,
    /// Whether `--out` must be absent or empty (a reproduction writes a
    /// whole directory; a sweep or a check adds to one).
    pub fresh: bool,
    pub needs: Needs<'a>,
    /// Say on stderr what was found of each tool.
    pub announce_tools: bool,
}

/// An open session (see the module).
pub struct Session {
    /// The results directory.
    pub out: PathBuf,
    pub cgroups: Mode,
    pub launcher: Launcher,
    scratch: TempDir,
}

/// How a verb's work ended.
#[derive(Debug)]
pub enum Ending {
    /// It ran to its end.
    Done,
    /// It stopped early; the text is what `INCOMPLETE` says was kept.
    Interrupted(String),
    /// It failed; `INCOMPLETE`, if the verb had marked the directory, says
    /// so too.
    Failed(anyhow::Error),
}

impl Session {
    /// Opens a session: everything before the first stack starts.
    pub fn open(o: Opening<'_>) -> Result<Session> {
        signals::install();
        let out = o.out.unwrap_or_else(|| {
            PathBuf::from("results").join(format!("{}-{}", utc_stamp(), o.name))
        });
        if o.fresh && out.read_dir().is_ok_and(|mut d| d.next().is_some()) {
            return Err(BadInput::new(format!(
                "{} is not empty; choose another --out",
                out.display()
            ))
            .into());
        }
        schema::file::probe(&out)?;
        let tools = match o.needs {
            Needs::All => prepare::prepare(&prepare::state_dir()),
            Needs::None(why) => Tools::none(why),
        };
        if o.announce_tools {
            for line in tools.describe() {
                eprintln!("slowlab: {line}");
            }
        }
        let cgroups = cgroup::detect();
        for line in reap::stale(&cgroups).lines() {
            eprintln!("slowlab: {line}");
        }
        let scratch = scratch::tempdir(o.kind)?;
        let launcher = Launcher {
            exe: std::env::current_exe().context("locating the slowlab binary")?,
            tools,
            app_dir: Launcher::write_app(&scratch.path().join("app"))?,
            ready_timeout: lab::stack::launch::READY_TIMEOUT,
        };
        Ok(Session {
            out,
            cgroups,
            launcher,
            scratch,
        })
    }

    /// The tools found.
    pub fn tools(&self) -> &Tools {
        &self.launcher.tools
    }

    /// The session's scratch directory (removed when the session ends).
    pub fn scratch(&self) -> &Path {
        self.scratch.path()
    }

    /// What every stack of the session runs with.
    pub fn lab(&self) -> Lab<'_> {
        Lab {
            launcher: &self.launcher,
            cgroups: &self.cgroups,
            sample_interval: SAMPLE_INTERVAL,
        }
    }

    /// Collects `environment.json` (the machine, the tools, the caps and
    /// the verb's own `run` record) and writes it into `dir`.
    pub fn record_environment(&self, dir: &Path, caps: Value, run: Value) -> Result<Value> {
        let env = envinfo::collect(self.tools(), &self.cgroups, caps, run);
        envinfo::write(dir, &env)?;
        Ok(env)
    }

    /// Marks the results directory unfinished, saying how far it got.
    pub fn mark(&self, text: &str) -> Result<()> {
        schema::mark_incomplete(&self.out, Some(text))
    }

    fn marked(&self) -> Option<String> {
        fs::read_to_string(self.out.join(INCOMPLETE)).ok()
    }

    /// Ends the session: removes the cgroup base, settles `INCOMPLETE`,
    /// writes the report (unless `report` is false, or the work failed)
    /// and says where the results are (unless `quiet`). An interrupted
    /// session ends with [`common::exit::Interrupted`] (exit 130/143).
    pub fn close(self, ending: Ending, report: bool, quiet: bool) -> Result<()> {
        cgroup::remove_base(&self.cgroups);
        let ending = match ending {
            Ending::Done if signals::requested() => Ending::Interrupted("interrupted".into()),
            e => e,
        };
        match &ending {
            Ending::Done => schema::mark_incomplete(&self.out, None)?,
            Ending::Interrupted(kept) => self.mark(kept)?,
            Ending::Failed(e) => {
                if let Some(so_far) = self.marked() {
                    self.mark(&format!("{}; then failed: {e:#}", so_far.trim()))?;
                }
            }
        }
        if report && !matches!(ending, Ending::Failed(_)) {
            if let Err(e) = report::write(&self.out) {
                eprintln!("slowlab: the report could not be written: {e:#}");
            }
        }
        if !quiet && !matches!(ending, Ending::Failed(_)) {
            println!("results: {}", self.out.display());
        }
        match ending {
            Ending::Done => Ok(()),
            Ending::Interrupted(_) => Err(signals::interrupted(format!(
                "partial results in {} (marked INCOMPLETE)",
                self.out.display()
            ))),
            Ending::Failed(e) => Err(e),
        }
    }
}

/// The UTC time as a file name's part: `2026-12-03T233400Z`.
pub fn utc_stamp() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        .to_string()
        .replace(':', "")
}
