//! `spinbench build`: runs each component's build command, like `spin build`.

use crate::manifest::Manifest;
use anyhow::{Context, Result, bail};
use std::process::Command;

/// Runs every component's `[component.<id>.build] command` through `sh -c` in
/// the manifest's directory, in component-id order, stopping at the first failure.
pub fn build_all(manifest: &Manifest) -> Result<()> {
    for (id, component) in &manifest.component {
        let Some(build) = &component.build else {
            eprintln!("{id}: no build command, skipping");
            continue;
        };
        eprintln!("{id}: {}", build.command);
        run(&build.command, manifest).with_context(|| format!("building component {id:?}"))?;
    }
    Ok(())
}

fn run(command: &str, manifest: &Manifest) -> Result<()> {
    let status = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(manifest.base_dir())
        .status()
        .with_context(|| format!("starting `sh -c {command:?}`"))?;
    if !status.success() {
        bail!("`{command}` failed: {status}");
    }
    Ok(())
}
