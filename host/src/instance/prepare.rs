//! From what a manifest's `source` holds to the component the runner links,
//! before any engine exists (what it finds decides the engine's settings):
//!
//! - a core module (`wasm32-wasip1` or `wasm32-unknown-unknown` builds: spin-sdk 2
//!   to 5 apps, Spin's conformance components) is made a component as Spin makes
//!   it at load (spinframework/spin `crates/componentize`): `wit-component`
//!   with the WASI preview1 adapter of the wasmtime release in use;
//! - a WASI release candidate identical to its release is renamed to it: the
//!   `0.3.0-rc-2026-03-15` interfaces spin-sdk 6 (Spin 4.0.2's template) builds
//!   against are, type for type, WASI 0.3.0's; wasmtime's linker then checks
//!   every function's type against 0.3.0's as it links. A component that
//!   imports both a candidate and its release (spin-sdk 5.0.0 for Python
//!   imports every WASI 0.3 interface under both names, as Spin's main branch
//!   serves them side by side) keeps two imports: the candidate's is renamed
//!   to the release with the candidate as semver build metadata
//!   (`wasi:clocks/types@0.3.0+rc-2026-03-15`), a name wasmtime's linker
//!   resolves, by semver, to the release it provides: both are served by the
//!   one implementation, as Spin's `wasi_2026_03_15` modules forward every
//!   call of the candidate to the release's;
//! - so is every interface of WASI's `0.2.0-rc-2023-11-10` but its
//!   `wasi:http/types`, whose shape differs and which
//!   `capabilities::wasi_2023_11_10` serves under its own name;
//! - the `wasi:http/incoming-handler` export of WASI's 2023-10-18 candidate
//!   (spin-sdk 2.0 to 2.2) is renamed to 0.2.0's: the same function over the
//!   same resources (`capabilities::wasi_2023_10_18` maps them onto 0.2's), so
//!   it is called as every WASIp2 handler is;
//! - then its flavour (which `wasi:http` export) and its imports are read.

use super::flavour::Flavour;
use crate::capabilities::{wasi_2023_10_18, wasi_2023_11_10};
use anyhow::{Context, Result, bail};
use std::borrow::Cow;
use std::collections::HashMap;
use wasm_encoder::reencode::{Reencode, ReencodeComponent, component_utils};
use wasmparser::{Encoding, Parser, Payload};

/// Pre-release version suffixes renamed to their release, with the release,
/// and the words the log line at start says it in.
const RENAMED_PRERELEASES: &[(&str, &str, &str)] = &[
    (
        "@0.3.0-rc-2026-03-15",
        "@0.3.0",
        "WASI 0.3.0-rc-2026-03-15 served as 0.3.0",
    ),
    (
        wasi_2023_11_10::VERSION,
        "@0.2.0",
        "WASI 0.2.0-rc-2023-11-10 served as 0.2.0 (its wasi:http/types by its own shim)",
    ),
];

/// Interfaces of a renamed pre-release that keep their name: their shape
/// differs from the release's, and a shim serves them under it.
const KEPT_NAMES: &[&str] = &[wasi_2023_11_10::HTTP_TYPES];

/// Exports renamed by their whole name, with the name they are called under.
const RENAMED_EXPORTS: &[(&str, &str)] = &[(
    wasi_2023_10_18::INCOMING_HANDLER,
    "wasi:http/incoming-handler@0.2.0",
)];

/// The WASI packages whose names are renamed (a package of another
/// namespace keeps its version, whatever it is).
const RENAMED_NAMESPACE: &str = "wasi:";

/// A component ready to compile, and what the runner needs to know of it.
#[derive(Debug)]
pub struct Prepared<'a> {
    pub wasm: Cow<'a, [u8]>,
    pub flavour: Flavour,
    /// Its top-level import names, in order.
    pub imports: Vec<String>,
    /// What was done to the source to get `wasm`, for the log line at start.
    pub adapted: Vec<&'static str>,
}

/// Prepares `source` (the bytes of a manifest's `source` file).
pub fn prepare(source: &[u8]) -> Result<Prepared<'_>> {
    let mut adapted = Vec::new();
    let mut wasm = Cow::Borrowed(source);
    if encoding(source)? == Encoding::Module {
        wasm = Cow::Owned(componentize(source)?);
        adapted.push("componentized");
    }
    if let Some((renamed, what)) = rename_prereleases(&wasm)? {
        wasm = Cow::Owned(renamed);
        adapted.extend(what);
    }
    let flavour = Flavour::of(&wasm)?;
    let imports = imports_of(&wasm)?;
    Ok(Prepared {
        wasm,
        flavour,
        imports,
        adapted,
    })
}

/// Prepares `source` for a WAGI trigger: a WASI command. A core module (what
/// `wasm32-wasip1` and wasi-sdk build; Spin's WAGI apps) is made a component
/// with the preview1 *command* adapter, whose `wasi:cli/run` calls its
/// `_start`; a component must export `wasi:cli/run` itself.
pub fn prepare_wagi(source: &[u8]) -> Result<Prepared<'_>> {
    let mut adapted = Vec::new();
    let mut wasm = Cow::Borrowed(source);
    if encoding(source)? == Encoding::Module {
        let component = wit_component::ComponentEncoder::default()
            .validate(true)
            .module(source)
            .and_then(|encoder| {
                encoder.adapter(
                    wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME,
                    wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER,
                )
            })
            .and_then(|mut encoder| encoder.encode())
            .context("making a WASI command of the WAGI module (it must export `_start`)")?;
        wasm = Cow::Owned(component);
        adapted.push("componentized as a WASI command");
    }
    if !exports_of(&wasm)?
        .iter()
        .any(|name| name.starts_with("wasi:cli/run@0.2"))
    {
        bail!("a WAGI component must be a WASI command (export wasi:cli/run@0.2.x)");
    }
    let imports = imports_of(&wasm)?;
    Ok(Prepared {
        wasm,
        flavour: Flavour::Wagi,
        imports,
        adapted,
    })
}

fn encoding(wasm: &[u8]) -> Result<Encoding> {
    for payload in Parser::new(0).parse_all(wasm) {
        if let Payload::Version { encoding, .. } = payload.context("not a WebAssembly binary")? {
            return Ok(encoding);
        }
    }
    bail!("not a WebAssembly binary")
}

/// A core module made a component. Only modules that carry their component
/// type (wit-bindgen 0.5 and later: spin-sdk 2 and later) can be; older
/// ones need Spin's own adapter.
/// `wasm` as a component: a core module componentized as [`prepare`] does
/// it, a component as it is (what composition takes: `instance::compose`).
pub fn componentized(wasm: &[u8]) -> Result<Cow<'_, [u8]>> {
    Ok(if encoding(wasm)? == Encoding::Module {
        Cow::Owned(componentize(wasm)?)
    } else {
        Cow::Borrowed(wasm)
    })
}

/// `component` with its top-level imports renamed by `renames` (old → new).
pub fn rename_imports<S: std::hash::BuildHasher>(
    component: &[u8],
    renames: &HashMap<String, String, S>,
) -> Result<Vec<u8>> {
    let renames = Renames {
        imports: renames
            .iter()
            .map(|(from, to)| (from.clone(), to.clone()))
            .collect(),
        exports: HashMap::new(),
    };
    let mut encoded = wasm_encoder::Component::new();
    Renamer {
        depth: 0,
        renames: &renames,
    }
    .parse_component(&mut encoded, Parser::new(0), component)
    .map_err(|e| anyhow::anyhow!("renaming imports: {e:?}"))?;
    Ok(encoded.finish())
}

fn componentize(module: &[u8]) -> Result<Vec<u8>> {
    if !has_component_type(module)? {
        bail!(
            "a core module without a `component-type` section (built with Spin 1's SDK or \
             wit-bindgen older than 0.5) cannot be made a component here; rebuild it with \
             spin-sdk 2 or later (a WAGI program needs `executor = {{ type = \"wagi\" }}` \
             on its trigger)"
        );
    }
    wit_component::ComponentEncoder::default()
        .validate(true)
        .module(module)
        .and_then(|encoder| {
            encoder.adapter(
                wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME,
                wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
            )
        })
        .and_then(|mut encoder| encoder.encode())
        .context("making a component of the core module")
}

fn has_component_type(module: &[u8]) -> Result<bool> {
    for payload in Parser::new(0).parse_all(module) {
        if let Payload::CustomSection(section) = payload?
            && section.name().starts_with("component-type")
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The name `name` is served under, if it is a renamed pre-release's.
fn renamed(name: &str) -> Option<String> {
    renamed_prerelease(name).map(|(release, _)| release)
}

/// The name a candidate imported beside its release is served under: the
/// release, with the candidate's pre-release tag as build metadata
/// (`wasi:clocks/types@0.3.0+rc-2026-03-15`). Build metadata plays no part in
/// semver precedence, so wasmtime's linker gives it the release it provides,
/// and the two names stay distinct imports of the component.
fn beside_release(candidate: &str, release: &str) -> String {
    let tag = candidate
        .rsplit_once('@')
        .and_then(|(_, version)| semver::Version::parse(version).ok())
        .map(|version| version.pre.to_string())
        .unwrap_or_default();
    format!("{release}+{tag}")
}

/// The name `name` is served under and the words for it, if it is a renamed
/// pre-release's.
fn renamed_prerelease(name: &str) -> Option<(String, &'static str)> {
    if !name.starts_with(RENAMED_NAMESPACE) || KEPT_NAMES.contains(&name) {
        return None;
    }
    RENAMED_PRERELEASES
        .iter()
        .find_map(|(prerelease, release, what)| {
            name.strip_suffix(prerelease)
                .map(|path| (format!("{path}{release}"), *what))
        })
}

/// The name an export is called under, if it is renamed.
fn renamed_export(name: &str) -> Option<String> {
    renamed(name).or_else(|| {
        RENAMED_EXPORTS
            .iter()
            .find(|(candidate, _)| *candidate == name)
            .map(|(_, release)| release.to_string())
    })
}

/// `wasm` with its top-level import and export names renamed, and what was
/// renamed in words, or `None` when nothing needs it. Nested components keep
/// their names: their imports are satisfied, by name, inside the component.
fn rename_prereleases(wasm: &[u8]) -> Result<Option<(Vec<u8>, Vec<&'static str>)>> {
    let imports = imports_of(wasm)?;
    let exports = exports_of(wasm)?;
    let mut renames = Renames::default();
    let mut what = Vec::new();
    for name in &imports {
        let Some((release, words)) = renamed_prerelease(name) else {
            continue;
        };
        // Beside its release, the candidate keeps an import of its own.
        let served = if imports.contains(&release) {
            beside_release(name, &release)
        } else {
            release
        };
        renames.imports.insert(name.clone(), served);
        if !what.contains(&words) {
            what.push(words);
        }
    }
    for name in &exports {
        let Some(release) = renamed_export(name) else {
            continue;
        };
        // Two exports of one interface would be two handlers: Spin refuses a
        // component that exports more than one (`crates/http/src/trigger.rs`).
        if exports.contains(&release) {
            bail!(
                "the component exports both {name} and {release}: it exports multiple \
                 different handlers but it's expected to export only one (as Spin refuses it)"
            );
        }
        if let Some((_, words)) = renamed_prerelease(name)
            && !what.contains(&words)
        {
            what.push(words);
        }
        renames.exports.insert(name.clone(), release);
    }
    if exports
        .iter()
        .any(|name| name == wasi_2023_10_18::INCOMING_HANDLER)
    {
        what.push("wasi:http 0.2.0-rc-2023-10-18 handler called as 0.2.0's");
    }
    if what.is_empty() {
        return Ok(None);
    }
    let mut component = wasm_encoder::Component::new();
    Renamer {
        depth: 0,
        renames: &renames,
    }
    .parse_component(&mut component, Parser::new(0), wasm)
    .map_err(|e| anyhow::anyhow!("renaming pre-release WASI imports: {e:?}"))?;
    Ok(Some((component.finish(), what)))
}

/// The top-level names a component is re-encoded with, by the names it has.
#[derive(Default)]
struct Renames {
    imports: HashMap<String, String>,
    exports: HashMap<String, String>,
}

/// The names a component exports at its top level.
fn exports_of(wasm: &[u8]) -> Result<Vec<String>> {
    let mut depth = 0usize;
    let mut names = Vec::new();
    for payload in Parser::new(0).parse_all(wasm) {
        match payload? {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) if depth > 0 => depth -= 1,
            Payload::ComponentExportSection(exports) if depth == 0 => {
                for export in exports {
                    names.push(export?.name.name.to_string());
                }
            }
            _ => {}
        }
    }
    Ok(names)
}

/// Re-encodes a component unchanged but for its own (depth 0) import and export names.
struct Renamer<'a> {
    depth: usize,
    renames: &'a Renames,
}

impl Reencode for Renamer<'_> {
    type Error = std::convert::Infallible;
}

impl ReencodeComponent for Renamer<'_> {
    fn push_depth(&mut self) {
        self.depth += 1;
    }

    fn pop_depth(&mut self) {
        self.depth -= 1;
    }

    fn parse_component_import_section(
        &mut self,
        imports: &mut wasm_encoder::ComponentImportSection,
        section: wasmparser::ComponentImportSectionReader<'_>,
    ) -> Result<(), wasm_encoder::reencode::Error<Self::Error>> {
        if self.depth > 0 {
            return component_utils::parse_component_import_section(self, imports, section);
        }
        for import in section {
            let import = import?;
            imports.import(
                renamed_extern(import.name, &self.renames.imports),
                self.component_type_ref(import.ty)?,
            );
        }
        Ok(())
    }

    fn parse_component_export(
        &mut self,
        exports: &mut wasm_encoder::ComponentExportSection,
        export: wasmparser::ComponentExport<'_>,
    ) -> Result<(), wasm_encoder::reencode::Error<Self::Error>> {
        if self.depth > 0 {
            return component_utils::parse_component_export(self, exports, export);
        }
        let ty = export
            .ty
            .map(|ty| self.component_type_ref(ty))
            .transpose()?;
        exports.export(
            renamed_extern(export.name, &self.renames.exports),
            export.kind.into(),
            self.component_external_index(export.kind, export.index),
            ty,
        );
        Ok(())
    }
}

/// `name`, renamed if `renames` renames it; its other parts kept.
fn renamed_extern<'a>(
    name: wasmparser::ComponentExternName<'a>,
    renames: &HashMap<String, String>,
) -> wasm_encoder::ComponentExternName<'a> {
    let served = renames.get(name.name).cloned();
    let mut name = wasm_encoder::ComponentExternName::from(name);
    if let Some(served) = served {
        name.name = Cow::Owned(served);
    }
    name
}

/// The names a component imports at its top level (`wasi:io/error@0.2.0`, ...),
/// in order. Nested modules' and components' imports are satisfied inside it.
pub fn imports_of(component: &[u8]) -> Result<Vec<String>> {
    let mut depth = 0usize;
    let mut names = Vec::new();
    for payload in Parser::new(0).parse_all(component) {
        match payload.context("reading the component's imports")? {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) if depth > 0 => depth -= 1,
            Payload::ComponentImportSection(imports) if depth == 0 => {
                for import in imports {
                    let import = import.context("reading the component's imports")?;
                    names.push(import.name.name.to_string());
                }
            }
            _ => {}
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests;
