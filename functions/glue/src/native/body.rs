//! Reading request bodies under the two body limits: a size cap (`413`) and an
//! idle timeout (`408`) for a client that stops sending in the middle of its body.

use crate::{ApiError, BodySink, Reply};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use std::time::Duration;

/// A request body read chunk by chunk, at most `limit` bytes, each chunk within `idle`.
pub struct BodyReader {
    body: Incoming,
    limit: u64,
    idle: Duration,
    received: u64,
}

impl BodyReader {
    pub fn new(body: Incoming, limit: u64, idle: Duration) -> Self {
        Self {
            body,
            limit,
            idle,
            received: 0,
        }
    }

    /// The next chunk of data (`None` at the end): a `408` when the client sends
    /// nothing for `idle`, a `413` past `limit`, a `400` when the body is malformed.
    pub async fn next_chunk(&mut self) -> Result<Option<Bytes>, ApiError> {
        loop {
            let frame = match tokio::time::timeout(self.idle, self.body.frame()).await {
                Err(_elapsed) => return Err(ApiError::request_body_stalled(self.idle)),
                Ok(None) => return Ok(None),
                Ok(Some(frame)) => frame.map_err(|error| {
                    ApiError::bad_request(format!("request body could not be read: {error}"))
                })?,
            };
            // Trailers carry no data; the loop moves on to the end of the body.
            if let Ok(chunk) = frame.into_data() {
                self.received += chunk.len() as u64;
                if self.received > self.limit {
                    return Err(ApiError::body_too_large(self.limit));
                }
                return Ok(Some(chunk));
            }
        }
    }

    /// The whole body, for a [`crate::Handler::Buffered`] handler.
    pub async fn read_all(mut self) -> Result<Vec<u8>, ApiError> {
        let mut body = Vec::new();
        while let Some(chunk) = self.next_chunk().await? {
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// Feeds the body to `sink` on this task. A sink's work per chunk is bounded
    /// by the chunk (hyper's read buffer, at most ~400 KiB: a fraction of a
    /// millisecond to hash), and the task gives way between chunks when its
    /// scheduling budget runs out, so no worker is held for long: finer than the
    /// runner's 10 ms epoch tick, which is when a busy guest gives way. Handing
    /// each chunk to the blocking pool instead cost a thread hand-off per chunk:
    /// sha1 at 16 MiB per request 0.78× of inline hashing, two runs each
    /// (docs/performance.md, issue 10 before and after).
    pub async fn feed(mut self, mut sink: Box<dyn BodySink>) -> Result<Reply, ApiError> {
        while let Some(chunk) = self.next_chunk().await? {
            sink.write(&chunk);
            tokio::task::consume_budget().await;
        }
        Ok(sink.finish())
    }
}
