//! The sampler: every ~200 ms, for each component, its CPU and throttled
//! time, memory, RSS, open temp files, and the queues of every TCP socket it
//! holds (`sockets.rs`: through sock_diag in the component's network
//! namespace, else `/proc/net/tcp`); and the counters of every shaped
//! qdisc of the run (`--link`), read with `tc -s -j qdisc show` inside its
//! namespace, the one process it starts. Runs on its own thread.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::cgroup::Counters;
use crate::netns::{QdiscProbe, QdiscStats, Side};
use crate::procfs;
use crate::sockdiag::{MemInfo, TcpInfo};
use crate::sockets::SocketTables;

/// What to watch of one component.
#[derive(Debug, Clone)]
pub struct Probe {
    /// `app`, `proxy` or `loadgen`.
    pub component: String,
    /// The component's cgroup, when it has one.
    pub counters: Option<Counters>,
    /// The process started for it; its descendants are found through procfs
    /// when there is no cgroup.
    pub root_pid: u32,
    /// Where its temp files live (proxies).
    pub temp_dir: Option<PathBuf>,
}

/// One component at one instant.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ResourceSample {
    pub t_unix_s: f64,
    pub component: String,
    pub procs: u64,
    /// Cumulative CPU time; from the cgroup when there is one, else the sum
    /// over the live processes.
    pub cpu_ns: Option<u64>,
    pub cpu_source: &'static str,
    pub throttled_ns: Option<u64>,
    pub nr_throttled: Option<u64>,
    /// The cgroup's memory (`memory.current`; v1 `memory.usage_in_bytes`).
    pub memory_bytes: Option<u64>,
    /// The summed RSS of the processes (may double-count shared pages).
    pub rss_bytes: u64,
    pub temp_files: Option<u64>,
    pub temp_logical_bytes: Option<u64>,
    pub temp_allocated_bytes: Option<u64>,
    /// Connected TCP sockets and the bytes in their queues.
    pub sockets: u64,
    pub send_queue_bytes: u64,
    pub recv_queue_bytes: u64,
    /// Connections waiting in the accept queues of listening sockets.
    pub accept_backlog: u64,
    /// Descriptors the processes hold, and the smallest of their limits
    /// (`RLIMIT_NOFILE`; none when unlimited or unreadable).
    pub fds: u64,
    pub fd_limit: Option<u64>,
}

/// One TCP socket of one component at one instant.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SocketSample {
    pub t_unix_s: f64,
    pub component: String,
    pub local: String,
    pub remote: String,
    pub state: &'static str,
    pub tx_queue_bytes: u64,
    pub rx_queue_bytes: u64,
    /// `sock_diag` or `procfs`.
    pub source: &'static str,
    /// The inode of the network namespace the socket was read in.
    pub netns: Option<u64>,
    /// From sock_diag only.
    pub tcp: Option<TcpInfo>,
    pub mem: Option<MemInfo>,
}

/// One shaped qdisc (a root, or a per-client class's leaf) at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct QdiscSample {
    pub t_unix_s: f64,
    /// Which veth end it sits on.
    pub side: Side,
    pub dev: String,
    pub stats: QdiscStats,
}

/// Everything one sampler collected.
#[derive(Debug, Default, Clone)]
pub struct Samples {
    pub resources: Vec<ResourceSample>,
    pub sockets: Vec<SocketSample>,
    /// The shaped qdiscs; empty without a link.
    pub qdiscs: Vec<QdiscSample>,
}

/// A running sampler thread.
#[derive(Debug)]
pub struct Sampler {
    stop: Arc<AtomicBool>,
    probes: Arc<Mutex<Vec<Probe>>>,
    handle: Option<JoinHandle<Samples>>,
}

impl Sampler {
    /// Starts sampling `probes` and `qdiscs` every `interval`, beginning
    /// now.
    pub fn start(probes: Vec<Probe>, qdiscs: Vec<QdiscProbe>, interval: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let probes = Arc::new(Mutex::new(probes));
        let handle = {
            let stop = stop.clone();
            let probes = probes.clone();
            std::thread::Builder::new()
                .name("sampler".into())
                .spawn(move || {
                    let mut out = Samples::default();
                    let mut tables = SocketTables::new();
                    loop {
                        let current = probes.lock().map(|p| p.clone()).unwrap_or_default();
                        sample_once(&current, &mut tables, &mut out);
                        sample_qdiscs(&qdiscs, &mut out);
                        // Sleep in small steps so that stop() is prompt, and
                        // take one last sample after it.
                        let mut slept = Duration::ZERO;
                        while slept < interval && !stop.load(Ordering::Relaxed) {
                            let step = Duration::from_millis(10).min(interval - slept);
                            std::thread::sleep(step);
                            slept += step;
                        }
                        if stop.load(Ordering::Relaxed) {
                            let current = probes.lock().map(|p| p.clone()).unwrap_or_default();
                            sample_once(&current, &mut tables, &mut out);
                            sample_qdiscs(&qdiscs, &mut out);
                            return out;
                        }
                    }
                })
                .ok()
        };
        Sampler {
            stop,
            probes,
            handle,
        }
    }

    /// Adds a component that started after the sampler.
    pub fn add(&self, probe: Probe) {
        if let Ok(mut p) = self.probes.lock() {
            p.push(probe);
        }
    }

    /// Stops the thread and returns what it collected.
    pub fn stop(mut self) -> Samples {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Wall-clock seconds since the Unix epoch.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Reads every qdisc once (per client, the root and each class's leaf);
/// one that cannot be read (its namespace is gone) gives no row.
fn sample_qdiscs(qdiscs: &[QdiscProbe], out: &mut Samples) {
    let t = unix_now();
    for q in qdiscs {
        for stats in q.read() {
            out.qdiscs.push(QdiscSample {
                t_unix_s: t,
                side: q.side,
                dev: q.dev.clone(),
                stats,
            });
        }
    }
}

/// Takes one sample of every probe.
pub fn sample_once(probes: &[Probe], tables: &mut SocketTables, out: &mut Samples) {
    let t = unix_now();
    tables.next_round();
    for probe in probes {
        let pids = match &probe.counters {
            Some(c) => c.pids(),
            None => procfs::process_tree(probe.root_pid),
        };
        let stats = probe
            .counters
            .as_ref()
            .map(|c| c.stats())
            .unwrap_or_default();
        let (cpu_ns, cpu_source) = match stats.cpu_usage_ns {
            Some(v) => (Some(v), "cgroup"),
            None => (
                Some(pids.iter().filter_map(|&p| procfs::cpu_time_ns(p)).sum()),
                "procfs",
            ),
        };
        let temp = probe
            .temp_dir
            .as_ref()
            .map(|dir| procfs::temp_files(&pids, dir));
        let mut s = ResourceSample {
            t_unix_s: t,
            component: probe.component.clone(),
            procs: pids.len() as u64,
            cpu_ns,
            cpu_source,
            throttled_ns: stats.throttled_ns,
            nr_throttled: stats.nr_throttled,
            memory_bytes: stats.memory_bytes,
            rss_bytes: pids.iter().filter_map(|&p| procfs::rss_bytes(p)).sum(),
            temp_files: temp.map(|t| t.count),
            temp_logical_bytes: temp.map(|t| t.logical_bytes),
            temp_allocated_bytes: temp.map(|t| t.allocated_bytes),
            ..ResourceSample::default()
        };
        // A socket shared by several processes (Gunicorn's listener is
        // inherited by every worker) is counted once.
        let mut inodes: Vec<u64> = Vec::new();
        for &p in &pids {
            let (count, sockets) = procfs::descriptors(p);
            s.fds += count;
            inodes.extend(sockets);
        }
        s.fd_limit = pids.iter().filter_map(|&p| procfs::fd_limit(p)).min();
        inodes.sort_unstable();
        inodes.dedup();
        let table = tables.of_pid(probe.root_pid);
        for inode in inodes {
            let Some(e) = table.entries.get(&inode) else {
                continue;
            };
            let (tx, rx) = (e.tx_queue, e.rx_queue);
            if e.listening() {
                s.accept_backlog += rx;
            } else {
                s.sockets += 1;
                s.send_queue_bytes += tx;
                s.recv_queue_bytes += rx;
            }
            out.sockets.push(SocketSample {
                t_unix_s: t,
                component: probe.component.clone(),
                local: e.local.to_string(),
                remote: e.remote.to_string(),
                state: e.state,
                tx_queue_bytes: tx,
                rx_queue_bytes: rx,
                source: table.source.as_str(),
                netns: table.netns,
                tcp: e.tcp,
                mem: e.mem,
            });
        }
        out.resources.push(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};

    /// The 1234 unread bytes are seen through either source, and each row
    /// says which one read it.
    fn sees_unread_bytes(mut tables: SocketTables, source: &str) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_server, _) = listener.accept().unwrap();
        client.write_all(&[1u8; 1234]).unwrap();
        let probe = Probe {
            component: "self".into(),
            counters: None,
            root_pid: std::process::id(),
            temp_dir: None,
        };
        let mut found = false;
        for _ in 0..100 {
            let mut out = Samples::default();
            sample_once(std::slice::from_ref(&probe), &mut tables, &mut out);
            let r = &out.resources[0];
            assert_eq!(r.cpu_source, "procfs");
            assert!(r.rss_bytes > 0);
            assert!(out.sockets.iter().all(|s| s.source == source));
            if r.recv_queue_bytes >= 1234
                && out
                    .sockets
                    .iter()
                    .any(|s| s.rx_queue_bytes == 1234 && s.state == "ESTABLISHED")
            {
                found = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(found, "the 1234 unread bytes were never sampled");
    }

    #[test]
    fn samples_see_this_process_and_its_socket_queues() {
        sees_unread_bytes(SocketTables::new(), "sock_diag");
    }

    #[test]
    fn without_netlink_the_proc_tables_answer() {
        sees_unread_bytes(SocketTables::procfs_only(), "procfs");
    }

    #[test]
    fn the_thread_samples_until_stopped() {
        let probe = Probe {
            component: "self".into(),
            counters: None,
            root_pid: std::process::id(),
            temp_dir: None,
        };
        let s = Sampler::start(vec![probe], vec![], Duration::from_millis(20));
        // About 50 intervals: a loaded 2-core machine still gets 3 samples.
        std::thread::sleep(Duration::from_millis(1000));
        let out = s.stop();
        assert!(out.resources.len() >= 3, "{}", out.resources.len());
    }
}
