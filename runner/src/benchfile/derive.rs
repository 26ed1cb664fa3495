//! A benchmark file for an app that has none, derived from its manifest, as
//! hyperfine needs nothing but a command: each HTTP-triggered component, its
//! first route as a `GET` probe (a `:name` segment filled with `name`, a
//! trailing `/...` dropped), and the default load (10 users). It is written
//! beside the manifest, for the user to edit, unless a file is there already.

use anyhow::{Context, Result};
use spinbench_host::manifest::{self, Manifest};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The benchmark file's text for `manifest` (read from `manifest_path`).
pub fn text(manifest: &Manifest, manifest_path: &Path) -> Result<String> {
    let file_name = manifest_path
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or(manifest::DEFAULT_FILE);
    let mut text = format!(
        "# Derived by `spinbench compare` from {file_name}: edit the probe requests and the\n\
         # load to what your app answers (keys: docs/benchmark-file.md in spinbench's repository).\n\
         manifest = {}\n",
        toml_string(file_name)
    );
    let mut seen: Vec<String> = Vec::new();
    for route in manifest.http_routes() {
        let Some(id) = route.component() else {
            continue;
        };
        if seen.iter().any(|s| s == id) {
            continue;
        }
        seen.push(id.to_string());
        let _ = write!(
            text,
            "\n[[component]]\nid = {}\nprobe = {{ path = {} }}\n[[component.load]]\nusers = 10\n",
            toml_string(id),
            toml_string(&probe_path(&route.route))
        );
    }
    if seen.is_empty() {
        anyhow::bail!(
            "{}: no [[trigger.http]] routes a component, so there is nothing to measure",
            manifest_path.display()
        );
    }
    Ok(text)
}

/// A path `route` serves: `:name` segments filled in, the wildcard dropped.
pub fn probe_path(route: &str) -> String {
    let route = route.strip_suffix("/...").unwrap_or(route);
    let path: Vec<&str> = route
        .split('/')
        .map(|segment| match segment.strip_prefix(':') {
            Some(_) => "name",
            None => segment,
        })
        .collect();
    let path = path.join("/");
    if path.is_empty() { "/".into() } else { path }
}

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

/// Where the benchmark file beside the manifest at `manifest_path` is, and
/// whether this call wrote it (derived from the manifest) or found it there.
pub fn beside(manifest_path: &Path) -> Result<(PathBuf, bool)> {
    let dir = manifest_path.parent().unwrap_or(Path::new("."));
    let path = dir.join(super::DEFAULT_FILE);
    let mut file = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            return Ok((path, false));
        }
        Err(error) => return Err(error).with_context(|| format!("writing {}", path.display())),
    };
    let manifest = Manifest::load(manifest_path)?;
    let written = text(&manifest, manifest_path)
        .and_then(|text| Ok(std::io::Write::write_all(&mut file, text.as_bytes())?));
    if let Err(error) = written {
        drop(file);
        let _ = std::fs::remove_file(&path);
        return Err(error).with_context(|| format!("writing {}", path.display()));
    }
    Ok((path, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_become_paths_a_probe_can_ask_for() {
        assert_eq!(probe_path("/hello"), "/hello");
        assert_eq!(probe_path("/..."), "/");
        assert_eq!(probe_path("/static/..."), "/static");
        assert_eq!(probe_path("/hello/:name"), "/hello/name");
        assert_eq!(probe_path("/a/:b/c/:d/..."), "/a/name/c/name");
    }

    #[test]
    fn each_triggered_component_is_measured_once_from_its_first_route() {
        let manifest = Manifest::parse(
            "spin_manifest_version = 2\n[application]\nname = \"a\"\n\
             [[trigger.http]]\nroute = \"/hello/:name\"\ncomponent = \"hello\"\n\
             [[trigger.http]]\nroute = \"/hi\"\ncomponent = \"hello\"\n\
             [[trigger.http]]\nroute = \"/health\"\nstatic_response = { body = \"ok\" }\n\
             [component.hello]\nsource = \"h.wasm\"\n",
            "/app".into(),
        )
        .unwrap();
        let text = text(&manifest, Path::new("/app/spin.toml")).unwrap();
        let file = super::super::BenchFile::parse(&text, "/app".into()).unwrap();
        assert_eq!(file.manifest, Path::new("/app/spin.toml"));
        assert_eq!(file.components.len(), 1);
        let hello = &file.components[0];
        assert_eq!(hello.id, "hello");
        assert_eq!(hello.probe.target, "/hello/name");
        assert_eq!(hello.load.len(), 1);
    }
}
