//! What one pull may hold, chosen by the operator, never by the registry:
//! every bound has a flag (`spinbench registry pull`, `serve -f`, `compare
//! -f`) and an environment variable of the same name (read by the flags, and
//! by the containerd shim, which has no command line of its own).
//!
//! | bound | default | flag / variable |
//! |---|---|---|
//! | the image manifest, and the locked app (both parsed whole) | 16 MiB each | `--max-manifest-size` / `SPINBENCH_MAX_MANIFEST_SIZE` |
//! | one layer as sent, and one archive layer inflated | 1 GiB | `--max-layer-size` / `SPINBENCH_MAX_LAYER_SIZE` |
//! | one file inside an archive layer | 512 MiB | `--max-archive-file-size` / `SPINBENCH_MAX_ARCHIVE_FILE_SIZE` |
//! | everything a pull writes (layers and inflated files) | 4 GiB | `--max-pull-size` / `SPINBENCH_MAX_PULL_SIZE` |
//! | the whole pull, first request to last byte | 10 min | `--pull-timeout` / `SPINBENCH_PULL_TIMEOUT` (seconds) |
//!
//! A registry refuses a manifest over 4 MiB (distribution/distribution
//! `registry/handlers/manifests.go`, `maxManifestBodySize`); 16 MiB leaves a
//! locked app of many files room.

use anyhow::{Context, Result, bail};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The bounds of one pull (or one unpack of layers, in the shim).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PullLimits {
    pub max_manifest: u64,
    pub max_layer: u64,
    pub max_archive_file: u64,
    pub max_pull: u64,
    pub timeout: Duration,
}

impl Default for PullLimits {
    fn default() -> Self {
        Self {
            max_manifest: 16 << 20,
            max_layer: 1 << 30,
            max_archive_file: 512 << 20,
            max_pull: 4 << 30,
            timeout: Duration::from_mins(10),
        }
    }
}

/// Which bound, for the words of a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    Manifest,
    Layer,
    ArchiveFile,
    Pull,
    Timeout,
}

impl Bound {
    /// Its flag and environment variable.
    pub fn names(self) -> (&'static str, &'static str) {
        match self {
            Bound::Manifest => ("--max-manifest-size", "SPINBENCH_MAX_MANIFEST_SIZE"),
            Bound::Layer => ("--max-layer-size", "SPINBENCH_MAX_LAYER_SIZE"),
            Bound::ArchiveFile => ("--max-archive-file-size", "SPINBENCH_MAX_ARCHIVE_FILE_SIZE"),
            Bound::Pull => ("--max-pull-size", "SPINBENCH_MAX_PULL_SIZE"),
            Bound::Timeout => ("--pull-timeout", "SPINBENCH_PULL_TIMEOUT"),
        }
    }

    /// "past --max-layer-size (1073741824 bytes; SPINBENCH_MAX_LAYER_SIZE)".
    pub fn past(self, limit: u64) -> String {
        let (flag, env) = self.names();
        format!("past {flag} ({limit} bytes; {env} for the shim)")
    }
}

impl PullLimits {
    /// The defaults, each replaced by its environment variable where set
    /// (the containerd shim's way to be configured: containerd's own
    /// environment reaches its shims).
    pub fn from_env() -> Result<Self> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let mut limits = Self::default();
        for (bound, slot) in [
            (Bound::Manifest, &mut limits.max_manifest),
            (Bound::Layer, &mut limits.max_layer),
            (Bound::ArchiveFile, &mut limits.max_archive_file),
            (Bound::Pull, &mut limits.max_pull),
        ] {
            let (_, env) = bound.names();
            if let Some(text) = var(env) {
                *slot = positive(env, &text)?;
            }
        }
        let (_, env) = Bound::Timeout.names();
        if let Some(text) = var(env) {
            limits.timeout = Duration::from_secs(positive(env, &text)?);
        }
        Ok(limits)
    }

    /// Refuses `size` bytes of a manifest or locked app.
    pub fn check_document(&self, what: &str, size: u64) -> Result<()> {
        if size > self.max_manifest {
            bail!(
                "{what} is {size} bytes, {}",
                Bound::Manifest.past(self.max_manifest)
            );
        }
        Ok(())
    }

    /// Refuses a layer whose descriptor says `size` bytes.
    pub fn check_layer(&self, digest: &str, size: i64) -> Result<u64> {
        let Ok(size) = u64::try_from(size) else {
            bail!("layer {digest}: its descriptor gives a negative size ({size})");
        };
        self.check_layer_bytes(digest, size)?;
        Ok(size)
    }

    /// Refuses a layer of `size` bytes.
    pub fn check_layer_bytes(&self, digest: &str, size: u64) -> Result<()> {
        if size > self.max_layer {
            bail!(
                "layer {digest} is {size} bytes, {}",
                Bound::Layer.past(self.max_layer)
            );
        }
        Ok(())
    }
}

fn positive(name: &str, text: &str) -> Result<u64> {
    let value: u64 = text
        .trim()
        .parse()
        .with_context(|| format!("{name}={text:?}: not a whole number"))?;
    if value == 0 {
        bail!("{name} must be at least 1");
    }
    Ok(value)
}

/// What one pull has spent so far: the bytes it wrote, against
/// `--max-pull-size` (every blob and every file an archive inflates is
/// charged before it is kept), and its time, against `--pull-timeout` (also
/// checked between an archive's files, which are inflated without awaiting).
#[derive(Debug)]
pub struct Budget {
    limit: u64,
    used: AtomicU64,
    started: Instant,
    timeout: Duration,
}

impl Budget {
    pub fn for_pull(limits: &PullLimits) -> Self {
        Self {
            limit: limits.max_pull,
            used: AtomicU64::new(0),
            started: Instant::now(),
            timeout: limits.timeout,
        }
    }

    /// Charges `bytes`, refusing them past the limit.
    pub fn charge(&self, bytes: u64) -> Result<()> {
        let before = self.used.fetch_add(bytes, Ordering::Relaxed);
        let total = before.saturating_add(bytes);
        if total > self.limit {
            bail!(
                "the pull would write {total} bytes, {}",
                Bound::Pull.past(self.limit)
            );
        }
        Ok(())
    }

    /// Refuses to go on past the pull's deadline.
    pub fn check_time(&self) -> Result<()> {
        if self.started.elapsed() > self.timeout {
            bail!("{}", timed_out(self.timeout));
        }
        Ok(())
    }

    /// The time left before the deadline.
    pub fn remaining(&self) -> Duration {
        self.timeout.saturating_sub(self.started.elapsed())
    }
}

/// The refusal of a pull that ran past its deadline.
pub fn timed_out(timeout: Duration) -> String {
    let (flag, env) = Bound::Timeout.names();
    format!(
        "the pull did not finish within {}s ({flag}; {env} for the shim)",
        timeout.as_secs()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bound_is_read_from_its_variable_and_named_in_refusals() {
        let limits = PullLimits::from_vars(|name| match name {
            "SPINBENCH_MAX_LAYER_SIZE" => Some("4096".into()),
            "SPINBENCH_PULL_TIMEOUT" => Some("5".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(limits.max_layer, 4096);
        assert_eq!(limits.timeout, Duration::from_secs(5));
        assert_eq!(limits.max_manifest, PullLimits::default().max_manifest);
        let error = limits
            .check_layer("sha256:x", 4097)
            .unwrap_err()
            .to_string();
        assert!(error.contains("--max-layer-size (4096 bytes"), "{error}");
        assert!(limits.check_layer("sha256:x", -1).is_err());
        for bad in ["0", "-3", "lots"] {
            let error = PullLimits::from_vars(|name| {
                (name == "SPINBENCH_MAX_PULL_SIZE").then(|| bad.to_string())
            });
            assert!(error.is_err(), "{bad}");
        }
    }

    #[test]
    fn a_budget_refuses_what_would_pass_its_limit() {
        let limits = PullLimits {
            max_pull: 10,
            timeout: Duration::ZERO,
            ..PullLimits::default()
        };
        let budget = Budget::for_pull(&limits);
        budget.charge(6).unwrap();
        budget.charge(4).unwrap();
        let error = budget.charge(1).unwrap_err().to_string();
        assert!(error.contains("--max-pull-size"), "{error}");
        std::thread::sleep(Duration::from_millis(2));
        let error = budget.check_time().unwrap_err().to_string();
        assert!(error.contains("--pull-timeout"), "{error}");
    }
}
