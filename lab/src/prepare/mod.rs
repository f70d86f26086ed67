//! What `slowlab prepare` makes available, without touching the user's
//! Python or starting any system service: every tool the catalogue pins
//! ([`catalogue::Tool`]).
//!
//! - Gunicorn 23.0.0 goes into a virtual environment of the project's own
//!   (`<state>/venv`), made with Debian's CPython when present, as in the
//!   original.
//! - The other Python servers (Uvicorn, Gunicorn's Uvicorn and gevent
//!   workers, Waitress, Granian) go into the same venv, each with its exact
//!   pinned versions from PyPI (the catalogue's pins); one that does not install
//!   is reported missing with its reason, and only its conditions skip.
//! - NGINX 1.22 (and every program the catalogue pins to a Debian package)
//!   is the system's copy when installed; otherwise the Debian package is
//!   downloaded and unpacked into `<state>/<package>`, as the original's
//!   prepare stage did ([`debian`]). No service is ever started: every run
//!   writes its own config, prefix, pid file and temp path.
//!
//! # Layout
//! - this file: [`Tools`], what was found, and [`state_dir`].
//! - [`python`]: the venv, Gunicorn and the Python servers.
//! - [`debian`]: programs from Debian packages.
//! - [`command`]: running the package tools.

pub mod command;
pub mod debian;
pub mod python;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use catalogue::Tool;
use catalogue::tool::Pin;

pub use command::output;
pub use debian::DebPackage;
pub use python::{Gunicorn, PyPackages, PyTools};

/// What `prepare` found; a component that is missing carries the reason.
#[derive(Debug, Clone)]
pub struct Tools {
    /// Gunicorn and the venv's Python, where every Python server lives.
    pub gunicorn: Result<Gunicorn, String>,
    /// The other Python servers.
    pub python: PyTools,
    /// The programs from Debian packages (NGINX, the proxies), by tool.
    pub debian: BTreeMap<Tool, Result<DebPackage, String>>,
}

impl Tools {
    /// Nothing found: each tool "not used by" `why` (a verb that starts
    /// none of them).
    pub fn none(why: &str) -> Tools {
        Tools {
            gunicorn: Err(why.into()),
            python: PyTools::default(),
            debian: Tool::ALL
                .into_iter()
                .filter(|t| matches!(t.pin(), Pin::Debian(_)))
                .map(|t| (t, Err(why.to_string())))
                .collect(),
        }
    }

    /// NGINX, or why it is missing.
    pub fn nginx(&self) -> Result<&DebPackage, &str> {
        self.deb(Tool::Nginx)
    }

    /// A program from a Debian package, or why it is missing.
    pub fn deb(&self, tool: Tool) -> Result<&DebPackage, &str> {
        match self.debian.get(&tool) {
            Some(Ok(p)) => Ok(p),
            Some(Err(e)) => Err(e),
            None => Err("not prepared (run `slowlab prepare`)"),
        }
    }

    /// Why `tool` cannot be used on this machine, if it cannot.
    pub fn unavailable(&self, tool: Tool) -> Option<&str> {
        match tool.pin() {
            Pin::Debian(_) => self.deb(tool).err(),
            Pin::Python(_) if tool == Tool::Gunicorn => {
                self.gunicorn.as_ref().err().map(String::as_str)
            }
            Pin::Python(_) => self
                .python
                .get(tool)
                .and_then(|r| r.as_ref().err())
                .map(String::as_str),
        }
    }

    /// One line per component, for the console.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = vec![match &self.gunicorn {
            Ok(g) => format!(
                "gunicorn {} ({}; {})",
                g.version,
                g.gunicorn.display(),
                g.python_version
            ),
            Err(e) => format!("gunicorn: MISSING: {e}"),
        }];
        for (tool, found) in &self.debian {
            lines.push(match found {
                Ok(n) => format!(
                    "{} {} ({}, {}{})",
                    tool.name(),
                    n.version,
                    n.binary.display(),
                    n.source,
                    n.package
                        .as_ref()
                        .map(|p| format!(", package {p}"))
                        .unwrap_or_default()
                ),
                Err(e) => format!("{}: MISSING: {e}", tool.name()),
            });
        }
        for tool in Tool::python_servers() {
            let Some(found) = self.python.get(tool) else {
                continue;
            };
            lines.push(match found {
                Ok(p) => {
                    let versions: Vec<String> =
                        p.versions.iter().map(|(d, v)| format!("{d} {v}")).collect();
                    format!(
                        "{}: {} ({})",
                        tool.name(),
                        versions.join(", "),
                        p.program.display()
                    )
                }
                Err(e) => format!("{}: MISSING: {e}", tool.name()),
            });
        }
        lines
    }

    /// `environment.json`'s `versions` of the tools: `gunicorn`, `python`,
    /// per Debian tool `<tool>`, `<tool>_package` and `<tool>_source`, and
    /// `python_packages`.
    pub fn versions(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut v = serde_json::Map::new();
        let g = self.gunicorn.as_ref().ok();
        v.insert("gunicorn".into(), g.map(|g| g.version.clone()).into());
        v.insert("python".into(), g.map(|g| g.python_version.clone()).into());
        for (tool, found) in &self.debian {
            let n = found.as_ref().ok();
            let name = tool.name();
            v.insert(name.into(), n.map(|n| n.version.clone()).into());
            v.insert(
                format!("{name}_package"),
                n.and_then(|n| n.package.clone()).into(),
            );
            v.insert(format!("{name}_source"), n.map(|n| n.source.clone()).into());
        }
        v.insert(
            "python_packages".into(),
            serde_json::to_value(self.python.versions()).unwrap_or_default(),
        );
        v
    }

    /// `environment.json`'s `missing`: why each missing tool is missing.
    pub fn missing(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut v = serde_json::Map::new();
        v.insert(
            "gunicorn".into(),
            self.gunicorn.as_ref().err().cloned().into(),
        );
        for (tool, found) in &self.debian {
            v.insert(tool.name().into(), found.as_ref().err().cloned().into());
        }
        v.insert(
            "python_servers".into(),
            serde_json::to_value(self.python.missing()).unwrap_or_default(),
        );
        v
    }
}

/// The error of using `tool` when it is not available.
pub fn unavailable_error(tool: Tool, why: &str) -> anyhow::Error {
    anyhow::anyhow!("{} is not available: {why}", tool.name())
}

/// Finds or installs every tool the catalogue pins. Never fails as a
/// whole: each tool is either there or carries the reason it is not.
pub fn prepare(state: &Path) -> Tools {
    let _ = fs::create_dir_all(state);
    let state = state.canonicalize().unwrap_or_else(|_| state.to_path_buf());
    let gunicorn = python::gunicorn(&state).map_err(|e| format!("{e:#}"));
    let python = python::servers(&state.join("venv"), &gunicorn);
    let debian = Tool::ALL
        .into_iter()
        .filter_map(|t| match t.pin() {
            Pin::Debian(pin) => Some((t, debian::find(&state, &pin).map_err(|e| format!("{e:#}")))),
            Pin::Python(_) => None,
        })
        .collect();
    Tools {
        gunicorn,
        python,
        debian,
    }
}

/// Where slowlab keeps its venv and unpacked packages: `$SLOWLAB_HOME`;
/// else `.slowlab` in the checkout the running binary was built in (found
/// from the binary's own path, so the working directory does not matter);
/// else, for a binary installed elsewhere, `$XDG_DATA_HOME/slowlab` or
/// `~/.local/share/slowlab`.
pub fn state_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("SLOWLAB_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(home);
    }
    let exe = std::env::current_exe().ok();
    if let Some(root) = exe.as_deref().and_then(checkout_of) {
        return root.join(".slowlab");
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")));
    match data {
        Some(d) => d.join("slowlab"),
        None => PathBuf::from(".slowlab"),
    }
}

/// The slowlab checkout a binary sits in (`<root>/target/<profile>/slowlab`):
/// the nearest ancestor with the workspace's `Cargo.lock` and `harness/`.
fn checkout_of(exe: &Path) -> Option<PathBuf> {
    exe.ancestors()
        .skip(1)
        .find(|d| d.join("Cargo.lock").is_file() && d.join("harness/Cargo.toml").is_file())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binary_in_a_checkout_finds_the_checkout_and_one_elsewhere_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("harness")).unwrap();
        fs::create_dir_all(root.join("target/release")).unwrap();
        fs::write(root.join("Cargo.lock"), "").unwrap();
        fs::write(root.join("harness/Cargo.toml"), "").unwrap();
        let exe = root.join("target/release/slowlab");
        assert_eq!(checkout_of(&exe).as_deref(), Some(root));
        assert_eq!(
            checkout_of(&root.join("elsewhere/bin/slowlab")).as_deref(),
            Some(root)
        );
        let other = tempfile::tempdir().unwrap();
        assert_eq!(checkout_of(&other.path().join("bin/slowlab")), None);
    }
}
