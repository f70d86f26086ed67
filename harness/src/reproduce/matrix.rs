//! The condition matrix: presets, the load profile of each, and `--only`.

use std::time::Duration;

use loadgen::ReaderModel;

use crate::results::Direction;
use crate::stack::launch::Body;
use crate::stack::{Route, Server};

/// A named set of runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum Preset {
    /// Exactly the original's 30 runs (Gunicorn, NGINX).
    Seed,
    /// The same matrix with rust-sync2 and pingora, plus rust-threads4.
    Replica,
    /// Every server x every route at 0 and 2 slow connections.
    Cross,
    /// A few minutes: Gunicorn and the Rust replica, direct and behind
    /// their proxy with buffering on and off, at 0 and 2 slow, shortened.
    Quick,
    /// Every server (Gunicorn's, the Rust replicas', Uvicorn, Waitress,
    /// Granian) direct at 0, 2 and 8 slow connections: which servers block.
    Servers,
    /// The request direction: Gunicorn sync x2 and rust-sync2, direct and
    /// behind their proxy with request buffering off and on, at 0 and 2
    /// slow uploaders.
    Upload,
    /// Slowloris: the same servers, direct and behind each proxy, at 0 and
    /// 2 clients that never finish their request head.
    Headers,
}

impl Preset {
    pub fn name(self) -> &'static str {
        match self {
            Preset::Seed => "seed",
            Preset::Replica => "replica",
            Preset::Cross => "cross",
            Preset::Quick => "quick",
            Preset::Servers => "servers",
            Preset::Upload => "upload",
            Preset::Headers => "headers",
        }
    }

    /// Runs per condition unless `--runs` says otherwise.
    pub fn default_runs(self) -> u32 {
        match self {
            Preset::Quick => 1,
            _ => 3,
        }
    }

    /// The load of every run of this preset. `seed` and `replica` read
    /// as the original's client did (`streamreader`, limit 16 KiB); the
    /// others keep the `strict` reader their committed examples were
    /// measured with (at this host's default `tcp_wmem` both readers give
    /// the same figures; see README, "The reader models").
    pub fn profile(self) -> LoadProfile {
        match self {
            Preset::Seed | Preset::Replica => LoadProfile::experiment(),
            Preset::Quick => LoadProfile::quick(),
            Preset::Cross | Preset::Servers | Preset::Upload => LoadProfile {
                reader: ReaderModel::Strict,
                ..LoadProfile::experiment()
            },
            Preset::Headers => LoadProfile {
                reader: ReaderModel::Strict,
                // The load generator lets the slowloris clients go only once
                // every /fast request has ended: a short timeout ends a
                // blocked /fast request soon after the schedule.
                timeout: HEADERS_TIMEOUT,
                ..LoadProfile::experiment()
            },
        }
    }

    /// The conditions, without repetitions.
    pub fn conditions(self) -> Vec<Condition> {
        let grid_in = |direction, servers: &[Server], routes: &[Route], slows: &[u32]| {
            let mut out = Vec::new();
            for &server in servers {
                for &route in routes {
                    for &slow in slows {
                        out.push(Condition {
                            server,
                            route,
                            slow,
                            direction,
                        });
                    }
                }
            }
            out
        };
        let grid = |servers: &[Server], routes: &[Route], slows: &[u32]| {
            grid_in(Direction::Download, servers, routes, slows)
        };
        let pairs = |direction, gunicorn: &[Route], replica: &[Route]| {
            let mut c = grid_in(direction, &[Server::GunicornSync2], gunicorn, &[0, 2]);
            c.extend(grid_in(direction, &[Server::RustSync2], replica, &[0, 2]));
            c
        };
        match self {
            Preset::Seed => {
                let mut c = grid(
                    &[Server::GunicornSync2],
                    &[Route::Direct, Route::NginxOff, Route::NginxOn],
                    &[0, 1, 2],
                );
                c.extend(grid(&[Server::GunicornGthread4], &[Route::Direct], &[2]));
                c
            }
            Preset::Replica => {
                let mut c = grid(
                    &[Server::RustSync2],
                    &[Route::Direct, Route::PingoraOff, Route::PingoraOn],
                    &[0, 1, 2],
                );
                c.extend(grid(&[Server::RustThreads4], &[Route::Direct], &[2]));
                c
            }
            Preset::Cross => grid(&Server::EXPERIMENT, &Route::RESPONSE, &[0, 2]),
            Preset::Servers => grid(&Server::ALL, &[Route::Direct], &SERVERS_SLOW),
            Preset::Quick => {
                let mut c = grid(
                    &[Server::GunicornSync2],
                    &[Route::Direct, Route::NginxOn, Route::NginxOff],
                    &[0, 2],
                );
                c.extend(grid(
                    &[Server::RustSync2],
                    &[Route::Direct, Route::PingoraOn, Route::PingoraOff],
                    &[0, 2],
                ));
                c
            }
            Preset::Upload => pairs(
                Direction::Upload,
                &[Route::Direct, Route::NginxReqbufOff, Route::NginxReqbufOn],
                &[
                    Route::Direct,
                    Route::PingoraReqbufOff,
                    Route::PingoraReqbufOn,
                ],
            ),
            Preset::Headers => pairs(
                Direction::Headers,
                &[Route::Direct, Route::NginxReqbufOff, Route::NginxReqbufOn],
                &[
                    Route::Direct,
                    Route::PingoraReqbufOff,
                    Route::PingoraReqbufOn,
                ],
            ),
        }
    }
}

/// The load `--timeout` of the `headers` preset.
pub const HEADERS_TIMEOUT: Duration = Duration::from_secs(3);

/// The slow connections of the `servers` preset: none, the original's two,
/// and eight, more than any fixed pool of the experiment's servers but
/// Gunicorn gevent's and Granian's.
pub const SERVERS_SLOW: [u32; 3] = [0, 2, 8];

/// One cell of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct Condition {
    pub server: Server,
    pub route: Route,
    pub slow: u32,
    /// What the `slow` clients do: read `/large` slowly, upload slowly, or
    /// send their request head slowly.
    pub direction: Direction,
}

impl Condition {
    /// The same stack and direction with no slow clients: its baseline.
    pub fn at(self, slow: u32) -> Condition {
        Condition { slow, ..self }
    }

    /// The load generator's request-direction clients of this condition.
    pub fn upload_args(&self, profile: &LoadProfile) -> loadgen::upload_args::UploadArgs {
        let n = self.slow as usize;
        loadgen::upload_args::UploadArgs {
            slow_upload: if self.direction == Direction::Upload {
                n
            } else {
                0
            },
            slow_headers: if self.direction == Direction::Headers {
                n
            } else {
                0
            },
            upload_bytes: common::units::Size(profile.upload.bytes),
            upload_rate: common::units::Size(profile.upload.rate),
            ..loadgen::upload_args::UploadArgs::default()
        }
    }

    /// Slow readers of `/large` (none in the request direction).
    pub fn readers(&self) -> u32 {
        if self.direction == Direction::Download {
            self.slow
        } else {
            0
        }
    }
}

impl std::fmt::Display for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.direction {
            Direction::Download => "slow",
            Direction::Upload => "slow uploads",
            Direction::Headers => "slowloris",
        };
        write!(f, "{} {} {} {what}", self.server, self.route, self.slow)
    }
}

/// The slow uploads of a run (`slowlab load --upload-bytes/--upload-rate`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct UploadProfile {
    pub bytes: u64,
    /// Bytes per second of each slow uploader.
    pub rate: u64,
}

/// The load of one run, passed to `slowlab load` and to the servers.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct LoadProfile {
    pub body: Body,
    /// Bytes per second of each slow reader.
    pub slow_rate: u64,
    pub rcvbuf: u64,
    pub read_chunk: u64,
    /// How the slow readers read (`slowlab load --reader`).
    pub reader: ReaderModel,
    pub fast_rate: f64,
    #[serde(with = "secs")]
    pub fast_duration: Duration,
    #[serde(with = "secs")]
    pub fast_start: Duration,
    #[serde(with = "secs")]
    pub timeout: Duration,
    /// The slow uploads of request-direction conditions.
    pub upload: UploadProfile,
}

mod secs {
    use std::time::Duration;

    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

impl LoadProfile {
    /// The original's values, its reader included.
    pub fn experiment() -> Self {
        LoadProfile {
            body: Body {
                large_bytes: 16 << 20,
                chunk_bytes: 64 << 10,
            },
            slow_rate: 2 << 20,
            rcvbuf: 8 << 10,
            read_chunk: 16 << 10,
            reader: ReaderModel::Streamreader,
            fast_rate: 8.0,
            fast_duration: Duration::from_secs(9),
            fast_start: Duration::from_millis(250),
            timeout: Duration::from_secs(30),
            upload: UploadProfile {
                bytes: 16 << 20,
                rate: 2 << 20,
            },
        }
    }

    /// Shorter runs that still show the phenomenon: the body stays 16 MiB,
    /// four times the kernel's largest send buffer here, so a blocked worker
    /// stays blocked; the readers go twice as fast (about 4 s a download)
    /// and `/fast` runs for 3 s instead of 9.
    pub fn quick() -> Self {
        LoadProfile {
            slow_rate: 4 << 20,
            reader: ReaderModel::Strict,
            fast_duration: Duration::from_secs(3),
            ..Self::experiment()
        }
    }

    /// About how long the load lasts: the later of the last /fast request
    /// and the slow downloads.
    pub fn expected_duration(&self, slow: u32) -> Duration {
        let fast = self.fast_start + self.fast_duration;
        if slow == 0 {
            return fast;
        }
        let download =
            Duration::from_secs_f64(self.body.large_bytes as f64 / self.slow_rate as f64);
        fast.max(download)
    }

    /// [`Self::expected_duration`] of a condition in any direction: slow
    /// uploads last their size over their rate; slowloris clients as long
    /// as `/fast`, then up to the timeout.
    pub fn expected_duration_of(&self, c: &Condition) -> Duration {
        let fast = self.fast_start + self.fast_duration;
        match c.direction {
            _ if c.slow == 0 => fast,
            Direction::Download => self.expected_duration(c.slow),
            Direction::Upload => fast.max(Duration::from_secs_f64(
                self.upload.bytes as f64 / self.upload.rate as f64,
            )),
            Direction::Headers => fast + self.timeout,
        }
    }
}

/// `--only`: comma-separated terms that must all match a condition. A term
/// is a server name, a route name, `slow=N`, or `server=`/`route=` with a
/// name.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    terms: Vec<Term>,
}

#[derive(Debug, Clone, PartialEq)]
enum Term {
    Server(Server),
    Route(Route),
    Slow(u32),
}

impl std::str::FromStr for Filter {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut terms = Vec::new();
        for raw in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let term = match raw.split_once('=') {
                Some(("server", v)) => Term::Server(v.parse()?),
                Some(("route", v)) => Term::Route(v.parse()?),
                Some(("slow", v)) => Term::Slow(
                    v.parse()
                        .map_err(|_| format!("`slow={v}`: expected a number"))?,
                ),
                Some((k, _)) => {
                    return Err(format!("unknown filter key `{k}` (server, route, slow)"));
                }
                None => match (raw.parse::<Server>(), raw.parse::<Route>()) {
                    (Ok(s), _) => Term::Server(s),
                    (_, Ok(r)) => Term::Route(r),
                    _ => {
                        return Err(format!(
                            "`{raw}` is neither a server nor a route (or use slow=N)"
                        ));
                    }
                },
            };
            terms.push(term);
        }
        if terms.is_empty() {
            return Err("empty filter".into());
        }
        Ok(Filter { terms })
    }
}

impl Filter {
    pub fn matches(&self, c: &Condition) -> bool {
        // Terms of the same kind are alternatives (`rust-sync2,gunicorn-sync2`);
        // terms of different kinds must all hold.
        let kinds = [
            self.terms
                .iter()
                .filter_map(|t| match t {
                    Term::Server(s) => Some(*s == c.server),
                    _ => None,
                })
                .collect::<Vec<_>>(),
            self.terms
                .iter()
                .filter_map(|t| match t {
                    Term::Route(r) => Some(*r == c.route),
                    _ => None,
                })
                .collect(),
            self.terms
                .iter()
                .filter_map(|t| match t {
                    Term::Slow(n) => Some(*n == c.slow),
                    _ => None,
                })
                .collect(),
        ];
        kinds.iter().all(|k| k.is_empty() || k.iter().any(|&m| m))
    }
}

/// One run of the matrix.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunSpec {
    /// `001`, `002`, ... in execution order.
    pub run_id: String,
    pub preset: Preset,
    pub condition: Condition,
    pub repetition: u32,
    pub profile: LoadProfile,
}

impl RunSpec {
    /// The identity columns every row of this run starts with.
    pub fn ident(&self) -> crate::results::Ident {
        crate::results::Ident {
            run_id: self.run_id.clone(),
            server: self.condition.server.into(),
            route: self.condition.route.into(),
            slow_clients: self.condition.slow,
            repetition: self.repetition,
        }
    }
}

/// Expands presets into runs. Repetitions are the outer loop, so that slow
/// drift of the machine spreads over every condition instead of hitting one.
pub fn plan(presets: &[Preset], runs: Option<u32>, filter: Option<&Filter>) -> Vec<RunSpec> {
    let mut out = Vec::new();
    for &preset in presets {
        let conditions: Vec<Condition> = preset
            .conditions()
            .into_iter()
            .filter(|c| filter.is_none_or(|f| f.matches(c)))
            .collect();
        for repetition in 1..=runs.unwrap_or(preset.default_runs()) {
            for &condition in &conditions {
                out.push(RunSpec {
                    run_id: String::new(),
                    preset,
                    condition,
                    repetition,
                    profile: preset.profile(),
                });
            }
        }
    }
    for (i, r) in out.iter_mut().enumerate() {
        r.run_id = format!("{:03}", i + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_is_the_original_thirty_runs() {
        let runs = plan(&[Preset::Seed], None, None);
        assert_eq!(runs.len(), 30);
        let gthread = runs
            .iter()
            .filter(|r| r.condition.server == Server::GunicornGthread4)
            .count();
        assert_eq!(gthread, 3);
        assert!(runs.iter().all(|r| r.profile == LoadProfile::experiment()));
        assert_eq!(runs[0].run_id, "001");
        assert_eq!(runs[29].run_id, "030");
    }

    #[test]
    fn replica_mirrors_seed() {
        let runs = plan(&[Preset::Replica], None, None);
        assert_eq!(runs.len(), 30);
        assert!(runs.iter().all(|r| !r.condition.server.is_gunicorn()));
        assert!(
            runs.iter()
                .all(|r| !matches!(r.condition.route, Route::NginxOn | Route::NginxOff))
        );
    }

    #[test]
    fn seed_and_replica_read_as_the_original_and_the_others_strictly() {
        for preset in [
            Preset::Seed,
            Preset::Replica,
            Preset::Cross,
            Preset::Quick,
            Preset::Servers,
        ] {
            let want = match preset {
                Preset::Seed | Preset::Replica => ReaderModel::Streamreader,
                _ => ReaderModel::Strict,
            };
            assert_eq!(preset.profile().reader, want, "{}", preset.name());
            let json = serde_json::to_value(preset.profile()).unwrap();
            assert_eq!(
                json["reader"],
                want.as_str(),
                "environment.json's plan says it"
            );
        }
    }

    #[test]
    fn servers_is_every_server_direct_at_0_2_and_8_slow_three_times() {
        let runs = plan(&[Preset::Servers], None, None);
        assert_eq!(runs.len(), Server::ALL.len() * 3 * 3);
        assert!(runs.iter().all(|r| r.condition.route == Route::Direct));
        let strict = LoadProfile {
            reader: ReaderModel::Strict,
            ..LoadProfile::experiment()
        };
        assert!(runs.iter().all(|r| r.profile == strict));
        for s in Server::ALL {
            let slows: Vec<u32> = runs
                .iter()
                .filter(|r| r.condition.server == s && r.repetition == 1)
                .map(|r| r.condition.slow)
                .collect();
            assert_eq!(slows, [0, 2, 8], "{s}");
        }
        let only: Filter = "uvicorn,gunicorn-gevent2,slow=2".parse().unwrap();
        let picked = plan(&[Preset::Servers], Some(1), Some(&only));
        let names: Vec<String> = picked.iter().map(|r| r.condition.to_string()).collect();
        assert_eq!(
            names,
            ["uvicorn direct 2 slow", "gunicorn-gevent2 direct 2 slow"]
        );
    }

    #[test]
    fn cross_and_quick_sizes() {
        assert_eq!(Preset::Cross.conditions().len(), 5 * 5 * 2);
        let quick = plan(&[Preset::Quick], None, None);
        assert_eq!(quick.len(), 12);
        assert!(quick.iter().all(|r| r.repetition == 1));
    }

    #[test]
    fn upload_and_headers_presets_are_the_request_direction() {
        for (preset, direction) in [
            (Preset::Upload, Direction::Upload),
            (Preset::Headers, Direction::Headers),
        ] {
            let runs = plan(&[preset], None, None);
            assert_eq!(runs.len(), 2 * 3 * 2 * 3, "{}", preset.name());
            assert!(runs.iter().all(|r| r.condition.direction == direction));
            assert!(runs.iter().all(|r| r.condition.readers() == 0));
            let two = runs.iter().find(|r| r.condition.slow == 2).unwrap();
            let up = two.condition.upload_args(&two.profile);
            let want = usize::from(direction == Direction::Upload) * 2;
            assert_eq!(up.slow_upload, want);
            assert_eq!(up.slow_headers, 2 - want);
            assert_eq!((up.upload_bytes.0, up.upload_rate.0), (16 << 20, 2 << 20));
        }
        assert_eq!(Preset::Headers.profile().timeout, HEADERS_TIMEOUT);
        assert!(
            Preset::Upload
                .conditions()
                .iter()
                .all(|c| c.route == Route::Direct || c.route.request_body().is_some())
        );
        // The download presets keep their conditions.
        assert!(
            plan(&[Preset::Seed, Preset::Quick], None, None)
                .iter()
                .all(|r| r.condition.direction == Direction::Download)
        );
        let c = Preset::Upload.conditions()[1];
        assert_eq!(c.to_string(), "gunicorn-sync2 direct 2 slow uploads");
        let p = LoadProfile::experiment();
        assert_eq!(p.expected_duration_of(&c), Duration::from_millis(9250));
    }

    #[test]
    fn filters() {
        let f: Filter = "rust-sync2,slow=2".parse().unwrap();
        let runs = plan(&[Preset::Replica], Some(1), Some(&f));
        assert_eq!(runs.len(), 3);
        let f: Filter = "rust-sync2,gunicorn-sync2,direct".parse().unwrap();
        let runs = plan(&[Preset::Quick], None, Some(&f));
        assert_eq!(runs.len(), 4);
        assert!("nonsense".parse::<Filter>().is_err());
        assert!("slow=x".parse::<Filter>().is_err());
    }

    #[test]
    fn durations() {
        let p = LoadProfile::experiment();
        assert_eq!(p.expected_duration(0), Duration::from_millis(9250));
        assert_eq!(p.expected_duration(2), Duration::from_millis(9250));
        let q = LoadProfile::quick();
        assert_eq!(q.expected_duration(2), Duration::from_secs(4));
    }
}
