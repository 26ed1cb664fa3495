//! `wasi:io` poll and streams of 2023-10-18, answered by WASI 0.2's
//! implementation over the same host streams and pollables. What the
//! candidate has and 0.2 does not: `poll-list` and `poll-one` (0.2's `poll` and
//! `pollable.block`), `splice` and `blocking-splice` taking their source stream
//! by value (it is dropped once spliced from), and `forward` (splice until the
//! source ends); its `error` lives in `streams` (0.2's `wasi:io/error`).

use super::v2023_10_18_io::{poll, streams};
use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::p2::bindings::io as latest;
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, DynPollable, StreamError, StreamResult};

impl poll::Host for ResourceTable {
    async fn poll_list(
        &mut self,
        pollables: Vec<Resource<DynPollable>>,
    ) -> wasmtime::Result<Vec<u32>> {
        latest::poll::Host::poll(self, pollables).await
    }

    async fn poll_one(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        latest::poll::HostPollable::block(self, pollable).await
    }
}

impl poll::HostPollable for ResourceTable {
    fn drop(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        latest::poll::HostPollable::drop(self, pollable)
    }
}

impl streams::Host for ResourceTable {
    fn convert_stream_error(
        &mut self,
        error: StreamError,
    ) -> wasmtime::Result<streams::StreamError> {
        Ok(match error {
            StreamError::Closed => streams::StreamError::Closed,
            StreamError::LastOperationFailed(error) => {
                streams::StreamError::LastOperationFailed(self.push(error)?)
            }
            StreamError::Trap(trap) => return Err(trap),
        })
    }
}

impl streams::HostError for ResourceTable {
    fn to_debug_string(&mut self, error: Resource<streams::Error>) -> wasmtime::Result<String> {
        latest::error::HostError::to_debug_string(self, error)
    }

    fn drop(&mut self, error: Resource<streams::Error>) -> wasmtime::Result<()> {
        latest::error::HostError::drop(self, error)
    }
}

impl streams::HostInputStream for ResourceTable {
    fn read(&mut self, stream: Resource<DynInputStream>, len: u64) -> StreamResult<Vec<u8>> {
        latest::streams::HostInputStream::read(self, stream, len)
    }

    async fn blocking_read(
        &mut self,
        stream: Resource<DynInputStream>,
        len: u64,
    ) -> StreamResult<Vec<u8>> {
        latest::streams::HostInputStream::blocking_read(self, stream, len).await
    }

    fn skip(&mut self, stream: Resource<DynInputStream>, len: u64) -> StreamResult<u64> {
        latest::streams::HostInputStream::skip(self, stream, len)
    }

    async fn blocking_skip(
        &mut self,
        stream: Resource<DynInputStream>,
        len: u64,
    ) -> StreamResult<u64> {
        latest::streams::HostInputStream::blocking_skip(self, stream, len).await
    }

    fn subscribe(
        &mut self,
        stream: Resource<DynInputStream>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        latest::streams::HostInputStream::subscribe(self, stream)
    }

    async fn drop(&mut self, stream: Resource<DynInputStream>) -> wasmtime::Result<()> {
        latest::streams::HostInputStream::drop(self, stream).await
    }
}

impl streams::HostOutputStream for ResourceTable {
    fn check_write(&mut self, stream: Resource<DynOutputStream>) -> StreamResult<u64> {
        latest::streams::HostOutputStream::check_write(self, stream)
    }

    fn write(&mut self, stream: Resource<DynOutputStream>, contents: Vec<u8>) -> StreamResult<()> {
        latest::streams::HostOutputStream::write(self, stream, contents)
    }

    async fn blocking_write_and_flush(
        &mut self,
        stream: Resource<DynOutputStream>,
        contents: Vec<u8>,
    ) -> StreamResult<()> {
        latest::streams::HostOutputStream::blocking_write_and_flush(self, stream, contents).await
    }

    fn flush(&mut self, stream: Resource<DynOutputStream>) -> StreamResult<()> {
        latest::streams::HostOutputStream::flush(self, stream)
    }

    async fn blocking_flush(&mut self, stream: Resource<DynOutputStream>) -> StreamResult<()> {
        latest::streams::HostOutputStream::blocking_flush(self, stream).await
    }

    fn subscribe(
        &mut self,
        stream: Resource<DynOutputStream>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        latest::streams::HostOutputStream::subscribe(self, stream)
    }

    fn write_zeroes(&mut self, stream: Resource<DynOutputStream>, len: u64) -> StreamResult<()> {
        latest::streams::HostOutputStream::write_zeroes(self, stream, len)
    }

    async fn blocking_write_zeroes_and_flush(
        &mut self,
        stream: Resource<DynOutputStream>,
        len: u64,
    ) -> StreamResult<()> {
        latest::streams::HostOutputStream::blocking_write_zeroes_and_flush(self, stream, len).await
    }

    async fn splice(
        &mut self,
        stream: Resource<DynOutputStream>,
        source: Resource<DynInputStream>,
        len: u64,
    ) -> StreamResult<u64> {
        let spliced = latest::streams::HostOutputStream::splice(self, stream, borrow(&source), len);
        latest::streams::HostInputStream::drop(self, source)
            .await
            .map_err(StreamError::Trap)?;
        spliced
    }

    async fn blocking_splice(
        &mut self,
        stream: Resource<DynOutputStream>,
        source: Resource<DynInputStream>,
        len: u64,
    ) -> StreamResult<u64> {
        let spliced =
            latest::streams::HostOutputStream::blocking_splice(self, stream, borrow(&source), len)
                .await;
        latest::streams::HostInputStream::drop(self, source)
            .await
            .map_err(StreamError::Trap)?;
        spliced
    }

    /// Splices until the source ends (its `closed`), then answers how much
    /// went through; an error of either stream ends it with that error.
    async fn forward(
        &mut self,
        stream: Resource<DynOutputStream>,
        source: Resource<DynInputStream>,
    ) -> StreamResult<u64> {
        let mut forwarded = 0u64;
        let outcome = loop {
            let spliced = latest::streams::HostOutputStream::blocking_splice(
                self,
                borrow(&stream),
                borrow(&source),
                u64::MAX,
            )
            .await;
            match spliced {
                Ok(len) => forwarded += len,
                Err(StreamError::Closed) => break Ok(forwarded),
                Err(error) => break Err(error),
            }
        };
        latest::streams::HostInputStream::drop(self, source)
            .await
            .map_err(StreamError::Trap)?;
        outcome
    }

    async fn drop(&mut self, stream: Resource<DynOutputStream>) -> wasmtime::Result<()> {
        latest::streams::HostOutputStream::drop(self, stream).await
    }
}

/// A borrow of an owned handle, for a 0.2 function that takes one.
fn borrow<R: 'static>(resource: &Resource<R>) -> Resource<R> {
    Resource::new_borrow(resource.rep())
}
