//! What one instance of a component takes from the instance allocator, read
//! from its bytes before any engine exists (the pool is sized from it): how
//! many core instances it creates, how many memories and tables they define,
//! and how large those start. The same counts wasmtime checks a component
//! against its pool with (`resources_required`, `num_runtime_instances`),
//! found by walking the component's instantiations: a module instantiated
//! twice counts twice, a nested component's modules count each time it is
//! instantiated.

use anyhow::{Context, Result};
use wasmparser::{
    ComponentAlias, ComponentExternalKind, ComponentInstance, ComponentOuterAliasKind,
    ComponentTypeRef, Instance, Parser, Payload,
};

/// What one instance needs. `None` fields of [`Needs::of`]'s answer mean the
/// component instantiates a module or component it imports, whose needs only
/// its instantiation shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    /// Core module instances.
    pub core_instances: u32,
    /// Linear memories defined (imported ones are another module's).
    pub memories: u32,
    /// Tables defined.
    pub tables: u32,
    /// The most memories one module defines.
    pub memories_per_module: u32,
    /// The most tables one module defines.
    pub tables_per_module: u32,
    /// The linear memory it starts with, in bytes: all its memories'
    /// initial sizes together (what it takes before running any code).
    pub initial_memory: u64,
    /// The largest initial table, in elements.
    pub initial_table: u64,
}

impl Needs {
    /// The needs of one instance of `wasm` (a component, or a core module);
    /// `None` if it instantiates something it imports.
    pub fn of(wasm: &[u8]) -> Result<Option<Needs>> {
        let mut stack: Vec<Frame> = Vec::new();
        let mut root = None;
        for payload in Parser::new(0).parse_all(wasm) {
            let payload = payload.context("reading what the component instantiates")?;
            match payload {
                Payload::Version { encoding, .. } => stack.push(match encoding {
                    wasmparser::Encoding::Module => Frame::Module(Needs {
                        core_instances: 1,
                        ..Needs::default()
                    }),
                    wasmparser::Encoding::Component => Frame::Component(Scope::default()),
                }),
                Payload::End(_) => {
                    let popped = stack.pop();
                    let parent = match stack.last_mut() {
                        Some(Frame::Component(parent)) => Some(parent),
                        _ => None,
                    };
                    match (popped, parent) {
                        (Some(Frame::Module(needs)), Some(parent)) => {
                            parent.modules.push(Some(needs));
                        }
                        (Some(Frame::Component(scope)), Some(parent)) => {
                            parent.components.push(scope.total);
                        }
                        (Some(Frame::Module(needs)), None) => root = Some(Some(needs)),
                        (Some(Frame::Component(scope)), None) => root = Some(scope.total),
                        (None, _) => {}
                    }
                }
                other => visit(&mut stack, other)?,
            }
        }
        Ok(root.flatten())
    }

    /// The adapter modules wasmtime may add for a component instantiated with
    /// another's exports (a `wac` composition, a middleware chain): calls
    /// between two components go through adapters wasmtime compiles into
    /// modules of its own, none in the bytes. It makes at most one adapter
    /// module per core instantiation that takes an adapter, each with no
    /// memory or table of its own: bounded by the core instances.
    fn fused_adapters(self) -> Needs {
        Needs {
            core_instances: self.core_instances,
            ..Needs::default()
        }
    }

    /// Both needs together: one instance doing what each does.
    fn plus(self, other: Needs) -> Needs {
        Needs {
            core_instances: self.core_instances + other.core_instances,
            memories: self.memories + other.memories,
            tables: self.tables + other.tables,
            memories_per_module: self.memories_per_module.max(other.memories_per_module),
            tables_per_module: self.tables_per_module.max(other.tables_per_module),
            initial_memory: self.initial_memory.saturating_add(other.initial_memory),
            initial_table: self.initial_table.max(other.initial_table),
        }
    }
}

enum Frame {
    Module(Needs),
    Component(Scope),
}

/// A component's index spaces of modules and components (each entry the
/// needs of one instance of it; `None` where unknown) and the needs of its
/// own instantiations so far.
struct Scope {
    modules: Vec<Option<Needs>>,
    components: Vec<Option<Needs>>,
    total: Option<Needs>,
}

impl Default for Scope {
    fn default() -> Self {
        Self {
            modules: Vec::new(),
            components: Vec::new(),
            total: Some(Needs::default()),
        }
    }
}

impl Scope {
    fn instantiate(&mut self, needs: Option<Needs>) {
        self.total = match (self.total, needs) {
            (Some(total), Some(needs)) => Some(total.plus(needs)),
            _ => None,
        };
    }
}

fn visit(stack: &mut [Frame], payload: Payload<'_>) -> Result<()> {
    let depth = stack.len();
    match stack.last_mut() {
        Some(Frame::Module(needs)) => visit_module(needs, payload),
        Some(Frame::Component(_)) => {
            // Outer aliases reach enclosing components' index spaces.
            if let Payload::ComponentAliasSection(aliases) = &payload {
                for alias in aliases.clone() {
                    let alias = alias?;
                    let found = outer(stack, depth, &alias);
                    let Some(Frame::Component(scope)) = stack.last_mut() else {
                        unreachable!()
                    };
                    match alias_kind(&alias) {
                        Some(true) => scope.modules.push(found),
                        Some(false) => scope.components.push(found),
                        None => {}
                    }
                }
                return Ok(());
            }
            let Some(Frame::Component(scope)) = stack.last_mut() else {
                unreachable!()
            };
            visit_component(scope, payload)
        }
        None => Ok(()),
    }
}

/// Whether an alias defines a module (`Some(true)`), a component
/// (`Some(false)`), or neither.
fn alias_kind(alias: &ComponentAlias<'_>) -> Option<bool> {
    match alias {
        ComponentAlias::Outer {
            kind: ComponentOuterAliasKind::CoreModule,
            ..
        }
        | ComponentAlias::InstanceExport {
            kind: ComponentExternalKind::Module,
            ..
        } => Some(true),
        ComponentAlias::Outer {
            kind: ComponentOuterAliasKind::Component,
            ..
        }
        | ComponentAlias::InstanceExport {
            kind: ComponentExternalKind::Component,
            ..
        } => Some(false),
        _ => None,
    }
}

/// The needs an outer alias names, from the enclosing component `count`
/// levels up; `None` for anything else (an instance's export: unknown).
fn outer(stack: &[Frame], depth: usize, alias: &ComponentAlias<'_>) -> Option<Needs> {
    let ComponentAlias::Outer { kind, count, index } = alias else {
        return None;
    };
    let level = depth.checked_sub(1 + *count as usize)?;
    let Frame::Component(scope) = &stack[level] else {
        return None;
    };
    let space = match kind {
        ComponentOuterAliasKind::CoreModule => &scope.modules,
        ComponentOuterAliasKind::Component => &scope.components,
        _ => return None,
    };
    space.get(*index as usize).copied().flatten()
}

fn visit_module(needs: &mut Needs, payload: Payload<'_>) -> Result<()> {
    match payload {
        Payload::MemorySection(memories) => {
            for memory in memories {
                let memory = memory?;
                let page = 1u64 << memory.page_size_log2.unwrap_or(16);
                needs.memories += 1;
                let initial = memory.initial.saturating_mul(page);
                needs.initial_memory = needs.initial_memory.saturating_add(initial);
            }
            needs.memories_per_module = needs.memories;
        }
        Payload::TableSection(tables) => {
            for table in tables {
                let table = table?;
                needs.tables += 1;
                needs.initial_table = needs.initial_table.max(table.ty.initial);
            }
            needs.tables_per_module = needs.tables;
        }
        _ => {}
    }
    Ok(())
}

fn visit_component(scope: &mut Scope, payload: Payload<'_>) -> Result<()> {
    match payload {
        Payload::ComponentImportSection(imports) => {
            for import in imports {
                match import?.ty {
                    ComponentTypeRef::Module(_) => scope.modules.push(None),
                    ComponentTypeRef::Component(_) => scope.components.push(None),
                    _ => {}
                }
            }
        }
        Payload::ComponentExportSection(exports) => {
            for export in exports {
                let export = export?;
                let index = export.index as usize;
                match export.kind {
                    ComponentExternalKind::Module => {
                        let needs = scope.modules.get(index).copied().flatten();
                        scope.modules.push(needs);
                    }
                    ComponentExternalKind::Component => {
                        let needs = scope.components.get(index).copied().flatten();
                        scope.components.push(needs);
                    }
                    _ => {}
                }
            }
        }
        Payload::InstanceSection(instances) => {
            for instance in instances {
                if let Instance::Instantiate { module_index, .. } = instance? {
                    let needs = scope.modules.get(module_index as usize).copied().flatten();
                    scope.instantiate(needs);
                }
            }
        }
        Payload::ComponentInstanceSection(instances) => {
            for instance in instances {
                if let ComponentInstance::Instantiate {
                    component_index,
                    args,
                } = instance?
                {
                    let needs = scope
                        .components
                        .get(component_index as usize)
                        .copied()
                        .flatten();
                    scope.instantiate(needs);
                    if !args.is_empty() {
                        scope.instantiate(needs.map(Needs::fused_adapters));
                    }
                }
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests;
