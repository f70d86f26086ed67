//! `environment.json`: what a result depends on besides the code. The
//! absolute numbers of the experiment depend on the kernel, its TCP buffer
//! sysctls, the CPU and the caps, so every result directory records them.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::cgroup::Mode;
use crate::prepare::Tools;

/// The sysctls that size the kernel buffers a blocked response fills.
pub use catalogue::net::RECORDED_SYSCTLS as SYSCTLS;

/// Reads one sysctl of the host's namespace through procfs.
pub fn sysctl(name: &str) -> Option<String> {
    crate::netns::read_sysctl_in(None, name)
}

/// The three numbers of `tcp_wmem` / `tcp_rmem` (min, default, max).
pub fn triple(name: &str) -> Option<[u64; 3]> {
    crate::netns::parse_triple(&sysctl(name)?)
}

fn cpu_model() -> Option<String> {
    let text = fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|l| {
            l.starts_with("model name") || l.starts_with("Model") || l.starts_with("CPU part")
        })
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

fn uname(flag: &str) -> Option<String> {
    crate::prepare::output("uname", &[flag])
        .ok()
        .map(|s| s.trim().to_string())
}

fn glibc() -> Option<String> {
    crate::prepare::output("ldd", &["--version"])
        .ok()
        .and_then(|s| s.lines().next().map(|l| l.trim().to_string()))
}

/// Everything about this machine and this build, as JSON.
pub fn collect(tools: &Tools, cgroups: &Mode, caps: Value, extra: Value) -> Value {
    let sysctls: serde_json::Map<String, Value> = SYSCTLS
        .iter()
        .map(|k| {
            (
                k.to_string(),
                sysctl(k).map(Value::from).unwrap_or(Value::Null),
            )
        })
        .collect();
    let mem_total = fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        t.lines()
            .find(|l| l.starts_with("MemTotal:"))
            .map(|l| l.trim_start_matches("MemTotal:").trim().to_string())
    });
    let mut versions = serde_json::Map::new();
    versions.insert("slowlab".into(), env!("CARGO_PKG_VERSION").into());
    versions.insert("git_commit".into(), env!("SLOWLAB_GIT_COMMIT").into());
    versions.insert("rustc".into(), env!("SLOWLAB_RUSTC_VERSION").into());
    versions.extend(tools.versions());
    let cgroup = match cgroups {
        Mode::V2 { base } => json!({"mode": "v2", "base": base}),
        Mode::V1 {
            cpu,
            cpuacct,
            memory,
        } => {
            json!({"mode": "v1", "cpu": cpu, "cpuacct": cpuacct, "memory": memory})
        }
        Mode::None { reason } => json!({"mode": "none", "reason": reason}),
    };
    json!({
        "kernel": uname("-r"),
        "kernel_version": uname("-v"),
        "machine": uname("-m"),
        "cpu_model": cpu_model(),
        "cpu_cores": std::thread::available_parallelism().map(|n| n.get()).ok(),
        "memory_total": mem_total,
        "glibc": glibc(),
        "sysctls": sysctls,
        "cgroup": cgroup,
        "caps": caps,
        "versions": versions,
        "missing": tools.missing(),
        "run": extra,
    })
}

/// Writes `environment.json` into `dir`.
pub fn write(dir: &Path, value: &Value) -> Result<()> {
    let path = dir.join("environment.json");
    fs::write(&path, serde_json::to_string_pretty(value)? + "\n")
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysctls_are_read() {
        let w = triple("net.ipv4.tcp_wmem").expect("tcp_wmem on Linux");
        assert!(w[0] <= w[1] && w[1] <= w[2]);
    }
}
