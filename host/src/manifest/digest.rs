//! A component source's `digest`: what Spin checks a fetched `source = { url }`
//! against (spinframework/spin v4.0.2 `crates/loader/src/local.rs`).

use anyhow::{Result, anyhow, ensure};
use sha2::{Digest as _, Sha256};

/// A `digest = "sha256:<hex>"`, the only kind Spin accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digest([u8; 32]);

impl Digest {
    pub fn parse(text: &str) -> Result<Self> {
        let hex = text
            .strip_prefix("sha256:")
            .ok_or_else(|| anyhow!("invalid `digest` {text:?}; must start with 'sha256:'"))?;
        let mut bytes = [0u8; 32];
        let valid = hex.len() == 64
            && hex.bytes().all(|b| b.is_ascii_hexdigit())
            && bytes.iter_mut().enumerate().all(|(i, byte)| {
                u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).is_ok_and(|value| {
                    *byte = value;
                    true
                })
            });
        ensure!(
            valid,
            "invalid `digest` {text:?}; must be 'sha256:' and 64 hex digits"
        );
        Ok(Self(bytes))
    }

    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    pub fn hex(self) -> String {
        use std::fmt::Write as _;
        self.0.iter().fold(String::with_capacity(64), |mut hex, b| {
            let _ = write!(hex, "{b:02x}");
            hex
        })
    }
}

/// A digest computed while content streams through (a blob is checked as it
/// is written, never buffered first to be hashed).
#[derive(Default, Clone)]
pub struct Hasher(Sha256);

impl Hasher {
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub fn finish(self) -> Digest {
        Digest(self.0.finalize().into())
    }
}

impl std::io::Write for Hasher {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sha256:{}", self.hex())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sha256_digest_is_read_and_written_back_the_same() {
        let text = format!("sha256:{}", "0f".repeat(32));
        let digest = Digest::parse(&text).unwrap();
        assert_eq!(digest.to_string(), text);
        assert_eq!(digest.0[0], 0x0f);
        // Upper-case hex is hex too.
        assert_eq!(
            Digest::parse(&format!("sha256:{}", "0F".repeat(32))).unwrap(),
            digest
        );
    }

    #[test]
    fn other_digests_are_refused_saying_what_is_expected() {
        for (text, why) in [
            ("sha512:00", "must start with 'sha256:'"),
            ("sha256:00", "64 hex digits"),
            (&format!("sha256:{}", "zz".repeat(32)), "64 hex digits"),
        ] {
            let error = Digest::parse(text).unwrap_err().to_string();
            assert!(error.contains(why), "{text}: {error}");
        }
    }

    #[test]
    fn a_streamed_digest_is_the_digest_of_the_whole() {
        let mut hasher = Hasher::default();
        hasher.update(b"a");
        hasher.update(b"bc");
        assert_eq!(hasher.finish(), Digest::of(b"abc"));
    }

    #[test]
    fn of_is_sha256() {
        assert_eq!(
            Digest::of(b"abc").to_string(),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
