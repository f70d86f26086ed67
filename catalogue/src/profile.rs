//! The load of a run: the `/large` body, the slow readers' and
//! uploaders' rates, the open-loop `/fast` schedule.

use std::time::Duration;

use crate::condition::Condition;
use crate::names::Direction;
use crate::reader::ReaderModel;

/// The `/large` body served in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Body {
    pub large_bytes: u64,
    pub chunk_bytes: u64,
}

/// The slow uploads of a run (`slowlab load --upload-bytes/--upload-rate`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct UploadProfile {
    pub bytes: u64,
    /// Bytes per second of each slow uploader.
    pub rate: u64,
}

/// The load of one run, passed to `slowlab load` and to the servers.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct LoadProfile {
    pub body: Body,
    /// Bytes per second of each slow reader.
    pub slow_rate: u64,
    pub rcvbuf: u64,
    pub read_chunk: u64,
    /// How the slow readers read (`slowlab load --reader`).
    pub reader: ReaderModel,
    pub fast_rate: f64,
    #[serde(with = "secs")]
    pub fast_duration: Duration,
    #[serde(with = "secs")]
    pub fast_start: Duration,
    #[serde(with = "secs")]
    pub timeout: Duration,
    /// The slow uploads of request-direction conditions.
    pub upload: UploadProfile,
}

mod secs {
    use std::time::Duration;

    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

impl LoadProfile {
    /// The reader `c`'s slow readers use under this profile: the
    /// condition's own, else the profile's.
    pub fn reader_of(&self, c: &Condition) -> ReaderModel {
        c.reader.unwrap_or(self.reader)
    }

    /// The original's values, its reader included.
    pub fn experiment() -> Self {
        LoadProfile {
            body: Body {
                large_bytes: 16 << 20,
                chunk_bytes: 64 << 10,
            },
            slow_rate: 2 << 20,
            rcvbuf: 8 << 10,
            read_chunk: 16 << 10,
            reader: ReaderModel::Streamreader,
            fast_rate: 8.0,
            fast_duration: Duration::from_secs(9),
            fast_start: Duration::from_millis(250),
            timeout: Duration::from_secs(30),
            upload: UploadProfile {
                bytes: 16 << 20,
                rate: 2 << 20,
            },
        }
    }

    /// Shorter runs that still show the phenomenon: the body stays 16 MiB,
    /// four times the kernel's largest send buffer here, so a blocked worker
    /// stays blocked; the readers go twice as fast (about 4 s a download)
    /// and `/fast` runs for 3 s instead of 9.
    pub fn quick() -> Self {
        LoadProfile {
            slow_rate: 4 << 20,
            reader: ReaderModel::Strict,
            fast_duration: Duration::from_secs(3),
            ..Self::experiment()
        }
    }

    /// About how long the load lasts: the later of the last /fast request
    /// and the slow downloads.
    pub fn expected_duration(&self, slow: u32) -> Duration {
        let fast = self.fast_start + self.fast_duration;
        if slow == 0 {
            return fast;
        }
        let download =
            Duration::from_secs_f64(self.body.large_bytes as f64 / self.slow_rate as f64);
        fast.max(download)
    }

    /// [`Self::expected_duration`] of a condition in any direction: slow
    /// uploads last their size over their rate; slowloris clients as long
    /// as `/fast`, then up to the timeout.
    pub fn expected_duration_of(&self, c: &Condition) -> Duration {
        let fast = self.fast_start + self.fast_duration;
        match c.direction {
            _ if c.slow == 0 => fast,
            Direction::Download => self.expected_duration(c.slow),
            Direction::Upload => fast.max(Duration::from_secs_f64(
                self.upload.bytes as f64 / self.upload.rate as f64,
            )),
            Direction::Headers => fast + self.timeout,
        }
    }
}
