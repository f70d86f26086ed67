//! The environments of merged result directories: every machine's
//! `environment.json` is kept, and the settings on which they differ are
//! named, because the absolute numbers depend on the kernel, its TCP buffer
//! sysctls, the CPU, the tool versions and the caps.

use std::collections::BTreeMap;

use serde_json::Value;

/// Keys that differ between any two runs of one machine too (times, plans,
/// paths named after the harness's pid), so a difference in them says
/// nothing about the machines.
const PER_INVOCATION: [&str; 7] = [
    "run.started_utc",
    "run.runs_planned",
    "run.shard",
    "cgroup.cpu",
    "cgroup.cpuacct",
    "cgroup.memory",
    "cgroup.path",
];

/// The names a run gives what it creates after the harness's pid (its
/// namespaces and veth ends: `slowlab-s-4242`, `vs4242a`): two runs of one
/// machine differ in them too.
const PER_RUN_NAMES: [&str; 3] = ["name", "veth", "fast_veth"];

/// Whether a difference in `key` says nothing about the machines.
fn per_invocation(key: &str, values: &[String]) -> bool {
    if PER_INVOCATION.contains(&key) {
        return true;
    }
    let last = key.rsplit('.').next().unwrap_or_default();
    // Each run of digits (the pid) as one `#`.
    let digits_out = |v: &String| -> String {
        let mut out = String::new();
        for c in v.chars() {
            if !c.is_ascii_digit() {
                out.push(c);
            } else if !out.ends_with('#') {
                out.push('#');
            }
        }
        out
    };
    key.starts_with("run.netns.")
        && PER_RUN_NAMES.contains(&last)
        && values
            .iter()
            .all(|v| digits_out(v) == digits_out(&values[0]))
}

/// Flattens a JSON document into `a.b.c` keys and their values as text.
fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, String>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        other => {
            let text = match other {
                Value::String(s) => s.clone(),
                Value::Null => "(none)".into(),
                v => v.to_string(),
            };
            out.insert(prefix.to_string(), text);
        }
    }
}

/// One setting on which the machines differ: its key and each machine's
/// value, in the order of the inputs (`(absent)` where a machine lacks it).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Difference {
    pub key: String,
    pub values: Vec<String>,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.key, self.values.join(" | "))
    }
}

/// The settings on which the environments differ, by key.
pub fn differences(envs: &[Value]) -> Vec<Difference> {
    let flat: Vec<BTreeMap<String, String>> = envs
        .iter()
        .map(|e| {
            let mut m = BTreeMap::new();
            flatten("", e, &mut m);
            m
        })
        .collect();
    let mut keys: Vec<&String> = flat.iter().flat_map(|m| m.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let values: Vec<String> = flat
                .iter()
                .map(|m| m.get(k).cloned().unwrap_or_else(|| "(absent)".into()))
                .collect();
            (values.iter().any(|v| v != &values[0]) && !per_invocation(k, &values)).then(|| {
                Difference {
                    key: k.clone(),
                    values,
                }
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_what_differs_and_ignores_what_changes_every_run() {
        let a = json!({
            "kernel": "6.1",
            "sysctls": {"net.ipv4.tcp_wmem": "4096 16384 4194304"},
            "cgroup": {"mode": "v1", "cpu": "/sys/fs/cgroup/cpu/slowlab-1"},
            "run": {"started_utc": "x", "preset": "quick"},
        });
        let b = json!({
            "kernel": "6.12",
            "sysctls": {"net.ipv4.tcp_wmem": "4096 16384 4194304"},
            "cgroup": {"mode": "v1", "cpu": "/sys/fs/cgroup/cpu/slowlab-2"},
            "run": {"started_utc": "y", "preset": "quick"},
            "versions": {"nginx": "1.22.1"},
        });
        let d = differences(&[a.clone(), b]);
        let keys: Vec<&str> = d.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(keys, ["kernel", "versions.nginx"]);
        assert_eq!(d[0].to_string(), "kernel: 6.1 | 6.12");
        assert_eq!(d[1].values, ["(absent)", "1.22.1"]);
        assert!(differences(&[a.clone(), a]).is_empty());
    }

    #[test]
    fn the_names_a_run_gives_its_namespaces_are_no_difference() {
        let ns = |pid: u32, wmem: &str| {
            json!({"run": {"netns": {"server": {
                "name": format!("slowlab-s-{pid}"),
                "veth": format!("vs{pid}a"),
                "fast_veth": format!("vf{pid}a"),
                "addr": "198.18.0.1",
                "sysctls": {"net.ipv4.tcp_wmem": wmem},
            }}}})
        };
        let d = differences(&[ns(4242, "4096 16384 4194304"), ns(77, "4096 16384 4194304")]);
        assert!(d.is_empty(), "{d:?}");
        let d = differences(&[
            ns(4242, "4096 16384 4194304"),
            ns(77, "4096 16384 16777216"),
        ]);
        let keys: Vec<&str> = d.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(keys, ["run.netns.server.sysctls.net.ipv4.tcp_wmem"]);
    }
}
