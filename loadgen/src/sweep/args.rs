//! `slowlab sweep-load`: the command line, and the checked [`SweepConfig`]
//! built from it.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use common::units::{Size, parse_duration};

use crate::config::{check_path, check_slow_readers};
use crate::target::Target;

/// The load generator of one rate sweep: steps of open-loop sessions at
/// rising connection rates, one row of `steps.csv` per step.
///
/// With --stop-when-saturated the sweep stops after two consecutive steps
/// in which more than 10% of the issued requests failed.
#[derive(Debug, Clone, clap::Args)]
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
    /// How long each step starts sessions (its sending window).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub step_duration: Duration,
    /// A request not answered whole this long after it began is an error
    /// (timeout), and its session ends.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Slow readers of the large path, kept running during the whole sweep.
    #[arg(long, default_value_t = 0)]
    pub slow: usize,
    /// Read rate of each slow reader, bytes per second.
    #[arg(long, default_value = "2MiB")]
    pub slow_rate: Size,
    /// SO_RCVBUF requested for slow readers before connect.
    #[arg(long, default_value = "8KiB")]
    pub rcvbuf: Size,
    /// Largest single read of a slow reader.
    #[arg(long, default_value = "16KiB")]
    pub read_chunk: Size,
    /// Directory for steps.csv (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Stop after two consecutive steps with more than 10% failed requests
    /// (the steps done are written; exit status 0).
    #[arg(long)]
    pub stop_when_saturated: bool,
    /// Path of the sessions' requests.
    #[arg(long, default_value = "/fast")]
    pub fast_path: String,
    /// Path the slow readers download.
    #[arg(long, default_value = "/large")]
    pub large_path: String,
    /// Allow targets outside 127.0.0.0/8 and ::1.
    #[arg(long)]
    pub allow_remote: bool,
}

/// The demanded connection rates of the steps, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct Rates(pub Vec<f64>);

/// The most steps one sweep may have (the harness allows 1000).
pub const MAX_STEPS: usize = 1000;
/// The highest connection rate accepted: far above what one machine opens,
/// so only a typo reaches it.
pub const MAX_RATE: f64 = 1_000_000.0;

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
    /// Bytes per second of each slow reader.
    pub slow_rate: u64,
    pub rcvbuf: usize,
    pub read_chunk: usize,
    pub out: PathBuf,
    pub stop_when_saturated: bool,
    /// Full request paths (base path of the URL included).
    pub fast_path: String,
    pub large_path: String,
}

impl SweepConfig {
    /// Checks the arguments and resolves the target, refusing remote hosts
    /// unless allowed.
    pub fn from_args(args: &SweepLoadArgs) -> anyhow::Result<SweepConfig> {
        let target = Target::resolve(&args.target, args.allow_remote)?;
        check_path("--fast-path", &args.fast_path)?;
        check_path("--large-path", &args.large_path)?;
        if args.rates.0.is_empty() {
            bail!("--rates needs at least one rate");
        }
        if args.step_duration < Duration::from_millis(100) {
            bail!("--step-duration must be at least 100ms");
        }
        if args.timeout.is_zero() {
            bail!("--timeout must be more than 0");
        }
        let rcvbuf = check_slow_readers(args.slow, args.slow_rate, args.rcvbuf, args.read_chunk)?;
        Ok(SweepConfig {
            fast_path: target.path(&args.fast_path),
            large_path: target.path(&args.large_path),
            target,
            rates: args.rates.0.clone(),
            calls_per_conn: args.calls_per_conn,
            step_duration: args.step_duration,
            timeout: args.timeout,
            slow: args.slow,
            slow_rate: args.slow_rate.bytes(),
            rcvbuf,
            read_chunk: args.read_chunk.as_usize(),
            out: args.out.clone(),
            stop_when_saturated: args.stop_when_saturated,
        })
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
        assert_eq!((c.slow, c.slow_rate, c.rcvbuf), (2, 2 << 20, 8192));
        assert_eq!(c.fast_path, "/fast");
        assert!(c.stop_when_saturated);
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
        let short = with(&["--rates", "10", "--step-duration", "10ms"]).expect("parses");
        assert!(SweepConfig::from_args(&short).is_err());
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
    }
}
