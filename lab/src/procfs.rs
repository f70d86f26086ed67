//! What procfs tells about a component: its processes, their RSS and CPU
//! time, the proxy temp files they hold open (unlinked ones included), and
//! the send and receive queues of their TCP sockets.
//!
//! The `procfs` crate parses the files; what is ours is the selection (a
//! process tree, a process group), the sums, and the temp-file accounting,
//! which the crate has no notion of.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use procfs::net::{TcpNetEntry, TcpState};
use procfs::process::{FDInfo, FDTarget, Process, Stat, all_processes};
use procfs::{CpuTime, CurrentSI, FromReadSI, KernelStats};

fn process(pid: u32) -> Option<Process> {
    Process::new(i32::try_from(pid).ok()?).ok()
}

fn stat(pid: u32) -> Option<Stat> {
    process(pid)?.stat().ok()
}

/// The `stat` of every process that can still be read.
fn all_stats() -> Vec<Stat> {
    all_processes()
        .map(|procs| procs.flatten().filter_map(|p| p.stat().ok()).collect())
        .unwrap_or_default()
}

/// `pid` and all its descendants, found through `/proc/*/stat`.
pub fn process_tree(root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for s in all_stats() {
        children
            .entry(s.ppid as u32)
            .or_default()
            .push(s.pid as u32);
    }
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        if let Some(kids) = children.get(&out[i]) {
            out.extend(kids);
        }
        i += 1;
    }
    out.retain(|p| Path::new(&format!("/proc/{p}")).exists());
    out
}

/// Every process whose process group is `pgid`.
pub fn process_group_members(pgid: u32) -> Vec<u32> {
    all_stats()
        .into_iter()
        .filter(|s| s.pgrp as u32 == pgid)
        .map(|s| s.pid as u32)
        .collect()
}

/// Whether `pid` has exited and waits to be reaped.
pub fn is_zombie(pid: u32) -> bool {
    stat(pid).is_some_and(|s| s.state == 'Z')
}

/// Machine-wide CPU time from the first line of `/proc/stat`, in clock
/// ticks: busy (user, nice, system, irq, softirq), idle (idle, iowait) and
/// steal (time the hypervisor ran someone else while this VM wanted a CPU).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostCpu {
    pub busy: u64,
    pub idle: u64,
    pub steal: u64,
}

impl HostCpu {
    pub fn read() -> Option<HostCpu> {
        HostCpu::from_total(&KernelStats::current().ok()?.total)
    }

    /// `None` for a kernel too old to report steal time (before 2.6.11).
    fn from_total(t: &CpuTime) -> Option<HostCpu> {
        Some(HostCpu {
            busy: t.user + t.nice + t.system + t.irq? + t.softirq?,
            idle: t.idle + t.iowait?,
            steal: t.steal?,
        })
    }

    /// Busy cores and stolen milliseconds between two readings over
    /// `elapsed_s`.
    pub fn delta(&self, later: &HostCpu, elapsed_s: f64) -> (f64, f64) {
        let tick = procfs::ticks_per_second() as f64;
        let busy = later.busy.saturating_sub(self.busy) as f64 / tick;
        let steal = later.steal.saturating_sub(self.steal) as f64 / tick;
        let cores = if elapsed_s > 0.0 {
            busy / elapsed_s
        } else {
            0.0
        };
        (cores, steal * 1000.0)
    }
}

/// Parses the text of `/proc/stat`.
pub fn parse_host_cpu(stat: &str) -> Option<HostCpu> {
    let stats = KernelStats::from_read(stat.as_bytes(), procfs::current_system_info()).ok()?;
    HostCpu::from_total(&stats.total)
}

/// Resident set size in bytes.
pub fn rss_bytes(pid: u32) -> Option<u64> {
    Some(process(pid)?.statm().ok()?.resident * procfs::page_size())
}

/// User plus system CPU time in nanoseconds.
pub fn cpu_time_ns(pid: u32) -> Option<u64> {
    let s = stat(pid)?;
    Some((s.utime + s.stime) * 1_000_000_000 / procfs::ticks_per_second())
}

/// The open file descriptors of `pid`, or none when it is gone.
fn fds(pid: u32) -> Vec<FDInfo> {
    process(pid)
        .and_then(|p| p.fd().ok())
        .map(|fds| fds.flatten().collect())
        .unwrap_or_default()
}

/// Open temp files, de-duplicated by device and inode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TempFiles {
    pub count: u64,
    /// Sum of `st_size`.
    pub logical_bytes: u64,
    /// Sum of `st_blocks * 512`.
    pub allocated_bytes: u64,
}

/// The regular files below `dir` that `pids` hold open, unlinked ones
/// included. They are found through `/proc/PID/fd`, because NGINX (and our
/// proxy) unlink their temp files right after creating them, so a directory
/// listing never shows them.
pub fn temp_files(pids: &[u32], dir: &Path) -> TempFiles {
    let mut seen = HashSet::new();
    let mut out = TempFiles::default();
    for &pid in pids {
        for fd in fds(pid) {
            // An unlinked file's target reads `<path> (deleted)`, still below
            // `dir`.
            let FDTarget::Path(target) = &fd.target else {
                continue;
            };
            if !target.starts_with(dir) {
                continue;
            }
            // The crate gives the link's target but not the open file's
            // size; metadata() follows the magic link to the open file, which
            // works even when its name is gone.
            let Ok(meta) = fs::metadata(format!("/proc/{pid}/fd/{}", fd.fd)) else {
                continue;
            };
            if !meta.is_file() || !seen.insert((meta.dev(), meta.ino())) {
                continue;
            }
            out.count += 1;
            out.logical_bytes += meta.size();
            out.allocated_bytes += meta.blocks() * 512;
        }
    }
    out
}

/// The inodes of the sockets `pid` holds.
pub fn socket_inodes(pid: u32) -> Vec<u64> {
    descriptors(pid).1
}

/// How many descriptors `pid` holds, and the inodes of its sockets (one
/// read of `/proc/PID/fd`).
pub fn descriptors(pid: u32) -> (u64, Vec<u64>) {
    let fds = fds(pid);
    let sockets = fds
        .iter()
        .filter_map(|fd| match fd.target {
            FDTarget::Socket(inode) => Some(inode),
            _ => None,
        })
        .collect();
    (fds.len() as u64, sockets)
}

/// `pid`'s soft limit of open descriptors (`RLIMIT_NOFILE`); `None`
/// unlimited or unreadable.
pub fn fd_limit(pid: u32) -> Option<u64> {
    match process(pid)?.limits().ok()?.max_open_files.soft_limit {
        procfs::process::LimitValue::Value(v) => Some(v),
        procfs::process::LimitValue::Unlimited => None,
    }
}

/// The processes that hold the TCP socket listening on `port` (any local
/// address) in the calling thread's network namespace: the server behind a
/// `--target` that slowlab did not start.
pub fn listeners(port: u16) -> Vec<u32> {
    let inodes: HashSet<u64> = tcp_table()
        .into_iter()
        .filter(|(_, e)| e.state == TcpState::Listen && e.local_address.port() == port)
        .map(|(inode, _)| inode)
        .collect();
    if inodes.is_empty() {
        return vec![];
    }
    let mut pids: Vec<u32> = all_stats()
        .into_iter()
        .map(|s| s.pid as u32)
        .filter(|&pid| socket_inodes(pid).iter().any(|i| inodes.contains(i)))
        .collect();
    pids.sort_unstable();
    pids
}

/// `ListenOverflows` of `/proc/net/netstat` (`TcpExt`): connections a full
/// listen queue dropped, counted since boot in the calling thread's
/// network namespace.
pub fn listen_overflows() -> Option<u64> {
    parse_listen_overflows(&std::fs::read_to_string("/proc/net/netstat").ok()?)
}

/// The `ListenOverflows` value of the text of `/proc/net/netstat`.
pub fn parse_listen_overflows(netstat: &str) -> Option<u64> {
    let mut lines = netstat.lines();
    while let (Some(names), Some(values)) = (lines.next(), lines.next()) {
        if !names.starts_with("TcpExt:") {
            continue;
        }
        let i = names
            .split_whitespace()
            .position(|n| n == "ListenOverflows")?;
        return values.split_whitespace().nth(i)?.parse().ok();
    }
    None
}

/// The kernel's name of a TCP state, as `ss` and the samples spell it.
pub fn tcp_state_name(state: &TcpState) -> &'static str {
    match state {
        TcpState::Established => "ESTABLISHED",
        TcpState::SynSent => "SYN_SENT",
        TcpState::SynRecv => "SYN_RECV",
        TcpState::FinWait1 => "FIN_WAIT1",
        TcpState::FinWait2 => "FIN_WAIT2",
        TcpState::TimeWait => "TIME_WAIT",
        TcpState::Close => "CLOSE",
        TcpState::CloseWait => "CLOSE_WAIT",
        TcpState::LastAck => "LAST_ACK",
        TcpState::Listen => "LISTEN",
        TcpState::Closing => "CLOSING",
        // The kernel lists a pending connection as SYN_RECV, so this one
        // does not show in `/proc/net/tcp`.
        TcpState::NewSynRecv => "NEW_SYN_RECV",
    }
}

/// Reads both TCP tables (`/proc/net/tcp` and `tcp6`) of this process's
/// network namespace, keyed by socket inode. A table the crate cannot read
/// or parse is left out.
pub fn tcp_table() -> HashMap<u64, TcpNetEntry> {
    keyed([procfs::net::tcp(), procfs::net::tcp6()])
}

/// The same tables as `pid` sees them (`/proc/PID/net/tcp{,6}`: those of
/// its network namespace), or `None` when `pid` is gone.
pub fn tcp_table_of(pid: u32) -> Option<HashMap<u64, TcpNetEntry>> {
    let p = process(pid)?;
    let tables = [p.tcp(), p.tcp6()];
    tables.iter().any(|t| t.is_ok()).then(|| keyed(tables))
}

fn keyed<E>(tables: [Result<Vec<TcpNetEntry>, E>; 2]) -> HashMap<u64, TcpNetEntry> {
    let mut map = HashMap::new();
    for table in tables {
        for e in table.unwrap_or_default() {
            map.insert(e.inode, e);
        }
    }
    map
}

/// Whether the process `pid` is gone (and is not this one): what every
/// leftover named after a harness's pid is judged by (`crate::reap`).
pub fn gone(pid: u32) -> bool {
    pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[cfg(test)]
mod tests {
    use super::*;
    use procfs::net::TcpNetEntries;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    fn parse_tcp(text: &str) -> Vec<TcpNetEntry> {
        TcpNetEntries::from_read(text.as_bytes(), procfs::current_system_info())
            .unwrap()
            .0
    }

    /// The byte order of the hex addresses and the hex queues, as the
    /// sampler relies on them.
    #[test]
    fn tcp_lines_parse() {
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F40 0100007F:D431 01 00001000:00000200 00:00000000 00000000     0        0 12345 1 0000000000000000 20 4 30 10 -1\n";
        let e = parse_tcp(text);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].local_address, "127.0.0.1:8000".parse().unwrap());
        assert_eq!(e[0].remote_address, "127.0.0.1:54321".parse().unwrap());
        assert_eq!(e[0].tx_queue, 4096);
        assert_eq!(e[0].rx_queue, 512);
        assert_eq!(e[0].inode, 12345);
        assert_eq!(tcp_state_name(&e[0].state), "ESTABLISHED");
    }

    #[test]
    fn tcp6_loopback_parses() {
        let text = "header\n 0: 00000000000000000000000001000000:1F90 0000000000000000FFFF00000100007F:C350 0A 00000000:00000003 00:00000000 00000000 0 0 777 1\n";
        let e = parse_tcp(text);
        assert_eq!(e[0].local_address, "[::1]:8080".parse().unwrap());
        assert_eq!(
            e[0].remote_address,
            "[::ffff:127.0.0.1]:50000".parse().unwrap()
        );
        assert_eq!(tcp_state_name(&e[0].state), "LISTEN");
        assert_eq!(e[0].rx_queue, 3);
    }

    #[test]
    fn host_cpu_parses() {
        let stat = "cpu  800054 677 158020 327626 7900 0 12291 6892 0 0\n\
                    cpu0 400027 338 79010 163813 3950 0 6145 3446 0 0\n\
                    intr 1 2 3\nctxt 4521\nbtime 1764570000\nprocesses 990\n\
                    procs_running 2\nprocs_blocked 0\n";
        let h = parse_host_cpu(stat).unwrap();
        assert_eq!(h.busy, 800054 + 677 + 158020 + 12291);
        assert_eq!(h.idle, 327626 + 7900);
        assert_eq!(h.steal, 6892);
        // Without steal time there is no reading rather than a wrong one.
        let old = "cpu  1 2 3 4 5 6 7\nctxt 1\nbtime 1\nprocesses 1\n";
        assert_eq!(parse_host_cpu(old), None);
        let now = HostCpu::read().expect("this machine's /proc/stat");
        assert!(now.busy > 0 && now.idle > 0);
    }

    #[test]
    fn host_cpu_delta_is_in_cores_and_milliseconds() {
        let tick = procfs::ticks_per_second();
        let a = HostCpu::default();
        let b = HostCpu {
            busy: 3 * tick,
            idle: 0,
            steal: tick / 2,
        };
        let (cores, steal_ms) = a.delta(&b, 2.0);
        assert!((cores - 1.5).abs() < 1e-9, "{cores}");
        assert!((steal_ms - 500.0).abs() < 1e-6, "{steal_ms}");
        assert_eq!(a.delta(&b, 0.0).0, 0.0);
    }

    #[test]
    fn unread_bytes_show_in_the_receive_queue() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        client.write_all(&[7u8; 3000]).unwrap();
        // The bytes reach the server's receive queue at once on loopback, but
        // give the kernel a moment on a loaded machine.
        let me = std::process::id();
        let inodes = socket_inodes(me);
        let mut found = None;
        for _ in 0..100 {
            let table = tcp_table();
            found = inodes
                .iter()
                .filter_map(|i| table.get(i))
                .find(|e| e.local_address == server.local_addr().unwrap() && e.rx_queue > 0)
                .cloned();
            if found.as_ref().map(|e| e.rx_queue) == Some(3000) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let entry = found.expect("server socket with unread bytes");
        assert_eq!(entry.rx_queue, 3000);
        assert_eq!(entry.remote_address, client.local_addr().unwrap());
        // The listener shares its local address with the accepted socket;
        // its accept queue is empty again.
        let listening = tcp_table()
            .into_values()
            .find(|e| {
                e.local_address == listener.local_addr().unwrap() && e.state == TcpState::Listen
            })
            .expect("the listener");
        assert_eq!(listening.remote_address, "0.0.0.0:0".parse().unwrap());
        assert_eq!(listening.rx_queue, 0);
        let mut buf = [0u8; 3000];
        (&server).read_exact(&mut buf).unwrap();
    }

    #[test]
    fn unlinked_open_files_are_found_and_deduplicated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0000000001");
        let mut f = fs::File::create(&path).unwrap();
        f.write_all(&vec![1u8; 100_000]).unwrap();
        f.sync_all().unwrap();
        // A second descriptor of the same file must not be counted twice.
        let dup = f.try_clone().unwrap();
        fs::remove_file(&path).unwrap();
        assert!(!path.exists());
        // A file in a sibling whose name extends the directory's is not in it.
        let sibling = format!("{}-other", dir.path().display());
        fs::create_dir(&sibling).unwrap();
        let other = fs::File::create(Path::new(&sibling).join("x")).unwrap();
        let found = temp_files(&[std::process::id()], dir.path());
        assert_eq!(found.count, 1);
        assert_eq!(found.logical_bytes, 100_000);
        assert!(found.allocated_bytes >= 100_000 - 4096);
        drop(dup);
        drop(f);
        assert_eq!(temp_files(&[std::process::id()], dir.path()).count, 0);
        drop(other);
        fs::remove_dir_all(&sibling).unwrap();
    }

    #[test]
    fn process_tree_and_group_contain_children() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let tree = process_tree(std::process::id());
        // SAFETY: getpgrp has no preconditions.
        let pgid = unsafe { libc::getpgrp() } as u32;
        let group = process_group_members(pgid);
        let zombie_before = is_zombie(child.id());
        child.kill().unwrap();
        // Killed but not yet waited for: a zombie.
        let mut zombie = false;
        for _ in 0..100 {
            zombie = is_zombie(child.id());
            if zombie {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        child.wait().unwrap();
        assert!(tree.contains(&child.id()));
        assert!(group.contains(&child.id()) && group.contains(&std::process::id()));
        assert!(!zombie_before && zombie);
        assert!(rss_bytes(std::process::id()).unwrap() > 0);
        assert!(cpu_time_ns(std::process::id()).is_some());
    }
}
