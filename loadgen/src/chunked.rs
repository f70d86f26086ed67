//! A streaming decoder for `Transfer-Encoding: chunked` bodies.
//!
//! Our servers send `Content-Length`, but people point the load generator at
//! their own apps, and a streaming response from those is often chunked. The
//! decoder hands out payload slices without copying, whatever way the bytes
//! were split by the reads.

use crate::error::{ErrorKind, Failure};

/// The longest chunk-size line (size plus extensions) we accept.
const MAX_LINE: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Reading the hex size and any extensions up to CRLF.
    SizeLine,
    /// Inside chunk data, with this many bytes left.
    Data(u64),
    /// Expecting the CRLF after chunk data.
    DataEnd,
    /// Reading trailer lines after the last chunk; done at an empty line.
    Trailer,
    Done,
}

/// Decodes a chunked body fed in arbitrary pieces.
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    state: State,
    line: Vec<u8>,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        ChunkedDecoder {
            state: State::SizeLine,
            line: Vec::new(),
        }
    }
}

impl ChunkedDecoder {
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Feeds raw body bytes; payload goes to `sink`. Returns how many input
    /// bytes were used (fewer than given only once the body is complete).
    pub fn feed(
        &mut self,
        mut input: &[u8],
        sink: &mut dyn FnMut(&[u8]),
    ) -> Result<usize, Failure> {
        let given = input.len();
        while !input.is_empty() && self.state != State::Done {
            match self.state {
                State::Data(left) => {
                    let n = usize::try_from(left).unwrap_or(usize::MAX).min(input.len());
                    sink(&input[..n]);
                    input = &input[n..];
                    let left = left - n as u64;
                    self.state = if left == 0 {
                        State::DataEnd
                    } else {
                        State::Data(left)
                    };
                }
                State::SizeLine | State::DataEnd | State::Trailer => {
                    let Some(line) = self.take_line(&mut input)? else {
                        continue;
                    };
                    self.state = self.after_line(&line)?;
                }
                State::Done => {}
            }
        }
        Ok(given - input.len())
    }

    /// Collects bytes up to and including LF; returns the line without CRLF
    /// once it is whole.
    fn take_line(&mut self, input: &mut &[u8]) -> Result<Option<Vec<u8>>, Failure> {
        let (part, rest, whole) = match input.iter().position(|&b| b == b'\n') {
            Some(i) => (&input[..i], &input[i + 1..], true),
            None => (*input, &input[input.len()..], false),
        };
        if self.line.len() + part.len() > MAX_LINE {
            return Err(malformed("chunk line too long"));
        }
        self.line.extend_from_slice(part);
        *input = rest;
        if !whole {
            return Ok(None);
        }
        let mut line = std::mem::take(&mut self.line);
        if line.last() != Some(&b'\r') {
            return Err(malformed("chunk line not ended by CRLF"));
        }
        line.pop();
        Ok(Some(line))
    }

    fn after_line(&self, line: &[u8]) -> Result<State, Failure> {
        match self.state {
            State::DataEnd if line.is_empty() => Ok(State::SizeLine),
            State::DataEnd => Err(malformed("chunk data longer than its size")),
            State::Trailer if line.is_empty() => Ok(State::Done),
            State::Trailer => Ok(State::Trailer),
            _ => {
                let hex = line.split(|&b| b == b';').next().unwrap_or_default();
                let hex = std::str::from_utf8(hex).map_err(|_| malformed("chunk size"))?;
                let size = u64::from_str_radix(hex.trim(), 16)
                    .map_err(|_| malformed(format!("chunk size `{}`", hex.trim())))?;
                Ok(if size == 0 {
                    State::Trailer
                } else {
                    State::Data(size)
                })
            }
        }
    }
}

fn malformed(what: impl Into<String>) -> Failure {
    Failure::new(
        ErrorKind::Malformed,
        format!("chunked body: {}", what.into()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(body: &[u8], split: usize) -> Result<(Vec<u8>, bool, usize), Failure> {
        let mut d = ChunkedDecoder::default();
        let mut out = Vec::new();
        let mut used = 0;
        for piece in body.chunks(split) {
            used += d.feed(piece, &mut |p| out.extend_from_slice(p))?;
        }
        Ok((out, d.is_done(), used))
    }

    #[test]
    fn decodes_in_any_split() {
        let body = b"5\r\nhello\r\nA;ext=1\r\n0123456789\r\n0\r\nX-Trailer: y\r\n\r\n";
        for split in 1..body.len() {
            let (out, done, used) = decode(body, split).expect("decodes");
            assert_eq!(out, b"hello0123456789", "split {split}");
            assert!(done);
            assert_eq!(used, body.len());
        }
    }

    #[test]
    fn stops_at_the_end_and_reports_incomplete_bodies() {
        let (out, done, used) = decode(b"1\r\na\r\n0\r\n\r\nEXTRA", 64).expect("decodes");
        assert_eq!((out.as_slice(), done, used), (&b"a"[..], true, 11));
        let (_, done, _) = decode(b"5\r\nhel", 64).expect("decodes");
        assert!(!done);
    }

    #[test]
    fn refuses_bad_framing() {
        for bad in [&b"zz\r\n"[..], b"2\r\nabc\r\n", b"2\nab\r\n", b"1\r\na\n"] {
            let err = decode(bad, 64).expect_err("malformed");
            assert_eq!(err.kind, ErrorKind::Malformed, "{bad:?}");
        }
    }
}
