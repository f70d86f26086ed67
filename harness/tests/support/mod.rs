//! Helpers shared by the harness's integration tests.
#![allow(dead_code)]

pub mod child;
pub mod chromium;
pub mod lab;
pub mod netns;
pub mod request_report;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

/// The workspace root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the harness crate sits in the workspace")
        .to_path_buf()
}

/// The project's state directory (venv, unpacked NGINX), as `scripts/test`
/// prepares it.
pub fn state_dir() -> PathBuf {
    std::env::var_os("SLOWLAB_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".slowlab"))
}

pub fn slowlab() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_slowlab"))
}

/// A raw HTTP/1.1 exchange: the response head (lower-cased header names)
/// and the body, read until the server closes.
#[derive(Debug)]
pub struct Raw {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Raw {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

pub fn raw_request(addr: SocketAddr, request: &str) -> Raw {
    raw_request_bytes(addr, request.as_bytes())
}

pub fn raw_request_bytes(addr: SocketAddr, request: &[u8]) -> Raw {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(request).unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).expect("read until close");
    let split = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete head");
    let head = String::from_utf8_lossy(&all[..split]).to_string();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .expect("status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Raw {
        status,
        headers,
        body: all[split + 4..].to_vec(),
    }
}

/// A request with `body` (its `Content-Length` said) that closes the
/// connection; `block` is sent as `X-Slowlab-Block` when given.
pub fn request_with_body(method: &str, path: &str, block: Option<usize>, body: &[u8]) -> Vec<u8> {
    let block = block.map_or(String::new(), |b| format!("X-Slowlab-Block: {b}\r\n"));
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: test\r\nContent-Length: {}\r\n{block}Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(body);
    req
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

pub fn get(addr: SocketAddr, path: &str) -> Raw {
    raw_request(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"),
    )
}

/// Processes whose command line or environment mentions `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<(u32, String)> {
    let me = std::process::id();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Zombies are gone for every purpose but the process table.
        if stat
            .rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'))
        {
            continue;
        }
        let hay = |b: &[u8]| String::from_utf8_lossy(b).contains(needle);
        if hay(&cmd) || hay(&env) {
            out.push((pid, String::from_utf8_lossy(&cmd).replace('\0', " ")));
        }
    }
    out
}

/// Fails unless every column of `file`'s header is documented in the
/// README's "How to read the CSV files" as `` `column` ``, or, for the
/// per-component columns of `runs.csv`, as `` `<c>_rest` ``.
pub fn assert_documented(file: &str, header: &[String]) {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let csv_docs = readme
        .split("<!-- csv:start -->")
        .nth(1)
        .and_then(|s| s.split("<!-- csv:end -->").next())
        .expect("README.md has the csv:start/csv:end section");
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
        "README.md does not document these columns of {file}: {undocumented:?}"
    );
}

/// `CAP_SYS_RESOURCE` of `linux/capability.h` (the libc crate lacks it).
const CAP_SYS_RESOURCE: libc::c_ulong = 24;

/// For `pre_exec`: sets the open-files limit to `soft`/`hard` and drops
/// `CAP_SYS_RESOURCE` from the bounding set, so that the program run, even
/// as root, cannot raise its hard limit (as an unprivileged user could
/// not). Plain system calls, safe between fork and exec.
pub fn limit_open_files(soft: u64, hard: u64) -> std::io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: setrlimit and prctl are plain system calls with live arguments.
    unsafe {
        if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // Without CAP_SETPCAP (not root) the capability is not ours anyway.
        let _ = libc::prctl(libc::PR_CAPBSET_DROP, CAP_SYS_RESOURCE, 0, 0, 0);
    }
    Ok(())
}

/// Asserts that exactly one line of `text` (a child's stderr) contains
/// `needle`: a condition said "in one line".
pub fn assert_one_line_with(text: &str, needle: &str) {
    let lines = text.lines().filter(|l| l.contains(needle)).count();
    assert_eq!(lines, 1, "{needle} in {lines} lines: {text}");
}
