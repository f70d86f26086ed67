//! What one sample of the sampler costs in CPU, through sock_diag and
//! through `/proc/net/tcp`, on this machine's real socket tables:
//! `cargo run --release -p harness --example sampler_cost [CONNECTIONS]`.
//! The probe is this process, holding CONNECTIONS (default 8) loopback
//! connections, like an app with its clients; every other socket of the
//! namespace is in the tables as in a run.

use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use lab::sample::{Probe, Samples, sample_once};
use lab::sockets::SocketTables;

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn cost(name: &str, mut tables: SocketTables, probe: &Probe, samples: u32) {
    let mut per = Vec::new();
    let mut rows = 0;
    for _ in 0..samples {
        let mut out = Samples::default();
        let before = thread_cpu_ns();
        sample_once(std::slice::from_ref(probe), &mut tables, &mut out);
        per.push(thread_cpu_ns() - before);
        rows = out.sockets.len();
        std::thread::sleep(Duration::from_millis(20));
    }
    per.sort_unstable();
    let median = per[per.len() / 2] as f64 / 1e6;
    let p90 = per[per.len() * 9 / 10] as f64 / 1e6;
    println!(
        "{name:10} CPU per sample: median {median:.3} ms, p90 {p90:.3} ms ({rows} socket rows; at 200 ms, {:.2}% of a core)",
        median / 200.0 * 100.0
    );
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(8);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let conns: Vec<_> = (0..n)
        .map(|_| {
            let c = TcpStream::connect(addr).unwrap();
            (c, listener.accept().unwrap().0)
        })
        .collect();
    let total = std::fs::read_to_string("/proc/net/tcp")
        .unwrap()
        .lines()
        .count()
        + std::fs::read_to_string("/proc/net/tcp6")
            .unwrap()
            .lines()
            .count()
        - 2;
    println!("{total} TCP sockets in this namespace's tables");
    let probe = Probe {
        component: "app".into(),
        counters: None,
        root_pid: std::process::id(),
        temp_dir: None,
    };
    for _ in 0..2 {
        cost("procfs", SocketTables::procfs_only(), &probe, 100);
        cost("sock_diag", SocketTables::new(), &probe, 100);
    }
    // The dump alone, and the rest of a sample (processes, descriptors).
    let mut diag = lab::sockdiag::Diag::open().unwrap();
    let mut per: Vec<u64> = (0..50)
        .map(|_| {
            let before = thread_cpu_ns();
            diag.dump().unwrap();
            thread_cpu_ns() - before
        })
        .collect();
    per.sort_unstable();
    println!(
        "the sock_diag dump alone: median {:.3} ms",
        per[per.len() / 2] as f64 / 1e6
    );
    drop(conns);
}
