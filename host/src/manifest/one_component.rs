//! One component of an app as a manifest of its own, so that a host serves it
//! alone, as the native binary serves one function. Everything else of the
//! app's manifest is kept as written (application, variables, the component's
//! table with its variables, environment, files, ...): the component runs as it
//! would in the whole app. Relative paths keep their meaning only beside the
//! original manifest, which is where [`write_beside`] puts it.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use toml::{Table, Value};

/// `text` (a v2 manifest) reduced to component `id` and its HTTP routes.
pub fn one_component(text: &str, id: &str) -> Result<String> {
    let mut doc: Table = toml::from_str(text).context("parsing TOML")?;
    let routes: Vec<Value> = doc
        .get("trigger")
        .and_then(|t| t.get("http"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|t| t.get("component").and_then(Value::as_str) == Some(id))
        .cloned()
        .collect();
    if routes.is_empty() {
        bail!("no [[trigger.http]] names component {id:?}");
    }
    let component = doc
        .get("component")
        .and_then(|c| c.get(id))
        .cloned()
        .with_context(|| format!("no [component.{id}]"))?;
    doc.insert(
        "trigger".into(),
        Value::Table(Table::from_iter([("http".into(), Value::Array(routes))])),
    );
    doc.insert(
        "component".into(),
        Value::Table(Table::from_iter([(id.to_string(), component)])),
    );
    toml::to_string(&doc).context("writing TOML")
}

/// Writes component `id` of `manifest` as `.spinbench-<tag>-<id>.spin.toml`
/// in the manifest's own directory and returns its path; the caller removes it.
pub fn write_beside(manifest: &Path, id: &str, tag: &str) -> Result<PathBuf> {
    let text = std::fs::read_to_string(manifest)
        .with_context(|| format!("reading manifest {}", manifest.display()))?;
    let one = one_component(&text, id).with_context(|| format!("in {}", manifest.display()))?;
    let dir = manifest.parent().unwrap_or(Path::new("."));
    let path = dir.join(format!(".spinbench-{tag}-{id}.spin.toml"));
    std::fs::write(&path, one).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}
