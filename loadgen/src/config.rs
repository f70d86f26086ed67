//! A validated load: what `run_load` needs, built from the command line or
//! directly by a caller.

use std::ffi::OsString;
use std::time::Duration;

use anyhow::{Context, bail};
use common::bounds::{duration_in, size_in};
use common::exit::BadInput;
use common::units::Size;

use crate::bind::Binds;
use crate::cli::LoadArgs;
use crate::latency::TimingOptions;
use crate::output;
use crate::target::Target;

/// How a slow reader checks the `/large` body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum VerifyMode {
    /// Every byte against the pattern when the server sends
    /// `X-Slowlab-Block` (ours do), otherwise only the length.
    #[default]
    Auto,
    /// Every byte against the pattern (block size from `X-Slowlab-Block`,
    /// else 64 KiB).
    Pattern,
    /// Only the length against `Content-Length`.
    Length,
}

pub use catalogue::ReaderModel;

/// The longest `--loop-lag`: CPython's, measured here, is a tenth of a
/// millisecond; at 100 ms a reader of 16 KiB reads would stall at well under
/// its pace, and the model would be of something else.
pub const MAX_LOOP_LAG: Duration = Duration::from_millis(100);

/// The highest `--fast-rate`: the scheduler thread creates a socket and
/// starts a connect per request, some 20-50 us each; ten thousand a second
/// is already most of one core.
pub const MAX_FAST_RATE: f64 = 10_000.0;
/// The most `/fast` requests one run may schedule (`--fast-rate` x
/// `--fast-duration`): the schedule, its task handles and the records take
/// about 300 bytes per request, so this is at most some 300 MB.
pub const MAX_FAST_REQUESTS: u64 = 1_000_000;
/// The longest `--spin`: it busy-waits before every request.
pub const MAX_SPIN: Duration = Duration::from_secs(1);
/// The longest quiet window `--fast-settle` takes.
pub const MAX_FAST_SETTLE: Duration = Duration::from_secs(60);
pub use common::bounds::MAX_SLOW_RATE;
/// The largest `--rcvbuf`: Linux clamps it to `net.core.rmem_max` anyway,
/// and `setsockopt` takes an `int`.
pub const MAX_RCVBUF: u64 = 1 << 30;
/// The largest `--read-chunk`: the engine's loops read into one buffer of
/// this size each, whatever the number of readers.
pub const MAX_READ_CHUNK: u64 = 1 << 20;

/// The request direction of a run, already checked.
#[derive(Debug, Clone)]
pub struct UploadConfig {
    pub uploaders: usize,
    /// Full request path of the uploads (base path included).
    pub path: String,
    pub bytes: u64,
    /// Bytes per second of each uploader.
    pub rate: u64,
    pub sndbuf: usize,
    pub slow_headers: usize,
    pub header_interval: Duration,
    /// The answers that make an upload ok (`--upload-ok`).
    pub ok: crate::upload_args::OkStatuses,
}

/// How every slow reader of a run reads, checked from [`SlowReaderArgs`]:
/// the one form in which `load` and `sweep-load` hand it to the readers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlowReading {
    /// Bytes per second of each reader.
    pub rate: u64,
    /// The `SO_RCVBUF` request (0: the kernel's default).
    pub rcvbuf: usize,
    /// Largest single read.
    pub read_chunk: usize,
    pub reader: ReaderModel,
    /// `streamreader` only: the modelled event loop's time from readiness
    /// to `recv` (`--loop-lag`).
    pub loop_lag: Duration,
}

/// Everything one run needs, already checked.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub target: Target,
    pub slow: usize,
    /// How each slow reader reads.
    pub reading: SlowReading,
    /// Full request path of the slow readers (base path included).
    pub large_path: String,
    pub fast_rate: f64,
    pub fast_duration: Duration,
    pub fast_start: Duration,
    /// `--fast-settle`: the quiet window that ends the wait for the slow
    /// readers' first bytes; zero starts the schedule at `fast_start`.
    pub fast_settle: Duration,
    /// Full request path of the fast requests (base path included).
    pub fast_path: String,
    /// The local addresses the `/fast` sockets and each slow client are
    /// bound to (`--fast-bind`, `--slow-bind`); none: the kernel's choice.
    pub binds: Binds,
    pub timeout: Duration,
    pub verify: VerifyMode,
    /// Slow uploaders and slowloris clients.
    pub upload: UploadConfig,
    /// How the `/fast` scheduler thread keeps time.
    pub timing: TimingOptions,
    /// Identity columns, in the order given.
    pub labels: Vec<(String, String)>,
    /// Cut the slow clients when the last `/fast` request has ended
    /// (`--end-with-fast`).
    pub end_with_fast: bool,
    /// TLS and HTTP/2 (`crate::edge`): cleartext HTTP/1.1 by default.
    pub edge: crate::edge::Edge,
}

impl LoadConfig {
    /// Checks the arguments and resolves the target (refusing remote hosts
    /// unless allowed). Nothing is sent. Every error is [`BadInput`] (exit
    /// status 2).
    pub fn from_args(args: &LoadArgs) -> anyhow::Result<LoadConfig> {
        Self::check(args).map_err(|e| BadInput::new(format!("{e:#}")).into())
    }

    fn check(args: &LoadArgs) -> anyhow::Result<LoadConfig> {
        let target = Target::resolve(&args.target, args.allow_remote)?;
        let reader = &args.slow_reader;
        check_path("--large-path", &reader.large_path)?;
        check_path("--fast-path", &args.fast_path)?;
        let reading = reader.check(args.slow)?;
        let upload = args.upload.config(&target)?;
        if !args.fast_rate.is_finite() || args.fast_rate < 0.0 {
            bail!("--fast-rate must be a number of requests per second, 0 or more");
        }
        if args.timeout.is_zero() {
            bail!("--timeout must be more than 0");
        }
        let requests = fast_count(args.fast_rate, args.fast_duration);
        if requests > MAX_FAST_REQUESTS {
            bail!(
                "--fast-rate {} for --fast-duration {} is {requests} requests, more than {MAX_FAST_REQUESTS}",
                args.fast_rate,
                common::units::format_duration(args.fast_duration)
            );
        }
        let mut labels = Vec::with_capacity(args.labels.len());
        for raw in &args.labels {
            let (k, v) = parse_label(raw).map_err(anyhow::Error::msg)?;
            if labels.iter().any(|(seen, _)| *seen == k) {
                bail!("--label `{k}` given twice");
            }
            if output::is_column_name(&k) {
                bail!("--label `{k}` would clash with a column of the output files");
            }
            labels.push((k, v));
        }
        let up = &args.upload;
        let clients = args.slow.max(up.slow_upload).max(up.slow_headers);
        let binds = args.bind.check(&target, args.allow_remote, clients)?;
        let edge = args
            .edge
            .check(&target, up.slow_upload > 0 || up.slow_headers > 0)?;
        if (edge.http2.is_some() || edge.tls.is_some())
            && reading.reader == ReaderModel::Streamreader
        {
            bail!(
                "--reader streamreader models asyncio over a cleartext TCP socket; over TLS or HTTP/2 the slow readers are strict (over HTTP/2 the stream's window is the buffer: --h2-window)"
            );
        }
        Ok(LoadConfig {
            binds,
            large_path: target.path(&reader.large_path),
            fast_path: target.path(&args.fast_path),
            target,
            slow: args.slow,
            reading,
            fast_rate: args.fast_rate,
            fast_duration: args.fast_duration,
            fast_start: args.fast_start,
            fast_settle: args.fast_settle,
            timeout: args.timeout,
            verify: args.verify,
            upload,
            timing: TimingOptions {
                realtime: args.realtime,
                spin: args.spin,
            },
            labels,
            end_with_fast: args.end_with_fast,
            edge,
        })
    }

    /// When each `/fast` request starts, relative to t0.
    pub fn fast_offsets(&self) -> Vec<Duration> {
        fast_offsets(self.fast_start, self.fast_rate, self.fast_duration)
    }

    /// The most descriptors the load's connections hold at once: one per
    /// slow reader, uploader and slowloris client, and one per `/fast` request that may still be open
    /// (each ends within `--timeout` of its start, so at most rate x timeout
    /// of them, and never more than are scheduled).
    pub fn connections_at_most(&self) -> u64 {
        let scheduled = fast_count(self.fast_rate, self.fast_duration);
        let in_timeout = (self.fast_rate * self.timeout.as_secs_f64()).ceil() as u64 + 1;
        let upload = (self.upload.uploaders + self.upload.slow_headers) as u64;
        self.slow as u64 + upload + scheduled.min(in_timeout)
    }
}

/// A request path flag: starts with `/`, no spaces or control characters.
pub(crate) fn check_path(flag: &str, path: &str) -> anyhow::Result<()> {
    if !path.starts_with('/') || path.contains(|c: char| c.is_ascii_control() || c == ' ') {
        bail!("{flag} `{path}` must start with / and contain no spaces");
    }
    Ok(())
}

/// How each slow reader downloads: the flags `slowlab load` and `slowlab
/// sweep-load` share, declared once and flattened into both. The number of
/// readers, `--slow`, stays each verb's own because its default differs (2
/// for a run of the experiment, 0 for a sweep).
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct SlowReaderArgs {
    /// Read rate of each slow reader, bytes per second (1 to 10GiB).
    #[arg(long, default_value = "2MiB", value_parser = size_in(1, MAX_SLOW_RATE))]
    pub slow_rate: Size,
    /// SO_RCVBUF requested for slow readers before connect (0 to 1GiB; 0
    /// leaves it to the kernel, autotuned up to tcp_rmem max). Not for an
    /// HTTP/2 connection, whose slow readers are their --h2-window: it
    /// keeps the kernel's buffer.
    #[arg(long, default_value = "8KiB", value_parser = size_in(0, MAX_RCVBUF))]
    pub rcvbuf: Size,
    /// Largest single read of a slow reader (1 to 1MiB).
    #[arg(long, default_value = "16KiB", value_parser = size_in(1, MAX_READ_CHUNK))]
    pub read_chunk: Size,
    /// Path the slow readers download.
    #[arg(long, default_value = "/large")]
    pub large_path: String,
    /// How a slow reader reads: strict = one recv of at most --read-chunk
    /// at each pacing deadline; streamreader = asyncio's StreamReader with
    /// limit --read-chunk (the socket drained into a user-space buffer
    /// while it holds at most 2 x --read-chunk, the application paced).
    #[arg(long, value_enum, default_value = "strict")]
    pub reader: ReaderModel,
    /// streamreader only: how long the modelled event loop takes from the
    /// socket's readiness to its recv, spent on the CPU as an interpreter
    /// spends it (0s to 100ms; 0s, the default, receives at once).
    /// CPython's own is printed by lab/python/slowlab_reference_reader.py
    /// as loop_lag_us_median; see the book, "The load generator and the reader models".
    #[arg(long, default_value = "0s", value_parser = duration_in(Duration::ZERO, MAX_LOOP_LAG))]
    pub loop_lag: Duration,
}

impl SlowReaderArgs {
    /// Checks the flags for `slow` readers (the one check for `load` and
    /// `sweep-load`; `--large-path` goes through [`check_path`] with the
    /// other paths) into what every reader is given.
    pub(crate) fn check(&self, slow: usize) -> anyhow::Result<SlowReading> {
        if slow > 0 && self.slow_rate.bytes() == 0 {
            bail!("--slow-rate must be more than 0 bytes per second");
        }
        if self.read_chunk.bytes() == 0 {
            bail!("--read-chunk must be at least 1 byte");
        }
        if self.reader != ReaderModel::Streamreader && !self.loop_lag.is_zero() {
            bail!("--loop-lag applies to --reader streamreader only");
        }
        if let Some(ceiling) = loop_lag_ceiling(self.loop_lag, self.rcvbuf.bytes()) {
            if self.slow_rate.bytes() > ceiling {
                bail!(
                    "--loop-lag {} before each recv of at most about {} ({}) caps a reader at about {}/s, below --slow-rate {}: lower --loop-lag or --slow-rate{}",
                    common::units::format_duration(self.loop_lag),
                    Size(per_recv(self.rcvbuf.bytes())),
                    if self.rcvbuf.bytes() == 0 {
                        "asyncio's recv size".to_string()
                    } else {
                        format!("the receive window of --rcvbuf {}", self.rcvbuf)
                    },
                    Size(ceiling),
                    self.slow_rate,
                    if self.rcvbuf.bytes() == 0 {
                        ""
                    } else {
                        ", or raise --rcvbuf"
                    }
                );
            }
        }
        // The `SO_RCVBUF` request is the `int` that `setsockopt` takes.
        let rcvbuf = usize::try_from(self.rcvbuf.bytes())
            .ok()
            .filter(|v| i32::try_from(*v).is_ok())
            .context("--rcvbuf is too large")?;
        Ok(SlowReading {
            rate: self.slow_rate.bytes(),
            rcvbuf,
            read_chunk: self.read_chunk.as_usize(),
            reader: self.reader,
            loop_lag: self.loop_lag,
        })
    }

    /// The flags that parse back into these arguments.
    pub fn to_args(&self) -> Vec<OsString> {
        let SlowReaderArgs {
            slow_rate,
            rcvbuf,
            read_chunk,
            large_path,
            reader,
            loop_lag,
        } = self;
        vec![
            "--slow-rate".into(),
            slow_rate.to_string().into(),
            "--rcvbuf".into(),
            rcvbuf.to_string().into(),
            "--read-chunk".into(),
            read_chunk.to_string().into(),
            "--large-path".into(),
            large_path.into(),
            "--reader".into(),
            reader.as_str().into(),
            "--loop-lag".into(),
            common::units::format_duration(*loop_lag).into(),
        ]
    }
}

/// The most a streamreader takes in one `recv`: asyncio's `max_size`, or
/// less when `--rcvbuf` fixes the receive buffer (the kernel grants twice
/// the request and advertises about three quarters of that as the window,
/// 12 KiB of the 16 KiB granted for 8 KiB, as `first_read_bytes` shows).
fn per_recv(rcvbuf: u64) -> u64 {
    let max = crate::streamreader::MAX_SIZE as u64;
    if rcvbuf == 0 {
        max
    } else {
        (rcvbuf * 2 * 3 / 4).min(max)
    }
}

/// The fastest a streamreader with `lag` before each `recv` can read, in
/// bytes per second: one [`per_recv`] per lag (`None` without a lag).
/// Measured: 8 KiB `--rcvbuf` and 100 ms took 16 MiB at about 120 KiB/s.
pub fn loop_lag_ceiling(lag: Duration, rcvbuf: u64) -> Option<u64> {
    (!lag.is_zero()).then(|| (per_recv(rcvbuf) as f64 / lag.as_secs_f64()) as u64)
}

/// How many requests [`fast_offsets`] schedules, without building them.
pub fn fast_count(rate: f64, duration: Duration) -> u64 {
    if rate <= 0.0 || duration.is_zero() {
        return 0;
    }
    (duration.as_secs_f64() * rate - 1e-9).ceil().max(0.0) as u64
}

/// Request *i* starts at `start + i / rate` for every *i* with
/// `i / rate < duration`: 8/s for 9 s gives 72 requests, the last at 8.875 s.
pub fn fast_offsets(start: Duration, rate: f64, duration: Duration) -> Vec<Duration> {
    // The small epsilon in `fast_count` keeps 9 s x 8/s at exactly 72 when
    // the product comes out as 72.00000000001 in floating point.
    let n = fast_count(rate, duration);
    (0..n)
        .map(|i| start + Duration::from_secs_f64(i as f64 / rate))
        .collect()
}

/// Parses `key=value`; keys are letters, digits, `_`, `-` and `.` so that they
/// make plain CSV headers.
pub fn parse_label(raw: &str) -> Result<(String, String), String> {
    let (k, v) = raw
        .split_once('=')
        .ok_or_else(|| format!("label `{raw}` is not key=value"))?;
    let k = k.trim();
    if k.is_empty()
        || !k
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    {
        return Err(format!(
            "label key `{k}` must be letters, digits, `_`, `-` or `.`"
        ));
    }
    if v.contains(['\n', '\r']) {
        return Err(format!("label `{k}` has a line break in its value"));
    }
    Ok((k.to_string(), v.to_string()))
}

/// clap value parser for `--label`: checks the shape, keeps the raw string.
pub fn label_arg(raw: &str) -> Result<String, String> {
    parse_label(raw).map(|_| raw.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_schedule_is_72_requests_125ms_apart() {
        let offsets = fast_offsets(Duration::from_millis(250), 8.0, Duration::from_secs(9));
        assert_eq!(offsets.len(), 72);
        assert_eq!(offsets[0], Duration::from_millis(250));
        assert_eq!(offsets[1], Duration::from_millis(375));
        assert_eq!(offsets[71], Duration::from_millis(250 + 71 * 125));
    }

    #[test]
    fn schedule_edges() {
        assert!(fast_offsets(Duration::ZERO, 0.0, Duration::from_secs(9)).is_empty());
        assert!(fast_offsets(Duration::ZERO, 8.0, Duration::ZERO).is_empty());
        // A fraction of an interval still starts one request.
        assert_eq!(
            fast_offsets(Duration::ZERO, 8.0, Duration::from_millis(130)).len(),
            2
        );
        assert_eq!(
            fast_offsets(Duration::ZERO, 3.0, Duration::from_secs(1)).len(),
            3
        );
        assert_eq!(
            fast_offsets(Duration::ZERO, 72.0, Duration::from_secs(1)).len(),
            72
        );
    }

    #[test]
    fn a_loop_lag_caps_a_reader_at_one_window_per_lag() {
        assert_eq!(loop_lag_ceiling(Duration::ZERO, 8192), None);
        let ms100 = Duration::from_millis(100);
        assert_eq!(loop_lag_ceiling(ms100, 8192), Some(120 * 1024));
        assert_eq!(loop_lag_ceiling(ms100, 0), Some(2560 * 1024));
        // A large --rcvbuf is still one asyncio recv per lag.
        assert_eq!(loop_lag_ceiling(ms100, 64 << 20), Some(2560 * 1024));
        // CPython's own lag, about 95 us, leaves 2 MiB/s far below it.
        let ceiling = loop_lag_ceiling(Duration::from_micros(95), 8192).unwrap();
        assert!(ceiling > 100 << 20, "{ceiling}");
    }

    #[test]
    fn reader_names_are_the_flag_values() {
        use clap::ValueEnum;
        for m in ReaderModel::value_variants() {
            let v = m.to_possible_value().expect("named");
            assert_eq!(v.get_name(), m.as_str());
            assert_eq!(serde_json::to_value(m).unwrap(), m.as_str());
        }
    }

    #[test]
    fn labels_parse() {
        assert_eq!(
            parse_label("server=rust-sync2"),
            Ok(("server".into(), "rust-sync2".into()))
        );
        assert_eq!(parse_label("note=a=b"), Ok(("note".into(), "a=b".into())));
        assert_eq!(parse_label("empty="), Ok(("empty".into(), String::new())));
        assert!(parse_label("novalue").is_err());
        assert!(parse_label("=x").is_err());
        assert!(parse_label("a b=x").is_err());
        assert!(parse_label("k=line\nbreak").is_err());
    }
}
