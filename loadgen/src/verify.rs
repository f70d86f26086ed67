//! Checking a `/large` body as it arrives: against the documented pattern
//! when the server announces its block size (ours send `X-Slowlab-Block`) or
//! when asked to, else only its length.

use common::pattern::{DEFAULT_BLOCK, Verifier};

use crate::config::VerifyMode;
use crate::error::{ErrorKind, Failure};
use crate::response::{BodySink, ResponseHead};

/// Checks the body as it arrives.
#[derive(Debug)]
pub struct VerifySink {
    mode: VerifyMode,
    pub status: Option<u16>,
    pub content_length: Option<u64>,
    verifier: Option<Verifier>,
    block: usize,
}

impl VerifySink {
    pub fn new(mode: VerifyMode) -> Self {
        VerifySink {
            mode,
            status: None,
            content_length: None,
            verifier: None,
            block: DEFAULT_BLOCK,
        }
    }

    /// The failure the body's content amounts to, if any.
    pub fn verdict(&self) -> Option<Failure> {
        match self.status {
            Some(200) => {}
            Some(s) => return Some(Failure::new(ErrorKind::BadStatus, format!("status {s}"))),
            None => return Some(Failure::new(ErrorKind::Malformed, "no status")),
        }
        let bad = self.verifier.as_ref()?.first_bad()?;
        Some(Failure::new(
            ErrorKind::VerifyFailed,
            format!(
                "byte {bad} breaks the pattern (byte i of each {}-byte block is i % 256)",
                self.block
            ),
        ))
    }
}

impl BodySink for VerifySink {
    fn head(&mut self, head: &ResponseHead) -> Result<(), Failure> {
        self.status = Some(head.status);
        self.content_length = head.content_length;
        let announced = match &head.block {
            None => None,
            Some(v) => Some(v.parse::<usize>().ok().filter(|b| *b > 0).ok_or_else(|| {
                Failure::new(ErrorKind::Malformed, format!("X-Slowlab-Block `{v}`"))
            })?),
        };
        let block = match (self.mode, announced) {
            (VerifyMode::Length, _) | (VerifyMode::Auto, None) => None,
            (VerifyMode::Auto | VerifyMode::Pattern, Some(b)) => Some(b),
            (VerifyMode::Pattern, None) => Some(DEFAULT_BLOCK),
        };
        if let Some(b) = block {
            self.block = b;
            self.verifier = Some(Verifier::new(b));
        }
        Ok(())
    }

    fn data(&mut self, payload: &[u8]) {
        if let Some(v) = &mut self.verifier {
            v.update(payload);
        }
    }
}

impl VerifySink {
    /// Whether every byte is being checked against the pattern.
    pub fn checks_pattern(&self) -> bool {
        self.verifier.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(block: Option<&str>) -> ResponseHead {
        ResponseHead {
            status: 200,
            content_length: Some(2048),
            chunked: false,
            block: block.map(String::from),
        }
    }

    fn check(mode: VerifyMode, block: Option<&str>, body: &[u8]) -> (bool, Option<ErrorKind>) {
        let mut sink = VerifySink::new(mode);
        sink.head(&head(block)).expect("head accepted");
        for piece in body.chunks(100) {
            sink.data(piece);
        }
        (sink.checks_pattern(), sink.verdict().map(|f| f.kind))
    }

    #[test]
    fn modes_choose_what_is_checked() {
        // 1000-byte blocks: their restart at 1000 differs from 64 KiB ones.
        let good = common::pattern::block(1000).repeat(2);
        let mut bad = good.clone();
        bad[1500] ^= 1;
        assert_eq!(check(VerifyMode::Auto, Some("1000"), &good), (true, None));
        assert_eq!(
            check(VerifyMode::Auto, Some("1000"), &bad),
            (true, Some(ErrorKind::VerifyFailed))
        );
        assert_eq!(check(VerifyMode::Auto, None, &bad), (false, None));
        assert_eq!(check(VerifyMode::Length, Some("1000"), &bad), (false, None));
        // Forced, without the header: the experiment's 64 KiB block.
        assert_eq!(
            check(VerifyMode::Pattern, None, &good[..1000]),
            (true, None)
        );
        assert_eq!(
            check(VerifyMode::Pattern, None, &good),
            (true, Some(ErrorKind::VerifyFailed))
        );
    }

    #[test]
    fn a_bad_block_header_or_status_is_an_error() {
        let mut sink = VerifySink::new(VerifyMode::Auto);
        let err = sink.head(&head(Some("0"))).expect_err("zero block");
        assert_eq!(err.kind, ErrorKind::Malformed);
        let mut sink = VerifySink::new(VerifyMode::Auto);
        let mut h = head(None);
        h.status = 503;
        sink.head(&h).expect("head accepted");
        assert_eq!(sink.verdict().map(|f| f.kind), Some(ErrorKind::BadStatus));
    }
}
