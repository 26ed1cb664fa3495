//! Which WASI generation a component is built for, read from its bytes before
//! any engine exists: the engine is configured for what the manifest needs.

use anyhow::{Context, Result};
use wasmparser::{Parser, Payload};

/// The WASI HTTP world a component exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// `wasi:http/incoming-handler@0.2.x`: a fresh instance per request, no
    /// concurrency inside an instance.
    P2,
    /// `wasi:http/handler@0.3.x`: async, instances reused for many requests.
    P3,
    /// A WASI command run as a CGI script (WAGI), a fresh instance per
    /// request: chosen by the trigger's executor, not read from the bytes.
    Wagi,
}

impl Flavour {
    /// Decided as `wasmtime serve` decides it: WASIp3 if the component exports
    /// `wasi:http/handler@0.3.x`, else WASIp2. Only the outer component's export
    /// names are read; nested modules' and components' exports are not the component's.
    pub fn of(component: &[u8]) -> Result<Self> {
        // Inside a nested module or component while > 0.
        let mut depth = 0usize;
        for payload in Parser::new(0).parse_all(component) {
            match payload.context("reading the component's exports")? {
                Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
                Payload::End(_) if depth > 0 => depth -= 1,
                Payload::ComponentExportSection(exports) if depth == 0 => {
                    for export in exports {
                        let export = export.context("reading the component's exports")?;
                        if export.name.name.starts_with("wasi:http/handler@0.3") {
                            return Ok(Flavour::P3);
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(Flavour::P2)
    }

    pub fn describe(self) -> &'static str {
        match self {
            Flavour::P2 => "WASIp2, fresh instance per request",
            Flavour::P3 => "WASIp3, instances reused",
            Flavour::Wagi => "WAGI, a WASI command per request",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_core_module_is_not_a_p3_component() {
        // `\0asm`, version 1: an empty core module.
        let empty_module = b"\0asm\x01\0\0\0";
        assert_eq!(Flavour::of(empty_module).unwrap(), Flavour::P2);
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(Flavour::of(b"not wasm at all").is_err());
    }
}
