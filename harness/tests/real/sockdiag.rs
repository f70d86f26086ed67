//! The sampler's sock_diag path against real sockets: a server writing to a
//! slow reader, whose send buffer the kernel grows; a socket inside a
//! network namespace made for the test, seen only through that namespace;
//! and the `/proc` fallback there.

use crate::support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::process::Command;
use std::time::{Duration, Instant};

use lab::sample::{Probe, Samples, sample_once};
use lab::sockets::{SocketTables, Source};
use support::child::Child;

/// The inode of a socket, the key of the kernel's tables.
fn inode(s: &TcpStream) -> u64 {
    use std::os::fd::AsRawFd;
    std::fs::metadata(format!("/proc/self/fd/{}", s.as_raw_fd()))
        .unwrap()
        .ino()
}

#[test]
fn a_slow_readers_sender_grows_its_send_buffer_and_its_queues_agree() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut reader = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (mut writer, _) = listener.accept().unwrap();
    let ino = inode(&writer);
    let stop = Instant::now() + Duration::from_secs(3);
    // The writer offers 64 MiB; the reader takes 64 KiB every 20 ms
    // (about 3 MiB/s), so the writer blocks on a full send buffer.
    let w = std::thread::spawn(move || {
        let block = vec![5u8; 1 << 20];
        for _ in 0..64 {
            if Instant::now() > stop || writer.write_all(&block).is_err() {
                break;
            }
        }
    });
    let r = std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        while Instant::now() < stop + Duration::from_millis(500) {
            if reader.read(&mut buf).map_or(true, |n| n == 0) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let mut tables = SocketTables::new();
    let mut seen = Vec::new();
    while Instant::now() < stop {
        tables.next_round();
        let t = tables.of_pid(std::process::id());
        assert_eq!(t.source, Source::SockDiag);
        let e = t.entries.get(&ino).expect("the writer's socket").clone();
        // The same socket through /proc, read just after.
        let proc_tx = lab::procfs::tcp_table()[&ino].tx_queue as u64;
        seen.push((e, proc_tx));
        std::thread::sleep(Duration::from_millis(200));
    }
    w.join().unwrap();
    r.join().unwrap();
    let sndbuf: Vec<u64> = seen
        .iter()
        .map(|(e, _)| e.mem.unwrap().sndbuf as u64)
        .collect();
    println!("sndbuf over time: {sndbuf:?}");
    let wmem_default = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_wmem")
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap();
    let peak = *sndbuf.iter().max().unwrap();
    assert!(
        peak > 4 * wmem_default,
        "the send buffer never grew past 4 x tcp_wmem default ({wmem_default}): {sndbuf:?}"
    );
    // Once the writer is blocked, the queue holds about a send buffer's
    // worth, and each view of it agrees. A blocked writer's queue stays
    // above half the send buffer (it is woken at two thirds and fills it
    // again); before that, while it is still filling a growing buffer, it
    // can add megabytes between two reads of the kernel's (seen once in a
    // full test run: 983,040 bytes through sock_diag, 3,901,952 through
    // /proc a moment later, with the send buffer at 3,939,840 in the first
    // sample), so those samples are not compared.
    let mut compared = 0;
    for (e, proc_tx) in &seen {
        let m = e.mem.unwrap();
        let t = e.tcp.unwrap();
        let tx = e.tx_queue;
        if tx < 256 * 1024 || u64::from(m.wmem_queued) < u64::from(m.sndbuf) / 2 {
            continue;
        }
        compared += 1;
        // wmem_queued is the queue's memory: its bytes plus per-packet
        // overhead, never less, and at most the send buffer (plus a packet
        // the kernel lets through over it).
        assert!(
            u64::from(m.wmem_queued) >= tx,
            "wmem_queued {} < tx {tx}",
            m.wmem_queued
        );
        assert!(u64::from(m.wmem_queued) <= u64::from(m.sndbuf) + 256 * 1024);
        // The kernel reads the write sequence twice for one reply: for the
        // queue (`tcp_diag_get_info`) and again for `tcpi_notsent_bytes`
        // (`tcp_get_info`), and the writer, woken meanwhile, can add to it
        // in between (seen once in CI: notsent above tx). A blocked writer
        // is woken when a third of the send buffer is free, so notsent may
        // exceed tx by up to about that: half the buffer bounds it.
        let notsent = u64::from(t.notsent_bytes.unwrap());
        let slack = u64::from(m.sndbuf) / 2;
        assert!(
            notsent <= tx + slack,
            "notsent {notsent} > tx {tx} + {slack}"
        );
        // The unsent bytes are what the unacknowledged segments do not
        // cover.
        let unacked = u64::from(t.unacked.unwrap()) * u64::from(t.snd_mss.unwrap());
        assert!(u64::from(t.notsent_bytes.unwrap()) + unacked >= tx * 9 / 10);
        // /proc read a moment later: the queue moves by what the reader
        // takes in that moment and what a woken writer adds, the same slack.
        let diff = tx.abs_diff(*proc_tx);
        assert!(
            diff <= slack,
            "sock_diag {tx} vs /proc {proc_tx} (slack {slack})"
        );
    }
    assert!(compared >= 3, "the writer was never blocked: {seen:?}");
    assert!(
        seen.last()
            .unwrap()
            .0
            .tcp
            .unwrap()
            .sndbuf_limited_us
            .is_some(),
        "this kernel reports the send-buffer-limited time"
    );
}

/// A network namespace named after this test's pid, deleted on drop.
struct Netns(String);

impl Netns {
    fn create() -> Option<Netns> {
        let name = format!("slowlab-sockdiag-test-{}", std::process::id());
        let ok = |c: &mut Command| c.status().is_ok_and(|s| s.success());
        if !ok(Command::new("ip").args(["netns", "add", &name])) {
            return None;
        }
        let ns = Netns(name);
        assert!(ok(Command::new("ip").args([
            "netns", "exec", &ns.0, "ip", "link", "set", "lo", "up"
        ])));
        Some(ns)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// A process inside the namespace with a loopback connection holding 777
/// unread bytes.
fn holder(ns: &Netns) -> Child {
    let script = "import socket,time\n\
                  l=socket.socket(); l.bind(('127.0.0.1',0)); l.listen()\n\
                  c=socket.create_connection(l.getsockname()); s,_=l.accept()\n\
                  c.sendall(b'x'*777); time.sleep(30)\n";
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &ns.0, "python3", "-c", script]);
    Child::spawn(cmd)
}

/// Samples `pid` until a socket with 777 unread bytes shows, or 5 s pass.
fn sample_until_777(pid: u32, tables: &mut SocketTables) -> Samples {
    let probe = Probe {
        component: "app".into(),
        counters: None,
        root_pid: pid,
        temp_dir: None,
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut out = Samples::default();
        sample_once(std::slice::from_ref(&probe), tables, &mut out);
        if out.sockets.iter().any(|s| s.rx_queue_bytes == 777) || Instant::now() > deadline {
            return out;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_socket_in_another_namespace_is_sampled_through_that_namespace() {
    testkit::real::require_command("ip", "-V");
    testkit::real::require_root("network namespaces");
    let ns = Netns::create().expect("a network namespace");
    let child = holder(&ns);
    let host = std::fs::metadata("/proc/self/ns/net").unwrap().ino();
    let theirs = std::fs::metadata(format!("/run/netns/{}", ns.0))
        .unwrap()
        .ino();
    assert_ne!(host, theirs);

    let mut tables = SocketTables::new();
    let out = sample_until_777(child.id(), &mut tables);
    let s = out
        .sockets
        .iter()
        .find(|s| s.rx_queue_bytes == 777)
        .unwrap_or_else(|| panic!("the namespace's socket was not sampled: {:?}", out.sockets));
    assert_eq!(s.source, "sock_diag");
    assert_eq!(s.netns, Some(theirs));
    assert!(s.mem.is_some() && s.tcp.is_some());
    assert!(out.sockets.iter().all(|s| s.netns == Some(theirs)));
    // The host's namespace does not hold these sockets.
    tables.next_round();
    let own = tables.of_pid(std::process::id());
    assert_eq!(own.netns, Some(host));
    let (local, remote) = (s.local.parse().unwrap(), s.remote.parse().unwrap());
    assert!(
        !own.entries
            .values()
            .any(|e| e.local == local && e.remote == remote && e.rx_queue == 777)
    );

    // Without netlink, the holder's own /proc/PID/net/tcp answers, in its
    // namespace too.
    let out = sample_until_777(child.id(), &mut SocketTables::procfs_only());
    let s = out
        .sockets
        .iter()
        .find(|s| s.rx_queue_bytes == 777)
        .unwrap();
    assert_eq!((s.source, s.netns), ("procfs", Some(theirs)));
    assert!(s.tcp.is_none() && s.mem.is_none());
    drop(child);
    drop(ns);
}
