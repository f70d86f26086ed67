//! Running the package tools and the programs `prepare` checks: one line
//! of what failed, never a page of output.

use std::process::Command;

use anyhow::{Context, Result, bail};

pub fn dpkg_version(package: &str) -> Option<String> {
    output("dpkg-query", &["-W", "-f=${Version}", package])
        .ok()
        .filter(|v| !v.trim().is_empty())
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

pub fn apt_install(packages: &[&str]) -> Result<()> {
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

pub fn run_quiet(program: &str, args: &[&str]) -> Result<()> {
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
