//! One level of the check: a short `slowlab load` through the started
//! stack ([`Stack::run_load`]), `n` slow clients of the check's direction
//! (readers holding their downloads, uploaders, or slowloris clients)
//! while the open-loop client calls the fast path, and the figures of its
//! `summary.json` and of the sampler.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use common::units::Size;
use serde::Deserialize;

use super::evidence::Evidence;
use super::search::Judge;
use lab::sample::{ResourceSample, Samples};
use lab::stack::run::{LoadCommand, Stack};
use schema::{Direction, LevelVerdict};

/// What every load of a check shares.
#[derive(Debug, Clone)]
pub struct Plan {
    /// `--direction`: what the slow clients of a level do.
    pub direction: Direction,
    pub large_path: String,
    pub fast_path: String,
    pub slow_rate: u64,
    pub rcvbuf: u64,
    /// `--reader`.
    pub reader: loadgen::ReaderModel,
    /// `--link`: the readers read unpaced behind it.
    pub link: Option<lab::netns::Link>,
    pub fast_rate: f64,
    pub level_duration: Duration,
    /// A fast request (or a slow reader making no progress) gives up
    /// after this long: an error.
    pub timeout: Duration,
    /// The large path's length, known after the pre-flight.
    pub large_bytes: u64,
    /// `--ready-timeout`: how long the pre-flight's requests wait for
    /// the server's first bytes.
    pub ready_timeout: Duration,
    /// `--max-slow`.
    pub max_slow: u32,
    /// `--noise-floor`, in milliseconds.
    pub noise_floor_ms: f64,
    /// The request direction's flags (`--upload-path` with the target's
    /// base path, `--upload-bytes`, ...); the count of uploaders or
    /// slowloris clients is each level's.
    pub upload: loadgen::upload_args::UploadArgs,
    /// The app's cgroup caps (`--caps`), which its CPU and memory are
    /// judged against.
    pub app_caps: Option<lab::cgroup::Caps>,
    /// The load generator's cgroup cap (`--caps loadgen=`), which its CPU
    /// is judged against: a tester at its cap ran out.
    pub loadgen_caps: Option<lab::cgroup::Caps>,
    /// The proxy's cgroup caps, which a route's proxy is judged against: a
    /// proxy that ran out of CPU or memory decided the level, not the
    /// server behind it.
    pub proxy_caps: Option<lab::cgroup::Caps>,
    /// What the catalogue says of the server's handlers (`--server`).
    pub handlers: super::evidence::Handlers,
}

/// Delay between the slow readers' start and the first fast request, so
/// that the readers hold their handlers before it; and the quiet window of
/// the wait for their first bytes (`slowlab load --fast-settle`): the
/// fast calls begin once every reader has its first byte, or none got one
/// for this long. All the readers of a level connect at once, and a server
/// that takes them one by one (an event loop) is busy with that burst for
/// a second or more at hundreds of readers; the level is about the readers
/// it then holds, not about the tester's connect storm.
pub const FAST_START: Duration = Duration::from_millis(250);

impl Plan {
    /// The `slowlab load` of `slow` clients of the direction for
    /// `fast_duration` against `target`, its files in `out`.
    pub fn load_args(
        &self,
        target: &str,
        slow: u32,
        fast_duration: Duration,
        out: &Path,
        labels: Vec<String>,
    ) -> loadgen::LoadArgs {
        let n = slow as usize;
        let of = |d: Direction| if self.direction == d { n } else { 0 };
        loadgen::LoadArgs {
            target: target.into(),
            edge: loadgen::edge::EdgeArgs::default(),
            slow: of(Direction::Download),
            slow_reader: loadgen::config::SlowReaderArgs {
                slow_rate: Size(match self.link {
                    Some(_) => loadgen::config::MAX_SLOW_RATE,
                    None => self.slow_rate,
                }),
                rcvbuf: Size(self.rcvbuf),
                read_chunk: Size(16 << 10),
                large_path: self.large_path.clone(),
                reader: self.reader,
                loop_lag: Duration::ZERO,
            },
            upload: loadgen::upload_args::UploadArgs {
                slow_upload: of(Direction::Upload),
                slow_headers: of(Direction::Headers),
                // Behind a link the uploaders write unpaced: the link,
                // shaped at the client's end too, is the bottleneck.
                upload_rate: match self.link {
                    Some(_) => Size(loadgen::config::MAX_SLOW_RATE),
                    None => self.upload.upload_rate,
                },
                ..self.upload.clone()
            },
            // The stack's run sets them in its namespaces.
            bind: Default::default(),
            fast_rate: self.fast_rate,
            fast_duration,
            fast_start: FAST_START,
            fast_settle: FAST_START,
            fast_path: self.fast_path.clone(),
            timeout: self.timeout,
            out: Some(out.to_path_buf()),
            labels,
            json: true,
            // The stack's entry point passed the policy when it was chosen.
            allow_remote: true,
            verify: loadgen::VerifyMode::Auto,
            realtime: false,
            spin: Duration::ZERO,
            // A level is over when its fast calls are: the slow clients
            // have held the server through it and are cut, not waited for.
            end_with_fast: true,
        }
    }

    /// How long one slow client's transfer takes at its pace: a download
    /// of the large path, or an upload; none for a slowloris client, which
    /// the load generator lets go when the fast calls end.
    pub fn transfer(&self, slow: u32) -> Duration {
        let bytes = match self.direction {
            Direction::Download => self.large_bytes,
            Direction::Upload => self.upload.upload_bytes.bytes(),
            Direction::Headers => return Duration::ZERO,
        };
        Duration::from_secs_f64(bytes as f64 / self.client_rate(slow).max(1) as f64)
    }

    /// The bytes per second one of `slow` clients moves: behind `--link`
    /// its share of the link, else the direction's pace (`--slow-rate`,
    /// `--upload-rate`).
    pub fn client_rate(&self, slow: u32) -> u64 {
        match (self.link, self.direction) {
            (Some(l), _) => l.share(slow),
            (None, Direction::Upload) => self.upload.upload_rate.bytes(),
            (None, _) => self.slow_rate,
        }
    }

    /// How long a load may run before it is stopped: its fast calls begin
    /// within `--timeout` (the wait for the readers' first bytes), its slow
    /// clients are cut when they end (`--end-with-fast`), the last of
    /// which ends within `--timeout`; the rest is the process's start and
    /// files.
    fn limit(&self) -> Duration {
        FAST_START + self.level_duration + self.timeout * 3 + Duration::from_secs(30)
    }
}

/// The figures of one load.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    pub requests: u64,
    pub ok: u64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    /// Fast-path errors by kind (`requests.csv` names).
    pub errors: BTreeMap<String, u64>,
    /// The slow clients that did what the direction has them do
    /// (download whole, upload whole with a 200, hold an unfinished head
    /// to the end), and those that did not.
    pub slow_ok: u64,
    pub slow_failed: u64,
    pub rcvbuf_granted: Option<u64>,
    pub level_s: f64,
    pub app: Usage,
    pub proxy: Usage,
    /// What the level showed of the tester, the host and the server.
    pub evidence: Evidence,
    /// The fast path's answers that were not 200, by status.
    pub statuses: BTreeMap<u16, u64>,
    /// The load's directory.
    pub dir: PathBuf,
    /// When the fast calls began, from the load's start and as a unix time,
    /// and why then (`summary.json`'s `fast.settled`: `first_bytes` once
    /// every slow reader had its first byte, `quiet`, ...).
    pub fast_began_s: f64,
    pub fast_began_unix_s: f64,
    pub settled: Option<String>,
}

impl Figures {
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    pub fn errors_of(&self, kind: &str) -> u64 {
        self.errors.get(kind).copied().unwrap_or(0)
    }

    /// This load's verdict under `judge`: its fast path's p95 (none when
    /// no call succeeded) and every fast error counted.
    pub fn verdict(&self, judge: &Judge) -> LevelVerdict {
        judge.verdict(self.p95_ms, self.error_count())
    }
}

/// A component's CPU and memory during a load.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub cpu_cores: Option<f64>,
    pub memory_peak_mib: Option<f64>,
}

/// The parts of `summary.json` the check reads.
#[derive(Debug, Deserialize)]
struct Summary {
    t0_unix_s: f64,
    fast: FastPart,
    slow: SlowPart,
    uploads: UploadPart,
    slow_headers: HeadersPart,
}

#[derive(Debug, Deserialize)]
struct UploadPart {
    ok: u64,
    failed: u64,
    #[serde(default)]
    errors: BTreeMap<String, u64>,
}

#[derive(Debug, Deserialize)]
struct HeadersPart {
    clients: u64,
    held_to_end: u64,
}

#[derive(Debug, Deserialize)]
struct FastPart {
    requests: u64,
    ok: u64,
    errors: BTreeMap<String, u64>,
    latency_ms: Latency,
    #[serde(default)]
    schedule_lag_ms: Option<Lag>,
    #[serde(default)]
    began_s: f64,
    #[serde(default)]
    settled: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Lag {
    p99: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Latency {
    p50: Option<f64>,
    p95: Option<f64>,
    p99: Option<f64>,
    max: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct SlowPart {
    ok: u64,
    failed: u64,
    rcvbuf_granted_bytes: Option<u64>,
    #[serde(default)]
    errors: BTreeMap<String, u64>,
}

/// Runs one load of `slow` clients through `stack`, its files in `dir`
/// (`load/` as `slowlab load --out` writes them, `load.out`, `load.err`).
///
/// The load measured when [`lab::stack::run::LoadExit::measurement`]
/// says so, the rule `reproduce` uses: an exit 1 because every fast call
/// failed is a finding (the level is denied); a descriptor that ran out,
/// or any other end, is a failed measurement, an error naming the level.
pub fn measure(
    stack: &Stack<'_>,
    plan: &Plan,
    slow: u32,
    fast_duration: Duration,
    dir: &Path,
    labels: Vec<String>,
) -> Result<Figures> {
    let out = dir.join("load");
    let args = plan.load_args(&stack.url(), slow, fast_duration, &out, labels);
    let since = lab::sample::unix_now();
    let overflows_before = stack.listen_overflows();
    let measured = stack
        .run_load(dir, plan.limit(), &LoadCommand::Load(args))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let overflows = match (overflows_before, stack.listen_overflows()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    measured.exit.measurement(&out, since).with_context(|| {
        format!(
            "the load of {slow} {} measured nothing (its files in {})",
            super::answer::clients(plan.direction),
            dir.display()
        )
    })?;
    let read = read(plan.direction, &out)?;
    // The server's CPU and sockets count from the fast calls' start: the
    // readers' connect burst before it is the tester's (see `FAST_START`).
    let window = window_from(&measured.samples, read.fast_began_unix_s);
    let app = usage(&window, "app");
    let host_cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let load_s = measured.load_s.max(1e-3);
    let rows = |component: &'static str| {
        measured
            .samples
            .resources
            .iter()
            .filter(move |r| r.component == component)
    };
    let app_rows = || rows("app");
    let proxy = usage(&window, "proxy");
    let evidence = Evidence {
        host_cores,
        loadgen_cpu_cores: usage(&measured.samples, "loadgen").cpu_cores,
        loadgen_cpu_cap: plan.loadgen_caps.map(|c| c.cpu_cores),
        loadgen_throttled_share: throttled(&measured.samples, "loadgen"),
        host_idle_cores: measured.host_busy_cores.map(|b| (host_cores - b).max(0.0)),
        host_steal_share: measured
            .host_steal_ms
            .map(|ms| ms / 1000.0 / (load_s * host_cores)),
        schedule_lag_p99_ms: read.evidence.schedule_lag_p99_ms,
        app_cpu_cores: app.cpu_cores,
        app_cpu_peak_cores: peak_cpu(&window, "app", PEAK_WINDOW_S),
        handlers: plan.handlers,
        app_cpu_cap: plan.app_caps.map(|c| c.cpu_cores),
        app_throttled_share: throttled(&window, "app"),
        app_memory_peak_bytes: app_rows()
            .map(|r| r.memory_bytes.unwrap_or(r.rss_bytes))
            .max(),
        app_memory_cap: plan.app_caps.map(|c| c.memory_bytes),
        server_fds: app_rows().map(|r| r.fds).max(),
        server_fd_limit: app_rows().filter_map(|r| r.fd_limit).min(),
        listen_overflows: overflows,
        held_sockets: held_sockets(&window),
        waiting_requests: waiting_requests(&window),
        server_connections: app_rows().map(|r| r.sockets).max(),
        first_byte_p50_ms: first_byte_p50(&out),
        proxy_cpu_cores: proxy.cpu_cores,
        proxy_cpu_cap: plan.proxy_caps.map(|c| c.cpu_cores),
        proxy_throttled_share: throttled(&window, "proxy"),
        proxy_memory_peak_bytes: rows("proxy").map(|r| r.rss_bytes).max(),
        proxy_memory_cap: plan.proxy_caps.map(|c| c.memory_bytes),
    };
    Ok(Figures {
        level_s: measured.load_s,
        app,
        proxy,
        evidence,
        statuses: statuses(&out),
        dir: dir.to_path_buf(),
        ..read
    })
}

/// The samples of `samples` from `from_s` (unix seconds) on; of the
/// resources also the one just before, so that a rate over the window has
/// its start.
fn window_from(samples: &Samples, from_s: f64) -> Samples {
    let from = |rows: &[f64]| {
        let first = rows.partition_point(|t| *t < from_s);
        rows.get(first.saturating_sub(1)).copied().unwrap_or(from_s)
    };
    let mut times: Vec<f64> = samples.resources.iter().map(|r| r.t_unix_s).collect();
    times.sort_by(f64::total_cmp);
    let resources_from = from(&times);
    Samples {
        resources: samples
            .resources
            .iter()
            .filter(|r| r.t_unix_s >= resources_from)
            .cloned()
            .collect(),
        sockets: samples
            .sockets
            .iter()
            .filter(|r| r.t_unix_s >= from_s)
            .cloned()
            .collect(),
        qdiscs: samples.qdiscs.clone(),
    }
}

/// The span over which the busiest stretch of a level's CPU is taken.
const PEAK_WINDOW_S: f64 = 1.0;

/// The most cores `component` used over any `span` seconds of its samples
/// (from each sample to the first at least `span` later); the whole when
/// the samples span less.
fn peak_cpu(samples: &Samples, component: &str, span: f64) -> Option<f64> {
    let rows: Vec<&ResourceSample> = samples
        .resources
        .iter()
        .filter(|r| r.component == component && r.cpu_ns.is_some())
        .collect();
    let (first, last) = (rows.first()?, rows.last()?);
    if last.t_unix_s - first.t_unix_s < span {
        return cores_between(first, last);
    }
    rows.iter()
        .enumerate()
        .filter_map(|(i, a)| {
            let b = rows[i..].iter().find(|b| b.t_unix_s - a.t_unix_s >= span)?;
            cores_between(a, b)
        })
        .reduce(f64::max)
}

/// The cores a component used from sample `a` to the later sample `b`.
fn cores_between(a: &ResourceSample, b: &ResourceSample) -> Option<f64> {
    let ns = b.cpu_ns?.saturating_sub(a.cpu_ns?);
    (b.t_unix_s > a.t_unix_s).then(|| ns as f64 / 1e9 / (b.t_unix_s - a.t_unix_s))
}

/// The share of the load `component`'s cgroup spent throttled.
fn throttled(samples: &Samples, component: &str) -> Option<f64> {
    let mut rows = samples
        .resources
        .iter()
        .filter(|r| r.component == component);
    let (a, b) = (rows.next()?, rows.next_back()?);
    let span = b.t_unix_s - a.t_unix_s;
    let ns = b.throttled_ns?.saturating_sub(a.throttled_ns?);
    (span > 0.0).then(|| ns as f64 / 1e9 / span)
}

/// The most of the app's connected sockets seen in one sample with a send
/// queue of at least half their send buffer (64 KiB where the buffer's
/// size is unknown): responses the kernel would not take, each holding
/// the handler that writes it.
fn held_sockets(samples: &Samples) -> Option<u64> {
    let mut per_sample: BTreeMap<u64, u64> = BTreeMap::new();
    let mut seen = false;
    for s in samples.sockets.iter().filter(|s| s.component == "app") {
        seen = true;
        let full = match s.mem {
            Some(m) if m.sndbuf > 0 => s.tx_queue_bytes * 2 >= u64::from(m.sndbuf),
            _ => s.tx_queue_bytes >= 64 << 10,
        };
        if full && s.state == "ESTABLISHED" {
            *per_sample.entry(s.t_unix_s.to_bits()).or_default() += 1;
        }
    }
    seen.then(|| per_sample.values().copied().max().unwrap_or(0))
}

/// The most connections seen at once whose request no handler of the app
/// had taken: waiting in its listening socket's accept queue (a LISTEN
/// socket's receive queue is that queue's length), or accepted with the
/// request's bytes unread in the socket (a pool that accepts for its
/// threads). An async server reads every request as it comes, a server
/// whose handlers all sit in slow writes takes none.
fn waiting_requests(samples: &Samples) -> Option<u64> {
    let mut per_sample: BTreeMap<u64, u64> = BTreeMap::new();
    let mut seen = false;
    for s in samples.sockets.iter().filter(|s| s.component == "app") {
        seen = true;
        let state: &str = s.state;
        let waiting = match state {
            "LISTEN" => s.rx_queue_bytes,
            "ESTABLISHED" if s.rx_queue_bytes > 0 => 1,
            _ => 0,
        };
        *per_sample.entry(s.t_unix_s.to_bits()).or_default() += waiting;
    }
    seen.then(|| per_sample.values().copied().max().unwrap_or(0))
}

/// The median time from a slow download's connect to its first byte, from
/// the load's `large-responses.csv`.
fn first_byte_p50(out: &Path) -> Option<f64> {
    let rows: Vec<schema::LargeCells> =
        schema::file::read_optional(&out.join(schema::LARGE_CSV)).ok()??;
    let v: Vec<f64> = rows.iter().filter_map(|r| r.first_byte_ms).collect();
    common::stats::median(&v)
}

/// The fast path's answers that were not 200, by status, from the load's
/// `requests.csv`.
fn statuses(out: &Path) -> BTreeMap<u16, u64> {
    let rows: Vec<schema::RequestCells> =
        schema::file::read_optional(&out.join(schema::REQUESTS_CSV))
            .ok()
            .flatten()
            .unwrap_or_default();
    let mut by = BTreeMap::new();
    for s in rows.iter().filter_map(|r| r.status).filter(|s| *s != 200) {
        *by.entry(s).or_default() += 1;
    }
    by
}

/// The figures of the `summary.json` in `out`, the slow clients counted
/// as `direction` has them.
fn read(direction: Direction, out: &Path) -> Result<Figures> {
    let path = out.join(loadgen::output::SUMMARY_JSON);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let s: Summary =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    // A transfer cut at the level's end held the server through it.
    let cut = |errors: &BTreeMap<String, u64>| {
        errors
            .get(loadgen::ErrorKind::Cut.as_str())
            .copied()
            .unwrap_or(0)
    };
    let (slow_ok, slow_failed) = match direction {
        Direction::Download => {
            let c = cut(&s.slow.errors);
            (s.slow.ok + c, s.slow.failed - c)
        }
        Direction::Upload => {
            let c = cut(&s.uploads.errors);
            (s.uploads.ok + c, s.uploads.failed - c)
        }
        Direction::Headers => (
            s.slow_headers.held_to_end,
            s.slow_headers
                .clients
                .saturating_sub(s.slow_headers.held_to_end),
        ),
    };
    Ok(Figures {
        requests: s.fast.requests,
        ok: s.fast.ok,
        p50_ms: s.fast.latency_ms.p50,
        p95_ms: s.fast.latency_ms.p95,
        p99_ms: s.fast.latency_ms.p99,
        max_ms: s.fast.latency_ms.max,
        errors: s.fast.errors,
        slow_ok,
        slow_failed,
        rcvbuf_granted: s.slow.rcvbuf_granted_bytes,
        fast_began_s: s.fast.began_s,
        fast_began_unix_s: s.t0_unix_s + s.fast.began_s,
        settled: s.fast.settled,
        evidence: Evidence {
            schedule_lag_p99_ms: s.fast.schedule_lag_ms.and_then(|l| l.p99),
            ..Evidence::default()
        },
        ..Figures::default()
    })
}

/// Average cores and peak memory of `component` over its samples.
fn usage(samples: &Samples, component: &str) -> Usage {
    let rows: Vec<_> = samples
        .resources
        .iter()
        .filter(|r| r.component == component)
        .collect();
    let cpu = match (rows.first(), rows.last()) {
        (Some(a), Some(b)) => cores_between(a, b),
        _ => None,
    };
    let memory = rows
        .iter()
        .map(|r| r.memory_bytes.unwrap_or(r.rss_bytes))
        .max()
        .map(|b| b as f64 / f64::from(1u32 << 20));
    Usage {
        cpu_cores: cpu,
        memory_peak_mib: memory,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab::netns::{Link, Per};

    const MIB: u64 = 1 << 20;

    fn plan(direction: Direction, link: Option<Link>) -> Plan {
        Plan {
            direction,
            large_path: "/large".into(),
            fast_path: "/fast".into(),
            slow_rate: 2 * MIB,
            rcvbuf: 8 << 10,
            reader: loadgen::ReaderModel::Strict,
            link,
            fast_rate: 8.0,
            level_duration: Duration::from_secs(5),
            timeout: Duration::from_secs(5),
            large_bytes: 16 * MIB,
            ready_timeout: Duration::from_secs(20),
            max_slow: 8,
            noise_floor_ms: 20.0,
            upload: loadgen::upload_args::UploadArgs {
                upload_rate: Size(MIB),
                upload_bytes: Size(4 * MIB),
                ..Default::default()
            },
            app_caps: None,
            loadgen_caps: None,
            proxy_caps: None,
            handlers: Default::default(),
        }
    }

    #[test]
    fn a_shared_link_divides_its_rate_and_a_per_client_one_gives_each_all_of_it() {
        let shared = Link::at(8 * MIB);
        let own = Link::at(8 * MIB).per(Per::Client);
        for d in [Direction::Download, Direction::Upload, Direction::Headers] {
            let p = plan(d, Some(shared));
            assert_eq!(p.client_rate(1), 8 * MIB, "{d}");
            assert_eq!(p.client_rate(4), 2 * MIB, "{d}");
            // No client at all still has a rate (the baseline's answer).
            assert_eq!(p.client_rate(0), 8 * MIB, "{d}");
            let p = plan(d, Some(own));
            assert_eq!(p.client_rate(1), 8 * MIB, "{d}");
            assert_eq!(p.client_rate(4), 8 * MIB, "{d}");
        }
    }

    #[test]
    fn without_a_link_a_client_moves_at_its_directions_pace() {
        assert_eq!(plan(Direction::Download, None).client_rate(4), 2 * MIB);
        assert_eq!(plan(Direction::Upload, None).client_rate(4), MIB);
        // A download of 16 MiB at 2 MiB/s, an upload of 4 MiB at 1 MiB/s.
        let t = |d, slow| plan(d, None).transfer(slow).as_secs_f64();
        assert_eq!(t(Direction::Download, 4), 8.0);
        assert_eq!(t(Direction::Upload, 4), 4.0);
        assert_eq!(t(Direction::Headers, 4), 0.0);
        // Behind a shared link of 8 MiB/s, four readers take 2 MiB/s each.
        let p = plan(Direction::Download, Some(Link::at(8 * MIB)));
        assert_eq!(p.transfer(4).as_secs_f64(), 8.0);
        assert_eq!(p.transfer(1).as_secs_f64(), 2.0);
    }

    #[test]
    fn a_levels_load_has_the_directions_clients_unpaced_behind_a_link() {
        let out = Path::new("/nonexistent");
        let args =
            |d, link| plan(d, link).load_args("http://x", 3, Duration::from_secs(1), out, vec![]);
        let down = args(Direction::Download, None);
        assert_eq!(
            (down.slow, down.upload.slow_upload, down.upload.slow_headers),
            (3, 0, 0)
        );
        assert_eq!(down.slow_reader.slow_rate.bytes(), 2 * MIB);
        let up = args(Direction::Upload, None);
        assert_eq!(
            (up.slow, up.upload.slow_upload, up.upload.slow_headers),
            (0, 3, 0)
        );
        assert_eq!(up.upload.upload_rate.bytes(), MIB);
        let hdr = args(Direction::Headers, None);
        assert_eq!(
            (hdr.slow, hdr.upload.slow_upload, hdr.upload.slow_headers),
            (0, 0, 3)
        );
        let link = Some(Link::at(8 * MIB));
        let max = loadgen::config::MAX_SLOW_RATE;
        assert_eq!(
            args(Direction::Download, link)
                .slow_reader
                .slow_rate
                .bytes(),
            max
        );
        assert_eq!(
            args(Direction::Upload, link).upload.upload_rate.bytes(),
            max
        );
    }

    fn cpu_at(t: f64, cpu_s: f64) -> lab::sample::ResourceSample {
        lab::sample::ResourceSample {
            t_unix_s: t,
            component: "app".into(),
            cpu_ns: Some((cpu_s * 1e9) as u64),
            ..Default::default()
        }
    }

    #[test]
    fn a_busy_second_is_seen_though_the_levels_average_is_low() {
        // An event loop at a whole core for 1 s of a 5 s level: 0.2 on
        // average, 1.0 at its peak.
        let mut resources = Vec::new();
        let mut cpu = 0.0;
        for i in 0..=50 {
            let t = 100.0 + f64::from(i) * 0.1;
            resources.push(cpu_at(t, cpu));
            cpu += if (10..20).contains(&i) { 0.1 } else { 0.0 };
        }
        let samples = Samples {
            resources,
            ..Samples::default()
        };
        let mean = usage(&samples, "app").cpu_cores.unwrap();
        assert!((mean - 0.2).abs() < 1e-6, "{mean}");
        let peak = peak_cpu(&samples, "app", PEAK_WINDOW_S).unwrap();
        assert!((peak - 1.0).abs() < 1e-6, "{peak}");
        assert_eq!(peak_cpu(&samples, "proxy", PEAK_WINDOW_S), None);
        // Shorter than the span: the whole.
        let short = Samples {
            resources: samples.resources[10..15].to_vec(),
            ..Samples::default()
        };
        let whole = peak_cpu(&short, "app", PEAK_WINDOW_S).unwrap();
        assert!((whole - 1.0).abs() < 1e-6, "{whole}");
        // From the fast calls' start on, with the sample before it: the
        // burst at 101-102 s is left out from 102.05 s.
        let after = window_from(&samples, 102.05);
        assert_eq!(after.resources.first().map(|r| r.t_unix_s), Some(102.0));
        let late = usage(&after, "app").cpu_cores.unwrap();
        assert!(late.abs() < 1e-6, "{late}");
        assert_eq!(window_from(&samples, 0.0).resources.len(), 51);
    }

    /// A `summary.json` in `dir` as `slowlab load` writes it (the parts the
    /// check reads, and some it does not).
    fn summary(dir: &Path, ok: u64, p95: Option<f64>, errors: &str) {
        let p95 = p95.map_or("null".into(), |p| p.to_string());
        let json = format!(
            r#"{{"t0_unix_s": 1.0, "target": "http://x",
                "fast": {{"requests": 40, "ok": {ok}, "failed": {}, "errors": {{{errors}}},
                          "latency_ms": {{"p50": {p95}, "p95": {p95}, "p99": {p95}, "max": {p95}}}}},
                "slow": {{"clients": 2, "ok": 1, "failed": 1, "rcvbuf_granted_bytes": 4608}},
                "uploads": {{"clients": 3, "ok": 2, "failed": 1}},
                "slow_headers": {{"clients": 4, "held_to_end": 3}},
                "errors": {{{errors}}}}}"#,
            40 - ok
        );
        std::fs::write(dir.join(loadgen::output::SUMMARY_JSON), json).unwrap();
    }

    #[test]
    fn the_figures_of_a_summary_decide_the_levels_verdict() {
        let dir = tempfile::tempdir().unwrap();
        let judge = Judge {
            baseline_ms: 2.0,
            noise_floor_ms: 20.0,
        };
        summary(dir.path(), 40, Some(15.0), "");
        let f = read(Direction::Download, dir.path()).unwrap();
        assert_eq!((f.requests, f.ok, f.p95_ms), (40, 40, Some(15.0)));
        assert_eq!(
            (f.slow_ok, f.slow_failed, f.rcvbuf_granted),
            (1, 1, Some(4608))
        );
        assert_eq!(f.verdict(&judge), LevelVerdict::Held);
        summary(dir.path(), 40, Some(150.0), "");
        let f = read(Direction::Upload, dir.path()).unwrap();
        assert_eq!((f.slow_ok, f.slow_failed), (2, 1));
        assert_eq!(f.verdict(&judge), LevelVerdict::Degraded);
        // One timeout among quick answers is denied.
        summary(dir.path(), 39, Some(3.0), r#""timeout": 1"#);
        let f = read(Direction::Headers, dir.path()).unwrap();
        assert_eq!((f.slow_ok, f.slow_failed), (3, 1));
        assert_eq!((f.error_count(), f.errors_of("timeout")), (1, 1));
        assert_eq!(f.verdict(&judge), LevelVerdict::Denied);
        // Every fast call timed out (`slowlab load`'s exit 1 that measured):
        // no p95, denied.
        summary(dir.path(), 0, None, r#""timeout": 40"#);
        let f = read(Direction::Headers, dir.path()).unwrap();
        assert_eq!((f.ok, f.p95_ms, f.error_count()), (0, None, 40));
        assert_eq!(f.verdict(&judge), LevelVerdict::Denied);
        // No summary at all is an error, not a level.
        let empty = tempfile::tempdir().unwrap();
        assert!(read(Direction::Download, empty.path()).is_err());
    }
}
