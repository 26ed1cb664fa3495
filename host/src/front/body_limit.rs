//! The runner's own guards on a request body, in front of the guest:
//!
//! - a size limit above every function's limit (the largest, sha1's, is 64 MiB):
//!   a declared `Content-Length` past it is refused with a `413` before any
//!   instance is created; a streamed (chunked) body that grows past it ends, for
//!   the guest, with `HTTP-request-body-size`;
//! - a read timeout: a body that makes no progress for `--body-read-timeout`
//!   while the guest waits for it ends, for the guest, with
//!   `connection-read-timeout`;
//! - a total deadline: a body still arriving `--body-total-timeout` after its
//!   request did ends the same way, however steadily it trickles in (a byte
//!   every few seconds never stalls; a WASIp3 guest that answers with the
//!   request's own body as its response's, or a WAGI program's buffered
//!   stdin, would otherwise hold an instance for as long as the client likes).
//!
//! Either way the runner answers (`413`, `408`) in place of whatever the guest
//! made of the failed read, and the guest's instance is dropped with it.

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};
use wasmtime_wasi_http::Error;

/// Default `--max-request-body`: 128 MiB.
pub const DEFAULT_MAX_REQUEST_BODY: u64 = 128 << 20;
/// Default `--body-read-timeout`: as long as a client gets for its head.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default `--body-total-timeout`: the request deadline's default, the
/// longest a WASIp2 guest reading its body could use it anyway.
pub const DEFAULT_BODY_TOTAL_TIMEOUT: Duration = Duration::from_secs(30);

/// The limits a [`GuardedBody`] enforces.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimits {
    pub max_size: u64,
    pub read_timeout: Duration,
    pub total_timeout: Duration,
}

/// Why a [`GuardedBody`] ended early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFault {
    TooLarge,
    Stalled,
    /// Still arriving at the total deadline.
    Overdue,
}

/// Which [`BodyFault`] a body hit, if any; kept by the host after the body
/// itself has gone to the guest.
#[derive(Clone, Default)]
pub struct FaultCell(Arc<AtomicU8>);

impl FaultCell {
    pub fn get(&self) -> Option<BodyFault> {
        match self.0.load(Ordering::Relaxed) {
            1 => Some(BodyFault::TooLarge),
            2 => Some(BodyFault::Stalled),
            3 => Some(BodyFault::Overdue),
            _ => None,
        }
    }

    fn set(&self, fault: BodyFault) {
        let code = match fault {
            BodyFault::TooLarge => 1,
            BodyFault::Stalled => 2,
            BodyFault::Overdue => 3,
        };
        self.0.store(code, Ordering::Relaxed);
    }
}

/// A request body that errors once more than `max_size` bytes of data went
/// through, once it has kept a reader waiting for `read_timeout`, or once
/// `total_timeout` has passed since it was made.
pub struct GuardedBody<B> {
    inner: B,
    left: u64,
    limits: BodyLimits,
    fault: FaultCell,
    /// When the whole body must have arrived.
    due: Instant,
    /// Armed when a read finds no data (for the read timeout or the total
    /// deadline, whichever comes first), disarmed by the next data; created
    /// on the first wait only, so a body that arrives with its head costs no
    /// timer.
    stall: Option<Pin<Box<Sleep>>>,
    waiting: bool,
}

impl<B> GuardedBody<B> {
    pub fn new(inner: B, limits: BodyLimits, fault: FaultCell) -> Self {
        Self {
            inner,
            left: limits.max_size,
            due: Instant::now() + limits.total_timeout,
            limits,
            fault,
            stall: None,
            waiting: false,
        }
    }

    /// Called when the inner body has no data yet: the fault once the wait
    /// that started with the first such call has lasted `read_timeout`, or
    /// the total deadline has come.
    fn stalled(&mut self, cx: &mut Context<'_>) -> Option<BodyFault> {
        if !self.waiting {
            self.waiting = true;
            let deadline = (Instant::now() + self.limits.read_timeout).min(self.due);
            match &mut self.stall {
                Some(sleep) => sleep.as_mut().reset(deadline),
                None => self.stall = Some(Box::pin(tokio::time::sleep_until(deadline))),
            }
        }
        let fired = self
            .stall
            .as_mut()
            .is_some_and(|sleep| sleep.as_mut().poll(cx).is_ready());
        fired.then(|| self.fault_now().unwrap_or(BodyFault::Stalled))
    }

    /// [`BodyFault::Overdue`] once the total deadline has passed.
    fn fault_now(&self) -> Option<BodyFault> {
        (Instant::now() >= self.due).then_some(BodyFault::Overdue)
    }
}

impl<B> Body for GuardedBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Error>,
{
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                this.waiting = false;
                if let Some(fault) = this.fault_now() {
                    this.fault.set(fault);
                    return Poll::Ready(Some(Err(Error::ConnectionReadTimeout)));
                }
                if let Some(data) = frame.data_ref() {
                    let len = data.len() as u64;
                    if len > this.left {
                        this.left = 0;
                        this.fault.set(BodyFault::TooLarge);
                        return Poll::Ready(Some(Err(Error::HttpRequestBodySize(Some(
                            this.limits.max_size,
                        )))));
                    }
                    this.left -= len;
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(error))) => Poll::Ready(Some(Err(error.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match this.stalled(cx) {
                Some(fault) => {
                    this.fault.set(fault);
                    Poll::Ready(Some(Err(Error::ConnectionReadTimeout)))
                }
                None => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, Full};

    fn limits(max_size: u64) -> BodyLimits {
        BodyLimits {
            max_size,
            read_timeout: Duration::from_secs(10),
            total_timeout: Duration::from_secs(30),
        }
    }

    #[tokio::test]
    async fn passes_up_to_the_limit_and_errors_past_it() {
        let body = GuardedBody::new(
            Full::new(Bytes::from_static(b"12345")),
            limits(5),
            FaultCell::default(),
        );
        assert_eq!(body.collect().await.unwrap().to_bytes(), "12345");
        let fault = FaultCell::default();
        let body = GuardedBody::new(
            Full::new(Bytes::from_static(b"123456")),
            limits(5),
            fault.clone(),
        );
        assert!(matches!(
            body.collect().await,
            Err(Error::HttpRequestBodySize(Some(5)))
        ));
        assert_eq!(fault.get(), Some(BodyFault::TooLarge));
    }

    /// One byte of body, then nothing, ever: a client that stopped sending.
    struct OneByteThenSilence(bool);

    impl Body for OneByteThenSilence {
        type Data = Bytes;
        type Error = Error;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
            if std::mem::replace(&mut self.0, true) {
                Poll::Pending
            } else {
                Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"x")))))
            }
        }
    }

    #[tokio::test]
    async fn a_body_that_stops_arriving_errors_after_the_read_timeout() {
        let fault = FaultCell::default();
        let limits = BodyLimits {
            max_size: 100,
            read_timeout: Duration::from_millis(200),
            total_timeout: Duration::from_secs(30),
        };
        let mut body = GuardedBody::new(OneByteThenSilence(false), limits, fault.clone());
        let start = Instant::now();
        let first = body.frame().await.unwrap().unwrap();
        assert_eq!(first.into_data().unwrap(), "x");
        assert_eq!(fault.get(), None);
        assert!(matches!(
            body.frame().await,
            Some(Err(Error::ConnectionReadTimeout))
        ));
        let waited = start.elapsed();
        assert!(
            waited >= Duration::from_millis(200) && waited < Duration::from_secs(5),
            "{waited:?}"
        );
        assert_eq!(fault.get(), Some(BodyFault::Stalled));
    }

    /// A byte every `every`, forever: never stalled for long.
    struct Trickle {
        every: Duration,
        next: Pin<Box<Sleep>>,
    }

    impl Body for Trickle {
        type Data = Bytes;
        type Error = Error;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
            if self.next.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            let next = Instant::now() + self.every;
            self.next.as_mut().reset(next);
            Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"x")))))
        }
    }

    /// A body that keeps trickling in, each byte well within the read
    /// timeout, ends at the total deadline (without it, it never ends).
    #[tokio::test]
    async fn a_body_that_trickles_in_ends_at_the_total_deadline() {
        let fault = FaultCell::default();
        let limits = BodyLimits {
            max_size: 1 << 20,
            read_timeout: Duration::from_millis(500),
            total_timeout: Duration::from_secs(1),
        };
        let every = Duration::from_millis(100);
        let trickle = Trickle {
            every,
            next: Box::pin(tokio::time::sleep(every)),
        };
        let start = Instant::now();
        let outcome = GuardedBody::new(trickle, limits, fault.clone())
            .collect()
            .await;
        assert!(matches!(outcome, Err(Error::ConnectionReadTimeout)));
        assert_eq!(fault.get(), Some(BodyFault::Overdue));
        let waited = start.elapsed();
        assert!(
            waited >= Duration::from_secs(1) && waited < Duration::from_secs(10),
            "{waited:?}"
        );
    }
}
