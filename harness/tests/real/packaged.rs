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

/// [`check_through`] behind a packaged proxy's `routes` (one line if
/// `binary` of `package` is not there, as [`require`]), holding the first
/// route's config `file`, kept beside its levels, to contain `pinned`.
pub(crate) fn check_kept(
    (title, package, binary): (&str, &str, &str),
    routes: &str,
    extra: &[&str],
    (file, pinned): (&str, &str),
) -> (support::child::Outcome, Value) {
    require(title, package, binary);
    let (o, v, dir) = check_through(routes, extra);
    let first = routes.split(',').next().unwrap();
    let text = std::fs::read_to_string(dir.path().join(first).join(file))
        .unwrap_or_else(|e| panic!("{file} is not kept beside the levels: {e}"));
    assert!(text.contains(pinned), "{file}: {text}");
    (o, v)
}

/// `route` was denied from 2, the slow clients holding the handlers.
pub(crate) fn denied_by_handlers(v: &Value, o: &support::child::Outcome, route: &str) {
    let r = super::check_cli::route(v, route);
    assert_eq!(r["denied_from"], 2, "{r}\n{}", o.stderr);
    assert_eq!(r["levels"][2]["cause"], "handlers", "{r}");
}

/// `route` was never denied and held up to 2.
pub(crate) fn held(v: &Value, o: &support::child::Outcome, route: &str) {
    let r = super::check_cli::route(v, route);
    assert_eq!(r["denied_from"], Value::Null, "{r}\n{}", o.stderr);
    assert_eq!(r["held_up_to"], 2, "{r}\n{}", o.stderr);
}
