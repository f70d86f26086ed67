//! `slowlab load`: the command-line contract.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::ValueEnum as _;
use common::bounds::{MAX_DURATION, MAX_SLOW_READERS, duration_in, f64_in, int_in};
use common::units::format_duration;

use crate::bind::BindArgs;
use crate::config::{
    LoadConfig, MAX_FAST_RATE, MAX_FAST_SETTLE, MAX_SPIN, SlowReaderArgs, VerifyMode, label_arg,
};
use crate::edge::EdgeArgs;
use crate::output;
use crate::runner::run_load;
use crate::summary::Summary;
use crate::sweep::args::MIN_TIMEOUT;
use crate::upload_args::UploadArgs;

/// Open slow readers of /large and an open-loop /fast client against a target.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct LoadArgs {
    /// Base URL of the server, e.g. http://127.0.0.1:8000, or
    /// https://127.0.0.1:8443 for TLS (with --tls-ca or --tls-insecure).
    #[arg(long)]
    pub target: String,
    /// Number of slow readers of the large path (0 to 25000).
    #[arg(long, default_value_t = 2, value_parser = int_in(0, MAX_SLOW_READERS))]
    pub slow: usize,
    #[command(flatten)]
    pub slow_reader: SlowReaderArgs,
    #[command(flatten)]
    pub upload: UploadArgs,
    #[command(flatten)]
    pub bind: BindArgs,
    #[command(flatten)]
    pub edge: EdgeArgs,
    /// /fast requests per second (0 to 10000; at most 1000000 requests in
    /// all).
    #[arg(long, default_value_t = 8.0, value_parser = f64_in(0.0, MAX_FAST_RATE))]
    pub fast_rate: f64,
    /// How long /fast requests are sent (0s to 1day).
    #[arg(long, default_value = "9s", value_parser = duration_in(Duration::ZERO, MAX_DURATION))]
    pub fast_duration: Duration,
    /// Delay between the slow readers' start and the first /fast request
    /// (0s to 1day).
    #[arg(long, default_value = "250ms", value_parser = duration_in(Duration::ZERO, MAX_DURATION))]
    pub fast_start: Duration,
    /// Start the /fast schedule only once the slow readers have settled:
    /// every reader has its response's first byte (or has ended), or none
    /// got one for this long; never later than --timeout after the start.
    /// A server that takes its readers one by one (an event loop writing
    /// the first chunk of each) is measured once it holds them all, not
    /// during the connect burst the tester made. summary.json says when the
    /// schedule began and why. 0s: at --fast-start (0s to 1min).
    #[arg(long, default_value = "0s", value_parser = duration_in(Duration::ZERO, MAX_FAST_SETTLE))]
    pub fast_settle: Duration,
    /// Path of the fast requests.
    #[arg(long, default_value = "/fast")]
    pub fast_path: String,
    /// Give up on a /fast request this long after its start; a slow reader
    /// gives up when a connect, write or read makes no progress for this long
    /// (1ms to 1day).
    #[arg(long, default_value = "30s", value_parser = duration_in(MIN_TIMEOUT, MAX_DURATION))]
    pub timeout: Duration,
    /// Directory for requests.csv, large-responses.csv, slow-progress.csv,
    /// latency.hgrm and summary.json (created if missing).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Identity column added to every CSV row (key=value; repeatable).
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = label_arg)]
    pub labels: Vec<String>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Allow targets outside 127.0.0.0/8 and ::1.
    #[arg(long)]
    pub allow_remote: bool,
    /// How slow readers check the body: auto = every byte against the
    /// pattern when the server sends X-Slowlab-Block, else the length.
    #[arg(long, value_enum, default_value = "auto")]
    pub verify: VerifyMode,
    /// Run the thread that starts /fast requests as SCHED_FIFO (needs root,
    /// and cpu.rt_runtime_us in a cgroup v1 child); falls back to the
    /// default tuning otherwise. summary.json says which took effect.
    #[arg(long)]
    pub realtime: bool,
    /// Wake this long before each /fast start and busy-wait the rest, so a
    /// late timer wake-up (idle VM CPUs) cannot delay it. Costs that much CPU
    /// per request; under a CPU quota use it with --realtime (0s to 1s).
    #[arg(long, default_value = "0s", value_parser = duration_in(Duration::ZERO, MAX_SPIN))]
    pub spin: Duration,
    /// End the run with its last /fast request: slow clients still running
    /// then are cut (their rows' error says `cut`), so the run lasts
    /// --fast-start + --fast-duration and the last answer, however long
    /// the slow transfers would take. `slowlab check` ends every level so.
    #[arg(long)]
    pub end_with_fast: bool,
}

impl LoadArgs {
    /// The flags that parse back into these arguments, for a harness that
    /// starts `slowlab load`. Every field is named, so a field added or
    /// renamed here fails to compile until it is written too.
    pub fn to_args(&self) -> Vec<OsString> {
        let LoadArgs {
            target,
            slow,
            slow_reader,
            upload,
            bind,
            edge,
            fast_rate,
            fast_duration,
            fast_start,
            fast_settle,
            fast_path,
            timeout,
            out,
            labels,
            json,
            allow_remote,
            verify,
            realtime,
            spin,
            end_with_fast,
        } = self;
        let verify = verify
            .to_possible_value()
            .expect("every VerifyMode has a name (none is skipped)");
        let mut a: Vec<OsString> = vec![
            "--target".into(),
            target.into(),
            "--slow".into(),
            slow.to_string().into(),
        ];
        a.extend(slow_reader.to_args());
        a.extend(upload.to_args());
        a.extend(bind.to_args());
        a.extend(edge.to_args());
        a.extend([
            "--fast-rate".into(),
            fast_rate.to_string().into(),
            "--fast-duration".into(),
            format_duration(*fast_duration).into(),
            "--fast-start".into(),
            format_duration(*fast_start).into(),
            "--fast-settle".into(),
            format_duration(*fast_settle).into(),
            "--fast-path".into(),
            fast_path.into(),
            "--timeout".into(),
            format_duration(*timeout).into(),
            "--verify".into(),
            verify.get_name().into(),
            "--spin".into(),
            format_duration(*spin).into(),
        ]);
        if let Some(out) = out {
            a.extend(["--out".into(), out.into()]);
        }
        for label in labels {
            a.extend(["--label".into(), label.into()]);
        }
        for (flag, on) in [
            ("--json", json),
            ("--allow-remote", allow_remote),
            ("--realtime", realtime),
            ("--end-with-fast", end_with_fast),
        ] {
            if *on {
                a.push(flag.into());
            }
        }
        a
    }
}

/// Runs `slowlab load`: the checks, the load, then the files, then the
/// summary on stdout. Bad input (exit 2) is found before the first packet:
/// the flags, the target, the descriptors the run needs and a writable
/// `--out`. Fails (exit 1) when `/fast` requests were scheduled and none
/// succeeded, or when the load generator ran out of descriptors, after
/// writing everything.
pub fn run(args: LoadArgs) -> anyhow::Result<()> {
    let config = LoadConfig::from_args(&args)?;
    let what = format!(
        "--slow {} with --fast-rate {} for {} (--timeout {})",
        args.slow,
        args.fast_rate,
        format_duration(args.fast_duration),
        format_duration(args.timeout)
    );
    crate::fds::ensure(config.connections_at_most(), &what)?;
    if let Some(dir) = &args.out {
        output::probe(dir)?;
    }
    // Ctrl-C or SIGTERM ends the run early: what it measured is kept.
    common::signals::install();
    let report = run_load(&config)?;
    let summary = Summary::of(&report);
    // The summary first: a disk that fills while the files are written
    // loses no figure of the run.
    let text = if args.json {
        serde_json::to_string(&summary).context("serializing the summary")? + "\n"
    } else {
        summary.to_string()
    };
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .context("writing the summary")?;
    if let Some(dir) = &args.out {
        if let Err(e) = output::write_all(dir, &report, &summary) {
            // A full disk: say so where the files are, if a marker fits.
            let _ = schema::mark_incomplete(
                dir,
                Some(&format!(
                    "the files could not be written whole ({e:#}); the summary went to stdout"
                )),
            );
            return Err(e.context("the summary above has the run's figures"));
        }
        if report.interrupted.is_some() {
            schema::mark_incomplete(
                dir,
                Some(&format!(
                    "interrupted: {} of the {} scheduled /fast requests were started; transfers still running were cut",
                    report.fast.len(),
                    config.fast_offsets().len()
                )),
            )?;
        }
    }
    if report.interrupted.is_some() {
        return Err(common::signals::interrupted(match &args.out {
            Some(dir) => format!("partial results in {} (marked INCOMPLETE)", dir.display()),
            None => "the summary above has what was measured".into(),
        })
        .into());
    }
    let exhausted = summary.fd_exhausted();
    if exhausted > 0 {
        bail!(
            "the load generator ran out of file descriptors ({exhausted} fd_exhausted); the run is not comparable and its percentiles are left empty"
        );
    }
    let fast = &summary.fast;
    if fast.requests > 0 && fast.ok == 0 {
        let kinds: Vec<String> = fast
            .errors
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        bail!(
            "no /fast request succeeded ({} of {} failed: {})",
            fast.failed,
            fast.requests,
            kinds.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use common::units::Size;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        args: LoadArgs,
    }

    fn parse(words: Vec<OsString>) -> LoadArgs {
        Cmd::try_parse_from(std::iter::once(OsString::from("load")).chain(words))
            .expect("parses")
            .args
    }

    fn try_parse(extra: &[&str]) -> Result<LoadArgs, clap::Error> {
        let mut words = vec!["load"];
        if !extra.contains(&"--target") {
            words.extend(["--target", "http://127.0.0.1:1"]);
        }
        Cmd::try_parse_from(words.iter().chain(extra)).map(|c| c.args)
    }

    /// One test per bound: the edge passes, one past it is refused with the
    /// flag and the range named, when the arguments are parsed.
    #[test]
    fn every_number_has_a_range() {
        for (flag, ok, bad) in [
            ("--slow", "25000", "25001"),
            ("--slow", "0", "-1"),
            ("--fast-rate", "10000", "10001"),
            ("--fast-rate", "0", "-1"),
            ("--fast-rate", "8", "nan"),
            ("--fast-duration", "24h", "99999999999999s"),
            ("--fast-start", "24h", "25h"),
            ("--fast-settle", "1min", "61s"),
            ("--timeout", "1ms", "0s"),
            ("--timeout", "24h", "25h"),
            ("--spin", "1s", "2s"),
            ("--slow-rate", "1", "0"),
            ("--slow-rate", "10GiB", "11GiB"),
            ("--rcvbuf", "1GiB", "2GiB"),
            ("--read-chunk", "1MiB", "2MiB"),
            ("--read-chunk", "1", "0"),
            ("--loop-lag", "100ms", "101ms"),
            ("--slow-upload", "25000", "25001"),
            ("--upload-bytes", "64GiB", "65GiB"),
            ("--upload-rate", "1", "0"),
            ("--upload-rate", "10GiB", "11GiB"),
            ("--sndbuf", "1GiB", "2GiB"),
            ("--slow-headers", "25000", "25001"),
            ("--header-interval", "1ms", "0s"),
            ("--header-interval", "24h", "25h"),
            ("--h2-window", "1", "0"),
            ("--h2-window", "2147483647", "2147483648"),
            ("--h2-conn-window", "65535", "65534"),
            ("--h2-conn-window", "2147483647", "2147483648"),
            ("--streams-per-conn", "1", "0"),
            ("--streams-per-conn", "1000", "1001"),
        ] {
            assert!(try_parse(&[flag, ok]).is_ok(), "{flag} {ok}");
            // `--flag=-1`, so that clap does not take `-1` for a flag.
            let bad = format!("{flag}={bad}");
            let err = try_parse(&[&bad]).expect_err(&bad).to_string();
            assert!(err.contains(flag), "{err}");
            assert!(err.contains("from"), "the range is named: {err}");
        }
        let err = try_parse(&["--fast-rate", "1e9"]).expect_err("1e9");
        assert!(err.to_string().contains("0 to 10000"), "{err}");
        let err = try_parse(&["--slow", "100000"]).expect_err("100000");
        assert!(err.to_string().contains("0 to 25000"), "{err}");
    }

    #[test]
    fn the_schedule_is_bounded_in_all() {
        let ok = try_parse(&["--fast-rate", "10000", "--fast-duration", "100s"]).expect("parses");
        let config = LoadConfig::from_args(&ok).expect("a million requests");
        assert_eq!(
            crate::config::fast_count(config.fast_rate, config.fast_duration),
            1_000_000
        );
        let big = try_parse(&["--fast-rate", "10000", "--fast-duration", "101s"]).expect("parses");
        let err = LoadConfig::from_args(&big).expect_err("too many requests");
        assert!(err.is::<common::exit::BadInput>(), "{err}");
        assert!(err.to_string().contains("more than 1000000"), "{err}");
    }

    #[test]
    fn values_that_parse_but_cannot_work_are_bad_input() {
        for (extra, needle) in [
            (&["--target", "ftp://127.0.0.1:1"][..], "http://"),
            (&["--target", "https://127.0.0.1:1"][..], "--tls-ca FILE"),
            (&["--tls-insecure"][..], "need an https:// target"),
            (&["--h2-window", "1MiB"][..], "need --http2"),
            (&["--streams-per-conn", "2"][..], "need --http2"),
            (&["--http2", "--slow-upload", "1"][..], "HTTP/1.1 only"),
            (
                &["--http2", "--reader", "streamreader"][..],
                "--reader streamreader",
            ),
            (
                &[
                    "--target",
                    "https://127.0.0.1:1",
                    "--tls-ca",
                    "/nonexistent/ca.pem",
                ][..],
                "not a PEM file",
            ),
            (&["--target", "garbage"][..], "not a usable URL"),
            (&["--target", "http://192.0.2.1:80"][..], "--allow-remote"),
            (&["--label", "seq=1"][..], "clash"),
            (&["--fast-path", "fast"][..], "must start with /"),
            (&["--upload-path", "up"][..], "must start with /"),
            (&["--loop-lag", "95us"][..], "--reader streamreader only"),
        ] {
            let args = try_parse(extra).expect("parses");
            let err = LoadConfig::from_args(&args).expect_err(needle);
            assert!(err.is::<common::exit::BadInput>(), "{err}");
            assert!(err.to_string().contains(needle), "{err}");
        }
    }

    #[test]
    fn the_descriptor_need_is_bounded_by_timeout_and_schedule() {
        let config = |extra: &[&str]| LoadConfig::from_args(&try_parse(extra).unwrap()).unwrap();
        // 200/s for 2 s: 400 scheduled, all may be open within 30 s.
        let c = config(&["--slow", "2", "--fast-rate", "200", "--fast-duration", "2s"]);
        assert_eq!(c.connections_at_most(), 402);
        // With a 100 ms timeout at most 21 are open at once.
        let c = config(&[
            "--slow",
            "2",
            "--fast-rate",
            "200",
            "--fast-duration",
            "2s",
            "--timeout",
            "100ms",
        ]);
        assert_eq!(c.connections_at_most(), 2 + 21);
        // The experiment's defaults: 72 requests and 2 readers.
        assert_eq!(config(&[]).connections_at_most(), 74);
    }

    #[test]
    fn to_args_parses_back_into_the_same_arguments() {
        let defaults = parse(vec!["--target".into(), "http://127.0.0.1:1".into()]);
        let all = LoadArgs {
            target: "http://127.0.0.1:8000/base".into(),
            slow: 3,
            slow_reader: SlowReaderArgs {
                slow_rate: Size(4 << 20),
                rcvbuf: Size(8191),
                read_chunk: Size(16 << 10),
                large_path: "/big".into(),
                reader: crate::config::ReaderModel::Streamreader,
                loop_lag: Duration::from_micros(95),
            },
            upload: UploadArgs {
                slow_upload: 2,
                upload_path: "/up".into(),
                upload_bytes: Size(1 << 20),
                upload_rate: Size(256 << 10),
                sndbuf: Size(4096),
                slow_headers: 3,
                header_interval: Duration::from_millis(250),
                upload_ok: crate::upload_args::OkStatuses::parse("201,204").unwrap(),
            },
            bind: BindArgs {
                fast_bind: Some("127.0.0.2".parse().unwrap()),
                slow_bind: Some("127.0.0.10".parse().unwrap()),
            },
            edge: EdgeArgs {
                http2: true,
                h2_window: Size(1 << 20),
                h2_conn_window: Some(Size(16 << 20)),
                streams_per_conn: 8,
                tls_ca: Some(PathBuf::from("/tmp/a dir/ca.pem")),
                tls_insecure: false,
            },
            fast_rate: 7.25,
            fast_duration: Duration::from_millis(3250),
            fast_start: Duration::from_micros(1500),
            fast_settle: Duration::from_millis(300),
            fast_path: "/quick".into(),
            timeout: Duration::from_secs(90),
            out: Some(PathBuf::from("/tmp/a dir/load")),
            labels: vec!["run_id=001".into(), "note=a=b".into()],
            json: true,
            allow_remote: true,
            end_with_fast: true,
            verify: VerifyMode::Length,
            realtime: true,
            spin: Duration::from_micros(200),
        };
        for args in [defaults, all] {
            assert_eq!(parse(args.to_args()), args);
        }
    }
}
