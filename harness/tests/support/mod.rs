//! Helpers shared by the harness's integration tests, over `testkit`.
#![allow(dead_code, unused_imports)]

pub mod chromium;
pub mod netns;
pub mod request_report;
pub mod stacks;

use std::net::SocketAddr;
use std::path::PathBuf;

pub use testkit::child;
pub use testkit::http::{PATIENCE, Reply as Raw, get, request_with_body};
pub use testkit::paths::{root, state_dir};
pub use testkit::procs::{limit_open_files, processes_mentioning};

/// The binary under test.
pub fn slowlab() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_slowlab"))
}

/// Sends `request` as is and reads the answer until the server closes.
pub fn raw_request(addr: SocketAddr, request: &str) -> Raw {
    raw_request_bytes(addr, request.as_bytes())
}

/// [`raw_request`] with bytes.
pub fn raw_request_bytes(addr: SocketAddr, request: &[u8]) -> Raw {
    testkit::exchange(addr, request, PATIENCE)
}

/// Asserts that `a` and `b` answer every route and method of the
/// experiment with the same status, the headers that matter and the same
/// body; `what` names `a` in a failure. Uploads: a pattern body in 1000-byte
/// blocks (one byte wrong in the second one) and a default-block body.
pub fn assert_same_answers(what: &str, a: SocketAddr, b: SocketAddr) {
    let good: Vec<u8> = (0..5000u64)
        .map(|i| common::pattern::byte_at(i, 1000))
        .collect();
    let mut bad = good.clone();
    bad[1500] ^= 1;
    let big: Vec<u8> = (0..200_000u64)
        .map(|i| common::pattern::byte_at(i, common::pattern::DEFAULT_BLOCK))
        .collect();
    for (method, path, block, body) in [
        ("GET", "/fast", None, &[][..]),
        ("GET", "/large", None, &[]),
        ("GET", "/nope", None, &[]),
        ("POST", "/fast", None, &[]),
        ("DELETE", "/large", None, &[]),
        ("GET", "/upload", None, &[]),
        ("POST", "/upload", None, &[]),
        ("POST", "/upload", Some(1000), &good),
        ("POST", "/upload", Some(1000), &bad),
        ("POST", "/upload", None, &big),
    ] {
        let req = request_with_body(method, path, block, body);
        let x = raw_request_bytes(a, &req);
        let y = raw_request_bytes(b, &req);
        assert_eq!(x.status, y.status, "{what} {method} {path}");
        for h in [
            "content-type",
            "content-length",
            "allow",
            "x-slowlab-block",
            "connection",
        ] {
            assert_eq!(
                x.header(h),
                y.header(h),
                "{what} {method} {path}: header {h}"
            );
        }
        assert_eq!(
            x.body.len(),
            y.body.len(),
            "{what} {method} {path}: body length"
        );
        assert!(x.body == y.body, "{what} {method} {path}: bodies differ");
    }
}

/// Fails unless every column of `file`'s header is documented in the
/// book's "Results files" as `` `column` ``, or, for the per-component
/// columns of `runs.csv`, as `` `<c>_rest` ``.
pub fn assert_documented(file: &str, header: &[String]) {
    let csv_docs = testkit::paths::results_files_doc();
    let undocumented: Vec<&String> = header
        .iter()
        .filter(|col| {
            let per_component = ["app_", "proxy_", "loadgen_"]
                .iter()
                .filter_map(|c| col.strip_prefix(c))
                .any(|rest| csv_docs.contains(&format!("`<c>_{rest}`")));
            !csv_docs.contains(&format!("`{col}`")) && !per_component
        })
        .collect();
    assert!(
        undocumented.is_empty(),
        "{} does not document these columns of {file}: {undocumented:?}",
        testkit::paths::RESULTS_FILES_DOC
    );
}

/// Asserts that exactly one line of `text` (a child's stderr) contains
/// `needle`: a condition said "in one line".
pub fn assert_one_line_with(text: &str, needle: &str) {
    let lines = text.lines().filter(|l| l.contains(needle)).count();
    assert_eq!(lines, 1, "{needle} in {lines} lines: {text}");
}
