//! `spinbench build`: runs each component's build commands, like `spin build`
//! (spinframework/spin `crates/build/src/lib.rs`: each command through the
//! shell, in order, in the manifest's directory or the component's `workdir`).

use anyhow::{Context, Result, bail};
use spinbench_host::manifest::{Build, Manifest};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs every component's `[component.<id>.build] command` (one, or a list in
/// order) through `sh -c`, in component-id order, stopping at the first failure.
pub fn build_all(manifest: &Manifest) -> Result<()> {
    for (id, component) in &manifest.component {
        let Some(build) = &component.build else {
            spinbench_host::err_line!("{id}: no build command, skipping");
            continue;
        };
        let dir = workdir(manifest.base_dir(), build)
            .with_context(|| format!("building component {id:?}"))?;
        for command in build.commands() {
            spinbench_host::err_line!("{id}: {command}");
            run(command, &dir).with_context(|| format!("building component {id:?}"))?;
        }
    }
    Ok(())
}

/// The manifest's directory, or the `workdir` under it (which Spin requires to be relative).
fn workdir(base: &Path, build: &Build) -> Result<PathBuf> {
    match &build.workdir {
        None => Ok(base.to_path_buf()),
        Some(dir) if Path::new(dir).has_root() => {
            bail!("workdir {dir:?} must be relative to the manifest's directory")
        }
        Some(dir) => Ok(base.join(dir)),
    }
}

fn run(command: &str, dir: &Path) -> Result<()> {
    let status = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .status()
        .with_context(|| format!("starting `sh -c {command:?}` in {}", dir.display()))?;
    if !status.success() {
        bail!("`{command}` failed: {status}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(workdir: Option<&str>) -> Build {
        Build {
            command: spinbench_host::manifest::component::Commands::Single("true".into()),
            workdir: workdir.map(str::to_string),
            watch: Vec::new(),
        }
    }

    #[test]
    fn workdir_is_relative_to_the_manifest() {
        let base = Path::new("/app");
        assert_eq!(workdir(base, &build(None)).unwrap(), Path::new("/app"));
        assert_eq!(
            workdir(base, &build(Some("hello"))).unwrap(),
            Path::new("/app/hello")
        );
        assert!(workdir(base, &build(Some("/etc"))).is_err());
    }

    #[test]
    fn commands_run_in_order_and_stop_at_the_first_failure() {
        let dir = std::env::temp_dir().join(format!("spinbench-build-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = "spin_manifest_version = 2\n[application]\nname = \"b\"\n[trigger]\n\
             [component.a]\nsource = \"a.wasm\"\n[component.a.build]\n\
             command = [\"echo one > log\", \"echo two >> log\", \"false\", \"echo three >> log\"]\n";
        let manifest = Manifest::parse(text, dir.clone()).unwrap();
        assert!(build_all(&manifest).is_err());
        let log = std::fs::read_to_string(dir.join("log")).unwrap();
        assert_eq!(log, "one\ntwo\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
