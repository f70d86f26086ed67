//! Where a response's bytes wait between the upstream and the client: memory
//! buffers, then an unlinked temp file, then backpressure (NGINX's
//! `ngx_event_pipe`, reduced to its accounting).
//!
//! The spool does no waiting itself: [`crate::pipe`] asks it how much the next
//! upstream read may take ([`Spool::read_room`]), hands it what was read
//! ([`Spool::push`]), and asks it for the next piece for the client
//! ([`Spool::take_out`]) once the previous one was written
//! ([`Spool::out_done`]).
//!
//! # Invariants
//! - Memory held (queued pieces plus the piece being written) never exceeds
//!   [`BufferConfig::memory_limit`].
//! - Bytes leave in the order they arrived. Everything in the file is older
//!   than everything queued in memory: spilling takes the oldest queued bytes
//!   and appends them to the file, and the client is served from the file
//!   while it has unread bytes.
//! - The client side always makes progress: when nothing is being written and
//!   something is stored, [`Spool::take_out`] returns a piece. Since NGINX
//!   sends file data with `sendfile` and we page it through memory, the reader
//!   keeps one page (`busy_buffers_size`) free while the file has unread bytes
//!   and the client side is idle; without that, full memory plus a full file
//!   would deadlock.

use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use crate::config::{BufferConfig, Buffering};
use crate::spillfile::SpillFile;

/// Accounting and storage of one response body on its way through. It
/// borrows the temp directory from the configuration: most responses never
/// spill, so none pays for a copy of the path.
#[derive(Debug)]
pub struct Spool<'a> {
    limit: usize,
    read_size: usize,
    page: usize,
    write_size: usize,
    max_file: u64,
    temp_dir: &'a Path,
    queue: VecDeque<Bytes>,
    queued: usize,
    /// Length of the piece the client side holds, if any.
    out: Option<usize>,
    file: Option<SpillFile>,
    file_read: u64,
    mem_peak: usize,
    largest_spill_write: usize,
}

impl<'a> Spool<'a> {
    /// A spool for one response. With buffering off there is one buffer of
    /// `buffer_size` and no file, as in NGINX's non-buffered mode.
    pub fn new(cfg: &'a BufferConfig, buffering: Buffering) -> Spool<'a> {
        let (limit, read_size, page, max_file) = match buffering {
            Buffering::On => (
                cfg.memory_limit(),
                cfg.buffer_bytes,
                cfg.busy_buffers_size,
                cfg.max_temp_file_size,
            ),
            Buffering::Off => (cfg.buffer_size, cfg.buffer_size, cfg.buffer_size, 0),
        };
        Spool {
            limit,
            read_size,
            page,
            write_size: cfg.temp_file_write_size,
            max_file,
            temp_dir: &cfg.temp_path,
            queue: VecDeque::new(),
            queued: 0,
            out: None,
            file: None,
            file_read: 0,
            mem_peak: 0,
            largest_spill_write: 0,
        }
    }

    /// Bytes held in memory now.
    pub fn mem_bytes(&self) -> usize {
        self.queued + self.out.unwrap_or(0)
    }

    /// The most bytes held in memory at once.
    pub fn mem_peak(&self) -> usize {
        self.mem_peak
    }

    /// Bytes written to the temp file so far (its logical size).
    pub fn file_bytes(&self) -> u64 {
        self.file.as_ref().map_or(0, SpillFile::len)
    }

    fn file_unread(&self) -> u64 {
        self.file_bytes() - self.file_read
    }

    /// Nothing stored and nothing being written.
    pub fn is_drained(&self) -> bool {
        self.out.is_none() && self.queued == 0 && self.file_unread() == 0
    }

    /// How many bytes the next upstream read may take; 0 means wait.
    ///
    /// A read needs one whole free buffer, as in NGINX: reading into whatever
    /// sliver is left would split the body into ever smaller pieces. With
    /// buffering off the one buffer must be empty, so the proxy alternates
    /// between reading the upstream and writing the client.
    pub fn read_room(&self) -> usize {
        let reserve = if self.file_unread() > 0 && self.out.is_none() {
            self.page
        } else {
            0
        };
        let free = self.limit.saturating_sub(self.mem_bytes() + reserve);
        if free >= self.read_size {
            self.read_size
        } else {
            0
        }
    }

    /// Stores what the upstream sent; `data` must fit in [`Self::read_room`],
    /// except for the first piece (the rest of the response head's buffer),
    /// which must fit in memory.
    pub fn push(&mut self, data: Bytes) {
        if data.is_empty() {
            return;
        }
        debug_assert!(self.mem_bytes() + data.len() <= self.limit);
        self.queued += data.len();
        self.queue.push_back(data);
        self.mem_peak = self.mem_peak.max(self.mem_bytes());
    }

    /// When the reader has no room, writes the oldest queued bytes to the
    /// temp file in `temp_file_write_size` pieces until it has, or until the
    /// file reached `max_temp_file_size`. Returns the file's former name when
    /// this call created it, so the caller can warn as NGINX does.
    pub fn make_room(&mut self) -> io::Result<Option<PathBuf>> {
        let mut created = None;
        while self.read_room() == 0 && self.queued > 0 && self.file_bytes() < self.max_file {
            let cap_left = self.max_file - self.file_bytes();
            let want = self
                .write_size
                .min(self.queued)
                .min(usize::try_from(cap_left).unwrap_or(usize::MAX));
            let pieces = self.take_front(want);
            if self.file.is_none() {
                let file = SpillFile::create(self.temp_dir)?;
                created = Some(file.path().to_path_buf());
                self.file = Some(file);
            }
            // Just created above if it was missing.
            let file = self.file.as_mut().expect("temp file exists");
            file.append(&pieces)?;
            self.largest_spill_write = self.largest_spill_write.max(want);
        }
        Ok(created)
    }

    /// Removes exactly `want` bytes from the front of the queue.
    fn take_front(&mut self, want: usize) -> Vec<Bytes> {
        let mut pieces = Vec::new();
        let mut left = want;
        while left > 0 {
            // `want <= self.queued`, so the queue cannot run dry first.
            let mut front = self.queue.pop_front().expect("queue holds `want` bytes");
            if front.len() > left {
                let rest = front.split_off(left);
                self.queue.push_front(rest);
            }
            left -= front.len();
            self.queued -= front.len();
            pieces.push(front);
        }
        pieces
    }

    /// The next piece for the client, in order: unread file bytes first (one
    /// page at most), then the oldest queued piece. `None` while a piece is
    /// out or when nothing is stored.
    pub fn take_out(&mut self) -> io::Result<Option<Bytes>> {
        if self.out.is_some() {
            return Ok(None);
        }
        let unread = self.file_unread();
        if unread > 0 {
            let free = self.limit - self.mem_bytes();
            let n = self
                .page
                .min(free)
                .min(usize::try_from(unread).unwrap_or(usize::MAX));
            if n == 0 {
                return Ok(None);
            }
            // Checked above: unread > 0 implies a file.
            let file = self.file.as_ref().expect("unread bytes live in a file");
            let data = file.read_at(self.file_read, n)?;
            self.file_read += n as u64;
            self.out = Some(n);
            self.mem_peak = self.mem_peak.max(self.mem_bytes());
            return Ok(Some(data));
        }
        let front = self.queue.pop_front();
        if let Some(piece) = &front {
            self.queued -= piece.len();
            self.out = Some(piece.len());
        }
        Ok(front)
    }

    /// The piece from [`Self::take_out`] was written; its memory is free.
    pub fn out_done(&mut self) {
        self.out = None;
    }

    /// The largest single write to the temp file so far.
    pub fn largest_spill_write(&self) -> usize {
        self.largest_spill_write
    }

    /// The temp directory, for error messages.
    pub fn temp_dir(&self) -> &Path {
        self.temp_dir
    }
}

#[cfg(test)]
#[path = "spool_tests.rs"]
mod tests;
