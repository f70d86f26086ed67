//! A group's counters: CPU usage, throttled time and periods, memory now and
//! at its peak, from whichever files the interface names them in.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use super::{Counters, Dirs, Stats, read_pids, read_u64};

impl Counters {
    /// Processes in the group.
    pub fn pids(&self) -> Vec<u32> {
        read_pids(self.dirs.procs_dir())
    }

    /// Reads the counters now.
    pub fn stats(&self) -> Stats {
        match &self.dirs {
            Dirs::V2(dir) => {
                let cpu = read_keyed(&dir.join("cpu.stat"));
                Stats {
                    cpu_usage_ns: cpu.get("usage_usec").map(|v| v * 1000),
                    throttled_ns: cpu.get("throttled_usec").map(|v| v * 1000),
                    nr_throttled: cpu.get("nr_throttled").copied(),
                    memory_bytes: read_u64(&dir.join("memory.current")),
                    memory_peak_bytes: read_u64(&dir.join("memory.peak")),
                }
            }
            Dirs::V1 {
                cpu,
                cpuacct,
                memory,
            } => {
                let stat = read_keyed(&cpu.join("cpu.stat"));
                let cpuacct = cpuacct.as_ref().unwrap_or(cpu);
                Stats {
                    cpu_usage_ns: read_u64(&cpuacct.join("cpuacct.usage")),
                    throttled_ns: stat.get("throttled_time").copied(),
                    nr_throttled: stat.get("nr_throttled").copied(),
                    memory_bytes: read_u64(&memory.join("memory.usage_in_bytes")),
                    memory_peak_bytes: read_u64(&memory.join("memory.max_usage_in_bytes")),
                }
            }
        }
    }
}

/// `key value` lines, as in `cpu.stat`.
fn read_keyed(path: &Path) -> HashMap<String, u64> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn write(dir: &Path, files: &[(&str, &str)]) {
        fs::create_dir_all(dir).unwrap();
        for (name, text) in files {
            fs::write(dir.join(name), text).unwrap();
        }
    }

    #[test]
    fn v2_counters_come_from_cpu_stat_and_memory_files() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("app");
        write(
            &dir,
            &[
                (
                    "cpu.stat",
                    "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n\
                     nr_periods 40\nnr_throttled 7\nthrottled_usec 250\n",
                ),
                ("memory.current", "4096\n"),
                ("memory.peak", "8192\n"),
                ("cgroup.procs", "41\n42\n"),
            ],
        );
        let c = Counters {
            dirs: Dirs::V2(dir),
        };
        assert_eq!(
            c.stats(),
            Stats {
                cpu_usage_ns: Some(1_500_000),
                throttled_ns: Some(250_000),
                nr_throttled: Some(7),
                memory_bytes: Some(4096),
                memory_peak_bytes: Some(8192),
            }
        );
        assert_eq!(c.pids(), vec![41, 42]);
    }

    fn v1_tree(root: &Path, cpuacct_apart: bool) -> Dirs {
        let cpu = root.join("cpu/app");
        let cpuacct = root.join("cpuacct/app");
        let memory = root.join("memory/app");
        write(
            &cpu,
            &[
                (
                    "cpu.stat",
                    "nr_periods 40\nnr_throttled 3\nthrottled_time 900\n",
                ),
                ("cgroup.procs", "9\n"),
            ],
        );
        let usage_dir = if cpuacct_apart { &cpuacct } else { &cpu };
        write(usage_dir, &[("cpuacct.usage", "123456\n")]);
        write(
            &memory,
            &[
                ("memory.usage_in_bytes", "1000\n"),
                ("memory.max_usage_in_bytes", "2000\n"),
            ],
        );
        Dirs::V1 {
            cpu,
            cpuacct: cpuacct_apart.then_some(cpuacct),
            memory,
        }
    }

    #[test]
    fn v1_counters_come_from_each_hierarchy() {
        for apart in [true, false] {
            let root = tempfile::tempdir().unwrap();
            let c = Counters {
                dirs: v1_tree(root.path(), apart),
            };
            assert_eq!(
                c.stats(),
                Stats {
                    cpu_usage_ns: Some(123_456),
                    throttled_ns: Some(900),
                    nr_throttled: Some(3),
                    memory_bytes: Some(1000),
                    memory_peak_bytes: Some(2000),
                },
                "cpuacct apart: {apart}"
            );
            assert_eq!(c.pids(), vec![9]);
        }
    }

    #[test]
    fn a_group_that_is_gone_reads_as_unknown() {
        let c = Counters {
            dirs: Dirs::V2(PathBuf::from("/nonexistent/slowlab/app")),
        };
        assert_eq!(c.stats(), Stats::default());
        assert!(c.pids().is_empty());
    }
}
