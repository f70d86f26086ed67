//! What the load generator learns about itself and its host: its own CPU
//! time, and the kernel facts that move the results (the experiment says to
//! record the kernel and the TCP buffer sysctls with every result).

/// CPU time used by this process so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct CpuTime {
    pub user_s: f64,
    pub system_s: f64,
}

impl CpuTime {
    pub fn total_s(&self) -> f64 {
        self.user_s + self.system_s
    }
}

/// `getrusage(RUSAGE_SELF)`: every thread of the process, including setup.
pub fn cpu_time() -> CpuTime {
    // SAFETY: rusage is plain old data, so all-zero is a valid value, and
    // getrusage only writes into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: see above; RUSAGE_SELF is always valid.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return CpuTime::default();
    }
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    CpuTime {
        user_s: secs(ru.ru_utime),
        system_s: secs(ru.ru_stime),
    }
}

/// The kernel and its TCP buffer settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct HostInfo {
    pub kernel: Option<String>,
    pub tcp_wmem: Option<String>,
    pub tcp_rmem: Option<String>,
}

impl HostInfo {
    /// Reads `/proc`; fields stay empty where it is not available.
    pub fn read() -> HostInfo {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .ok()
                .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        };
        HostInfo {
            kernel: read("/proc/sys/kernel/osrelease"),
            tcp_wmem: read("/proc/sys/net/ipv4/tcp_wmem"),
            tcp_rmem: read("/proc/sys/net/ipv4/tcp_rmem"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_grows_with_work() {
        let before = cpu_time();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let after = cpu_time();
        assert!(after.total_s() > before.total_s());
    }
}
