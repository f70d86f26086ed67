//! The real-stack tier: tests with real Gunicorn, NGINX, Python servers,
//! namespaces, cgroups and Chromium. They run serially in one group
//! (`scripts/test`), and a missing tool or privilege fails the test with
//! one line naming it: a real-stack test that cannot run has not passed.

use std::path::Path;

/// Fails the test when `missing` says what is missing: `needs` names the
/// part ("Gunicorn", "network namespaces"), `missing` the reason.
pub fn require(needs: &str, missing: Option<impl std::fmt::Display>) {
    if let Some(why) = missing {
        panic!("the real-stack tier needs {needs}: {why} (run `scripts/test`, which prepares it)");
    }
}

/// Fails the test unless `program` is an executable file.
pub fn require_program(needs: &str, program: &Path) {
    require(
        needs,
        (!program.is_file()).then(|| format!("{} is missing", program.display())),
    );
}

/// Fails the test unless this process is root (namespaces, cgroups, `tc`).
pub fn require_root(needs: &str) {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    require(needs, (!root).then_some("not running as root"));
}

/// Fails the test unless `program` runs (`program --version` or any
/// argument that makes it exit).
pub fn require_command(program: &str, arg: &str) {
    let ran = std::process::Command::new(program)
        .arg(arg)
        .output()
        .is_ok();
    require(program, (!ran).then_some("not installed"));
}
