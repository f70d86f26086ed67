//! `--sysctl` inside the run's namespaces: writing and reading a sysctl
//! where a namespace's thread sees it (the parsing and the allowed keys
//! are the catalogue's [`catalogue::net::sysctl`]).

use std::path::Path;

use anyhow::{Context, Result};
use catalogue::net::Sysctl;

/// Writes `s` into the namespace at `netns` (the calling thread's
/// namespace decides which `/proc/sys/net` a write reaches).
pub fn write_in(s: &Sysctl, netns: &Path) -> Result<()> {
    let path = proc_path(&s.key);
    super::ip::within(Some(netns), || {
        std::fs::write(&path, &s.value)
            .with_context(|| format!("writing {}={:?} in {}", s.key, s.value, netns.display()))
    })
}

/// `/proc/sys/net/ipv4/tcp_wmem` for `net.ipv4.tcp_wmem`.
pub fn proc_path(key: &str) -> String {
    format!("/proc/sys/{}", key.replace('.', "/"))
}

/// Reads `key` in the namespace at `netns` (the host's when none), with
/// its words joined by single spaces.
pub fn read_in(netns: Option<&Path>, key: &str) -> Option<String> {
    super::ip::within(netns, || Ok(std::fs::read_to_string(proc_path(key))?))
        .ok()
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
}
