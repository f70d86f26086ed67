//! The lab's venv: Gunicorn (with Debian's CPython when present, as the
//! original), and the other Python servers' pins from the catalogue, each
//! its own pip install so that one that does not install here (Granian's
//! wheel is native code) takes only its own server out.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use catalogue::Tool;
use catalogue::tool::{GUNICORN_VERSION, PyPin};

use super::command::{apt_install, is_root, output, run_quiet};

/// A usable Gunicorn.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Gunicorn {
    pub gunicorn: PathBuf,
    pub python: PathBuf,
    pub version: String,
    pub python_version: String,
}

/// A usable Python server of the catalogue's pins.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PyPackages {
    /// The script that starts it.
    pub program: PathBuf,
    /// `(distribution, installed version)`, each equal to its pin.
    pub versions: Vec<(String, String)>,
}

/// The Python servers beyond Gunicorn itself ([`Tool::python_servers`]),
/// each usable or with the reason it is not.
#[derive(Debug, Clone)]
pub struct PyTools(BTreeMap<Tool, Result<PyPackages, String>>);

impl Default for PyTools {
    /// Every one missing, "not prepared".
    fn default() -> Self {
        let no = || Err("not prepared (run `slowlab prepare`)".to_string());
        PyTools(Tool::python_servers().map(|t| (t, no())).collect())
    }
}

impl PyTools {
    /// What was found of a Python server's tool; `None` for another tool.
    pub fn get(&self, tool: Tool) -> Option<&Result<PyPackages, String>> {
        self.0.get(&tool)
    }

    /// Records what was found of a Python server's tool.
    pub fn set(&mut self, tool: Tool, found: Result<PyPackages, String>) {
        if self.0.contains_key(&tool) {
            self.0.insert(tool, found);
        }
    }

    /// Every installed distribution and its version, for `environment.json`.
    pub fn versions(&self) -> BTreeMap<String, String> {
        self.0
            .values()
            .filter_map(|r| r.as_ref().ok())
            .flat_map(|p| p.versions.iter().cloned())
            .collect()
    }

    /// Why each missing one is missing, by tool name.
    pub fn missing(&self) -> BTreeMap<&'static str, String> {
        self.0
            .iter()
            .filter_map(|(t, r)| Some((t.name(), r.as_ref().err()?.clone())))
            .collect()
    }
}

/// Finds or installs each Python server's pin into the venv Gunicorn lives
/// in.
pub fn servers(venv: &Path, gunicorn: &Result<Gunicorn, String>) -> PyTools {
    let mut tools = PyTools::default();
    let python = match gunicorn {
        Ok(g) => g.python.clone(),
        Err(e) => {
            for tool in Tool::python_servers() {
                tools.set(tool, Err(format!("the venv is not available: {e}")));
            }
            return tools;
        }
    };
    for tool in Tool::python_servers() {
        let Some(pin) = tool.python() else { continue };
        let found = match check_pin(venv, &python, &pin) {
            Ok(found) => Ok(found),
            Err(_) => {
                install_pin(&python, tool, &pin).and_then(|()| check_pin(venv, &python, &pin))
            }
        };
        tools.set(tool, found.map_err(|e| format!("{e:#}")));
    }
    tools
}

fn install_pin(python: &Path, tool: Tool, pin: &PyPin) -> Result<()> {
    let mut args = vec![
        "-m".to_string(),
        "pip".into(),
        "install".into(),
        "--quiet".into(),
        "--disable-pip-version-check".into(),
    ];
    args.extend(pin.packages.iter().map(|(d, v)| format!("{d}=={v}")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run_quiet(&python.to_string_lossy(), &args)
        .with_context(|| format!("installing {} from PyPI", tool.name()))
}

/// The pin when its program is there, its module imports and every package
/// has its pinned version.
fn check_pin(venv: &Path, python: &Path, pin: &PyPin) -> Result<PyPackages> {
    let program = venv.join("bin").join(pin.program);
    if !program.is_file() {
        bail!("{} is not installed", program.display());
    }
    let names: Vec<&str> = pin.packages.iter().map(|(d, _)| *d).collect();
    let script = format!(
        "import importlib.metadata as m, {}\nfor d in {:?}: print(d, m.version(d))",
        pin.import, names
    );
    let text = output(&python.to_string_lossy(), &["-c", &script])?;
    let versions: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(d, v)| (d.to_string(), v.trim().to_string()))
        .collect();
    for (d, want) in pin.packages {
        let got = versions
            .iter()
            .find(|(n, _)| n == d)
            .map(|(_, v)| v.as_str());
        if got != Some(*want) {
            bail!("{d} is {} instead of {want}", got.unwrap_or("missing"));
        }
    }
    Ok(PyPackages { program, versions })
}

/// Finds or installs Gunicorn in the venv under `state`.
pub fn gunicorn(state: &Path) -> Result<Gunicorn> {
    let venv = state.join("venv");
    let bin = venv.join("bin/gunicorn");
    let python = venv.join("bin/python");
    match check_gunicorn(&bin, &python) {
        Ok(found) if found.version == GUNICORN_VERSION => return Ok(found),
        Ok(found) => {
            tracing::info!(version = %found.version, "gunicorn in the venv has another version; reinstalling")
        }
        Err(e) if venv.exists() => {
            // A venv moved or copied from elsewhere keeps its scripts'
            // shebangs pointing at the old path, and pip would call the
            // package "already satisfied": only a new venv mends it.
            eprintln!(
                "slowlab: the venv at {} does not run gunicorn ({e:#}); rebuilding it",
                venv.display()
            );
            fs::remove_dir_all(&venv)
                .with_context(|| format!("removing the broken venv {}", venv.display()))?;
        }
        Err(_) => {}
    }
    let base_python = ["/usr/bin/python3", "python3"]
        .into_iter()
        .find(|p| output(p, &["--version"]).is_ok())
        .context("no python3 found")?;
    if !python.exists() {
        if let Err(e) = run_quiet(base_python, &["-m", "venv", &venv.to_string_lossy()]) {
            // Debian ships venv's ensurepip separately (python3-venv).
            let _ = fs::remove_dir_all(&venv);
            if is_root() && apt_install(&["python3-venv"]).is_ok() {
                run_quiet(base_python, &["-m", "venv", &venv.to_string_lossy()])
                    .context("creating the venv after installing python3-venv")?;
            } else {
                return Err(e.context("creating the venv (is python3-venv installed?)"));
            }
        }
    }
    run_quiet(
        &python.to_string_lossy(),
        &[
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            &format!("gunicorn=={GUNICORN_VERSION}"),
        ],
    )
    .context("installing gunicorn from PyPI")?;
    check_gunicorn(&bin, &python)
}

fn check_gunicorn(bin: &Path, python: &Path) -> Result<Gunicorn> {
    let text = output(&bin.to_string_lossy(), &["--version"])?;
    // "gunicorn (version 23.0.0)"
    let version = text
        .trim()
        .trim_end_matches(')')
        .rsplit(' ')
        .next()
        .unwrap_or_default()
        .to_string();
    let python_version = output(&python.to_string_lossy(), &["--version"])?
        .trim()
        .to_string();
    Ok(Gunicorn {
        gunicorn: bin.to_path_buf(),
        python: python.to_path_buf(),
        version,
        python_version,
    })
}
