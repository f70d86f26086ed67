//! `slowlab sweep-load`: the command line, and the checked [`SweepConfig`]
//! built from it.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use common::bounds::{MAX_DURATION, MAX_SLOW_READERS, duration_in, int_in};
use common::exit::BadInput;
use common::units::format_duration;

use crate::bind::{BindArgs, Binds};
use crate::config::{SlowReaderArgs, UploadConfig, check_path};
use crate::target::Target;
use crate::upload_args::UploadArgs;

/// The load generator of one rate sweep: steps of open-loop sessions at
/// rising connection rates, one row of `steps.csv` per step.
///
/// With --stop-when-saturated the sweep stops after two consecutive steps
/// in which more than 10% of the issued requests failed.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct SweepLoadArgs {
    /// Base URL of the server, e.g. http://127.0.0.1:8000.
    #[arg(long)]
    pub target: String,
    /// Connection (session) rates per second, one step each, in order:
    /// e.g. 50,100,150.
    #[arg(long, value_parser = parse_rates)]
    pub rates: Rates,
    /// Sequential requests per session (httperf --num-calls).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub calls_per_conn: u32,
    /// How long each step starts sessions (its sending window; 100ms to
    /// 1day).
    #[arg(long, default_value = "10s", value_parser = duration_in(MIN_STEP_DURATION, MAX_DURATION))]
    pub step_duration: Duration,
    /// A request not answered whole this long after it began is an error
    /// (timeout), and its session ends (1ms to 1day).
    #[arg(long, default_value = "5s", value_parser = duration_in(MIN_TIMEOUT, MAX_DURATION))]
    pub timeout: Duration,
    /// Slow readers of the large path, kept running during the whole sweep
    /// (0 to 25000).
    #[arg(long, default_value_t = 0, value_parser = int_in(0, MAX_SLOW_READERS))]
    pub slow: usize,
    #[command(flatten)]
    pub slow_reader: SlowReaderArgs,
    /// Slow uploaders (--slow-upload) and slowloris clients (--slow-headers)
    /// kept running during the whole sweep, with `slowlab load`'s flags.
    #[command(flatten)]
    pub upload: UploadArgs,
    /// Directory for steps.csv, and uploads.csv and slow-headers.csv with
    /// such clients (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Stop after two consecutive steps with more than 10% failed requests
    /// (the steps done are written; exit status 0).
    #[arg(long)]
    pub stop_when_saturated: bool,
    /// Path of the sessions' requests.
    #[arg(long, default_value = "/fast")]
    pub fast_path: String,
    /// Allow targets outside 127.0.0.0/8 and ::1.
    #[arg(long)]
    pub allow_remote: bool,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub bind: BindArgs,
}

impl SweepLoadArgs {
    /// The flags that parse back into these arguments, for a harness that
    /// starts `slowlab sweep-load`. Every field is named, so a field added or
    /// renamed here fails to compile until it is written too.
    pub fn to_args(&self) -> Vec<OsString> {
        let SweepLoadArgs {
            target,
            rates,
            calls_per_conn,
            step_duration,
            timeout,
            slow,
            slow_reader,
            upload,
            out,
            stop_when_saturated,
            fast_path,
            allow_remote,
            json,
            bind,
        } = self;
        let rates: Vec<String> = rates.0.iter().map(f64::to_string).collect();
        let mut a: Vec<OsString> = vec![
            "--target".into(),
            target.into(),
            "--rates".into(),
            rates.join(",").into(),
            "--calls-per-conn".into(),
            calls_per_conn.to_string().into(),
            "--step-duration".into(),
            format_duration(*step_duration).into(),
            "--timeout".into(),
            format_duration(*timeout).into(),
            "--slow".into(),
            slow.to_string().into(),
        ];
        a.extend(slow_reader.to_args());
        a.extend(upload.to_args());
        a.extend([
            "--out".into(),
            out.into(),
            "--fast-path".into(),
            fast_path.into(),
        ]);
        if *stop_when_saturated {
            a.push("--stop-when-saturated".into());
        }
        if *allow_remote {
            a.push("--allow-remote".into());
        }
        if *json {
            a.push("--json".into());
        }
        a.extend(bind.to_args());
        a
    }
}

/// The demanded connection rates of the steps, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct Rates(pub Vec<f64>);

/// The most steps one sweep may have (the harness allows 1000).
pub const MAX_STEPS: usize = 1000;
/// The highest connection rate accepted: far above what one machine opens,
/// so only a typo reaches it.
pub const MAX_RATE: f64 = 1_000_000.0;
/// The shortest step: a step shorter than a few reply-rate intervals
/// measures nothing.
pub const MIN_STEP_DURATION: Duration = Duration::from_millis(100);
/// The shortest `--timeout` of `load` and `sweep-load`.
pub const MIN_TIMEOUT: Duration = Duration::from_millis(1);

/// clap value parser for `--rates`: positive numbers, comma-separated.
pub fn parse_rates(raw: &str) -> Result<Rates, String> {
    let mut rates = Vec::new();
    for word in raw.split(',') {
        let word = word.trim();
        let rate: f64 = word
            .parse()
            .map_err(|_| format!("rate `{word}` is not a number"))?;
        if !rate.is_finite() || rate <= 0.0 || rate > MAX_RATE {
            return Err(format!(
                "rate `{word}` must be more than 0 and at most {MAX_RATE} per second"
            ));
        }
        rates.push(rate);
    }
    if rates.len() > MAX_STEPS {
        return Err(format!(
            "{} rates is more than {MAX_STEPS} steps",
            rates.len()
        ));
    }
    Ok(Rates(rates))
}

/// A sweep, checked and resolved; nothing has been sent yet.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    pub target: Target,
    pub rates: Vec<f64>,
    pub calls_per_conn: u32,
    pub step_duration: Duration,
    pub timeout: Duration,
    pub slow: usize,
    /// How each slow reader reads.
    pub reading: crate::config::SlowReading,
    /// Slow uploaders and slowloris clients.
    pub upload: UploadConfig,
    pub out: PathBuf,
    pub stop_when_saturated: bool,
    /// Full request paths (base path of the URL included).
    pub fast_path: String,
    pub large_path: String,
    /// `--fast-bind` (the sessions) and `--slow-bind` (the slow readers).
    pub binds: Binds,
}

impl SweepConfig {
    /// Checks the arguments and resolves the target, refusing remote hosts
    /// unless allowed. Every error is [`BadInput`] (exit status 2).
    pub fn from_args(args: &SweepLoadArgs) -> anyhow::Result<SweepConfig> {
        Self::check(args).map_err(|e| BadInput::new(format!("{e:#}")).into())
    }

    fn check(args: &SweepLoadArgs) -> anyhow::Result<SweepConfig> {
        let target = Target::resolve(&args.target, args.allow_remote)?;
        check_path("--fast-path", &args.fast_path)?;
        let reader = &args.slow_reader;
        check_path("--large-path", &reader.large_path)?;
        if args.rates.0.is_empty() {
            bail!("--rates needs at least one rate");
        }
        if args.step_duration < MIN_STEP_DURATION {
            bail!("--step-duration must be at least 100ms");
        }
        if args.timeout.is_zero() {
            bail!("--timeout must be more than 0");
        }
        let reading = reader.check(args.slow)?;
        let upload = args.upload.config(&target)?;
        let up = &args.upload;
        let clients = args.slow.max(up.slow_upload).max(up.slow_headers);
        let binds = args.bind.check(&target, args.allow_remote, clients)?;
        Ok(SweepConfig {
            binds,
            fast_path: target.path(&args.fast_path),
            large_path: target.path(&reader.large_path),
            target,
            rates: args.rates.0.clone(),
            calls_per_conn: args.calls_per_conn,
            step_duration: args.step_duration,
            timeout: args.timeout,
            slow: args.slow,
            reading,
            upload,
            out: args.out.clone(),
            stop_when_saturated: args.stop_when_saturated,
        })
    }
}

impl SweepConfig {
    /// The most descriptors the sweep's connections hold at once: one per
    /// slow reader, uploader and slowloris client, and per step the sessions still open, each with one
    /// connection at a time and ended within `calls x timeout` (so at most
    /// rate x calls x timeout of them), never more than the step starts.
    pub fn connections_at_most(&self) -> u64 {
        let life = self.timeout.as_secs_f64() * f64::from(self.calls_per_conn);
        let sessions = self
            .rates
            .iter()
            .map(|&r| {
                let started = super::schedule::sessions_in(r, self.step_duration);
                started.min((r * life).ceil() as u64 + 1)
            })
            .max()
            .unwrap_or(0);
        (self.slow + self.upload.uploaders + self.upload.slow_headers) as u64 + sessions
    }

    /// Makes sure the open-files limit allows [`Self::connections_at_most`]
    /// (raising the soft limit, or refusing as bad input; see
    /// [`crate::fds::ensure`]).
    pub fn ensure_descriptors(&self) -> anyhow::Result<crate::fds::Limit> {
        let what = format!(
            "--slow {} --slow-upload {} --slow-headers {} with --rates up to {} for {} (--calls-per-conn {}, --timeout {})",
            self.slow,
            self.upload.uploaders,
            self.upload.slow_headers,
            self.rates.iter().copied().fold(0.0, f64::max),
            format_duration(self.step_duration),
            self.calls_per_conn,
            format_duration(self.timeout)
        );
        crate::fds::ensure(self.connections_at_most(), &what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        args: SweepLoadArgs,
    }

    fn parse(words: &[&str]) -> Result<SweepLoadArgs, clap::Error> {
        Cmd::try_parse_from(std::iter::once("sweep-load").chain(words.iter().copied()))
            .map(|c| c.args)
    }

    #[test]
    fn rates_parse() {
        assert_eq!(
            parse_rates("50,100, 150"),
            Ok(Rates(vec![50.0, 100.0, 150.0]))
        );
        assert_eq!(parse_rates("2.5"), Ok(Rates(vec![2.5])));
        for bad in ["", "50,", "0", "-5", "x", "nan", "inf", "2000000"] {
            assert!(parse_rates(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_harness_flags_parse() {
        let a = parse(&[
            "--target",
            "http://127.0.0.1:8000",
            "--rates",
            "50,100",
            "--calls-per-conn",
            "10",
            "--step-duration",
            "3000ms",
            "--timeout",
            "5000ms",
            "--slow",
            "2",
            "--slow-rate",
            "2097152",
            "--rcvbuf",
            "8192",
            "--read-chunk",
            "16384",
            "--out",
            "/tmp/x/load",
            "--stop-when-saturated",
        ])
        .expect("parses");
        let c = SweepConfig::from_args(&a).expect("valid");
        assert_eq!(c.rates, vec![50.0, 100.0]);
        assert_eq!(c.step_duration, Duration::from_secs(3));
        assert_eq!(
            (c.slow, c.reading.rate, c.reading.rcvbuf),
            (2, 2 << 20, 8192)
        );
        assert_eq!(c.fast_path, "/fast");
        assert!(c.stop_when_saturated);
    }

    #[test]
    fn to_args_parses_back_into_the_same_arguments() {
        let defaults = parse(&[
            "--target",
            "http://127.0.0.1:1",
            "--rates",
            "5",
            "--out",
            "o",
        ])
        .expect("parses");
        let all = SweepLoadArgs {
            target: "http://127.0.0.1:8000/base".into(),
            rates: Rates(vec![50.0, 100.0, 2.5]),
            calls_per_conn: 7,
            step_duration: Duration::from_millis(3250),
            timeout: Duration::from_micros(1500),
            slow: 2,
            slow_reader: SlowReaderArgs {
                slow_rate: common::units::Size(4 << 20),
                rcvbuf: common::units::Size(8191),
                read_chunk: common::units::Size(16 << 10),
                large_path: "/big".into(),
                reader: crate::config::ReaderModel::Streamreader,
                loop_lag: Duration::from_micros(95),
            },
            upload: UploadArgs {
                slow_upload: 2,
                upload_path: "/up".into(),
                upload_bytes: common::units::Size(1 << 20),
                upload_rate: common::units::Size(256 << 10),
                sndbuf: common::units::Size(4096),
                slow_headers: 3,
                header_interval: Duration::from_millis(250),
                upload_ok: crate::upload_args::OkStatuses::parse("201,204").unwrap(),
            },
            out: PathBuf::from("/tmp/sweep dir/load"),
            stop_when_saturated: true,
            fast_path: "/quick".into(),
            allow_remote: true,
            json: true,
            bind: crate::bind::BindArgs {
                fast_bind: Some("127.0.0.2".parse().unwrap()),
                slow_bind: Some("127.0.0.10".parse().unwrap()),
            },
        };
        for args in [defaults, all] {
            let words = args.to_args();
            let back =
                Cmd::try_parse_from(std::iter::once(OsString::from("sweep-load")).chain(words))
                    .expect("to_args parses")
                    .args;
            assert_eq!(back, args);
        }
    }

    #[test]
    fn bad_input_is_refused() {
        let base = ["--target", "http://127.0.0.1:1", "--out", "/tmp/x"];
        let with = |extra: &[&str]| {
            let mut w: Vec<&str> = base.to_vec();
            w.extend_from_slice(extra);
            parse(&w)
        };
        assert!(with(&["--rates", "10", "--calls-per-conn", "0"]).is_err());
        assert!(with(&["--rates", "abc"]).is_err());
        // Out of range when parsed, before anything starts.
        assert!(with(&["--rates", "10", "--step-duration", "10ms"]).is_err());
        assert!(with(&["--rates", "10", "--step-duration", "25h"]).is_err());
        assert!(with(&["--rates", "10", "--timeout", "0s"]).is_err());
        assert!(with(&["--rates", "10", "--slow", "25001"]).is_err());
        assert!(with(&["--rates", "10", "--slow", "1024"]).is_ok());
        // The request direction's flags keep `load`'s ranges.
        for (flag, ok, bad) in [
            ("--slow-upload", "25000", "25001"),
            ("--upload-bytes", "64GiB", "65GiB"),
            ("--upload-rate", "1", "0"),
            ("--sndbuf", "1GiB", "2GiB"),
            ("--slow-headers", "25000", "25001"),
            ("--header-interval", "1ms", "0s"),
        ] {
            assert!(with(&["--rates", "10", flag, ok]).is_ok(), "{flag} {ok}");
            let err = with(&["--rates", "10", flag, bad]).expect_err(flag);
            assert!(err.to_string().contains(flag), "{err}");
        }
        let bad_path = with(&["--rates", "10", "--upload-path", "up"]).expect("parses");
        let err = SweepConfig::from_args(&bad_path).expect_err("refused");
        assert!(
            err.is::<BadInput>() && err.to_string().contains("--upload-path"),
            "{err}"
        );
        let remote = parse(&[
            "--target",
            "http://192.0.2.1",
            "--rates",
            "1",
            "--out",
            "/x",
        ])
        .expect("parses");
        let err = SweepConfig::from_args(&remote).expect_err("refused");
        assert!(err.to_string().contains("--allow-remote"), "{err}");
        assert!(err.is::<BadInput>(), "a refused target is bad input");
    }
}
