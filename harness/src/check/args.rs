//! The flags of `slowlab check` and their value parsers.

use std::path::PathBuf;
use std::time::Duration;

use catalogue::Route;
use common::bounds::{f64_in, size_in};
use common::units::{Size, parse_duration};
use lab::cgroup::Caps;
use lab::stack::policy::CapPlan;
use schema::Direction;

/// `slowlab check` arguments. One of `--target`, `--server-cmd` and
/// `--server` names the server (checked before anything starts, with one
/// line naming all three).
///
/// The request direction's flags are `slowlab load`'s own ([`UploadArgs`]);
/// its counts (`--slow-upload`, `--slow-headers`) are each level's, so they
/// are hidden here and refused when given.
///
/// [`UploadArgs`]: loadgen::upload_args::UploadArgs
#[derive(Debug, Clone, clap::Args)]
#[command(
    mut_arg("slow_upload", |a| a.hide(true)),
    mut_arg("slow_headers", |a| a.hide(true))
)]
pub struct CheckArgs {
    /// URL of a server that already runs, e.g. http://127.0.0.1:8000
    /// (loopback only unless --allow-remote).
    #[arg(long, conflicts_with_all = ["server_cmd", "server"])]
    pub target: Option<String>,
    /// One of the lab's own servers instead of yours (gunicorn-sync2,
    /// uvicorn, rust-sync2, ...; as `reproduce --only` names them), started
    /// as `reproduce` starts it; its large path is /large unless
    /// --large-path says otherwise.
    #[arg(long, conflicts_with = "server_cmd")]
    pub server: Option<catalogue::Server>,
    /// Shell command that starts your server; slowlab fills in {host}, the
    /// address it must bind, and {port}, a port free there: 127.0.0.1;
    /// with --netns the command runs in the server namespace, and {host}
    /// is its 198.18.0.1 on the direct route, its own 127.0.0.1 behind a
    /// --through proxy. Its whole process group is stopped afterwards.
    #[arg(long, value_name = "CMD")]
    pub server_cmd: Option<String>,
    /// Working directory of --server-cmd.
    #[arg(long, requires = "server_cmd")]
    pub server_dir: Option<PathBuf>,
    /// A path that answers 200 with a large body (needed with --direction
    /// download, the default, except with --server, whose is /large); a
    /// body without a Content-Length (chunked, or ended by the close) is
    /// downloaded once to measure it.
    #[arg(long)]
    pub large_path: Option<String>,
    /// Which way the slow clients are slow: download (slow readers of
    /// --large-path), upload (slow uploaders that POST --upload-path) or
    /// headers (slowloris clients that never finish their request head).
    #[arg(long, default_value = "download", value_parser = direction_arg)]
    pub direction: Direction,
    /// The uploaders' and slowloris clients' flags, as `slowlab load`
    /// takes them.
    #[command(flatten)]
    pub upload: loadgen::upload_args::UploadArgs,
    /// A quick path, called open-loop during every level.
    #[arg(long, default_value = "/fast")]
    pub fast_path: String,
    /// The most slow clients to try (1 to 25000).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=common::bounds::MAX_SLOW_READERS as i64))]
    pub max_slow: u32,
    /// Behind a --through route whose edge speaks HTTP/2 (the `-h2`
    /// routes): how many slow downloads share one connection, as streams
    /// (1 to 1000; a proxy runs at most 100 to 250 of them at once, and the
    /// rest wait); on every other route each has its own.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub streams_per_conn: u32,
    /// Read rate of each slow reader, bytes per second (1 to 10GiB);
    /// default: the lowest rate at which a reader still holds its handler
    /// at the end of a level (from the large path's size, the kernel's
    /// buffers and --level-duration), which costs the load generator
    /// least. Give your clients' real rate to check at it.
    #[arg(long, value_parser = size_in(1, loadgen::config::MAX_SLOW_RATE))]
    pub slow_rate: Option<Size>,
    /// SO_RCVBUF requested for slow readers before connect (0 to 1GiB).
    #[arg(long, default_value = "8KiB", value_parser = size_in(0, loadgen::config::MAX_RCVBUF))]
    pub rcvbuf: Size,
    /// How each slow reader reads: strict (one recv at each pacing
    /// deadline) or streamreader (asyncio's StreamReader, limit 16KiB), as
    /// `slowlab load --reader`.
    #[arg(long, value_enum, default_value = "strict")]
    pub reader: loadgen::ReaderModel,
    /// /fast requests per second (0 to 10000); a level needs at least 10
    /// of them in --level-duration for its p95.
    #[arg(long, default_value_t = 8.0, value_parser = f64_in(0.0, loadgen::config::MAX_FAST_RATE))]
    pub fast_rate: f64,
    /// How long the fast path is called at each level (200ms to 10min).
    #[arg(long, default_value = "5s", value_parser = level_duration_arg)]
    pub level_duration: Duration,
    /// How long the server may take to answer its first request before
    /// the check gives up on it (1s to 10min): a server or proxy that
    /// slowlab starts, to answer --fast-path; any server, to begin its
    /// answer to the pre-flight's GET --large-path or POST --upload-path.
    #[arg(
        long,
        default_value = "20s",
        value_parser = common::bounds::duration_in(Duration::from_secs(1), Duration::from_secs(600))
    )]
    pub ready_timeout: Duration,
    /// A level is held when its p95 is at most 10x the baseline or the
    /// baseline plus this, whichever is larger (0ms to 500ms): room for
    /// the scheduling noise of a busy machine.
    #[arg(
        long,
        default_value = "20ms",
        value_parser = common::bounds::duration_in(Duration::ZERO, Duration::from_millis(500))
    )]
    pub noise_floor: Duration,
    /// Also check behind these proxy routes (comma-separated, or the flag
    /// repeated), each started by slowlab with the experiment's config:
    /// nginx-off, nginx-on, pingora-off, pingora-on, caddy, caddy-buf,
    /// haproxy, varnish, apache, apache-buf, h2o, squid, squid-buf, ats,
    /// ats-buf, and the same proxies terminating TLS and HTTP/2, their
    /// clients over TLS with HTTP/2: nginx-h2-off, nginx-h2-on,
    /// pingora-h2-off, pingora-h2-on, caddy-h2, caddy-h2-buf, haproxy-h2,
    /// apache-h2, apache-h2-buf, h2o-h2, ats-h2, ats-h2-buf; or a request-direction
    /// route (haproxy-reqbuf and varnish-reqbuf among them);
    /// with --direction upload or headers a route's buffering is request
    /// buffering (nginx-on is nginx-reqbuf-on, caddy-buf is caddy-reqbuf,
    /// ats-buf is ats-reqbuf).
    #[arg(long, value_delimiter = ',', value_name = "ROUTE", value_parser = through_arg)]
    pub through: Vec<Route>,
    /// Also check behind your own proxy with your own config: a shell
    /// command that starts it listening on {host}:{port} (a free port slowlab
    /// fills in) and forwarding to {upstream}, the server's IP:port. It is
    /// started, probed with --fast-path and stopped (its whole process
    /// group) as --server-cmd is, in the proxy's cgroup; its output goes to
    /// proxy.out and proxy.err.
    #[arg(long, value_name = "CMD")]
    pub through_cmd: Option<String>,
    /// What the --through-cmd route is called in the answer, check.csv and
    /// --gate (letters, digits, `-`, `_`; default `through-cmd`).
    #[arg(long, requires = "through_cmd", value_parser = label_arg)]
    pub through_label: Option<String>,
    /// The routes whose verdicts decide the exit status (comma-separated:
    /// direct, or its --label, and the --through routes); default: every
    /// route checked. A team that deploys behind a proxy gates on it and
    /// still sees direct.
    #[arg(long, value_delimiter = ',', value_name = "ROUTE")]
    pub gate: Vec<String>,
    /// What the route to the server itself is called in the answer and in
    /// check.csv (letters, digits, `-`, `_`; default `direct`, or `target`
    /// with --target).
    #[arg(long, value_parser = label_arg)]
    pub label: Option<String>,
    /// How many times the boundary levels (the last one held and the first
    /// one denied) are measured, 1 to 10: the answer says how many agreed,
    /// and a boundary that does not repeat is a range.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=10))]
    pub repeat: u32,
    /// Cap the server's and the proxy's cgroups: app=CORES[/MEM],proxy=CORES[/MEM]
    /// (MEM defaults to the experiment's 128MiB and 96MiB), or `experiment`;
    /// loadgen=CORES[/MEM] caps the load generator too, to see what a
    /// starved tester looks like (its levels are inconclusive).
    #[arg(long, value_parser = caps_arg)]
    pub caps: Option<CapPlan>,
    /// Results directory (default results/<UTC time>-check).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print one JSON object on stdout instead of the words.
    #[arg(long)]
    pub json: bool,
    /// Allow a --target outside 127.0.0.0/8 and ::1.
    #[arg(long)]
    pub allow_remote: bool,
    /// With --server-cmd or --server: the proxy and the app run in the
    /// server namespace, {host} is its 198.18.0.1 on the direct route and
    /// its 127.0.0.1 behind a proxy, and the slow clients run in the
    /// client namespace.
    #[command(flatten)]
    pub net: lab::netns::NetnsArgs,
}

pub(super) fn level_duration_arg(s: &str) -> Result<Duration, String> {
    let v = parse_duration(s).map_err(|e| format!("{e}"))?;
    if (Duration::from_millis(200)..=Duration::from_secs(600)).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{s} is out of range (200ms to 10min)"))
    }
}

pub(super) fn direction_arg(s: &str) -> Result<Direction, String> {
    schema::names::parse_known(s, "direction")
}

pub(super) fn through_arg(s: &str) -> Result<Route, String> {
    let proxied: Vec<&str> = Route::ALL
        .iter()
        .filter(|r| r.proxy().is_some())
        .map(|r| r.name())
        .collect();
    match s.parse::<Route>() {
        Ok(Route::Direct) => Err(format!(
            "direct is always checked; name a proxy route ({})",
            proxied.join(", ")
        )),
        Ok(r) => Ok(r),
        Err(_) => Err(format!(
            "unknown route `{s}` (expected one of {})",
            proxied.join(", ")
        )),
    }
}

pub(super) fn label_arg(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.len() <= 40
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    match ok {
        true => Ok(s.to_string()),
        false => Err(format!(
            "`{s}`: a label is 1 to 40 letters, digits, `-` or `_`"
        )),
    }
}

/// The least cores a cap may give: the kernel takes no CFS quota under
/// 1 ms, a tenth of the 10 ms period the lab caps with.
pub const MIN_CAP_CORES: f64 = 0.1;

/// `experiment`, or `app=0.25[/128MiB],proxy=0.2[/96MiB]`.
pub(super) fn caps_arg(s: &str) -> Result<CapPlan, String> {
    let experiment = CapPlan::experiment();
    if s == "experiment" {
        return Ok(CapPlan {
            loadgen: None,
            ..experiment
        });
    }
    let mut plan = CapPlan::none();
    for part in s.split(',') {
        let (who, value) = part
            .split_once('=')
            .ok_or_else(|| format!("`{part}`: expected app=CORES[/MEM] or proxy=CORES[/MEM]"))?;
        let (cores, mem) = match value.split_once('/') {
            Some((c, m)) => (c, Some(m)),
            None => (value, None),
        };
        let cores: f64 = cores
            .parse()
            .ok()
            .filter(|c| (MIN_CAP_CORES..=1024.0).contains(c))
            .ok_or_else(|| format!("`{part}`: cores must be a number from 0.1 to 1024 (the kernel's least quota is 1 ms of the 10 ms period)"))?;
        let memory = |default: Option<Caps>| -> Result<u64, String> {
            match mem {
                Some(m) => m
                    .parse::<Size>()
                    .ok()
                    .map(|m| m.bytes())
                    .filter(|b| *b >= 16 << 20)
                    .ok_or_else(|| format!("`{part}`: memory must be a size of at least 16MiB")),
                None => Ok(default.map(|c| c.memory_bytes).unwrap_or(128 << 20)),
            }
        };
        let caps = |default| -> Result<Option<Caps>, String> {
            Ok(Some(Caps {
                memory_bytes: memory(default)?,
                ..Caps::new(cores, 0)
            }))
        };
        match who {
            "app" => plan.app = caps(experiment.app)?,
            "proxy" => plan.proxy = caps(experiment.proxy)?,
            "loadgen" => plan.loadgen = caps(experiment.loadgen)?,
            other => {
                return Err(format!(
                    "`{other}`: only app, proxy and loadgen can be capped"
                ));
            }
        }
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_name_cores_and_memory_per_component() {
        let p = caps_arg("app=0.5,proxy=0.25/64MiB").unwrap();
        let app = p.app.unwrap();
        assert_eq!((app.cpu_cores, app.memory_bytes), (0.5, 128 << 20));
        assert_eq!(app.quota_us(), 5000);
        let proxy = p.proxy.unwrap();
        assert_eq!((proxy.cpu_cores, proxy.memory_bytes), (0.25, 64 << 20));
        assert_eq!(p.loadgen, None);
        let e = caps_arg("experiment").unwrap();
        assert_eq!(e.app, CapPlan::experiment().app);
        assert_eq!(e.loadgen, None, "the load generator is never capped");
        let starved = caps_arg("loadgen=0.1").unwrap();
        assert_eq!(starved.loadgen.map(|c| c.cpu_cores), Some(0.1));
        assert!(caps_arg("app=0.05").unwrap_err().contains("1 ms"));
        for bad in ["tester=1", "app", "app=0", "app=0.5/1MiB", "app=x"] {
            assert!(caps_arg(bad).is_err(), "{bad}");
        }
        assert_eq!(through_arg("pingora-on"), Ok(Route::PingoraOn));
        assert_eq!(through_arg("haproxy-reqbuf"), Ok(Route::HaproxyReqbuf));
        let unknown = through_arg("traefik").unwrap_err();
        assert!(
            unknown.contains("nginx-on") && !unknown.contains("direct,"),
            "{unknown}"
        );
        assert!(label_arg("target").is_ok() && label_arg("two words").is_err());
        assert_eq!(direction_arg("upload"), Ok(Direction::Upload));
        assert!(
            direction_arg("sideways")
                .unwrap_err()
                .contains("download, upload, headers")
        );
        assert!(through_arg("direct").is_err());
    }
}
