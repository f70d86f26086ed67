//! The per-response temp file, made the way NGINX makes its proxy temp files.
//!
//! NGINX creates the file `0600` under `proxy_temp_path` and unlinks it at
//! once, so the file has no name while it is in use and disappears with its
//! last descriptor, even if the process is killed. The experiment measures it
//! the same way it finds NGINX's: through `/proc/PID/fd`.

use std::fs::{File, OpenOptions};
use std::io::{self, IoSlice, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::{Bytes, BytesMut};

/// Names are unique per process; the pid keeps two proxies sharing a
/// directory apart.
static NEXT: AtomicU64 = AtomicU64::new(1);

/// An unlinked, append-only temp file that can be read back at any offset.
#[derive(Debug)]
pub struct SpillFile {
    file: File,
    /// Where the file was created; it no longer exists under this name.
    path: PathBuf,
    len: u64,
}

impl SpillFile {
    /// Creates the file `0600` in `dir` and unlinks it.
    pub fn create(dir: &Path) -> io::Result<SpillFile> {
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!("slowlab-proxy-{}-{n:010}", std::process::id()));
            let opened = OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path);
            match opened {
                Ok(file) => {
                    std::fs::remove_file(&path)?;
                    return Ok(SpillFile { file, path, len: 0 });
                }
                // A leftover of a crashed process with the same pid: skip it.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The name the file had before it was unlinked, for the log.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes written so far (the file's logical size: like NGINX, nothing is
    /// reclaimed before the response ends).
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `pieces` with as few `writev(2)` calls as the kernel allows.
    pub fn append(&mut self, pieces: &[Bytes]) -> io::Result<()> {
        let total: usize = pieces.iter().map(Bytes::len).sum();
        let mut slices: Vec<IoSlice<'_>> = pieces.iter().map(|p| IoSlice::new(p)).collect();
        let mut rest = &mut slices[..];
        // The file was opened without O_APPEND, but only this struct writes
        // it and always at the end, so the cursor is the end.
        while !rest.is_empty() {
            let n = self.file.write_vectored(rest)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "temp file accepted no bytes",
                ));
            }
            IoSlice::advance_slices(&mut rest, n);
        }
        self.len += total as u64;
        Ok(())
    }

    /// Reads exactly `len` bytes at `offset`, which must lie within what was
    /// appended.
    pub fn read_at(&self, offset: u64, len: usize) -> io::Result<Bytes> {
        let mut buf = BytesMut::zeroed(len);
        self.file.read_exact_at(&mut buf, offset)?;
        Ok(buf.freeze())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn file_is_private_unlinked_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = SpillFile::create(dir.path()).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let mode = f.file.metadata().unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        f.append(&[Bytes::from_static(b"hello "), Bytes::from_static(b"world")])
            .unwrap();
        f.append(&[Bytes::from_static(b"!")]).unwrap();
        assert_eq!(f.len(), 12);
        assert_eq!(&f.read_at(0, 5).unwrap()[..], b"hello");
        assert_eq!(&f.read_at(6, 6).unwrap()[..], b"world!");
        assert!(f.read_at(10, 5).is_err());
    }
}
