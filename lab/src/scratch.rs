//! Scratch directories: `$TMPDIR/slowlab-<kind>-<pid>-<random>`, removed
//! when their guard drops (also on Ctrl-C and panics). A harness killed
//! with SIGKILL cannot remove its own, so the next session removes those
//! whose process is gone ([`crate::reap`]).

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use tempfile::TempDir;

/// The kinds of scratch directory: a verb's session (`reproduce`'s app
/// and runs, `sweep`, `check`) names its own after itself.
pub const KINDS: [&str; 4] = ["app", "run", "sweep", "check"];

/// A fresh scratch directory for `kind` (one of [`KINDS`]), named after
/// this process.
pub fn tempdir(kind: &str) -> Result<TempDir> {
    tempfile::Builder::new()
        .prefix(&format!("slowlab-{kind}-{}-", std::process::id()))
        .tempdir()
        .with_context(|| format!("creating a {kind} scratch directory"))
}

/// Removes the scratch directories in `parent` left by slowlab processes
/// that no longer exist; returns how many.
pub fn reap_stale_in(parent: &Path) -> usize {
    let Ok(entries) = fs::read_dir(parent) else {
        return 0;
    };
    let mut reaped = 0;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(pid) = owner(&name) else {
            continue;
        };
        if !crate::procfs::gone(pid) {
            continue;
        }
        if e.file_type().is_ok_and(|t| t.is_dir()) && fs::remove_dir_all(e.path()).is_ok() {
            reaped += 1;
        }
    }
    reaped
}

/// [`reap_stale_in`] the system's temp directory.
pub fn reap_stale() -> usize {
    reap_stale_in(&std::env::temp_dir())
}

/// The pid in `slowlab-<kind>-<pid>-<random>`, for the kinds we create.
fn owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("slowlab-")?;
    let (kind, rest) = rest.split_once('-')?;
    if !KINDS.contains(&kind) {
        return None;
    }
    let (pid, random) = rest.split_once('-')?;
    (!random.is_empty()).then_some(())?;
    pid.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_ours_only_with_a_kind_and_a_pid() {
        assert_eq!(owner("slowlab-run-123-abc"), Some(123));
        assert_eq!(owner("slowlab-sweep-9-x"), Some(9));
        assert_eq!(owner("slowlab-check-77-x"), Some(77), "check's too");
        assert_eq!(owner("slowlab-run-abc"), None, "the old unnumbered names");
        assert_eq!(owner("slowlab-bench-123-x"), None, "not a kind of ours");
        assert_eq!(owner("slowlab-run-123-"), None);
        assert_eq!(owner("other-run-123-x"), None);
    }

    #[test]
    fn only_directories_of_dead_processes_are_removed() {
        let parent = tempfile::tempdir().unwrap();
        // A process that has certainly ended: a child we waited for.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let stale = parent.path().join(format!("slowlab-run-{dead}-aaaa"));
        let mine = parent
            .path()
            .join(format!("slowlab-run-{}-bbbb", std::process::id()));
        let alive = parent.path().join("slowlab-sweep-1-cccc"); // init
        let foreign = parent.path().join(format!("notslowlab-run-{dead}-dddd"));
        for d in [&stale, &mine, &alive, &foreign] {
            fs::create_dir(d).unwrap();
            fs::write(d.join("f"), "x").unwrap();
        }
        assert_eq!(reap_stale_in(parent.path()), 1);
        assert!(!stale.exists());
        assert!(mine.exists() && alive.exists() && foreign.exists());
    }

    #[test]
    fn our_names_carry_our_pid() {
        let d = tempdir("run").unwrap();
        let name = d.path().file_name().unwrap().to_string_lossy().to_string();
        assert_eq!(owner(&name), Some(std::process::id()));
    }
}
