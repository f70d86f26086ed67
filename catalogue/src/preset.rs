//! The condition matrix: presets, the load profile of each, and `--only`.

use std::time::Duration;

pub use crate::cells::{BufferCell, Kind};
pub use crate::condition::Condition;
pub use crate::filter::Filter;
use crate::names::Direction;
use crate::net::Per;
pub use crate::profile::{Body, LoadProfile, UploadProfile};
use crate::reader::ReaderModel;
use crate::route::Route;
use crate::server::Server;

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
    /// The kernel's buffers: Gunicorn sync x2 and rust-sync2, direct and
    /// behind their proxy with buffering off, 2 slow readers, across
    /// `tcp_wmem` max x `tcp_rmem` max of 256KiB, 1MiB, 4MiB and 16MiB in
    /// both namespaces and both reader models, plus each stack's 0-slow
    /// baseline in namespaces at the host's buffers; 2 repetitions, every
    /// condition at veth MTU 65535.
    Buffers,
    /// Slow links: Gunicorn sync x2 and rust-sync2, direct and behind
    /// their proxy with buffering off and on, at 0 and 2 slow clients that
    /// pace their reads or read unpaced behind a link at the paced rate
    /// (2MiB/s); 3 repetitions.
    Link,
    /// Which proxies protect a blocking app: Gunicorn sync x2 direct and
    /// behind every proxy route of the lab (NGINX, pingora, Caddy, HAProxy,
    /// Varnish, Apache, H2O, Squid and Traffic Server, each buffering and
    /// not where it can), at
    /// 0, 2 and 8 slow readers, and at 0, 2 and 8
    /// slow uploaders behind each proxy's request routes; 3 repetitions.
    Proxies,
    /// HTTP/2 and TLS at the edge: Gunicorn sync x2 and rust-sync2 behind
    /// every proxy of the lab that terminates TLS and HTTP/2 (NGINX,
    /// pingora, Caddy, HAProxy, Apache, H2O and Traffic Server), buffering
    /// and not where it can, with one
    /// slow connection carrying 1, 2 and 8 slow downloads as streams, two
    /// connections of one stream each, and no slow client; 3 repetitions.
    H2,
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
            Preset::Buffers => "buffers",
            Preset::Link => "link",
            Preset::Proxies => "proxies",
            Preset::H2 => "h2",
        }
    }

    /// Runs per condition unless `--runs` says otherwise.
    pub fn default_runs(self) -> u32 {
        match self {
            Preset::Quick => 1,
            Preset::Buffers => 2,
            _ => 3,
        }
    }

    /// The load of every run of this preset. `seed` and `replica` read
    /// as the original's client did (`streamreader`, limit 16 KiB); the
    /// others keep the `strict` reader their committed examples were
    /// measured with (at this host's default `tcp_wmem` both readers give
    /// the same figures; see the book, "The load generator and the reader models").
    pub fn profile(self) -> LoadProfile {
        match self {
            // Buffers' conditions name their own reader; its baselines have
            // no slow reader.
            Preset::Seed | Preset::Replica | Preset::Buffers => LoadProfile::experiment(),
            Preset::Quick => LoadProfile::quick(),
            Preset::Cross
            | Preset::Servers
            | Preset::Upload
            | Preset::Link
            | Preset::Proxies
            | Preset::H2 => LoadProfile {
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
                        out.push(Condition::new(server, route, slow, direction));
                    }
                }
            }
            out
        };
        let grid = |servers: &[Server], routes: &[Route], slows: &[u32]| {
            grid_in(Direction::Download, servers, routes, slows)
        };
        let pairs_at = |direction, gunicorn: &[Route], replica: &[Route], slows: &[u32]| {
            let mut c = grid_in(direction, &[Server::GunicornSync2], gunicorn, slows);
            c.extend(grid_in(direction, &[Server::RustSync2], replica, slows));
            c
        };
        let pairs = |direction, gunicorn: &[Route], replica: &[Route]| {
            pairs_at(direction, gunicorn, replica, &[0, 2])
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
            Preset::Proxies => {
                let gunicorn = [Server::GunicornSync2];
                let mut c = grid(&gunicorn, &Route::PROXIES, &SERVERS_SLOW);
                c.extend(grid_in(
                    Direction::Upload,
                    &gunicorn,
                    &Route::PROXIES_UPLOAD,
                    &SERVERS_SLOW,
                ));
                c
            }
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
            Preset::Buffers => {
                let stacks = pairs_at(
                    Direction::Download,
                    &[Route::Direct, Route::NginxOff],
                    &[Route::Direct, Route::PingoraOff],
                    &[2],
                );
                let mut out = Vec::new();
                for &c in &stacks {
                    for reader in [ReaderModel::Strict, ReaderModel::Streamreader] {
                        for wmem in BUFFER_GRID {
                            for rmem in BUFFER_GRID {
                                out.push(Condition {
                                    reader: Some(reader),
                                    buffers: BufferCell {
                                        wmem: Some(wmem),
                                        rmem: Some(rmem),
                                        mtu: Some(BUFFERS_MTU),
                                    },
                                    ..c
                                });
                            }
                        }
                    }
                }
                // The cross-check's verdict (and model.csv's) needs each
                // stack's 0-slow p95 in the same network: without slow
                // readers neither the cell nor the reader acts (a 12-byte
                // /fast answer fits every buffer), so one baseline in
                // namespaces at the host's buffers serves every cell.
                out.extend(stacks.iter().map(|c| Condition {
                    kind: Some(Kind::Pace),
                    buffers: BufferCell {
                        mtu: Some(BUFFERS_MTU),
                        ..BufferCell::default()
                    },
                    ..c.at(0)
                }));
                out
            }
            Preset::H2 => {
                let mut out = Vec::new();
                for server in [Server::GunicornSync2, Server::RustSync2] {
                    for route in Route::H2 {
                        out.push(Condition::new(server, route, 0, Direction::Download));
                        for (slow, streams_per_conn) in H2_STREAMS {
                            out.push(Condition {
                                streams_per_conn,
                                ..Condition::new(server, route, slow, Direction::Download)
                            });
                        }
                    }
                }
                out
            }
            Preset::Link => {
                let mut out = Vec::new();
                for c in pairs(
                    Direction::Download,
                    &[Route::Direct, Route::NginxOff, Route::NginxOn],
                    &[Route::Direct, Route::PingoraOff, Route::PingoraOn],
                ) {
                    let link = Kind::Link {
                        rate: LINK_RATE,
                        per: Per::Client,
                    };
                    for kind in [Kind::Pace, link] {
                        out.push(Condition {
                            kind: Some(kind),
                            ..c
                        });
                    }
                }
                out
            }
        }
    }
}

/// The slow downloads and streams per connection of the `h2` preset: one
/// connection carrying 1, 2 and 8 streams, and 2 connections of one
/// stream each, which hold as many handlers as the one connection of 2
/// behind a proxy that does not buffer.
pub const H2_STREAMS: [(u32, u32); 4] = [(1, 1), (2, 2), (8, 8), (2, 1)];

/// The `tcp_wmem` max and `tcp_rmem` max of the `buffers` grid: 256 KiB,
/// 1 MiB, 4 MiB (this host's `tcp_wmem` default) and 16 MiB.
pub const BUFFER_GRID: [u64; 4] = [256 << 10, 1 << 20, 4 << 20, 16 << 20];

/// The veth MTU of every `buffers` condition: 65535, the veth's maximum,
/// near the 65536 of the loopback the original experiment ran on. The
/// kernel grows a send buffer from the congestion window counted in
/// segments (`tcp_sndbuf_expand`), so at the veth default 1500 an app's
/// send buffer stops near 1 MiB whatever `tcp_wmem` allows, and the grid
/// would measure the MTU, not `tcp_wmem`.
pub const BUFFERS_MTU: u32 = 65535;

/// The `link` preset's link: the paced readers' rate, 2 MiB/s, per slow
/// client (each behind its own link of that rate, as the paced readers
/// each read at it).
pub const LINK_RATE: u64 = 2 << 20;

/// The load `--timeout` of the `headers` preset.
pub const HEADERS_TIMEOUT: Duration = Duration::from_secs(3);

/// The slow connections of the `servers` preset: none, the original's two,
/// and eight, more than any fixed pool of the experiment's servers but
/// Gunicorn gevent's and Granian's.
pub const SERVERS_SLOW: [u32; 3] = [0, 2, 8];

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
    /// The reader this run's slow readers use (`runs.csv` `reader`).
    pub fn reader(&self) -> ReaderModel {
        self.profile.reader_of(&self.condition)
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
            .filter(|c| filter.is_none_or(|f| f.matches(c, &preset.profile())))
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
    fn proxies_is_gunicorn_behind_every_proxy_route_both_ways() {
        let c = Preset::Proxies.conditions();
        let down: Vec<&Condition> = c
            .iter()
            .filter(|c| c.direction == Direction::Download)
            .collect();
        let up: Vec<&Condition> = c
            .iter()
            .filter(|c| c.direction == Direction::Upload)
            .collect();
        assert_eq!(down.len(), Route::PROXIES.len() * 3);
        // direct, nginx-reqbuf-off/on, pingora-reqbuf-off/on, caddy,
        // caddy-reqbuf, haproxy, haproxy-reqbuf, varnish, varnish-reqbuf,
        // apache, apache-reqbuf, h2o, squid, ats, ats-reqbuf
        assert_eq!(up.len(), 17 * 3);
        assert!(c.iter().all(|c| c.server == Server::GunicornSync2));
        for r in [
            Route::Caddy,
            Route::CaddyBuf,
            Route::Haproxy,
            Route::ApacheBuf,
            Route::H2o,
        ] {
            assert!(down.iter().any(|c| c.route == r && c.slow == 8), "{r}");
        }
        assert!(up.iter().any(|c| c.route == Route::CaddyReqbuf));
        assert!(!up.iter().any(|c| c.route == Route::CaddyBuf));
        assert_eq!(plan(&[Preset::Proxies], None, None).len(), c.len() * 3);
    }

    #[test]
    fn h2_is_one_connection_of_many_streams_behind_the_h2_edge() {
        let c = Preset::H2.conditions();
        // Two servers, twelve routes (NGINX and pingora buffering off and
        // on, Caddy, Apache and Traffic Server streaming and buffering,
        // HAProxy and H2O), a baseline and four shapes.
        assert_eq!(c.len(), 2 * 12 * 5);
        assert!(c.iter().all(|c| c.route.edge().http2 && c.route.edge().tls));
        let shapes: Vec<(u32, u32, u32)> = c
            .iter()
            .filter(|c| c.server == Server::GunicornSync2 && c.route == Route::NginxH2Off)
            .map(|c| (c.slow, c.streams_per_conn, c.connections()))
            .collect();
        assert_eq!(
            shapes,
            [(0, 1, 0), (1, 1, 1), (2, 2, 1), (8, 8, 1), (2, 1, 2)]
        );
        assert_eq!(c[2].to_string(), "gunicorn-sync2 nginx-h2-off 2 slow spc=2");
        let spc2 = "spc=2".parse::<Filter>().unwrap();
        let runs = plan(&[Preset::H2], None, Some(&spc2));
        assert_eq!(runs.len(), 2 * 12 * 3);
        assert!(runs.iter().all(|r| r.condition.streams_per_conn == 2));
        assert_eq!(plan(&[Preset::H2], None, None).len(), c.len() * 3);
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
            let want = u32::from(direction == Direction::Upload) * 2;
            assert_eq!(two.condition.uploaders(), want);
            assert_eq!(two.condition.slowloris(), 2 - want);
            let up = two.profile.upload;
            assert_eq!((up.bytes, up.rate), (16 << 20, 2 << 20));
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
        // An upload row read back from runs.csv records the (idle) reader;
        // its label shows what acts on slow uploaders only.
        let read_back = Condition {
            reader: Some(ReaderModel::Strict),
            buffers: BufferCell {
                mtu: Some(1500),
                ..BufferCell::default()
            },
            kind: Some(Kind::Pace),
            ..c
        };
        assert_eq!(read_back.dims_label(), " kind=pace mtu=1500");
        let download = Condition {
            direction: Direction::Download,
            ..read_back
        };
        assert_eq!(download.dims_label(), " reader=strict kind=pace mtu=1500");
        let p = LoadProfile::experiment();
        assert_eq!(p.expected_duration_of(&c), Duration::from_millis(9250));
    }

    #[test]
    fn buffers_is_the_grid_of_both_readers_at_2_slow_plus_one_baseline_per_stack() {
        let runs = plan(&[Preset::Buffers], None, None);
        let stacks = 4;
        let cells = BUFFER_GRID.len() * BUFFER_GRID.len();
        assert_eq!(runs.len(), (stacks * cells * 2 + stacks) * 2);
        let rep1: Vec<&RunSpec> = runs.iter().filter(|r| r.repetition == 1).collect();
        let mut distinct: Vec<Condition> = rep1.iter().map(|r| r.condition).collect();
        distinct.sort();
        distinct.dedup();
        assert_eq!(
            distinct.len(),
            rep1.len(),
            "no two runs of a repetition share a cell"
        );
        for r in &rep1 {
            let c = r.condition;
            let spec = c
                .net_spec(None)
                .unwrap()
                .expect("every buffers run is in namespaces");
            assert_eq!(spec.link, None);
            assert_eq!(spec.mtu, Some(BUFFERS_MTU), "the original's loopback MTU");
            match c.slow {
                2 => {
                    assert!(
                        c.reader.is_some() && c.buffers.wmem.is_some() && c.buffers.rmem.is_some()
                    );
                    assert_eq!(spec.sysctls.len(), 2);
                    assert!(
                        spec.sysctls.iter().all(|s| s.side.is_none()),
                        "both namespaces"
                    );
                }
                0 => {
                    assert_eq!(
                        (c.kind, c.buffers),
                        (
                            Some(Kind::Pace),
                            BufferCell {
                                mtu: Some(BUFFERS_MTU),
                                ..BufferCell::default()
                            }
                        )
                    );
                    assert!(spec.sysctls.is_empty(), "the host's buffers");
                }
                n => panic!("{n} slow"),
            }
            assert!(matches!(
                (c.server, c.route),
                (Server::GunicornSync2, Route::Direct | Route::NginxOff)
                    | (Server::RustSync2, Route::Direct | Route::PingoraOff)
            ));
        }
        let f: Filter =
            "server=rust-sync2,route=direct,slow=2,reader=strict,wmem=256K,wmem=16M,rmem=1M"
                .parse()
                .unwrap();
        let picked = plan(&[Preset::Buffers], Some(1), Some(&f));
        let names: Vec<String> = picked.iter().map(|r| r.condition.to_string()).collect();
        assert_eq!(
            names,
            [
                "rust-sync2 direct 2 slow reader=strict wmem=256KiB rmem=1MiB mtu=65535",
                "rust-sync2 direct 2 slow reader=strict wmem=16MiB rmem=1MiB mtu=65535"
            ]
        );
        let host: Filter = "wmem=host".parse().unwrap();
        assert_eq!(plan(&[Preset::Buffers], Some(1), Some(&host)).len(), stacks);
    }

    #[test]
    fn link_is_both_kinds_of_every_stack_at_0_and_2_slow() {
        let runs = plan(&[Preset::Link], None, None);
        assert_eq!(runs.len(), 2 * 3 * 2 * 2 * 3);
        let link: Filter = "kind=link".parse().unwrap();
        let pace: Filter = "kind=pace".parse().unwrap();
        let l = plan(&[Preset::Link], Some(1), Some(&link));
        let p = plan(&[Preset::Link], Some(1), Some(&pace));
        assert_eq!((l.len(), p.len()), (12, 12));
        for r in &l {
            let spec = r.condition.net_spec(None).unwrap().unwrap();
            assert_eq!(
                spec.link,
                Some(crate::net::Link::at(LINK_RATE).per(Per::Client))
            );
            assert_eq!(
                crate::net::reader_rate(Some(&spec), r.profile.slow_rate),
                common::bounds::MAX_SLOW_RATE,
                "readers behind a link are unpaced"
            );
        }
        for r in &p {
            let c = r.condition;
            let spec = c.net_spec(None).unwrap();
            assert_eq!(
                spec,
                Some(crate::net::NetSpec::default().for_load(c.direction, c.slow)),
                "paced, in namespaces, nothing but the load's clients"
            );
        }
        assert_eq!(
            l[1].condition.to_string(),
            "gunicorn-sync2 direct 2 slow kind=link(2MiB/s per client)"
        );
        // A preset without kinds is pace to the filter.
        assert_eq!(plan(&[Preset::Quick], None, Some(&pace)).len(), 12);
        assert!(plan(&[Preset::Quick], None, Some(&link)).is_empty());
    }

    #[test]
    fn the_reader_term_sees_the_preset_s_reader() {
        let strict: Filter = "reader=strict".parse().unwrap();
        assert!(plan(&[Preset::Seed], None, Some(&strict)).is_empty());
        assert_eq!(plan(&[Preset::Quick], None, Some(&strict)).len(), 12);
        let seed = plan(&[Preset::Seed], Some(1), None);
        assert!(seed.iter().all(|r| r.reader() == ReaderModel::Streamreader));
        let strict_cells = plan(&[Preset::Buffers], Some(1), Some(&strict));
        assert!(
            strict_cells
                .iter()
                .all(|r| r.reader() == ReaderModel::Strict)
        );
        assert_eq!(strict_cells.len(), 4 * 16);
        for bad in ["reader=fast", "wmem=lots", "kind=wire", "cell=1M"] {
            let e = bad.parse::<Filter>().unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
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
