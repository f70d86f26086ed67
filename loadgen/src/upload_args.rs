//! The request direction's flags of `slowlab load`: slow uploaders and
//! slowloris clients, declared once and flattened into [`LoadArgs`].
//!
//! [`LoadArgs`]: crate::cli::LoadArgs

use std::ffi::OsString;
use std::time::Duration;

use anyhow::{Context, bail};
use common::bounds::{MAX_DURATION, MAX_SLOW_READERS, duration_in, int_in, size_in};
use common::units::{Size, format_duration};

use crate::config::{MAX_RCVBUF, MAX_SLOW_RATE, UploadConfig, check_path};
use crate::target::Target;

/// The largest `--upload-bytes`: the body is generated block by block and
/// never held, so this only keeps a typo from an upload of years.
pub const MAX_UPLOAD_BYTES: u64 = 64 << 30;
/// The shortest `--header-interval`: below it a slowloris client is a
/// fast client.
pub const MIN_HEADER_INTERVAL: Duration = Duration::from_millis(1);

/// Slow uploaders (`--slow-upload`) and slowloris clients (`--slow-headers`).
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct UploadArgs {
    /// Number of slow uploaders that POST the upload path (0 to 25000).
    #[arg(long, default_value_t = 0, value_parser = int_in(0, MAX_SLOW_READERS))]
    pub slow_upload: usize,
    /// Path the slow uploaders POST.
    #[arg(long, default_value = "/upload")]
    pub upload_path: String,
    /// Body size of each upload, the pattern with Content-Length (0 to 64GiB).
    #[arg(long, default_value = "16MiB", value_parser = size_in(0, MAX_UPLOAD_BYTES))]
    pub upload_bytes: Size,
    /// Send rate of each slow uploader, bytes per second (1 to 10GiB).
    #[arg(long, default_value = "2MiB", value_parser = size_in(1, MAX_SLOW_RATE))]
    pub upload_rate: Size,
    /// SO_SNDBUF requested for slow uploaders before connect (0 to 1GiB).
    #[arg(long, default_value = "8KiB", value_parser = size_in(0, MAX_RCVBUF))]
    pub sndbuf: Size,
    /// Number of slowloris clients: each sends a request head one header
    /// line per --header-interval and never finishes it (0 to 25000).
    #[arg(long, default_value_t = 0, value_parser = int_in(0, MAX_SLOW_READERS))]
    pub slow_headers: usize,
    /// Time between two header lines of a slowloris client (1ms to 1day).
    #[arg(long, default_value = "1s", value_parser = duration_in(MIN_HEADER_INTERVAL, MAX_DURATION))]
    pub header_interval: Duration,
    /// The answers that make an upload ok once all its bytes are sent:
    /// statuses and classes, comma-separated (`2xx`, `200,201`, `2xx,303`).
    /// An answer that is the lab's JSON (`{"bytes": N, "pattern_ok": B}`)
    /// is checked too.
    #[arg(long, default_value = "2xx", value_parser = OkStatuses::parse)]
    pub upload_ok: OkStatuses,
}

/// The statuses `--upload-ok` accepts: codes and classes (`2xx`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OkStatuses(Vec<(u16, u16)>);

impl OkStatuses {
    /// Any 2xx.
    pub fn success() -> Self {
        OkStatuses(vec![(200, 299)])
    }

    /// `2xx`, `201`, or a comma-separated list of them (100 to 599).
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut ranges = Vec::new();
        for part in s.split(',').map(str::trim) {
            let range = match part.strip_suffix("xx").or_else(|| part.strip_suffix("XX")) {
                Some(class) => class
                    .parse::<u16>()
                    .ok()
                    .filter(|c| (1..=5).contains(c))
                    .map(|c| (c * 100, c * 100 + 99)),
                None => part
                    .parse::<u16>()
                    .ok()
                    .filter(|c| (100..=599).contains(c))
                    .map(|c| (c, c)),
            };
            ranges.push(range.ok_or_else(|| {
                format!("`{part}`: give a status from 100 to 599 or a class such as 2xx")
            })?);
        }
        Ok(OkStatuses(ranges))
    }

    pub fn contains(&self, status: u16) -> bool {
        self.0.iter().any(|(lo, hi)| (*lo..=*hi).contains(&status))
    }
}

impl std::fmt::Display for OkStatuses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|&(lo, hi)| {
                if lo == hi {
                    lo.to_string()
                } else {
                    format!("{}xx", lo / 100)
                }
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}

impl Default for UploadArgs {
    /// No uploaders and no slowloris clients, every other flag at its
    /// default (a test holds this to the clap defaults).
    fn default() -> Self {
        UploadArgs {
            slow_upload: 0,
            upload_path: "/upload".into(),
            upload_bytes: Size(16 << 20),
            upload_rate: Size(2 << 20),
            sndbuf: Size(8 << 10),
            slow_headers: 0,
            header_interval: Duration::from_secs(1),
            upload_ok: OkStatuses::success(),
        }
    }
}

impl UploadArgs {
    /// Checks what clap cannot; returns the `SO_SNDBUF` request as the `int`
    /// that `setsockopt` takes.
    pub(crate) fn check(&self) -> anyhow::Result<usize> {
        check_path("--upload-path", &self.upload_path)?;
        if self.upload_rate.bytes() == 0 {
            bail!("--upload-rate must be more than 0 bytes per second");
        }
        if self.header_interval < MIN_HEADER_INTERVAL {
            bail!("--header-interval must be at least 1ms");
        }
        usize::try_from(self.sndbuf.bytes())
            .ok()
            .filter(|v| i32::try_from(*v).is_ok())
            .context("--sndbuf is too large")
    }

    /// Checks the flags ([`Self::check`]) and resolves them against the
    /// target: the one place `load` and `sweep-load` build their
    /// [`UploadConfig`].
    pub(crate) fn config(&self, target: &Target) -> anyhow::Result<UploadConfig> {
        let sndbuf = self.check()?;
        Ok(UploadConfig {
            uploaders: self.slow_upload,
            path: target.path(&self.upload_path),
            bytes: self.upload_bytes.bytes(),
            rate: self.upload_rate.bytes(),
            sndbuf,
            slow_headers: self.slow_headers,
            header_interval: self.header_interval,
            ok: self.upload_ok.clone(),
        })
    }

    /// The flags that parse back into these arguments.
    pub fn to_args(&self) -> Vec<OsString> {
        let UploadArgs {
            slow_upload,
            upload_path,
            upload_bytes,
            upload_rate,
            sndbuf,
            slow_headers,
            header_interval,
            upload_ok,
        } = self;
        vec![
            "--slow-upload".into(),
            slow_upload.to_string().into(),
            "--upload-path".into(),
            upload_path.into(),
            "--upload-bytes".into(),
            upload_bytes.to_string().into(),
            "--upload-rate".into(),
            upload_rate.to_string().into(),
            "--sndbuf".into(),
            sndbuf.to_string().into(),
            "--slow-headers".into(),
            slow_headers.to_string().into(),
            "--header-interval".into(),
            format_duration(*header_interval).into(),
            "--upload-ok".into(),
            upload_ok.to_string().into(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        args: UploadArgs,
    }

    #[test]
    fn the_default_is_the_flags_defaults_and_round_trips() {
        let parsed = Cmd::try_parse_from(["load"]).expect("parses").args;
        assert_eq!(parsed, UploadArgs::default());
        let back =
            Cmd::try_parse_from(std::iter::once(OsString::from("load")).chain(parsed.to_args()))
                .expect("parses")
                .args;
        assert_eq!(back, parsed);
    }

    #[test]
    fn upload_answers_are_statuses_and_classes() {
        let ok = OkStatuses::parse("2xx, 303").unwrap();
        for (status, yes) in [
            (200, true),
            (201, true),
            (204, true),
            (299, true),
            (303, true),
        ] {
            assert_eq!(ok.contains(status), yes, "{status}");
        }
        for status in [199, 300, 302, 404, 500] {
            assert!(!ok.contains(status), "{status}");
        }
        assert_eq!(ok.to_string(), "2xx,303");
        assert_eq!(OkStatuses::parse(&ok.to_string()).unwrap(), ok);
        for bad in ["", "6xx", "0xx", "99", "600", "ok", "2xx,"] {
            assert!(OkStatuses::parse(bad).is_err(), "{bad}");
        }
    }
}
