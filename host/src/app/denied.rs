//! The imports a dependency does not inherit (`instance::compose::deny`
//! renamed them into `spinbench-denied:`) linked as traps, and only those:
//! wasmtime's `define_unknown_imports_as_traps` also stubs every import the
//! linker has under another semver-compatible version (`wasi:io/streams@0.2.0`
//! where the linker has `@0.2.6`), with resources of its own that then
//! mismatch the host's.

use crate::instance::compose::is_denied;
use anyhow::{Result, bail};
use wasmtime::Engine;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Linker, ResourceType};

/// Defines each denied import of `component` in `linker`: its functions trap
/// when called; a resource it defines is an empty host resource; a resource
/// it takes from an earlier import (an `(eq ...)` alias, such as
/// `wasi:filesystem/preopens`' `descriptor`) is left to that import.
pub fn link_traps<T: 'static>(
    linker: &mut Linker<T>,
    engine: &Engine,
    component: &Component,
) -> Result<()> {
    let mut seen: Vec<ResourceType> = Vec::new();
    let ty = component.component_type();
    for (name, item) in ty.imports(engine) {
        let ComponentItem::ComponentInstance(instance) = item.ty else {
            if is_denied(name) {
                bail!("denied import {name:?} is not an interface");
            }
            continue;
        };
        let denied = is_denied(name);
        let mut defined = if denied {
            Some(linker.instance(name)?)
        } else {
            None
        };
        for (export, item) in instance.exports(engine) {
            match (item.ty, defined.as_mut()) {
                (ComponentItem::Resource(resource), Some(linker)) if !seen.contains(&resource) => {
                    seen.push(resource);
                    linker.resource(export, ResourceType::host::<()>(), |_, _| Ok(()))?;
                }
                (ComponentItem::Resource(resource), None) => seen.push(resource),
                (ComponentItem::ComponentFunc(func), Some(linker)) => {
                    let what = format!("{name}#{export}");
                    if func.async_() {
                        linker.func_new_concurrent(export, move |_, _, _, _| {
                            let what = what.clone();
                            Box::pin(async move {
                                Err(wasmtime::Error::msg(format!(
                                    "{what} is denied: not inherited"
                                )))
                            })
                        })?;
                    } else {
                        linker.func_new(export, move |_, _, _, _| {
                            Err(wasmtime::Error::msg(format!(
                                "{what} is denied: not inherited"
                            )))
                        })?;
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}
