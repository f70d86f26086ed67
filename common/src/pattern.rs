//! The `/large` body: one block repeated, where byte *i* of a block is
//! `i % 256`.
//!
//! The Python app builds its block as `bytes(range(256)) * (block // 256)`,
//! which is the same thing for block sizes that are multiples of 256. Because
//! every byte depends only on its offset inside the block, a reader can check
//! each byte it receives without holding the whole body.

/// The response header in which a server announces the block size of its
/// `/large` body (`X-Slowlab-Block: 65536`), so that a reader can verify
/// every byte. Lower case, as HTTP/2 and the `http` crate spell names;
/// readers compare it without regard to case.
pub const BLOCK_HEADER: &str = "x-slowlab-block";
/// The experiment's block size, 64 KiB.
pub const DEFAULT_BLOCK: usize = 64 * 1024;
/// The experiment's body size, 16 MiB = 256 blocks.
pub const DEFAULT_TOTAL: u64 = 16 * 1024 * 1024;

/// The byte at `offset` of a body made of `block`-sized blocks.
#[inline]
pub fn byte_at(offset: u64, block: usize) -> u8 {
    let in_block = offset % block.max(1) as u64;
    (in_block % 256) as u8
}

/// One block of the pattern.
pub fn block(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 256) as u8).collect()
}

/// Two rounds of the 256-byte cycle: any run of up to 256 pattern bytes
/// within a block is a slice of it.
const CYCLE: [u8; 512] = {
    let mut t = [0u8; 512];
    let mut i = 0;
    while i < 512 {
        t[i] = (i % 256) as u8;
        i += 1;
    }
    t
};

/// Checks a received slice against the pattern.
///
/// Returns the absolute offset of the first wrong byte, if any.
pub fn first_mismatch(data: &[u8], start: u64, block: usize) -> Option<u64> {
    let block = block.max(1) as u64;
    // Within a block, byte i is i % 256: a run of up to 256 bytes that
    // stays in one block is a slice of `CYCLE`, compared at memcmp's speed
    // (a byte at a time cost 44% of a load generator's CPU at 1,024
    // readers). Only a run that differs is scanned for its first byte.
    let mut in_block = start % block;
    let mut i = 0usize;
    while i < data.len() {
        let at = (in_block % 256) as usize;
        let left_in_block = usize::try_from(block - in_block).unwrap_or(usize::MAX);
        let n = (data.len() - i).min(256).min(left_in_block);
        let got = &data[i..i + n];
        let want = &CYCLE[at..at + n];
        if got != want {
            let k = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(0);
            return Some(start + (i + k) as u64);
        }
        i += n;
        in_block += n as u64;
        if in_block == block {
            in_block = 0;
        }
    }
    None
}

/// Incremental verifier for a body that arrives in pieces.
#[derive(Debug, Clone)]
pub struct Verifier {
    block: usize,
    offset: u64,
    first_bad: Option<u64>,
}

impl Verifier {
    pub fn new(block: usize) -> Self {
        Verifier {
            block,
            offset: 0,
            first_bad: None,
        }
    }

    /// Feeds the next piece of the body.
    pub fn update(&mut self, data: &[u8]) {
        if self.first_bad.is_none() {
            self.first_bad = first_mismatch(data, self.offset, self.block);
        }
        self.offset += data.len() as u64;
    }

    /// Bytes seen so far.
    pub fn seen(&self) -> u64 {
        self.offset
    }

    /// The offset of the first byte that broke the pattern.
    pub fn first_bad(&self) -> Option<u64> {
        self.first_bad
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_matches_python_definition() {
        // bytes(range(256)) * 256
        let python: Vec<u8> = (0..256).flat_map(|_| 0u8..=255).collect();
        assert_eq!(block(DEFAULT_BLOCK), python);
    }

    #[test]
    fn verifier_accepts_the_pattern_in_any_split() {
        let body: Vec<u8> = (0..3).flat_map(|_| block(1000)).collect();
        for split in [1, 7, 999, 1000, 1001, 2500] {
            let mut v = Verifier::new(1000);
            for piece in body.chunks(split) {
                v.update(piece);
            }
            assert_eq!(v.first_bad(), None, "split {split}");
            assert_eq!(v.seen(), 3000);
        }
    }

    #[test]
    fn verifier_reports_the_first_wrong_offset() {
        let mut body: Vec<u8> = (0..2).flat_map(|_| block(DEFAULT_BLOCK)).collect();
        body[70_000] ^= 0xff;
        body[80_000] ^= 0xff;
        let mut v = Verifier::new(DEFAULT_BLOCK);
        for piece in body.chunks(16 * 1024) {
            v.update(piece);
        }
        assert_eq!(v.first_bad(), Some(70_000));
    }

    #[test]
    fn every_wrong_byte_is_found_in_any_block_size_and_split() {
        for block_len in [1usize, 255, 256, 300, 1000, DEFAULT_BLOCK] {
            let body: Vec<u8> = (0..3).flat_map(|_| block(block_len)).collect();
            for bad in [
                0,
                1,
                block_len - 1,
                block_len,
                body.len() / 2,
                body.len() - 1,
            ] {
                let mut broken = body.clone();
                broken[bad] ^= 0x5a;
                for split in [1, 7, 256, 257, 4096] {
                    let mut v = Verifier::new(block_len);
                    for piece in broken.chunks(split) {
                        v.update(piece);
                    }
                    assert_eq!(
                        v.first_bad(),
                        Some(bad as u64),
                        "block {block_len} byte {bad} split {split}"
                    );
                }
            }
            let from = body.len().min(5);
            assert_eq!(first_mismatch(&body[from..], from as u64, block_len), None);
        }
    }

    #[test]
    fn byte_at_restarts_every_block() {
        assert_eq!(byte_at(0, 300), 0);
        assert_eq!(byte_at(299, 300), (299 % 256) as u8);
        assert_eq!(byte_at(300, 300), 0);
        assert_eq!(byte_at(301, 300), 1);
    }
}
