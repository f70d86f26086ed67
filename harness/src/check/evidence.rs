//! What a level showed besides its fast path: the tester (the load
//! generator's CPU, the host's idle and steal time, how late the fast calls
//! started) and the server (its CPU and memory against its caps, its
//! descriptors against their limit, its listen queue's drops, its sockets
//! holding responses the kernel would not take, how long slow downloads
//! waited for their first byte). From that, pure and unit-tested: whether
//! the level is conclusive at all ([`tester_ran_out`]), and what decided a
//! level that was not held ([`cause`]).
//!
//! The thresholds are the documented ones (the book, "Check your stack"): a
//! verdict must never blame the server for what the tester or the host ran
//! out of.

use std::fmt;

use catalogue::Direction;

/// The load generator may use at most this share of the host's cores; a
/// level where it used more measured the tester (a quarter: half a core
/// on the 2-core machines the lab is built on).
pub const TESTER_CPU_SHARE: f64 = 0.25;
/// A level where the host's idle CPU fell under this many cores, and the
/// server was not what used it, measured the host.
pub const HOST_IDLE_MIN_CORES: f64 = 0.1;
/// A level where the hypervisor took more than this share of the host's
/// CPU time measured the hypervisor.
pub const STEAL_MAX_SHARE: f64 = 0.1;
/// A level whose fast calls started later than this (p99) against their
/// schedule measured the tester's own scheduling.
pub const SCHEDULE_LAG_MAX_MS: f64 = 50.0;
/// A server at this share of its CPU cap (or more) ran out of CPU.
pub const CPU_CAP_SHARE: f64 = 0.85;
/// A server whose cgroup was throttled for this share of the level (or
/// more) ran out of CPU, even when its average over the level stayed under
/// the cap: fast readers take a burst of CPU and are done, and a p95 is the
/// worst twentieth of the calls, which a cap biting a fifth of the level
/// is enough to slow (one level: throttled while 2 readers of 16 MiB ran,
/// 0.055 of a 0.1 core cap on average, p95 39 ms).
pub const THROTTLED_SHARE: f64 = 0.2;
/// A server at this share of its memory cap (or more) ran out of memory.
pub const MEMORY_CAP_SHARE: f64 = 0.95;
/// A server at this share of its descriptor limit (or more) ran out of
/// descriptors.
pub const FD_LIMIT_SHARE: f64 = 0.95;
/// Behind a buffering proxy, slow downloads whose median first byte came
/// this late (or later) waited for the server's handlers.
pub const QUEUED_FIRST_BYTE_MS: f64 = 1000.0;

/// What the catalogue says of the server's handlers (`--server NAME`);
/// nothing is known of a `--server-cmd` or a `--target`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Handlers {
    #[default]
    Unknown,
    /// It writes at most this many responses at once (sync workers,
    /// threads, greenlets).
    AtMost(u32),
    /// No fixed limit: one task per connection on an event loop.
    Unbounded,
}

impl Handlers {
    /// Of the catalogue's server (`Server::handlers`: `None` is no limit).
    pub fn of(server: catalogue::Server) -> Handlers {
        server
            .handlers()
            .map_or(Handlers::Unbounded, Handlers::AtMost)
    }

    /// Whether `slow` clients cannot hold them all: the server has more
    /// handlers than that, or no limit.
    pub fn outnumber(self, slow: u32) -> bool {
        match self {
            Handlers::Unknown => false,
            Handlers::AtMost(n) => n > slow,
            Handlers::Unbounded => true,
        }
    }
}

/// Everything a level showed besides its fast path; `None` where it could
/// not be measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    /// The host's cores.
    pub host_cores: f64,
    pub loadgen_cpu_cores: Option<f64>,
    /// The load generator's CPU cap (`--caps loadgen=`), and the share of
    /// the level its cgroup spent throttled.
    pub loadgen_cpu_cap: Option<f64>,
    pub loadgen_throttled_share: Option<f64>,
    pub host_idle_cores: Option<f64>,
    /// The hypervisor's share of the host's CPU time during the level.
    pub host_steal_share: Option<f64>,
    pub schedule_lag_p99_ms: Option<f64>,
    pub app_cpu_cores: Option<f64>,
    /// The app's CPU over its busiest second of the level: an event loop
    /// (one thread) that spends a second at a whole core is out of CPU
    /// whatever the level's average or the host's idle cores say.
    pub app_cpu_peak_cores: Option<f64>,
    /// What the catalogue says of the server's handlers.
    pub handlers: Handlers,
    /// The app's CPU cap in cores, when it is capped.
    pub app_cpu_cap: Option<f64>,
    /// Share of the level the app's cgroup spent throttled.
    pub app_throttled_share: Option<f64>,
    pub app_memory_peak_bytes: Option<u64>,
    pub app_memory_cap: Option<u64>,
    pub server_fds: Option<u64>,
    pub server_fd_limit: Option<u64>,
    /// Connections the server's listen queue dropped during the level.
    pub listen_overflows: Option<u64>,
    /// The most of the server's sockets seen at once with a full-ish send
    /// queue.
    pub held_sockets: Option<u64>,
    /// The most connections seen at once whose request no handler had
    /// taken (in the accept queue, or accepted and unread).
    pub waiting_requests: Option<u64>,
    /// The most client connections the server held at once.
    pub server_connections: Option<u64>,
    pub first_byte_p50_ms: Option<f64>,
    /// The route's proxy, when it has one in its own cgroup: its CPU, its
    /// CPU cap and the share of the level it spent throttled.
    pub proxy_cpu_cores: Option<f64>,
    pub proxy_cpu_cap: Option<f64>,
    pub proxy_throttled_share: Option<f64>,
    /// The proxy's resident memory at its peak (its processes' RSS, not
    /// its cgroup's usage: a proxy that buffers to temp files fills its
    /// cgroup with page cache the kernel reclaims, which is not a proxy
    /// out of memory), and its memory cap.
    pub proxy_memory_peak_bytes: Option<u64>,
    pub proxy_memory_cap: Option<u64>,
}

/// What decided a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// Held: nothing ran out.
    None,
    /// The server's handlers were held by the slow clients.
    Handlers,
    /// Behind a buffering proxy, responses waited for the server's
    /// handlers: the proxy took each one whole, the server wrote them one
    /// handler at a time.
    Queueing,
    Cpu,
    Memory,
    Descriptors,
    /// The route's proxy ran out of CPU under its cap (or its cgroup was
    /// throttled for a fifth of the level): the proxy decided the level,
    /// not the server behind it.
    ProxyCpu,
    /// The route's proxy's resident memory reached its cap.
    ProxyMemory,
    AcceptQueue,
    /// Nothing the lab measures explains it.
    Unknown,
    /// Inconclusive: the load generator used more than its share.
    TesterCpu,
    /// Inconclusive: the host had no idle CPU, and not for the server.
    HostCpu,
    /// Inconclusive: the hypervisor took the CPU.
    HostSteal,
    /// Inconclusive: the fast calls could not start on time.
    Schedule,
}

impl Cause {
    /// The name `check.csv` writes.
    pub fn name(self) -> &'static str {
        match self {
            Cause::None => "none",
            Cause::Handlers => "handlers",
            Cause::Queueing => "queueing",
            Cause::Cpu => "cpu",
            Cause::Memory => "memory",
            Cause::Descriptors => "descriptors",
            Cause::ProxyCpu => "proxy_cpu",
            Cause::ProxyMemory => "proxy_memory",
            Cause::AcceptQueue => "accept_queue",
            Cause::Unknown => "unknown",
            Cause::TesterCpu => "tester_cpu",
            Cause::HostCpu => "host_cpu",
            Cause::HostSteal => "host_steal",
            Cause::Schedule => "schedule",
        }
    }

    /// Whether the cause is the tester's or the host's: the level is
    /// inconclusive.
    pub fn inconclusive(self) -> bool {
        matches!(
            self,
            Cause::TesterCpu | Cause::HostCpu | Cause::HostSteal | Cause::Schedule
        )
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether the server used most of the host's busy CPU.
fn server_used_the_host(e: &Evidence) -> bool {
    match (e.app_cpu_cores, e.host_idle_cores) {
        (Some(app), Some(idle)) => app >= 0.5 * (e.host_cores - idle).max(0.0),
        _ => false,
    }
}

/// Whether the level shows the server's handlers held by the slow clients:
/// requests waited for a handler while its sockets held responses the
/// kernel would not take. Then a busy host did not decide the level.
fn handlers_evidently_held(e: &Evidence) -> bool {
    e.waiting_requests.is_some_and(|w| w > 0) && e.held_sockets.is_some_and(|h| h > 0)
}

/// What of the tester or the host ran out during the level, if anything:
/// then nothing the level measured is the server's (but a host that was
/// busy with others while the server's handlers were evidently held).
pub fn tester_ran_out(e: &Evidence) -> Option<Cause> {
    let at_cap = match (e.loadgen_cpu_cores, e.loadgen_cpu_cap) {
        (Some(c), Some(cap)) => c >= CPU_CAP_SHARE * cap,
        _ => false,
    };
    if e.loadgen_cpu_cores
        .is_some_and(|c| c > TESTER_CPU_SHARE * e.host_cores)
        || at_cap
        || e.loadgen_throttled_share.is_some_and(|t| t >= 0.5)
    {
        return Some(Cause::TesterCpu);
    }
    if e.host_steal_share.is_some_and(|s| s > STEAL_MAX_SHARE) {
        return Some(Cause::HostSteal);
    }
    let host_full = e.host_idle_cores.is_some_and(|i| i < HOST_IDLE_MIN_CORES);
    if host_full && !server_used_the_host(e) && !handlers_evidently_held(e) {
        return Some(Cause::HostCpu);
    }
    if !host_full
        && e.schedule_lag_p99_ms
            .is_some_and(|l| l > SCHEDULE_LAG_MAX_MS)
    {
        return Some(Cause::Schedule);
    }
    None
}

/// Whether a capped cgroup ran out of CPU: at [`CPU_CAP_SHARE`] of its cap
/// on average, or throttled for [`THROTTLED_SHARE`] of the level.
fn out_of_cpu(cores: Option<f64>, cap: Option<f64>, throttled_share: Option<f64>) -> bool {
    let at_cap = match (cores, cap) {
        (Some(c), Some(cap)) if cap > 0.0 => c / cap >= CPU_CAP_SHARE,
        _ => false,
    };
    at_cap || throttled_share.is_some_and(|t| t >= THROTTLED_SHARE)
}

/// What ran out of the route's proxy, if it ran out of anything: its
/// resident memory at its cap, or its CPU (at its cap on average, or
/// throttled for a fifth of the level, as the server's is judged).
pub fn proxy_ran_out(e: &Evidence) -> Option<Cause> {
    let memory = match (e.proxy_memory_peak_bytes, e.proxy_memory_cap) {
        (Some(m), Some(c)) if c > 0 => m as f64 / c as f64,
        _ => 0.0,
    };
    if memory >= MEMORY_CAP_SHARE {
        return Some(Cause::ProxyMemory);
    }
    out_of_cpu(e.proxy_cpu_cores, e.proxy_cpu_cap, e.proxy_throttled_share)
        .then_some(Cause::ProxyCpu)
}

/// What decided a level that was not held, from the server's side, in
/// the order the evidence is read: what ran out of the server's resources
/// first (memory, CPU, descriptors, its listen queue), then what ran out
/// of the route's proxy, then, with both to spare, what held its
/// handlers. `buffering` says whether the route's
/// proxy buffers what the slow clients move (responses for downloads,
/// request bodies for uploads).
pub fn cause(e: &Evidence, direction: Direction, buffering: bool, slow: u32) -> Cause {
    let share = |v: Option<f64>, cap: Option<f64>| match (v, cap) {
        (Some(v), Some(c)) if c > 0.0 => Some(v / c),
        _ => None,
    };
    let memory = share(
        e.app_memory_peak_bytes.map(|b| b as f64),
        e.app_memory_cap.map(|b| b as f64),
    );
    if memory.is_some_and(|m| m >= MEMORY_CAP_SHARE) {
        return Cause::Memory;
    }
    let capped_out = out_of_cpu(e.app_cpu_cores, e.app_cpu_cap, e.app_throttled_share);
    let host_out = e.host_idle_cores.is_some_and(|i| i < HOST_IDLE_MIN_CORES);
    if capped_out || (host_out && server_used_the_host(e)) {
        return Cause::Cpu;
    }
    let fds = share(
        e.server_fds.map(|f| f as f64),
        e.server_fd_limit.map(|f| f as f64),
    );
    if fds.is_some_and(|f| f >= FD_LIMIT_SHARE) {
        return Cause::Descriptors;
    }
    if e.listen_overflows.is_some_and(|n| n > 0) {
        return Cause::AcceptQueue;
    }
    if let Some(proxy) = proxy_ran_out(e) {
        return proxy;
    }
    // The catalogue says the slow clients cannot hold all the server's
    // handlers (an event loop has no limit): full sockets and requests
    // that waited are then the loop's being busy, not handlers held. The
    // loop is one thread: a busy second at a whole core is its CPU.
    if e.handlers.outnumber(slow) {
        return if e.app_cpu_peak_cores.is_some_and(|c| c >= CPU_CAP_SHARE) {
            Cause::Cpu
        } else {
            Cause::Unknown
        };
    }
    match direction {
        Direction::Download => {
            let held = e.held_sockets.unwrap_or(0);
            let queued = e
                .first_byte_p50_ms
                .is_some_and(|f| f >= QUEUED_FIRST_BYTE_MS);
            // Held sockets alone are not held handlers: an async server
            // keeps a slow reader's socket full too, and takes every
            // request as it comes. Requests that waited for a handler are
            // the evidence, where the samples could see them.
            let waited = e.waiting_requests.is_none_or(|w| w > 0);
            if buffering && queued {
                Cause::Queueing
            } else if held > 0 && waited && !buffering {
                Cause::Handlers
            } else if queued {
                Cause::Queueing
            } else {
                Cause::Unknown
            }
        }
        // A slow uploader or slowloris client holds its connection, and
        // the handler that reads it, for the whole level: its connections
        // open at the server are the evidence.
        Direction::Upload | Direction::Headers => {
            if !buffering && e.server_connections.is_some_and(|c| c >= u64::from(slow)) {
                Cause::Handlers
            } else if buffering {
                Cause::Queueing
            } else {
                Cause::Unknown
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet() -> Evidence {
        Evidence {
            host_cores: 2.0,
            loadgen_cpu_cores: Some(0.1),
            host_idle_cores: Some(1.2),
            host_steal_share: Some(0.0),
            schedule_lag_p99_ms: Some(0.5),
            app_cpu_cores: Some(0.05),
            ..Evidence::default()
        }
    }

    #[test]
    fn the_tester_or_the_host_running_out_makes_a_level_inconclusive() {
        assert_eq!(tester_ran_out(&quiet()), None);
        let busy_tester = Evidence {
            loadgen_cpu_cores: Some(1.62),
            host_idle_cores: Some(0.02),
            ..quiet()
        };
        assert_eq!(tester_ran_out(&busy_tester), Some(Cause::TesterCpu));
        // Starved by a cap, it uses little, but all it may.
        let starved = Evidence {
            loadgen_cpu_cores: Some(0.049),
            loadgen_cpu_cap: Some(0.05),
            ..quiet()
        };
        assert_eq!(tester_ran_out(&starved), Some(Cause::TesterCpu));
        let stolen = Evidence {
            host_steal_share: Some(0.3),
            ..quiet()
        };
        assert_eq!(tester_ran_out(&stolen), Some(Cause::HostSteal));
        // Another program used the host, not the server.
        let crowded = Evidence {
            host_idle_cores: Some(0.0),
            app_cpu_cores: Some(0.2),
            ..quiet()
        };
        assert_eq!(tester_ran_out(&crowded), Some(Cause::HostCpu));
        // ... but not when requests waited for handlers that sat in slow
        // writes: the busy host did not decide that.
        let blocked = Evidence {
            waiting_requests: Some(12),
            held_sockets: Some(3),
            ..crowded.clone()
        };
        assert_eq!(tester_ran_out(&blocked), None);
        assert_eq!(
            cause(&blocked, Direction::Download, false, 4),
            Cause::Handlers
        );
        // The server itself used the host: conclusive, and its cause is CPU.
        let hungry = Evidence {
            host_idle_cores: Some(0.02),
            app_cpu_cores: Some(1.7),
            ..quiet()
        };
        assert_eq!(tester_ran_out(&hungry), None);
        assert_eq!(cause(&hungry, Direction::Download, false, 8), Cause::Cpu);
        // Under its cap on average, throttled for a quarter of the level.
        let bursts = Evidence {
            app_cpu_cores: Some(0.055),
            app_cpu_cap: Some(0.1),
            app_throttled_share: Some(0.25),
            ..quiet()
        };
        assert_eq!(cause(&bursts, Direction::Download, false, 2), Cause::Cpu);
        let barely = Evidence {
            app_throttled_share: Some(0.05),
            ..bursts
        };
        assert_ne!(cause(&barely, Direction::Download, false, 2), Cause::Cpu);
        let late = Evidence {
            schedule_lag_p99_ms: Some(80.0),
            ..quiet()
        };
        assert_eq!(tester_ran_out(&late), Some(Cause::Schedule));
        assert!(Cause::Schedule.inconclusive() && !Cause::Cpu.inconclusive());
    }

    #[test]
    fn a_denial_names_what_ran_out_of_the_server_before_its_handlers() {
        let capped = Evidence {
            app_cpu_cores: Some(0.049),
            app_cpu_cap: Some(0.05),
            held_sockets: Some(3),
            ..quiet()
        };
        assert_eq!(cause(&capped, Direction::Download, false, 3), Cause::Cpu);
        let full = Evidence {
            app_memory_peak_bytes: Some(127 << 20),
            app_memory_cap: Some(128 << 20),
            ..capped.clone()
        };
        assert_eq!(cause(&full, Direction::Download, false, 3), Cause::Memory);
        let fds = Evidence {
            server_fds: Some(1020),
            server_fd_limit: Some(1024),
            ..quiet()
        };
        assert_eq!(cause(&fds, Direction::Upload, false, 3), Cause::Descriptors);
        let dropped = Evidence {
            listen_overflows: Some(4),
            ..quiet()
        };
        assert_eq!(
            cause(&dropped, Direction::Headers, false, 3),
            Cause::AcceptQueue
        );
    }

    #[test]
    fn a_proxy_that_ran_out_decides_the_level_before_the_handlers_behind_it() {
        // Caddy buffering two 16 MiB uploads in memory under 0.2 core:
        // Go's collector throttled it for a third of the level.
        let gc = Evidence {
            proxy_cpu_cores: Some(0.13),
            proxy_cpu_cap: Some(0.2),
            proxy_throttled_share: Some(0.33),
            proxy_memory_peak_bytes: Some(75 << 20),
            proxy_memory_cap: Some(96 << 20),
            server_connections: Some(0),
            ..quiet()
        };
        assert_eq!(proxy_ran_out(&gc), Some(Cause::ProxyCpu));
        assert_eq!(cause(&gc, Direction::Upload, true, 2), Cause::ProxyCpu);
        let full = Evidence {
            proxy_memory_peak_bytes: Some(95 << 20),
            ..gc.clone()
        };
        assert_eq!(cause(&full, Direction::Upload, true, 2), Cause::ProxyMemory);
        // A proxy with room is not the cause; nor is one never measured.
        let roomy = Evidence {
            proxy_throttled_share: Some(0.02),
            ..gc.clone()
        };
        assert_eq!(proxy_ran_out(&roomy), None);
        assert_eq!(cause(&roomy, Direction::Upload, true, 2), Cause::Queueing);
        assert_eq!(proxy_ran_out(&quiet()), None);
        // The server's own shortfall is read first.
        let both = Evidence {
            app_cpu_cores: Some(0.25),
            app_cpu_cap: Some(0.25),
            ..gc
        };
        assert_eq!(cause(&both, Direction::Upload, true, 2), Cause::Cpu);
    }

    #[test]
    fn held_sockets_are_handlers_and_late_first_bytes_behind_a_buffer_are_queueing() {
        let held = Evidence {
            held_sockets: Some(2),
            first_byte_p50_ms: Some(3.0),
            ..quiet()
        };
        assert_eq!(cause(&held, Direction::Download, false, 2), Cause::Handlers);
        // Requests that waited for a handler confirm it; an async server
        // that took every request as it came keeps full sockets but no
        // held handler.
        let waited = Evidence {
            waiting_requests: Some(7),
            ..held.clone()
        };
        assert_eq!(
            cause(&waited, Direction::Download, false, 2),
            Cause::Handlers
        );
        let took_all = Evidence {
            waiting_requests: Some(0),
            ..held.clone()
        };
        assert_eq!(
            cause(&took_all, Direction::Download, false, 256),
            Cause::Unknown
        );
        // Behind NGINX buffering on the app's sockets drain; the exports
        // waited 1.24 s for their first byte behind 3 workers.
        let queued = Evidence {
            held_sockets: Some(0),
            first_byte_p50_ms: Some(1240.0),
            ..quiet()
        };
        assert_eq!(
            cause(&queued, Direction::Download, true, 32),
            Cause::Queueing
        );
        let nothing = Evidence {
            held_sockets: Some(0),
            first_byte_p50_ms: Some(2.0),
            ..quiet()
        };
        assert_eq!(
            cause(&nothing, Direction::Download, true, 32),
            Cause::Unknown
        );
        let uploads = Evidence {
            server_connections: Some(5),
            ..quiet()
        };
        assert_eq!(
            cause(&uploads, Direction::Upload, false, 4),
            Cause::Handlers
        );
        assert_eq!(cause(&uploads, Direction::Upload, false, 9), Cause::Unknown);
    }

    #[test]
    fn a_server_with_more_handlers_than_slow_clients_is_never_denied_for_handlers() {
        // Uvicorn at 497 readers, as measured before the wait for the
        // readers' first bytes: full sockets, requests unread while the
        // loop was busy, 0.41 cores on average.
        let busy_loop = Evidence {
            held_sockets: Some(497),
            waiting_requests: Some(31),
            app_cpu_cores: Some(0.41),
            app_cpu_peak_cores: Some(0.97),
            ..quiet()
        };
        let unknown = cause(&busy_loop, Direction::Download, false, 497);
        assert_eq!(unknown, Cause::Handlers, "a --server-cmd: nothing known");
        let uvicorn = Evidence {
            handlers: Handlers::Unbounded,
            ..busy_loop.clone()
        };
        assert_eq!(cause(&uvicorn, Direction::Download, false, 497), Cause::Cpu);
        let calm = Evidence {
            app_cpu_peak_cores: Some(0.3),
            ..uvicorn.clone()
        };
        assert_eq!(
            cause(&calm, Direction::Download, false, 497),
            Cause::Unknown
        );
        assert_eq!(cause(&calm, Direction::Upload, false, 497), Cause::Unknown);
        // gevent's 2 x 1000 greenlets outnumber 497 readers, not 2,048.
        let gevent = Evidence {
            handlers: Handlers::AtMost(2000),
            ..busy_loop.clone()
        };
        assert_eq!(cause(&gevent, Direction::Download, false, 497), Cause::Cpu);
        assert_eq!(
            cause(&gevent, Direction::Download, false, 2048),
            Cause::Handlers
        );
        // Sync x2 with 2 readers: all its handlers can be held.
        let sync2 = Evidence {
            handlers: Handlers::of(catalogue::Server::GunicornSync2),
            ..busy_loop
        };
        assert_eq!(
            cause(&sync2, Direction::Download, false, 2),
            Cause::Handlers
        );
        assert!(Handlers::of(catalogue::Server::Uvicorn).outnumber(100_000));
    }
}
