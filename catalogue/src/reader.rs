//! The slow readers' models (`slowlab load --reader`).

/// How a slow reader takes the bytes off its socket (`--reader`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ReaderModel {
    /// One `recv` of at most `--read-chunk` when the pacing deadline comes:
    /// between reads the bytes wait in the kernel's receive queue.
    #[default]
    Strict,
    /// asyncio's `StreamReader` (limit `--read-chunk`) as the original's
    /// client used it: the transport drains the socket into a user-space
    /// buffer whenever reading is not paused, the application takes up to
    /// `--read-chunk` from it at the paced rate (see `streamreader`).
    Streamreader,
}

impl ReaderModel {
    /// The model named `s` (any case), as a results file writes it.
    pub fn from_name(s: &str) -> Option<ReaderModel> {
        <ReaderModel as clap::ValueEnum>::from_str(s, true).ok()
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ReaderModel::Strict => "strict",
            ReaderModel::Streamreader => "streamreader",
        }
    }
}

impl std::fmt::Display for ReaderModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
