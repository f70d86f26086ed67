//! The `/large` body: the pattern block handed to hyper one frame per block,
//! the next block only once the kernel has accepted the previous one.
//!
//! Gunicorn's sync worker asks the WSGI iterable for the next block only after
//! `sendall` has pushed the previous one into the kernel. Hyper would instead
//! poll the body again as soon as its own write buffer has room, so a stuck
//! socket could hide up to a block of extra data in user space and the
//! worker would look busier producing than it is. Waiting on the
//! [`Meter`](crate::meter::Meter) reproduces `sendall`: at most one block is
//! ever between the application and the kernel, and a client that stops
//! reading stops the body as soon as the kernel's buffers are full.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use crate::meter::Meter;

/// Streams `total` bytes as repeated `block`s (the last one truncated).
#[derive(Debug)]
pub struct LargeBody {
    block: Bytes,
    total: u64,
    produced: u64,
    meter: Arc<Meter>,
}

impl LargeBody {
    /// Starts the body now: the send log's clock for this response begins
    /// here, as the original's began when the WSGI iterable started.
    pub fn start(block: Bytes, total: u64, meter: Arc<Meter>) -> Self {
        let worker = std::thread::current()
            .name()
            .unwrap_or("unnamed")
            .to_string();
        meter.start_large(total, worker);
        LargeBody {
            block,
            total,
            produced: 0,
            meter,
        }
    }
}

impl Body for LargeBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.produced >= self.total {
            return Poll::Ready(None);
        }
        // Hyper keeps flushing its buffer while the body is pending, and the
        // meter wakes us when that flush moves body bytes into the kernel.
        if !self.meter.body_caught_up(self.produced, cx.waker()) {
            return Poll::Pending;
        }
        let left = self.total - self.produced;
        // `left` is only used when it is smaller than the block, so it fits.
        let n = usize::try_from(left).map_or(self.block.len(), |l| l.min(self.block.len()));
        self.produced += n as u64;
        Poll::Ready(Some(Ok(Frame::data(self.block.slice(..n)))))
    }

    fn is_end_stream(&self) -> bool {
        self.produced >= self.total
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.total - self.produced)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Waker;

    fn poll(body: &mut LargeBody) -> Poll<Option<Bytes>> {
        let mut cx = Context::from_waker(Waker::noop());
        Pin::new(body)
            .poll_frame(&mut cx)
            .map(|f| f.map(|f| f.expect("infallible").into_data().expect("data")))
    }

    #[test]
    fn waits_for_the_kernel_between_blocks() {
        let meter = Arc::new(Meter::default());
        let block = Bytes::from(common::pattern::block(4));
        let mut body = LargeBody::start(block, 10, meter.clone());
        assert_eq!(
            poll(&mut body),
            Poll::Ready(Some(Bytes::from_static(&[0, 1, 2, 3])))
        );
        // Nothing accepted yet: the second block must wait.
        assert_eq!(poll(&mut body), Poll::Pending);
        assert_eq!(meter.large().expect("started").total, 10);
    }

    #[test]
    fn empty_body_is_complete_at_once() {
        let meter = Arc::new(Meter::default());
        let mut body = LargeBody::start(Bytes::new(), 0, meter.clone());
        assert!(body.is_end_stream());
        assert_eq!(poll(&mut body), Poll::Ready(None));
        assert!(meter.large().expect("started").last_byte_at.is_some());
    }
}
