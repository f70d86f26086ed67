//! Unit tests of the spool's accounting, driven without any I/O but the
//! temp file.

use super::*;

fn cfg(dir: &Path, max_file: u64) -> BufferConfig {
    BufferConfig {
        max_temp_file_size: max_file,
        ..BufferConfig::experiment(dir.to_path_buf())
    }
}

/// A tiny xorshift generator, so the random schedule is reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Byte `i` of the test body.
fn body_byte(i: u64) -> u8 {
    (i % 251) as u8
}

fn body(from: u64, len: usize) -> Bytes {
    (0..len as u64).map(|i| body_byte(from + i)).collect()
}

/// Drives a spool with a random interleaving of upstream reads and client
/// writes and checks every invariant after every step. Returns the file's
/// size and the memory peak (the spool borrows the run's configuration).
fn random_run(seed: u64, buffering: Buffering, max_file: u64, total: u64) -> (u64, usize) {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(dir.path(), max_file);
    let mut spool = Spool::new(&c, buffering);
    let limit = match buffering {
        Buffering::On => c.memory_limit(),
        Buffering::Off => c.buffer_size,
    };
    let mut rng = Rng(seed | 1);
    let (mut sent, mut received) = (0u64, 0u64);
    let mut out: Option<Bytes> = None;
    // The first piece is what followed the response head in its buffer.
    let first = (c.buffer_size as u64 / 2).min(total) as usize;
    spool.push(body(0, first));
    sent += first as u64;
    let mut steps = 0;
    while received < total {
        steps += 1;
        assert!(
            steps < 1_000_000,
            "no progress: sent {sent} received {received} room {} mem {} out {:?}",
            spool.read_room(),
            spool.mem_bytes(),
            out.as_ref().map(|o| o.len())
        );
        if (rng.next() >> 33) % 2 == 0 && sent < total {
            spool.make_room().unwrap();
            let room = spool.read_room();
            if room > 0 {
                let n = (1 + (rng.next() >> 11) as usize % room).min((total - sent) as usize);
                spool.push(body(sent, n));
                sent += n as u64;
            }
        } else if let Some(piece) = out.take() {
            for (i, b) in piece.iter().enumerate() {
                assert_eq!(*b, body_byte(received + i as u64), "order broken");
            }
            received += piece.len() as u64;
            spool.out_done();
        } else {
            out = spool.take_out().unwrap();
            // Progress: with nothing out, anything stored can be taken.
            assert!(out.is_some() || spool.is_drained(), "client side stuck");
        }
        assert!(spool.mem_bytes() <= limit, "memory over the limit");
        assert!(spool.file_bytes() <= max_file, "file over its cap");
        assert!(spool.largest_spill_write() <= c.temp_file_write_size);
    }
    assert!(spool.is_drained());
    assert!(spool.mem_peak() <= limit);
    (spool.file_bytes(), spool.mem_peak())
}

#[test]
fn random_schedules_keep_order_and_bounds() {
    for seed in 1..40 {
        let (file_bytes, _) = random_run(seed, Buffering::On, 32 << 20, 2 << 20);
        assert!(file_bytes > 0, "seed {seed}: a slow client spills");
    }
}

#[test]
fn random_schedules_at_a_tiny_cap_never_deadlock() {
    for seed in 1..40 {
        let (file_bytes, _) = random_run(seed, Buffering::On, 64 * 1024, 1 << 20);
        assert!(file_bytes <= 64 * 1024);
    }
}

#[test]
fn random_schedules_without_a_file() {
    for seed in 1..20 {
        let (file_bytes, _) = random_run(seed, Buffering::On, 0, 1 << 20);
        assert_eq!(file_bytes, 0);
    }
}

#[test]
fn buffering_off_holds_one_buffer() {
    for seed in 1..20 {
        let (file_bytes, mem_peak) = random_run(seed, Buffering::Off, 32 << 20, 1 << 20);
        assert_eq!(file_bytes, 0);
        assert!(mem_peak <= 16 * 1024);
    }
}

#[test]
fn fills_memory_then_spills_in_write_size_pieces_then_stops() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(dir.path(), 128 * 1024);
    let mut spool = Spool::new(&c, Buffering::On);
    let mut sent = 0u64;
    // A client that never reads: memory fills to its limit first.
    while spool.read_room() > 0 {
        let n = spool.read_room();
        spool.push(body(sent, n));
        sent += n as u64;
    }
    assert_eq!(sent, 80 * 1024);
    assert_eq!(spool.file_bytes(), 0);
    // Then the oldest bytes go to the file, 64 KiB per write, and reading
    // goes on until the file reaches its cap.
    let created = spool.make_room().unwrap();
    assert!(created.is_some(), "the first spill creates the file");
    assert_eq!(spool.file_bytes(), 64 * 1024);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "unlinked"
    );
    loop {
        assert!(
            spool.make_room().unwrap().is_none(),
            "one file per response"
        );
        let n = spool.read_room();
        if n == 0 {
            break;
        }
        spool.push(body(sent, n));
        sent += n as u64;
    }
    assert_eq!(spool.file_bytes(), 128 * 1024);
    assert!(spool.mem_bytes() <= 80 * 1024);
    assert_eq!(spool.largest_spill_write(), 64 * 1024);
    // Backpressure: nothing more is read until the client drains, and the
    // client is served from the file first.
    assert_eq!(spool.read_room(), 0);
    let first = spool.take_out().unwrap().unwrap();
    assert_eq!(first, body(0, first.len()));
    assert!(first.len() <= 32 * 1024);
}

#[test]
fn no_file_means_backpressure_at_the_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(dir.path(), 0);
    let mut spool = Spool::new(&c, Buffering::On);
    spool.push(body(0, 16 * 1024));
    while spool.read_room() > 0 {
        spool.push(body(0, spool.read_room()));
    }
    assert!(spool.make_room().unwrap().is_none());
    assert_eq!(spool.read_room(), 0);
    assert_eq!(spool.file_bytes(), 0);
    assert_eq!(spool.mem_peak(), 80 * 1024);
}
