//! `slowlab serve`: the command-line contract.
//!
//! Prints exactly one line to stdout once the socket accepts connections,
//! `listening on <ip:port> (model <m>, <n> workers)`, logs everything else
//! through `tracing` on stderr, and stops on SIGTERM or SIGINT.

use std::ffi::OsString;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context as _;
use std::time::Duration;

use common::bounds::{MAX_THREADS, duration_in, int_in, size_in};
use common::exit::BadInput;
use common::loopback::{self, LISTEN_MEANING};
use common::units::{Size, format_duration};
use tokio::signal::unix::{SignalKind, signal};

use crate::ServerConfig;

/// How connections are handled (the catalogue's replica models).
pub use catalogue::Model;

/// The largest `--large-bytes`: the body is generated block by block and
/// never held, so this only keeps a typo from a download of years.
pub const MAX_LARGE_BYTES: u64 = 64 << 30;
/// The largest `--chunk-bytes`: every response in flight holds one block.
pub const MAX_CHUNK_BYTES: u64 = 16 << 20;

/// Serve the replica of the experiment's app: `GET /fast`, `GET /large`
/// and `POST /upload`.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (IP:port); port 0 picks a free one. Outside
    /// 127.0.0.0/8 and ::1 only with --allow-remote.
    #[arg(long, default_value = "127.0.0.1:8000")]
    pub listen: SocketAddr,
    /// Worker model.
    #[arg(long, value_enum, default_value = "sync")]
    pub model: Model,
    /// Workers (sync), handlers (threads) or runtime threads (async; default:
    /// the number of cores); 1 to 1024.
    #[arg(long, value_parser = int_in(1, MAX_THREADS))]
    pub workers: Option<usize>,
    /// Size of the /large body (0 to 64GiB).
    #[arg(long, default_value = "16MiB", value_parser = size_in(0, MAX_LARGE_BYTES))]
    pub large_bytes: Size,
    /// Size of each block written for /large (1 to 16MiB).
    #[arg(long, default_value = "64KiB", value_parser = size_in(1, MAX_CHUNK_BYTES))]
    pub chunk_bytes: Size,
    /// Append one CSV row per /large response to this file.
    #[arg(long)]
    pub send_log: Option<PathBuf>,
    /// Append one CSV row per POST /upload to this file.
    #[arg(long)]
    pub recv_log: Option<PathBuf>,
    /// Allow a --listen address outside 127.0.0.0/8 and ::1.
    #[arg(long)]
    pub allow_remote: bool,
    /// Sync model only, Gunicorn's `--timeout`: a worker still on one
    /// connection this long after accepting it is aborted, answering a
    /// best-effort 500 and closing; 0s never (0s to 1day).
    #[arg(long, default_value = "30s", value_parser = duration_in(Duration::ZERO, MAX_WORKER_TIMEOUT))]
    pub worker_timeout: Duration,
}

/// The longest `--worker-timeout`.
pub const MAX_WORKER_TIMEOUT: Duration = Duration::from_secs(86_400);

impl ServeArgs {
    /// The flags that parse back into these arguments, for a harness that
    /// starts `slowlab serve`. Every field is named, so a field added or
    /// renamed here fails to compile until it is written too.
    pub fn to_args(&self) -> Vec<OsString> {
        let ServeArgs {
            listen,
            model,
            workers,
            large_bytes,
            chunk_bytes,
            send_log,
            recv_log,
            allow_remote,
            worker_timeout,
        } = self;
        let mut a: Vec<OsString> = vec![
            "--listen".into(),
            listen.to_string().into(),
            "--model".into(),
            model.name().into(),
            "--large-bytes".into(),
            large_bytes.to_string().into(),
            "--chunk-bytes".into(),
            chunk_bytes.to_string().into(),
            "--worker-timeout".into(),
            format_duration(*worker_timeout).into(),
        ];
        if let Some(w) = workers {
            a.extend(["--workers".into(), w.to_string().into()]);
        }
        if let Some(path) = send_log {
            a.extend(["--send-log".into(), path.into()]);
        }
        if let Some(path) = recv_log {
            a.extend(["--recv-log".into(), path.into()]);
        }
        if *allow_remote {
            a.push("--allow-remote".into());
        }
        a
    }

    /// Checks what clap cannot and names the flag at fault; every error is
    /// [`BadInput`] (exit status 2), found before any socket exists.
    pub fn to_config(&self) -> anyhow::Result<ServerConfig> {
        self.check()
            .map_err(|e| BadInput::new(format!("{e:#}")).into())
    }

    fn check(&self) -> anyhow::Result<ServerConfig> {
        loopback::check(self.allow_remote, [("listen", self.listen, LISTEN_MEANING)])?;
        anyhow::ensure!(self.workers != Some(0), "--workers must be at least 1");
        anyhow::ensure!(
            self.chunk_bytes.bytes() > 0,
            "--chunk-bytes must be at least 1 byte"
        );
        let chunk_bytes = usize::try_from(self.chunk_bytes.bytes())
            .ok()
            .with_context(|| format!("--chunk-bytes {} is too large", self.chunk_bytes))?;
        Ok(ServerConfig {
            listen: self.listen,
            model: self.model,
            workers: self.workers,
            large_bytes: self.large_bytes.bytes(),
            chunk_bytes,
            send_log: self.send_log.clone(),
            recv_log: self.recv_log.clone(),
            worker_timeout: (!self.worker_timeout.is_zero()).then_some(self.worker_timeout),
        })
    }
}

/// Runs `slowlab serve` until SIGTERM or SIGINT.
pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let config = args.to_config()?;
    // Only for the signals; the server runs on runtimes of its own.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot build a tokio runtime")?;
    // Installed before the ready line: a harness may signal as soon as it
    // has read it, and the default action would kill us without cleanup.
    let (mut term, mut int) = {
        let _enter = runtime.enter();
        let term = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
        let int = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
        (term, int)
    };
    let server = crate::spawn(config)?;
    let mut stdout = std::io::stdout().lock();
    writeln!(
        stdout,
        "listening on {} (model {}, {} workers)",
        server.local_addr(),
        server.model().name(),
        server.workers()
    )
    .and_then(|()| stdout.flush())
    .context("cannot write the ready line")?;
    drop(stdout);
    let signal = runtime.block_on(async {
        tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        }
    });
    tracing::info!(signal, "stopping");
    server.shutdown();
    tracing::info!("stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        args: ServeArgs,
    }

    fn parse(words: Vec<OsString>) -> ServeArgs {
        Cmd::try_parse_from(std::iter::once(OsString::from("serve")).chain(words))
            .expect("parses")
            .args
    }

    #[test]
    fn to_args_parses_back_into_the_same_arguments() {
        let defaults = parse(vec![]);
        let all = ServeArgs {
            listen: "[::1]:0".parse().unwrap(),
            model: Model::Threads,
            workers: Some(4),
            large_bytes: Size(16 << 20),
            chunk_bytes: Size(1000),
            send_log: Some(PathBuf::from("/tmp/a run/send-log.csv")),
            recv_log: Some(PathBuf::from("/tmp/a run/recv-log.csv")),
            allow_remote: true,
            worker_timeout: Duration::from_millis(2500),
        };
        for model in [Model::Sync, Model::Threads, Model::Async] {
            let args = ServeArgs {
                model,
                ..all.clone()
            };
            assert_eq!(parse(args.to_args()), args);
        }
        assert_eq!(parse(defaults.to_args()), defaults);
    }

    fn try_parse(words: &[&str]) -> Result<ServeArgs, clap::Error> {
        Cmd::try_parse_from(std::iter::once("serve").chain(words.iter().copied())).map(|c| c.args)
    }

    #[test]
    fn every_number_has_a_range() {
        for (flag, ok, bad) in [
            ("--workers", "1024", "1025"),
            ("--workers", "1", "0"),
            ("--large-bytes", "64GiB", "65GiB"),
            ("--chunk-bytes", "16MiB", "17MiB"),
            ("--chunk-bytes", "1", "0"),
            ("--worker-timeout", "1day", "25h"),
        ] {
            assert!(try_parse(&[flag, ok]).is_ok(), "{flag} {ok}");
            let err = try_parse(&[flag, bad]).expect_err(bad).to_string();
            assert!(err.contains(flag), "{err}");
            assert!(err.contains("from"), "the range is named: {err}");
        }
        let err = try_parse(&["--workers", "100000"]).expect_err("too many");
        assert!(err.to_string().contains("1 to 1024"), "{err}");
    }

    #[test]
    fn a_listener_outside_loopback_needs_allow_remote() {
        for listen in ["0.0.0.0:0", "[::]:0", "192.0.2.1:80"] {
            let args = try_parse(&["--listen", listen]).expect("parses");
            let err = args.to_config().expect_err(listen);
            assert!(err.is::<BadInput>(), "{err}");
            assert!(err.to_string().starts_with("refusing --listen"), "{err}");
            let allowed = try_parse(&["--listen", listen, "--allow-remote"]).expect("parses");
            assert!(allowed.to_config().is_ok(), "{listen} with --allow-remote");
        }
        let lo = try_parse(&["--listen", "127.0.0.2:0"]).expect("parses");
        assert!(lo.to_config().is_ok());
    }
}
