//! `slowlab prepare`: make the real components available without touching
//! the user's Python or starting any system service.
//!
//! - Gunicorn 23.0.0 goes into a virtual environment of the project's own
//!   (`<state>/venv`), made with Debian's CPython when present, as in the
//!   original.
//! - The other Python servers (Uvicorn, Gunicorn's Uvicorn and gevent
//!   workers, Waitress, Granian) go into the same venv, each with its exact
//!   pinned versions from PyPI ([`PYTHON_PINS`]); one that does not install
//!   is reported missing with its reason, and only its conditions skip.
//! - NGINX 1.22 is `/usr/sbin/nginx` when installed; otherwise the Debian
//!   package is downloaded and unpacked into `<state>/nginx`, as the
//!   original's prepare stage did. No NGINX service is ever started: every
//!   run writes its own config, prefix, pid file and temp path.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::stack::Tool;

/// The pinned Gunicorn version of the experiment.
pub const GUNICORN_VERSION: &str = "23.0.0";

/// One Python server's package set: what `prepare` installs with pip, what
/// it imports to check it, and the program a run starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pin {
    pub tool: Tool,
    /// The script in the venv's `bin/` that starts the server.
    pub program: &'static str,
    /// The module whose import proves the install works (a wheel with a
    /// native extension may install and still fail to load).
    pub import: &'static str,
    /// `(distribution, exact version)`: the server and the packages that
    /// carry its behaviour (the HTTP parser, the event library).
    pub packages: &'static [(&'static str, &'static str)],
}

/// The pinned Python servers beyond Gunicorn's own worker classes.
pub const PYTHON_PINS: [Pin; 5] = [
    Pin {
        tool: Tool::Uvicorn,
        program: "uvicorn",
        import: "uvicorn",
        packages: &[("uvicorn", "0.54.0"), ("h11", "0.16.0"), ("click", "8.5.1")],
    },
    Pin {
        tool: Tool::UvicornWorker,
        program: "gunicorn",
        import: "uvicorn_worker",
        packages: &[
            ("gunicorn", GUNICORN_VERSION),
            ("uvicorn-worker", "0.4.0"),
            ("uvicorn", "0.54.0"),
            ("h11", "0.16.0"),
        ],
    },
    Pin {
        tool: Tool::Gevent,
        program: "gunicorn",
        import: "gevent",
        packages: &[
            ("gunicorn", GUNICORN_VERSION),
            ("gevent", "26.9.0"),
            ("greenlet", "3.5.6"),
        ],
    },
    Pin {
        tool: Tool::Waitress,
        program: "waitress-serve",
        import: "waitress",
        packages: &[("waitress", "3.0.2")],
    },
    Pin {
        tool: Tool::Granian,
        program: "granian",
        import: "granian",
        packages: &[("granian", "2.8.7")],
    },
];

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

/// `slowlab prepare` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct PrepareArgs {
    /// Directory for the venv and unpacked packages (default: $SLOWLAB_HOME,
    /// else .slowlab in the binary's checkout, else ~/.local/share/slowlab).
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
}

/// A usable Gunicorn.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Gunicorn {
    pub gunicorn: PathBuf,
    pub python: PathBuf,
    pub version: String,
    pub python_version: String,
}

/// A usable NGINX binary.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Nginx {
    pub binary: PathBuf,
    pub version: String,
    /// The Debian package version, when known.
    pub package: Option<String>,
    pub source: String,
}

/// A usable Python server of [`PYTHON_PINS`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct PyPackages {
    /// The script that starts it.
    pub program: PathBuf,
    /// `(distribution, installed version)`, each equal to its pin.
    pub versions: Vec<(String, String)>,
}

/// The Python servers of [`PYTHON_PINS`], each usable or with the reason it
/// is not.
#[derive(Debug, Clone)]
pub struct PyTools {
    pub uvicorn: Result<PyPackages, String>,
    pub uvicorn_worker: Result<PyPackages, String>,
    pub gevent: Result<PyPackages, String>,
    pub waitress: Result<PyPackages, String>,
    pub granian: Result<PyPackages, String>,
}

impl Default for PyTools {
    /// Every one missing, "not prepared".
    fn default() -> Self {
        let no = || Err("not prepared (run `slowlab prepare`)".to_string());
        PyTools {
            uvicorn: no(),
            uvicorn_worker: no(),
            gevent: no(),
            waitress: no(),
            granian: no(),
        }
    }
}

impl PyTools {
    /// The field of a Python server's tool; `None` for Gunicorn and NGINX.
    pub fn get(&self, tool: Tool) -> Option<&Result<PyPackages, String>> {
        match tool {
            Tool::Uvicorn => Some(&self.uvicorn),
            Tool::UvicornWorker => Some(&self.uvicorn_worker),
            Tool::Gevent => Some(&self.gevent),
            Tool::Waitress => Some(&self.waitress),
            Tool::Granian => Some(&self.granian),
            Tool::Gunicorn | Tool::Nginx => None,
        }
    }

    fn get_mut(&mut self, tool: Tool) -> Option<&mut Result<PyPackages, String>> {
        match tool {
            Tool::Uvicorn => Some(&mut self.uvicorn),
            Tool::UvicornWorker => Some(&mut self.uvicorn_worker),
            Tool::Gevent => Some(&mut self.gevent),
            Tool::Waitress => Some(&mut self.waitress),
            Tool::Granian => Some(&mut self.granian),
            Tool::Gunicorn | Tool::Nginx => None,
        }
    }

    /// Every installed distribution and its version, for `environment.json`.
    pub fn versions(&self) -> std::collections::BTreeMap<String, String> {
        PYTHON_PINS
            .iter()
            .filter_map(|p| self.get(p.tool)?.as_ref().ok())
            .flat_map(|p| p.versions.iter().cloned())
            .collect()
    }

    /// Why each missing one is missing, by tool name.
    pub fn missing(&self) -> std::collections::BTreeMap<&'static str, String> {
        PYTHON_PINS
            .iter()
            .filter_map(|p| Some((p.tool.name(), self.get(p.tool)?.as_ref().err()?.clone())))
            .collect()
    }
}

/// What `prepare` found; a component that is missing carries the reason.
#[derive(Debug, Clone)]
pub struct Tools {
    pub gunicorn: Result<Gunicorn, String>,
    pub nginx: Result<Nginx, String>,
    /// The other Python servers.
    pub python: PyTools,
}

impl Tools {
    /// One line per component, for the console.
    pub fn describe(&self) -> Vec<String> {
        let g = match &self.gunicorn {
            Ok(g) => format!(
                "gunicorn {} ({}; {})",
                g.version,
                g.gunicorn.display(),
                g.python_version
            ),
            Err(e) => format!("gunicorn: MISSING: {e}"),
        };
        let n = match &self.nginx {
            Ok(n) => format!(
                "nginx {} ({}, {}{})",
                n.version,
                n.binary.display(),
                n.source,
                n.package
                    .as_ref()
                    .map(|p| format!(", package {p}"))
                    .unwrap_or_default()
            ),
            Err(e) => format!("nginx: MISSING: {e}"),
        };
        let mut lines = vec![g, n];
        for pin in &PYTHON_PINS {
            let Some(found) = self.python.get(pin.tool) else {
                continue;
            };
            lines.push(match found {
                Ok(p) => {
                    let versions: Vec<String> =
                        p.versions.iter().map(|(d, v)| format!("{d} {v}")).collect();
                    format!(
                        "{}: {} ({})",
                        pin.tool.name(),
                        versions.join(", "),
                        p.program.display()
                    )
                }
                Err(e) => format!("{}: MISSING: {e}", pin.tool.name()),
            });
        }
        lines
    }
}

/// Runs `slowlab prepare`.
pub fn run(args: PrepareArgs) -> Result<()> {
    let dir = args.state_dir.unwrap_or_else(state_dir);
    println!("state directory: {}", dir.display());
    let tools = prepare(&dir);
    for line in tools.describe() {
        println!("{line}");
    }
    if tools.gunicorn.is_err() || tools.nginx.is_err() {
        bail!("not every component is available; the conditions that need it will be skipped");
    }
    if !tools.python.missing().is_empty() {
        eprintln!(
            "slowlab: not every Python server is available; the conditions that need one will be skipped"
        );
    }
    Ok(())
}

/// Finds or installs Gunicorn and NGINX. Never fails as a whole: each
/// component is either there or carries the reason it is not.
pub fn prepare(state: &Path) -> Tools {
    let _ = fs::create_dir_all(state);
    let state = state.canonicalize().unwrap_or_else(|_| state.to_path_buf());
    let gunicorn = gunicorn(&state).map_err(|e| format!("{e:#}"));
    let python = python_servers(&state.join("venv"), &gunicorn);
    Tools {
        gunicorn,
        nginx: nginx(&state).map_err(|e| format!("{e:#}")),
        python,
    }
}

/// Finds or installs each pin of [`PYTHON_PINS`] into the venv Gunicorn
/// lives in. One pip command per pin, so that a wheel that does not install
/// here (Granian's is native code) takes only its own server out.
fn python_servers(venv: &Path, gunicorn: &Result<Gunicorn, String>) -> PyTools {
    let mut tools = PyTools::default();
    let python = match gunicorn {
        Ok(g) => g.python.clone(),
        Err(e) => {
            for pin in &PYTHON_PINS {
                if let Some(slot) = tools.get_mut(pin.tool) {
                    *slot = Err(format!("the venv is not available: {e}"));
                }
            }
            return tools;
        }
    };
    for pin in &PYTHON_PINS {
        let found = match check_pin(venv, &python, pin) {
            Ok(found) => Ok(found),
            Err(_) => install_pin(&python, pin).and_then(|()| check_pin(venv, &python, pin)),
        };
        if let Some(slot) = tools.get_mut(pin.tool) {
            *slot = found.map_err(|e| format!("{e:#}"));
        }
    }
    tools
}

fn install_pin(python: &Path, pin: &Pin) -> Result<()> {
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
        .with_context(|| format!("installing {} from PyPI", pin.tool.name()))
}

/// The pin when its program is there, its module imports and every package
/// has its pinned version.
fn check_pin(venv: &Path, python: &Path, pin: &Pin) -> Result<PyPackages> {
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

fn gunicorn(state: &Path) -> Result<Gunicorn> {
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

fn nginx(state: &Path) -> Result<Nginx> {
    let system = Path::new("/usr/sbin/nginx");
    if system.exists() {
        return check_nginx(system, "system", dpkg_version("nginx"));
    }
    let root = state.join("nginx");
    let unpacked = root.join("usr/sbin/nginx");
    let package_file = root.join("PACKAGE_VERSION");
    if unpacked.exists() {
        let package = fs::read_to_string(&package_file)
            .ok()
            .map(|s| s.trim().to_string());
        return check_nginx(&unpacked, "unpacked Debian package", package);
    }
    let download = state.join("download");
    let _ = fs::remove_dir_all(&download);
    fs::create_dir_all(&download)?;
    let fetch = || {
        Command::new("apt-get")
            .args(["download", "-q", "nginx"])
            .current_dir(&download)
            .output()
    };
    let mut out = fetch().context("running apt-get download (is this Debian?)")?;
    if !out.status.success() && is_root() {
        // A fresh machine may not have package lists yet.
        let _ = run_quiet("apt-get", &["update", "-q"]);
        out = fetch()?;
    }
    if !out.status.success() {
        bail!(
            "apt-get download nginx failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let deb = fs::read_dir(&download)?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "deb"))
        .context("apt-get download left no .deb")?;
    let package = output("dpkg-deb", &["-f", &deb.to_string_lossy(), "Version"])
        .ok()
        .map(|s| s.trim().to_string());
    run_quiet(
        "dpkg-deb",
        &["-x", &deb.to_string_lossy(), &root.to_string_lossy()],
    )
    .context("unpacking the nginx package")?;
    if let Some(p) = &package {
        fs::write(&package_file, p)?;
    }
    let _ = fs::remove_dir_all(&download);
    check_nginx(&unpacked, "unpacked Debian package", package)
}

fn check_nginx(binary: &Path, source: &str, package: Option<String>) -> Result<Nginx> {
    let out = Command::new(binary)
        .arg("-v")
        .output()
        .with_context(|| format!("running {} -v", binary.display()))?;
    // nginx prints "nginx version: nginx/1.22.1" to stderr.
    let text = String::from_utf8_lossy(&out.stderr);
    let version = text
        .split('/')
        .nth(1)
        .map(|v| v.split_whitespace().next().unwrap_or(v).to_string())
        .with_context(|| format!("unexpected nginx -v output: {}", text.trim()))?;
    Ok(Nginx {
        binary: binary.to_path_buf(),
        version,
        package,
        source: source.to_string(),
    })
}

fn dpkg_version(package: &str) -> Option<String> {
    output("dpkg-query", &["-W", "-f=${Version}", package])
        .ok()
        .filter(|v| !v.trim().is_empty())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn apt_install(packages: &[&str]) -> Result<()> {
    let mut args = vec!["install", "-y", "-q", "--no-install-recommends"];
    args.extend(packages);
    if run_quiet("apt-get", &args).is_err() {
        run_quiet("apt-get", &["update", "-q"])?;
        run_quiet("apt-get", &args)?;
    }
    Ok(())
}

/// Runs a command and returns its stdout (stderr too when stdout is empty,
/// as `python --version` of old versions does).
pub fn output(program: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("running {program}"))?;
    if !out.status.success() {
        bail!(
            "{program} {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let mut text = String::from_utf8_lossy(&out.stdout).to_string();
    if text.trim().is_empty() {
        text = String::from_utf8_lossy(&out.stderr).to_string();
    }
    Ok(text)
}

fn run_quiet(program: &str, args: &[&str]) -> Result<()> {
    let out = Command::new(program)
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .output()
        .with_context(|| format!("running {program}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        bail!("{program} {} failed: {}", args.join(" "), last.trim());
    }
    Ok(())
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
