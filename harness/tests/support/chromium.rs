//! A real headless Chromium for the report's rendering tests: a page loaded
//! from a file, its DOM dumped after its scripts ran, and the browser's
//! whole process group killed when dropped (`testkit::Child`), so that a
//! failing test leaves no browser behind. A test's probe script writes what it found into the
//! DOM as JSON between two markers ([`probe`] reads it back).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Records the page's errors, for a probe to report; goes first in `<head>`.
pub const ERRORS_HEAD: &str = r#"<script>
window.__errors = [];
window.addEventListener('error', function (e) { window.__errors.push('error: ' + e.message); }, true);
(function () { var orig = console.error; console.error = function () { window.__errors.push('console.error: ' + Array.prototype.join.call(arguments, ' ')); orig.apply(console, arguments); }; })();
</script>"#;

/// What Chromium left: the DOM after the page's scripts ran, and its log.
pub struct Dump {
    pub dom: String,
    pub log: String,
}

/// Fails the real-stack test without Chromium (`scripts/bootstrap --test`
/// installs it).
pub fn require() {
    testkit::real::require_program("Chromium", Path::new(CHROMIUM));
}

/// Loads the file `page` in headless Chromium and returns its DOM once
/// loaded; fails the test when Chromium fails or takes more than 120 s.
/// (`--dump-dom` needs JavaScript itself: with it off Chromium dumps
/// nothing, so a test of a page without scripts blocks them with a
/// Content-Security-Policy instead.)
pub fn dump_dom(page: &Path) -> Dump {
    dump(page, None)
}

/// [`dump_dom`] after `budget_ms` of virtual time: the page's timers run
/// that long as fast as the machine allows, whatever its load, and the DOM
/// is dumped then.
pub fn dump_dom_after(page: &Path, budget_ms: u32) -> Dump {
    dump(page, Some(budget_ms))
}

fn dump(page: &Path, budget_ms: Option<u32>) -> Dump {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("profile");
    let mut cmd = Command::new(CHROMIUM);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-quic",
        "--disable-dev-shm-usage",
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1400,1000",
        "--dump-dom",
    ]);
    if let Some(ms) = budget_ms {
        cmd.arg(format!("--virtual-time-budget={ms}"));
    }
    cmd.arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.display()))
        .env("HOME", dir.path());
    // Its own process group, killed whole if the test fails.
    let out = testkit::Child::spawn_group(cmd).finish(Duration::from_secs(120));
    assert!(
        out.status.success(),
        "chromium exited with {}: {}",
        out.status,
        out.stderr
    );
    Dump {
        dom: out.stdout,
        log: out.stderr,
    }
}

/// The JSON a probe wrote into the DOM between `PROBE_START` and
/// `PROBE_END` (markers a probe builds at run time, so that its own text
/// in the dump never matches them).
pub fn probe(d: &Dump) -> serde_json::Value {
    let probe = d
        .dom
        .split("PROBE_START")
        .nth(1)
        .and_then(|s| s.split("PROBE_END").next())
        .unwrap_or_else(|| panic!("the probe did not run; chromium said: {}", d.log));
    // The dump escapes text as HTML.
    let probe = probe
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&probe).unwrap_or_else(|e| panic!("probe {probe}: {e}"))
}

/// Fails on a console error or an uncaught exception in Chromium's log.
pub fn assert_no_console_errors(log: &str) {
    for line in log.lines() {
        assert!(
            !(line.contains("CONSOLE") && line.to_lowercase().contains("error")),
            "console error: {line}"
        );
        assert!(!line.contains("Uncaught"), "script error: {line}");
    }
}
