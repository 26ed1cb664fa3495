//! A stream of results the host holds for a WASIp3 guest (the rows of a
//! query, the keys of a store), charged to the instance's held bytes
//! ([`super::budget`]) until the guest reads them. Items are handed over as
//! the guest asks for them, no more than its read has room for, and the
//! charge shrinks with each: a guest that starts many queries and never reads
//! their streams holds their rows against its own ceiling, and a reader that
//! reads one row at a time does not move the rest out of the count.

use super::quota::Share;
use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use wasmtime::StoreContextMut;
use wasmtime::component::{Destination, StreamProducer, StreamResult, VecBuffer};

pub struct HeldStream<T> {
    items: VecDeque<(T, usize)>,
    share: Option<Share>,
}

impl<T> HeldStream<T> {
    /// `items` with the bytes each was charged, all held by `share`.
    pub fn new(items: Vec<(T, usize)>, share: Share) -> Self {
        Self {
            items: items.into(),
            share: Some(share),
        }
    }

    /// A stream that ends at once.
    pub fn empty() -> Self {
        Self {
            items: VecDeque::new(),
            share: None,
        }
    }
}

/// Items handed over when a read's room is unknown (the host reads it).
const HOST_BATCH: usize = 64;

impl<T: Unpin + Send + Sync + 'static, D> StreamProducer<D> for HeldStream<T> {
    type Item = T;
    type Buffer = VecBuffer<T>;

    fn poll_produce<'a>(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        mut store: StoreContextMut<'a, D>,
        mut destination: Destination<'a, T, VecBuffer<T>>,
        _: bool,
    ) -> Poll<wasmtime::Result<StreamResult>> {
        let this = self.get_mut();
        if this.items.is_empty() {
            return Poll::Ready(Ok(StreamResult::Dropped));
        }
        let room = match destination.remaining(&mut store) {
            // A zero-length read asks whether the stream is ready: it is.
            Some(0) => return Poll::Ready(Ok(StreamResult::Completed)),
            Some(room) => room,
            None => HOST_BATCH,
        }
        .min(this.items.len());
        let mut batch = Vec::with_capacity(room);
        for (item, bytes) in this.items.drain(..room) {
            if let Some(share) = &mut this.share {
                share.shrink(bytes);
            }
            batch.push(item);
        }
        destination.set_buffer(batch.into());
        Poll::Ready(Ok(if this.items.is_empty() {
            StreamResult::Dropped
        } else {
            StreamResult::Completed
        }))
    }
}
