//! `POST /sha1`: the SHA-1 of every 4 KiB block of the body, in order — the
//! C vs Java block-hashing seed, as a service.
//!
//! The body is hashed as it streams in, one block's worth of state at a time, so
//! a 64 MiB upload never sits in memory whole.

use glue::{BodySink, Endpoint, Handler, Reply};
use serde::Serialize;
use sha1::{Digest, Sha1};

#[cfg(all(target_arch = "wasm32", feature = "p2"))]
glue::spin_component!(ENDPOINT);

pub const BLOCK_SIZE: usize = 4096;
pub const BODY_LIMIT: u64 = 64 * 1024 * 1024;

pub static ENDPOINT: Endpoint = Endpoint {
    route: "/sha1",
    methods: &["POST"],
    handler: Handler::Streamed {
        limit: BODY_LIMIT,
        start: |_| Ok(Box::new(BlockHasher::default())),
    },
    // Hashes up to 64 MiB (~35 ms of CPU natively), but a chunk at a time as the
    // body arrives, which the native host does on the connection's task.
    cpu_bound: false,
};

/// The response: `{"bytes":N,"blocks":M,"sha1":["<40 hex digits>", ...]}`.
#[derive(Debug, Serialize)]
pub struct BlockHashes {
    pub bytes: u64,
    pub blocks: usize,
    pub sha1: Vec<String>,
}

/// Hashes a byte stream in 4 KiB blocks; the last block may be shorter.
#[derive(Default)]
pub struct BlockHasher {
    current: Sha1,
    in_current: usize,
    bytes: u64,
    digests: Vec<String>,
}

impl BlockHasher {
    pub fn update(&mut self, mut data: &[u8]) {
        self.bytes += data.len() as u64;
        while !data.is_empty() {
            let take = data.len().min(BLOCK_SIZE - self.in_current);
            self.current.update(&data[..take]);
            self.in_current += take;
            data = &data[take..];
            if self.in_current == BLOCK_SIZE {
                self.close_block();
            }
        }
    }

    pub fn finish(mut self) -> BlockHashes {
        if self.in_current > 0 {
            self.close_block();
        }
        BlockHashes {
            bytes: self.bytes,
            blocks: self.digests.len(),
            sha1: self.digests,
        }
    }

    fn close_block(&mut self) {
        let digest = self.current.finalize_reset();
        self.digests.push(hex(&digest));
        self.in_current = 0;
    }
}

impl BodySink for BlockHasher {
    fn write(&mut self, chunk: &[u8]) {
        self.update(chunk);
    }

    fn finish(self: Box<Self>) -> Reply {
        Reply::json(&BlockHasher::finish(*self))
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes
        .iter()
        .flat_map(|b| {
            [
                DIGITS[(b >> 4) as usize] as char,
                DIGITS[(b & 15) as usize] as char,
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash_in_chunks(data: &[u8], chunk: usize) -> BlockHashes {
        let mut hasher = BlockHasher::default();
        data.chunks(chunk.max(1)).for_each(|c| hasher.update(c));
        hasher.finish()
    }

    #[test]
    fn known_digests() {
        let abc = hash_in_chunks(b"abc", 3);
        assert_eq!(abc.sha1, ["a9993e364706816aba3e25717850c26c9cd0d89d"]);
        let empty = hash_in_chunks(b"", 1);
        assert_eq!((empty.bytes, empty.blocks), (0, 0));
    }

    #[test]
    fn blocks_are_4_kib_and_independent_of_chunking() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let whole = hash_in_chunks(&data, data.len());
        assert_eq!((whole.bytes, whole.blocks), (10_000, 3));
        for chunk in [1, 7, 4095, 4096, 4097] {
            assert_eq!(
                hash_in_chunks(&data, chunk).sha1,
                whole.sha1,
                "chunk {chunk}"
            );
        }
        let last = Sha1::digest(&data[8192..]);
        assert_eq!(whole.sha1[2], hex(&last));
    }
}
