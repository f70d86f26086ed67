//! `check.csv`, the file of `slowlab check`: one row per level measured
//! (a number of slow clients, readers holding their downloads, uploaders
//! or slowloris clients, while an open-loop client calls the fast path)
//! and route, in the order measured, with the level's verdict.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::cell;
use catalogue::{DirectionName, Name, Named, RouteName};

/// A level's verdict, judged on the fast path against the route's baseline
/// (its p95 with no slow reader).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LevelVerdict {
    /// p95 <= max(10x the baseline, the baseline plus the noise floor)
    /// and no errors.
    Held,
    /// Neither held nor denied.
    Degraded,
    /// p95 >= 1 s, or >= 100x the baseline, or any error or timeout.
    Denied,
    /// The tester or the host ran out while the level was measured (the
    /// load generator's CPU, the host's idle or steal time, the schedule of
    /// the fast calls): whatever the fast path did says nothing of the
    /// server.
    Inconclusive,
}

impl LevelVerdict {
    pub fn name(self) -> &'static str {
        match self {
            LevelVerdict::Held => "held",
            LevelVerdict::Degraded => "degraded",
            LevelVerdict::Denied => "denied",
            LevelVerdict::Inconclusive => "inconclusive",
        }
    }
}

impl Name for LevelVerdict {
    const ALL: &'static [LevelVerdict] = &[
        LevelVerdict::Held,
        LevelVerdict::Degraded,
        LevelVerdict::Denied,
        LevelVerdict::Inconclusive,
    ];
    fn name(self) -> &'static str {
        LevelVerdict::name(self)
    }
}

impl fmt::Display for LevelVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A level's verdict as read from `check.csv`.
pub type LevelVerdictName = Named<LevelVerdict>;

/// A row of `check.csv`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckRow {
    #[serde(default)]
    pub route: RouteName,
    /// What was checked: the `--server-cmd` line or the `--target` URL.
    #[serde(default)]
    pub server: String,
    #[serde(default)]
    pub slow_readers: u32,
    /// 1, 2, ... in the order the levels of the route were measured.
    #[serde(default)]
    pub order: u32,
    #[serde(default)]
    pub fast_requests: u64,
    #[serde(default)]
    pub fast_ok: u64,
    #[serde(default, serialize_with = "cell::d3")]
    pub p50_ms: Option<f64>,
    #[serde(default, serialize_with = "cell::d3")]
    pub p95_ms: Option<f64>,
    #[serde(default, serialize_with = "cell::d3")]
    pub p99_ms: Option<f64>,
    #[serde(default, serialize_with = "cell::d3")]
    pub max_ms: Option<f64>,
    #[serde(default, serialize_with = "cell::d3")]
    pub baseline_p95_ms: Option<f64>,
    #[serde(default, serialize_with = "cell::d1")]
    pub p95_x_baseline: Option<f64>,
    #[serde(default)]
    pub errors: u64,
    #[serde(default)]
    pub err_timeout: u64,
    #[serde(default)]
    pub err_connect_refused: u64,
    #[serde(default)]
    pub err_reset: u64,
    #[serde(default)]
    pub err_other: u64,
    #[serde(default)]
    pub slow_ok: u64,
    #[serde(default)]
    pub slow_failed: u64,
    #[serde(default)]
    pub verdict: LevelVerdictName,
    #[serde(default, serialize_with = "cell::d3")]
    pub recovery_p95_ms: Option<f64>,
    #[serde(default, with = "cell::yes_no")]
    pub recovered: Option<bool>,
    #[serde(default, serialize_with = "cell::d4")]
    pub app_cpu_cores: Option<f64>,
    #[serde(default, serialize_with = "cell::d1")]
    pub app_memory_peak_mib: Option<f64>,
    #[serde(default, serialize_with = "cell::d4")]
    pub proxy_cpu_cores: Option<f64>,
    #[serde(default, serialize_with = "cell::d1")]
    pub proxy_memory_peak_mib: Option<f64>,
    #[serde(default, serialize_with = "cell::d3")]
    pub level_s: f64,
    /// The level's raw files, relative to the results directory.
    #[serde(default)]
    pub dir: String,
    /// `--noise-floor` of the check, in ms.
    #[serde(default, serialize_with = "cell::d3")]
    pub noise_floor_ms: Option<f64>,
    /// The p95 at or under which the level (without errors) is held:
    /// max(10x the baseline, the baseline plus the noise floor).
    #[serde(default, serialize_with = "cell::d3")]
    pub held_limit_ms: Option<f64>,
    /// What the level's slow clients did (`--direction`): `download`,
    /// `upload` or `headers`; empty in files before the column, which
    /// means `download`.
    #[serde(default)]
    pub direction: DirectionName,
    /// What decided the level, from the evidence below: `none` (held),
    /// `handlers` (the server's handlers held by the slow clients),
    /// `queueing` (behind a buffering proxy, responses waited for the
    /// server's handlers), `cpu`, `memory`, `descriptors`,
    /// `accept_queue`, `unknown`; for an inconclusive level what ran out
    /// of the tester or the host: `tester_cpu`, `host_cpu`, `host_steal`,
    /// `schedule`. Empty in files before the column.
    #[serde(default)]
    pub cause: String,
    /// The load generator's CPU during the level, in cores.
    #[serde(default, serialize_with = "cell::d4")]
    pub loadgen_cpu_cores: Option<f64>,
    /// The host's idle CPU during the level, in cores (all CPUs).
    #[serde(default, serialize_with = "cell::d3")]
    pub host_idle_cores: Option<f64>,
    /// CPU time the hypervisor took from this machine during the level.
    #[serde(default, serialize_with = "cell::d1")]
    pub host_steal_ms: Option<f64>,
    /// p99 of how late the fast calls started against their schedule.
    #[serde(default, serialize_with = "cell::d3")]
    pub schedule_lag_p99_ms: Option<f64>,
    /// The most of the server's sockets seen at once with a send queue of
    /// at least half their send buffer: responses the kernel will not
    /// take, each holding the handler that writes it.
    #[serde(default)]
    pub held_sockets: Option<u64>,
    /// The most descriptors the server's processes held at once, and
    /// their limit (`RLIMIT_NOFILE`, the smallest of its processes').
    #[serde(default)]
    pub server_fds: Option<u64>,
    #[serde(default)]
    pub server_fd_limit: Option<u64>,
    /// Connections the server's listen queue dropped during the level
    /// (`ListenOverflows` of its network namespace).
    #[serde(default)]
    pub listen_overflows: Option<u64>,
    /// Median time from a slow download's connect to its first byte.
    #[serde(default, serialize_with = "cell::d3")]
    pub first_byte_p50_ms: Option<f64>,
    /// 1 for a level's first measurement, 2, 3, ... for its repetitions
    /// (`--repeat`, the boundary levels only).
    #[serde(default)]
    pub repetition: Option<u32>,
    /// The most connections seen at once whose request no handler of the
    /// server had taken: in its listening socket's accept queue, or
    /// accepted with the request unread.
    #[serde(default)]
    pub waiting_requests: Option<u64>,
    /// The server's CPU over its busiest second of the level, in cores
    /// (an event loop is out of CPU at one core).
    #[serde(default, serialize_with = "cell::d4")]
    pub app_cpu_peak_cores: Option<f64>,
    /// When the level's fast calls began, in seconds from its start: the
    /// wait for every slow download's first byte (`slowlab load
    /// --fast-settle`), at least 0.25 s. Empty in files before the column.
    #[serde(default, serialize_with = "cell::d3")]
    pub fast_began_s: Option<f64>,
    /// Why then: `first_bytes` (every slow download had its first byte),
    /// `quiet` (none got one for 0.25 s: the rest wait for a handler),
    /// `timeout`, `start` (no slow downloads), `stopped`.
    #[serde(default)]
    pub fast_settled: String,
    /// What the clients spoke at the route's edge: `http/1.1`, or `h2`
    /// (HTTP/2 over TLS, the `nginx-h2-*` routes). Empty in files before
    /// the column.
    #[serde(default)]
    pub protocol: Option<String>,
    /// How many slow downloads shared one connection: `--streams-per-conn`
    /// on an HTTP/2 edge, else 1. Empty in files before the column.
    #[serde(default)]
    pub streams_per_conn: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_reads_back_as_written() {
        let row = CheckRow {
            route: catalogue::Route::PingoraOn.into(),
            server: "python3 app.py --port {port}".into(),
            slow_readers: 3,
            order: 5,
            p95_ms: Some(1.25),
            verdict: Named::Known(LevelVerdict::Denied),
            recovered: Some(true),
            level_s: 2.5,
            dir: "pingora-on/level-3".into(),
            direction: catalogue::Direction::Upload.into(),
            ..CheckRow::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(super::super::CHECK_CSV);
        super::super::file::write_whole(&path, std::slice::from_ref(&row)).unwrap();
        let back: Vec<CheckRow> = super::super::file::read_all(&path).unwrap();
        assert_eq!(back, vec![row]);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(",denied,"), "{text}");
        assert!(text.lines().nth(1).unwrap().contains(",upload,"), "{text}");
        assert_eq!(LevelVerdictName::parse("held"), LevelVerdict::Held);
        assert!(LevelVerdictName::parse("maybe").known().is_none());
    }
}
