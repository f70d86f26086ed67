//! Programs from Debian 12's packages (NGINX, and the proxies the
//! catalogue pins): the system's copy when the package is installed,
//! else the `.deb` downloaded with `apt-get download` and unpacked with
//! `dpkg-deb -x` into `<state>/<package>`, with the packages of the
//! libraries a minimal system lacks unpacked beside it (HAProxy's) and
//! found through `LD_LIBRARY_PATH`. Nothing is installed
//! system-wide and no service is started: every run writes its own config,
//! prefix, pid file and temp path.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use catalogue::tool::DebPin;

use super::command::{dpkg_version, is_root, output, run_quiet};

/// A usable program of a Debian package.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DebPackage {
    pub binary: PathBuf,
    /// The version the program reports.
    pub version: String,
    /// The Debian package version, when known.
    pub package: Option<String>,
    /// `system` or `unpacked Debian package`.
    pub source: String,
    /// Where the package was unpacked (its `usr/lib` holds its modules and
    /// libraries); `/` for the system's copy.
    pub root: PathBuf,
    /// Where the libraries unpacked beside it are (`LD_LIBRARY_PATH`), when
    /// it needed any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub library_path: Option<PathBuf>,
}

impl DebPackage {
    /// The environment the program needs to run: its unpacked libraries.
    pub fn env(&self) -> Vec<(String, String)> {
        self.library_path
            .iter()
            .map(|p| ("LD_LIBRARY_PATH".to_string(), p.to_string_lossy().into()))
            .collect()
    }
}

/// Finds `pin`'s program: the system's, else an unpacked package under
/// `state`, else downloads and unpacks it there.
pub fn find(state: &Path, pin: &DebPin) -> Result<DebPackage> {
    let system = Path::new("/").join(pin.binary);
    if system.exists() {
        return check(
            pin,
            &system,
            Path::new("/"),
            "system",
            dpkg_version(pin.package),
        );
    }
    let root = state.join(pin.package);
    let unpacked = root.join(pin.binary);
    let package_file = root.join("PACKAGE_VERSION");
    // The version file is written last: without it, a program that needs
    // libraries may have been unpacked without them.
    if unpacked.exists() && (pin.libraries.is_empty() || package_file.exists()) {
        let package = fs::read_to_string(&package_file)
            .ok()
            .map(|s| s.trim().to_string());
        return check(pin, &unpacked, &root, "unpacked Debian package", package);
    }
    let download = state.join("download").join(pin.package);
    let _ = fs::remove_dir_all(&download);
    fs::create_dir_all(&download)?;
    let fetch = || {
        Command::new("apt-get")
            .args(["download", "-q", pin.package])
            .args(pin.libraries)
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
            "apt-get download {} failed: {}",
            pin.package,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let debs: Vec<PathBuf> = fs::read_dir(&download)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "deb"))
        .collect();
    let own = format!("{}_", pin.package);
    let deb = debs
        .iter()
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&own))
        })
        .context("apt-get download left no .deb")?;
    let package = output("dpkg-deb", &["-f", &deb.to_string_lossy(), "Version"])
        .ok()
        .map(|s| s.trim().to_string());
    for d in &debs {
        run_quiet(
            "dpkg-deb",
            &["-x", &d.to_string_lossy(), &root.to_string_lossy()],
        )
        .with_context(|| format!("unpacking {}", d.display()))?;
    }
    if let Some(p) = &package {
        fs::write(&package_file, p)?;
    }
    let _ = fs::remove_dir_all(&download);
    check(pin, &unpacked, &root, "unpacked Debian package", package)
}

/// Runs the program for its version: the first `N.N[.N]` in what it
/// prints for its `version_args` (NGINX `-v`: "nginx version:
/// nginx/1.22.1"; Caddy `version`: "2.6.2").
fn check(
    pin: &DebPin,
    binary: &Path,
    root: &Path,
    source: &str,
    package: Option<String>,
) -> Result<DebPackage> {
    let args = pin.version_args.join(" ");
    let library_path = (!pin.libraries.is_empty() && root != Path::new("/"))
        .then(|| library_dirs(root, pin.package))
        .flatten();
    let out = Command::new(binary)
        .args(pin.version_args)
        .envs(library_path.iter().map(|p| ("LD_LIBRARY_PATH", p)))
        .output()
        .with_context(|| format!("running {} {args}", binary.display()))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let version = first_version(&text).with_context(|| {
        format!(
            "unexpected {} {args} output: {}",
            binary.display(),
            text.trim()
        )
    })?;
    Ok(DebPackage {
        binary: binary.to_path_buf(),
        version,
        package,
        source: source.to_string(),
        root: root.to_path_buf(),
        library_path,
    })
}

/// The unpacked libraries' directories under `root` (`usr/lib/<triplet>`,
/// `lib/<triplet>`, as libpcre3 has it, `usr/lib`, and the package's own
/// `usr/lib/<package>`, which Traffic Server's RUNPATH names under `/`),
/// joined as `LD_LIBRARY_PATH` wants them.
fn library_dirs(root: &Path, package: &str) -> Option<PathBuf> {
    let lib = root.join("usr/lib");
    let triplets = |dir: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir() && p.to_string_lossy().ends_with("-linux-gnu"))
            .collect();
        v.sort();
        v
    };
    let mut dirs = triplets(&lib);
    dirs.extend(triplets(&root.join("lib")));
    dirs.push(lib.clone());
    let own = lib.join(package);
    if own.is_dir() {
        dirs.push(own);
    }
    std::env::join_paths(dirs).ok().map(PathBuf::from)
}

/// The first dotted version number (two or three parts) in `text`.
fn first_version(text: &str) -> Option<String> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map(|w| w.trim_matches('.'))
        .find(|w| {
            let parts: Vec<&str> = w.split('.').collect();
            (2..=3).contains(&parts.len()) && parts.iter().all(|p| !p.is_empty())
        })
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_the_first_dotted_number() {
        assert_eq!(
            first_version("nginx version: nginx/1.22.1\n").as_deref(),
            Some("1.22.1")
        );
        assert_eq!(
            first_version("HAProxy version 2.6.12-1+deb12u1 2023/12/16").as_deref(),
            Some("2.6.12")
        );
        assert_eq!(first_version("v2 build 7").as_deref(), None);
    }
}
