//! The runner's own request body limit, above every function's limit (the
//! largest, sha1's, is 64 MiB): a declared `Content-Length` past it is refused
//! with a `413` before any instance is created; a streamed (chunked) body that
//! grows past it ends, for the guest, with `HTTP-request-body-size`, and the
//! runner answers `413` in place of whatever the guest made of the failed read.

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use wasmtime_wasi_http::Error;

/// Default `--max-request-body`: 128 MiB.
pub const DEFAULT_MAX_REQUEST_BODY: u64 = 128 << 20;

/// A request body that errors once more than `limit` bytes of data went through.
pub struct LimitedBody<B> {
    inner: B,
    left: u64,
    limit: u64,
    exceeded: Exceeded,
}

/// Whether a [`LimitedBody`] hit its limit; kept by the host after the body
/// itself has gone to the guest.
#[derive(Clone, Default)]
pub struct Exceeded(Arc<AtomicBool>);

impl Exceeded {
    pub fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl<B> LimitedBody<B> {
    pub fn new(inner: B, limit: u64, exceeded: Exceeded) -> Self {
        Self {
            inner,
            left: limit,
            limit,
            exceeded,
        }
    }
}

impl<B> Body for LimitedBody<B>
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
                if let Some(data) = frame.data_ref() {
                    let len = data.len() as u64;
                    if len > this.left {
                        this.left = 0;
                        this.exceeded.0.store(true, Ordering::Relaxed);
                        return Poll::Ready(Some(Err(Error::HttpRequestBodySize(Some(
                            this.limit,
                        )))));
                    }
                    this.left -= len;
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(error))) => Poll::Ready(Some(Err(error.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
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

    #[tokio::test]
    async fn passes_up_to_the_limit_and_errors_past_it() {
        let body = LimitedBody::new(
            Full::new(Bytes::from_static(b"12345")),
            5,
            Exceeded::default(),
        );
        assert_eq!(body.collect().await.unwrap().to_bytes(), "12345");
        let body = LimitedBody::new(
            Full::new(Bytes::from_static(b"123456")),
            5,
            Exceeded::default(),
        );
        assert!(matches!(
            body.collect().await,
            Err(Error::HttpRequestBodySize(Some(5)))
        ));
    }
}
