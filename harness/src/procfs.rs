//! What procfs tells about a component: its processes, their RSS and CPU
//! time, the proxy temp files they hold open (unlinked ones included), and
//! the send and receive queues of their TCP sockets.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// `pid` and all its descendants, found through `/proc/*/stat`.
pub fn process_tree(root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for pid in all_pids() {
        if let Some(ppid) = stat_fields(pid).and_then(|f| f.get(1)?.parse().ok()) {
            children.entry(ppid).or_default().push(pid);
        }
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

/// The fields of `/proc/PID/stat` after the command name, starting with the
/// state (field 3 of proc(5) is index 0 here).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may itself contain spaces or
    // parentheses, so split after the last `)`.
    let rest = &text[text.rfind(')')? + 1..];
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// Every process whose process group is `pgid`.
pub fn process_group_members(pgid: u32) -> Vec<u32> {
    all_pids()
        .into_iter()
        // The process group is field 5 of proc(5): index 2 here.
        .filter(|&pid| stat_fields(pid).and_then(|f| f.get(2)?.parse::<u32>().ok()) == Some(pgid))
        .collect()
}

/// Whether `pid` has exited and waits to be reaped.
pub fn is_zombie(pid: u32) -> bool {
    stat_fields(pid).is_some_and(|f| f.first().map(String::as_str) == Some("Z"))
}

fn all_pids() -> Vec<u32> {
    fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
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
        parse_host_cpu(&fs::read_to_string("/proc/stat").ok()?)
    }

    /// Busy cores and stolen milliseconds between two readings over
    /// `elapsed_s`.
    pub fn delta(&self, later: &HostCpu, elapsed_s: f64) -> (f64, f64) {
        let tick = clock_ticks() as f64;
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

pub fn parse_host_cpu(stat: &str) -> Option<HostCpu> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...
    if v.len() < 8 {
        return None;
    }
    Some(HostCpu {
        busy: v[0] + v[1] + v[2] + v[5] + v[6],
        idle: v[3] + v[4],
        steal: v[7],
    })
}

/// Resident set size in bytes.
pub fn rss_bytes(pid: u32) -> Option<u64> {
    let statm = fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * page_size())
}

/// User plus system CPU time in nanoseconds.
pub fn cpu_time_ns(pid: u32) -> Option<u64> {
    let f = stat_fields(pid)?;
    // utime and stime are fields 14 and 15 of proc(5): indices 11 and 12.
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks * 1_000_000_000 / clock_ticks())
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 { v as u64 } else { 4096 }
}

fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if v > 0 { v as u64 } else { 100 }
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
    let dir = dir.to_string_lossy().to_string();
    let mut seen = HashSet::new();
    let mut out = TempFiles::default();
    for &pid in pids {
        let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(target) = fs::read_link(fd.path()) else {
                continue;
            };
            let target = target.to_string_lossy();
            if !target.starts_with(&dir) {
                continue;
            }
            // metadata() follows the magic link to the open file, which works
            // even when its name is gone.
            let Ok(meta) = fs::metadata(fd.path()) else {
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
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    fds.flatten()
        .filter_map(|fd| {
            let t = fs::read_link(fd.path()).ok()?;
            let t = t.to_str()?;
            t.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
        })
        .collect()
}

/// One row of `/proc/net/tcp` or `/proc/net/tcp6`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpEntry {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    /// The kernel's TCP state number (1 ESTABLISHED, 10 LISTEN, ...).
    pub state: u8,
    /// Bytes written but not yet acknowledged by the peer.
    pub tx_queue: u64,
    /// Bytes received but not yet read by the application (for a listening
    /// socket: connections waiting in the accept queue).
    pub rx_queue: u64,
    pub inode: u64,
}

impl TcpEntry {
    pub const LISTEN: u8 = 0x0A;

    pub fn state_name(&self) -> &'static str {
        match self.state {
            1 => "ESTABLISHED",
            2 => "SYN_SENT",
            3 => "SYN_RECV",
            4 => "FIN_WAIT1",
            5 => "FIN_WAIT2",
            6 => "TIME_WAIT",
            7 => "CLOSE",
            8 => "CLOSE_WAIT",
            9 => "LAST_ACK",
            10 => "LISTEN",
            11 => "CLOSING",
            _ => "UNKNOWN",
        }
    }
}

/// Reads both TCP tables, keyed by socket inode.
pub fn tcp_table() -> HashMap<u64, TcpEntry> {
    let mut map = HashMap::new();
    for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = fs::read_to_string(file) {
            for e in parse_tcp_table(&text) {
                map.insert(e.inode, e);
            }
        }
    }
    map
}

/// Parses the text of `/proc/net/tcp` or `/proc/net/tcp6`.
pub fn parse_tcp_table(text: &str) -> Vec<TcpEntry> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 10 {
                return None;
            }
            let (tx, rx) = f[4].split_once(':')?;
            Some(TcpEntry {
                local: parse_addr(f[1])?,
                remote: parse_addr(f[2])?,
                state: u8::from_str_radix(f[3], 16).ok()?,
                tx_queue: u64::from_str_radix(tx, 16).ok()?,
                rx_queue: u64::from_str_radix(rx, 16).ok()?,
                inode: f[9].parse().ok()?,
            })
        })
        .collect()
}

/// `0100007F:1F40` → 127.0.0.1:8000. The kernel prints each 32-bit word of
/// the address as the hex of its in-memory value, so the word's native byte
/// order gives back the network-order bytes.
fn parse_addr(s: &str) -> Option<SocketAddr> {
    let (ip, port) = s.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    if ip.len() % 8 != 0 {
        return None;
    }
    let mut bytes = Vec::with_capacity(16);
    for i in 0..ip.len() / 8 {
        let word = u32::from_str_radix(&ip[i * 8..i * 8 + 8], 16).ok()?;
        bytes.extend_from_slice(&word.to_ne_bytes());
    }
    let ip = match bytes.len() {
        4 => IpAddr::V4(Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3])),
        16 => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(bytes).ok()?)),
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn tcp_lines_parse() {
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F40 0100007F:D431 01 00001000:00000200 00:00000000 00000000     0        0 12345 1 0000000000000000 20 4 30 10 -1\n";
        let e = parse_tcp_table(text);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].local, "127.0.0.1:8000".parse().unwrap());
        assert_eq!(e[0].remote, "127.0.0.1:54321".parse().unwrap());
        assert_eq!(e[0].tx_queue, 4096);
        assert_eq!(e[0].rx_queue, 512);
        assert_eq!(e[0].inode, 12345);
        assert_eq!(e[0].state_name(), "ESTABLISHED");
    }

    #[test]
    fn host_cpu_parses() {
        let h = parse_host_cpu("cpu  800054 677 158020 327626 7900 0 12291 6892 0 0\ncpu0 1 2 3\n")
            .unwrap();
        assert_eq!(h.busy, 800054 + 677 + 158020 + 12291);
        assert_eq!(h.idle, 327626 + 7900);
        assert_eq!(h.steal, 6892);
        assert!(HostCpu::read().is_some());
    }

    #[test]
    fn tcp6_loopback_parses() {
        let text = "header\n 0: 00000000000000000000000001000000:1F90 00000000000000000000000001000000:C350 01 00000000:00000000 00:00000000 00000000 0 0 777 1\n";
        let e = parse_tcp_table(text);
        assert_eq!(e[0].local, "[::1]:8080".parse().unwrap());
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
                .find(|e| e.local == server.local_addr().unwrap() && e.rx_queue > 0)
                .copied();
            if found.map(|e| e.rx_queue) == Some(3000) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let entry = found.expect("server socket with unread bytes");
        assert_eq!(entry.rx_queue, 3000);
        assert_eq!(entry.remote, client.local_addr().unwrap());
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
        let found = temp_files(&[std::process::id()], dir.path());
        assert_eq!(found.count, 1);
        assert_eq!(found.logical_bytes, 100_000);
        assert!(found.allocated_bytes >= 100_000 - 4096);
        drop(dup);
        drop(f);
        assert_eq!(temp_files(&[std::process::id()], dir.path()).count, 0);
    }

    #[test]
    fn process_tree_contains_children() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let tree = process_tree(std::process::id());
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(tree.contains(&child.id()));
        assert!(rss_bytes(std::process::id()).unwrap() > 0);
        assert!(cpu_time_ns(std::process::id()).is_some());
    }
}
