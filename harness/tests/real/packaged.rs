//! What the tests of the proxies from Debian's packages share: finding
//! the program as `prepare` does (the system's copy, or the package
//! unpacked into the lab's directory), and a scaled-down `check` of the
//! sync server x2 behind their routes.

use serde_json::Value;

use super::check_cli::{SCALED, TIMING, check, json, serve};
use crate::support;

/// Fails with one line unless `binary` (a path inside the package, as
/// `usr/sbin/haproxy`) is the system's or unpacked under the lab's
/// directory in `<package>/`.
pub(crate) fn require(title: &str, package: &str, binary: &str) {
    let found = [
        std::path::Path::new("/").join(binary),
        support::state_dir().join(package).join(binary),
    ]
    .into_iter()
    .any(|p| p.exists());
    testkit::real::require(
        title,
        (!found).then(|| {
            format!(
                "neither /{binary} nor {}/{package}/{binary} (run slowlab prepare)",
                support::state_dir().display()
            )
        }),
    );
}

/// `check` of the sync server x2 (`--large-path /large`) direct and
/// `--through routes`, up to 2 slow clients, `extra` flags added; its
/// outcome, its JSON and the results directory (kept for the caller's
/// look at the files).
pub(crate) fn check_through(
    routes: &str,
    extra: &[&str],
) -> (support::child::Outcome, Value, tempfile::TempDir) {
    let _one = TIMING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let server = serve("sync", "--workers 2");
    let mut args = vec!["--server-cmd", &server, "--large-path", "/large"];
    args.extend(extra);
    args.extend(["--through", routes, "--max-slow", "2", "--repeat", "1"]);
    args.extend(["--json"]);
    args.extend(SCALED);
    let o = check(&args, dir.path());
    let v = json(&o);
    (o, v, dir)
}
