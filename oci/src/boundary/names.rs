//! A locked app's names, checked before anything of it is written: Spin
//! checks them when it reads a manifest (`spinbench_host::manifest::ids`),
//! but a locked app comes from a registry, where anyone could have written
//! it. Component ids and the ids triggers name follow Spin's kebab-case rule,
//! store labels its kebab- or snake_case rule, model names are one plain
//! path segment, digests are `sha256:` and 64 hex digits, and each file's
//! path is a plain relative path ([`RelativePath`]).
//!
//! None of these becomes a host path by itself (the app directory names
//! content by digest and components by index: `app_dir`); the checks make a
//! bad artifact fail in one line that says what is wrong.

use crate::locked::{ContentRef, LockedApp, LockedComponent};
use anyhow::{Context, Result, bail, ensure};
use spinbench_host::manifest::Digest;
use spinbench_host::manifest::ids::{self, IdKind};
use std::collections::BTreeSet;
use std::path::{Component, Path};

/// Bytes of one path segment, and of a whole path (Linux's NAME_MAX, PATH_MAX).
const MAX_SEGMENT: usize = 255;
const MAX_PATH: usize = 4096;

/// A path below a directory that cannot leave it: not empty, not absolute,
/// only plain segments (no `.`, `..`, NUL), within Linux's length limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelativePath<'a>(&'a Path);

impl<'a> RelativePath<'a> {
    pub fn new(text: &'a str) -> Result<Self> {
        let path = Path::new(text);
        let plain = !text.is_empty()
            && text.len() <= MAX_PATH
            && !text.contains('\0')
            && path.components().all(|part| match part {
                Component::Normal(segment) => segment.len() <= MAX_SEGMENT,
                _ => false,
            });
        ensure!(
            plain,
            "file {text:?}: not a relative path inside the component's files (plain segments only: no `..`, `.`, leading `/` or NUL)"
        );
        Ok(Self(path))
    }

    pub fn as_path(&self) -> &'a Path {
        self.0
    }
}

impl AsRef<Path> for RelativePath<'_> {
    fn as_ref(&self) -> &Path {
        self.0
    }
}

/// Checks every name of `app` that could become a path or select a grant.
pub fn check(app: &LockedApp) -> Result<()> {
    let mut ids = BTreeSet::new();
    for component in &app.components {
        ids::check(IdKind::Component, &component.id)?;
        if !ids.insert(component.id.as_str()) {
            bail!("component id {:?} appears twice", component.id);
        }
        check_component(component).with_context(|| format!("component {:?}", component.id))?;
    }
    for trigger in &app.triggers {
        let Some(named) = trigger.trigger_config.get("component") else {
            continue;
        };
        let id = named.as_str().with_context(|| {
            format!(
                "trigger {:?}: its component is not an id ({named})",
                trigger.id
            )
        })?;
        ids::check(IdKind::Component, id).with_context(|| format!("trigger {:?}", trigger.id))?;
        ensure!(
            ids.contains(id),
            "trigger {:?} names component {id:?}, which the app does not have",
            trigger.id
        );
    }
    Ok(())
}

fn check_component(component: &LockedComponent) -> Result<()> {
    for label in component
        .metadata_list("key_value_stores")
        .iter()
        .chain(&component.metadata_list("databases"))
    {
        ids::check(IdKind::Label, label)?;
    }
    for model in component.metadata_list("ai_models") {
        ids::model_name(&model)?;
    }
    check_digest(&component.source.content).context("its source")?;
    for file in &component.files {
        RelativePath::new(&file.path)?;
        check_digest(&file.content).with_context(|| format!("file {:?}", file.path))?;
    }
    Ok(())
}

fn check_digest(content: &ContentRef) -> Result<()> {
    if let Some(digest) = &content.digest {
        Digest::parse(digest)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_path_has_only_plain_segments() {
        for good in ["a.txt", "dir/sub/file", "a//b", "..dots", "x/...", "sp ace"] {
            RelativePath::new(good).unwrap();
        }
        let long = "x".repeat(256);
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "./a",
            "a/..",
            "a\0b",
            &long,
        ] {
            assert!(RelativePath::new(bad).is_err(), "{bad:?}");
        }
    }
}
