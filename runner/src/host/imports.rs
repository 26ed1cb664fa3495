//! A component's imports against what the runner provides, checked from its
//! bytes before any engine exists, so that a component needing something else
//! (Spin's key-value store, SQLite, outbound Redis...) is refused with one line
//! naming the import, never with wasmtime's linker error.
//!
//! What is provided, by package: WASI 0.2 (`wasmtime_wasi::p2::add_to_linker_async`
//! and wasi:http's `types` and `outgoing-handler`, wasmtime 48), WASI 0.3 when a
//! WASIp3 component is hosted (`wasmtime_wasi::p3` and wasi:http's `types` and
//! `client`), and Spin's variables interface. Versions match as wasmtime's linker
//! matches them: any `0.2.z` for a 0.2 package, `0.3.z` for a 0.3 one; a
//! pre-release (`0.3.0-rc-...`) only exactly, which these are not. Should the
//! linker still fail on a finer point (a function a newer minor version added),
//! `Host::new` reports that in one line too.

use super::guest::VARIABLES_V2;
use anyhow::{Context, Result};
use wasmparser::{Parser, Payload};

/// The names a component imports at its top level (`wasi:io/error@0.2.0`, ...),
/// in order. Nested modules' and components' imports are satisfied inside it.
pub fn of(component: &[u8]) -> Result<Vec<String>> {
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

/// The first of `imports` the runner does not provide.
pub fn first_unprovided(imports: &[String], wasip3: bool) -> Option<&str> {
    imports
        .iter()
        .map(String::as_str)
        .find(|name| !provided(name, wasip3))
}

fn provided(name: &str, wasip3: bool) -> bool {
    if name == VARIABLES_V2 {
        return true;
    }
    let Some((path, version)) = name.split_once('@') else {
        return false;
    };
    let Some((package, interface)) = path.split_once('/') else {
        return false;
    };
    let p2 = minor_track(version) == Some(2);
    let p3 = wasip3 && minor_track(version) == Some(3);
    match package {
        "wasi:cli" | "wasi:clocks" | "wasi:filesystem" | "wasi:random" | "wasi:sockets" => p2 || p3,
        "wasi:io" => p2,
        "wasi:http" => match interface {
            "types" => p2 || p3,
            "outgoing-handler" => p2,
            "client" => p3,
            _ => false,
        },
        _ => false,
    }
}

/// `Some(m)` for a `0.m.z` release version (no pre-release), else `None`.
fn minor_track(version: &str) -> Option<u32> {
    let version = version.split('+').next()?;
    let mut parts = version.split('.');
    let (major, minor, patch) = (parts.next()?, parts.next()?, parts.next()?);
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if parts.next().is_some() || major != "0" || !numeric(minor) || !numeric(patch) {
        return None;
    }
    minor.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(std::string::ToString::to_string).collect()
    }

    #[test]
    fn wasi_02_and_spin_variables_are_provided() {
        let imports = names(&[
            "wasi:io/error@0.2.0",
            "wasi:cli/environment@0.2.3",
            "wasi:http/types@0.2.0",
            "wasi:http/outgoing-handler@0.2.12",
            "wasi:sockets/tcp@0.2.6",
            "fermyon:spin/variables@2.0.0",
        ]);
        assert_eq!(first_unprovided(&imports, false), None);
    }

    #[test]
    fn spin_platform_interfaces_are_named() {
        let imports = names(&["wasi:io/error@0.2.0", "fermyon:spin/key-value@2.0.0"]);
        assert_eq!(
            first_unprovided(&imports, false),
            Some("fermyon:spin/key-value@2.0.0")
        );
        for other in [
            "spin:sqlite/sqlite@3.0.0",
            "wasi:keyvalue/store@0.2.0-draft2",
            "wasi:config/store@0.2.0-draft-2024-09-27",
            "fermyon:spin/llm@2.0.0",
            "spin:variables/variables@3.0.0",
        ] {
            assert!(!provided(other, true), "{other}");
        }
    }

    #[test]
    fn wasi_03_only_with_a_wasip3_engine_and_never_a_prerelease() {
        assert!(!provided("wasi:cli/environment@0.3.0", false));
        assert!(provided("wasi:cli/environment@0.3.0", true));
        assert!(provided("wasi:http/client@0.3.0", true));
        assert!(!provided("wasi:http/types@0.3.0-rc-2026-01-06", true));
        assert!(!provided("wasi:io/error@0.3.0", true));
        assert!(!provided("wasi:cli/environment@1.0.0", true));
        assert!(!provided("wasi:cli/environment", true));
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(of(b"not wasm").is_err());
    }
}
