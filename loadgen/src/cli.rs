//! `slowlab load`: the command-line contract.

use std::path::PathBuf;
use std::time::Duration;

use common::units::{Size, parse_duration};

/// Open slow readers of /large and an open-loop /fast client against a target.
#[derive(Debug, Clone, clap::Args)]
pub struct LoadArgs {
    /// Base URL of the server, e.g. http://127.0.0.1:8000.
    #[arg(long)]
    pub target: String,
    /// Number of slow readers of the large path.
    #[arg(long, default_value_t = 2)]
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
    /// Path the slow readers download.
    #[arg(long, default_value = "/large")]
    pub large_path: String,
    /// /fast requests per second.
    #[arg(long, default_value_t = 8.0)]
    pub fast_rate: f64,
    /// How long /fast requests are sent.
    #[arg(long, default_value = "9s", value_parser = parse_duration)]
    pub fast_duration: Duration,
    /// Delay between the slow readers' start and the first /fast request.
    #[arg(long, default_value = "250ms", value_parser = parse_duration)]
    pub fast_start: Duration,
    /// Path of the fast requests.
    #[arg(long, default_value = "/fast")]
    pub fast_path: String,
    /// Give up on a request after this long.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Directory for requests.csv, large-responses.csv and latency.hgrm.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Identity column added to every CSV row (key=value; repeatable).
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Allow targets outside 127.0.0.0/8 and ::1.
    #[arg(long)]
    pub allow_remote: bool,
}

/// Runs `slowlab load`.
pub fn run(args: LoadArgs) -> anyhow::Result<()> {
    let _ = args;
    anyhow::bail!("slowlab load is not implemented yet")
}
