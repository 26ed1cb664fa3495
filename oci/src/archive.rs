//! Spin's archive layers (`application/vnd.wasm.content.bundle.v1.tar+gzip`):
//! a component's files in one gzipped tar, written when an app would need
//! more layers than registries take (spinframework/spin v4.0.2
//! `crates/oci/src/utils.rs`, `archive`, and `client.rs`,
//! `unpack_archive_layer`). The locked app still names each file by its
//! digest, so a pull keeps each file inside by its own digest: where it sits
//! in the tar, and any link or directory entry, are never used.
//!
//! A layer is inflated from its blob on disk into the store, streaming:
//! each file is counted against `--max-archive-file-size` and hashed as it
//! is written, the layer's inflated total against `--max-layer-size`, and
//! both against the pull's budget (`--max-pull-size`), so a small layer that
//! inflates to gigabytes stops at the first bound, holding one chunk in
//! memory (a 2 MiB layer inflating to 2 GiB held 2.1 GiB of RSS when it was
//! inflated in memory).

use crate::boundary::limits::Bound;
use crate::boundary::{Budget, PullLimits};
use crate::store::Store;
use anyhow::{Context, Result, bail};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// A gzipped tar of `files`, each at its place.
pub fn tar_gz(files: &[(String, PathBuf)]) -> Result<Vec<u8>> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    for (place, path) in files {
        tar.append_path_with_name(path, place)
            .with_context(|| format!("archiving {}", path.display()))?;
    }
    let mut gz = tar.into_inner()?;
    gz.flush()?;
    Ok(gz.finish()?)
}

/// Keeps every regular file of the gzipped tar at `layer` in `store`, by
/// its digest, within `limits` and the pull's `budget`.
pub fn unpack_into(
    layer: &Path,
    store: &Store,
    limits: &PullLimits,
    budget: &Budget,
) -> Result<()> {
    let file =
        std::fs::File::open(layer).with_context(|| format!("opening {}", layer.display()))?;
    let gz = flate2::read::GzDecoder::new(std::io::BufReader::new(file));
    let mut archive = tar::Archive::new(gz);
    let mut inflated: u64 = 0;
    for entry in archive.entries()? {
        let mut entry = entry?;
        if !carries_a_file(&entry)? {
            continue;
        }
        budget.check_time()?;
        let declared = entry.size();
        inflated = inflated.saturating_add(declared);
        if inflated > limits.max_layer {
            bail!(
                "the archive inflates to more than {} bytes, {}",
                limits.max_layer,
                Bound::Layer.past(limits.max_layer)
            );
        }
        let name = entry.path()?.display().to_string();
        let refusal = format!(
            "{name:?} in the archive is longer than {} bytes, {}",
            limits.max_archive_file,
            Bound::ArchiveFile.past(limits.max_archive_file)
        );
        if declared > limits.max_archive_file {
            bail!("{refusal}");
        }
        budget.charge(declared)?;
        let mut writer = store.writer(declared.min(limits.max_archive_file), refusal)?;
        std::io::copy(&mut entry, &mut writer).with_context(|| format!("inflating {name:?}"))?;
        writer.flush()?;
        writer.keep()?;
    }
    Ok(())
}

/// Whether `entry` is a file to keep; a directory (or a global pax header)
/// carries nothing; anything else, a link above all, is refused: Spin's
/// archives hold files only (`tar_gz` above follows links when it archives),
/// so a link can only be there to lead somewhere.
fn carries_a_file<R: std::io::Read>(entry: &tar::Entry<'_, R>) -> Result<bool> {
    use tar::EntryType;
    let kind = entry.header().entry_type();
    match kind {
        EntryType::Regular | EntryType::Continuous => Ok(true),
        EntryType::Directory | EntryType::XGlobalHeader => Ok(false),
        _ => {
            let name = entry.path()?.display().to_string();
            if kind.is_symlink() || kind.is_hard_link() {
                bail!("{name:?} in the archive is a link: an archive layer carries only files");
            }
            bail!(
                "{name:?} in the archive is a {kind:?} entry: an archive layer carries only files"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spinbench_host::manifest::Digest;
    use std::io::Read as _;

    #[test]
    fn archived_files_are_kept_by_their_own_digests() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.txt");
        std::fs::write(&a, b"alpha").unwrap();
        let b = dir.path().join("b.bin");
        std::fs::write(&b, vec![7u8; 4096]).unwrap();
        let bytes = tar_gz(&[("x/a.txt".into(), a), ("b.bin".into(), b)]).unwrap();
        let store = Store::open(&dir.path().join("store")).unwrap();
        let layer = store.write(Digest::of(&bytes), &bytes).unwrap();
        let limits = PullLimits::default();
        unpack_into(
            &layer,
            &store,
            &limits,
            &Budget::for_pull(&PullLimits::default()),
        )
        .unwrap();
        assert_eq!(store.read(Digest::of(b"alpha"), 5).unwrap(), b"alpha");
        store.verify(Digest::of(&[7u8; 4096])).unwrap();
    }

    #[test]
    fn a_link_in_an_archive_is_refused_and_nothing_is_kept_through_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store")).unwrap();
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let mut tar = tar::Builder::new(gz);
        let mut link = tar::Header::new_gnu();
        link.set_entry_type(tar::EntryType::Symlink);
        link.set_size(0);
        tar.append_link(&mut link, "escape", dir.path()).unwrap();
        let mut file = tar::Header::new_gnu();
        file.set_size(7);
        file.set_cksum();
        tar.append_data(&mut file, "escape/planted", &b"planted"[..])
            .unwrap();
        let bytes = tar.into_inner().unwrap().finish().unwrap();
        let layer = store.write(Digest::of(&bytes), &bytes).unwrap();
        let limits = PullLimits::default();
        let error = unpack_into(&layer, &store, &limits, &Budget::for_pull(&limits)).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("\"escape\" in the archive is a link"),
            "{error}"
        );
        assert!(!store.has(Digest::of(b"planted")));
        assert!(!dir.path().join("planted").exists());
    }

    /// A gzipped tar of one file of `size` zeros, written as a stream (a
    /// few KiB for megabytes of zeros).
    fn zeros_tar_gz(size: u64) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let mut tar = tar::Builder::new(gz);
        let mut header = tar::Header::new_gnu();
        header.set_size(size);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, "zeros.bin", std::io::repeat(0).take(size))
            .unwrap();
        tar.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn an_archive_stops_at_each_bound_and_keeps_nothing_past_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store")).unwrap();
        let bytes = zeros_tar_gz(8 << 20);
        assert!(bytes.len() < 64 << 10, "{}", bytes.len());
        let layer = store.write(Digest::of(&bytes), &bytes).unwrap();
        let small = |change: fn(&mut PullLimits)| {
            let mut limits = PullLimits::default();
            change(&mut limits);
            limits
        };
        for (limits, expected) in [
            (
                small(|l| l.max_archive_file = 1 << 20),
                "--max-archive-file-size",
            ),
            (small(|l| l.max_layer = 1 << 20), "--max-layer-size"),
            (small(|l| l.max_pull = 1 << 20), "--max-pull-size"),
        ] {
            let budget = Budget::for_pull(&limits);
            let error = unpack_into(&layer, &store, &limits, &budget).unwrap_err();
            assert!(format!("{error:#}").contains(expected), "{error:#}");
        }
        let kept = std::fs::read_dir(dir.path().join("store/blobs/sha256"))
            .unwrap()
            .count();
        assert_eq!(kept, 1, "only the layer itself");
        unpack_into(
            &layer,
            &store,
            &PullLimits::default(),
            &Budget::for_pull(&PullLimits::default()),
        )
        .unwrap();
        assert!(store.has(Digest::of(&vec![0u8; 8 << 20])));
    }
}
