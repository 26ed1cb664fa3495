//! What the capabilities' link tests share: a core module wit-bindgen would
//! leave for a world (to be made a component as at load), store data with
//! every view a linker needs, and an HTTP view over fresh state.

use super::{ComponentContext, HostState};
use wasmtime::component::ResourceTable;
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView};
use wit_parser::{LiftLowerAbi, ManglingAndAbi, Resolve, WorldId};

/// A core module importing and exporting everything `world` names, with
/// its component type embedded, as wit-bindgen leaves one.
pub fn module_for(resolve: &Resolve, world: WorldId) -> Vec<u8> {
    let mut module =
        wit_component::dummy_module(resolve, world, ManglingAndAbi::Legacy(LiftLowerAbi::Sync));
    wit_component::embed_component_metadata(
        &mut module,
        resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .unwrap();
    module
}

/// An HTTP view over fresh state.
pub fn with_http<R>(body: impl FnOnce(&mut WasiHttpCtxView<'_>) -> R) -> R {
    let mut table = ResourceTable::new();
    let mut ctx = WasiHttpCtx::new();
    let mut view = WasiHttpCtxView {
        hooks: wasmtime_wasi_http::default_hooks(),
        table: &mut table,
        ctx: &mut ctx,
    };
    body(&mut view)
}

/// Store data for linking (never instantiated against a real request).
pub struct LinkState {
    table: ResourceTable,
    budget: std::sync::Arc<super::budget::InstanceBudget>,
    wasi: wasmtime_wasi::WasiCtx,
    http: WasiHttpCtx,
    context: ComponentContext,
}

impl HostState for LinkState {
    fn context(&self) -> &ComponentContext {
        &self.context
    }
    fn table(&mut self) -> &mut ResourceTable {
        &mut self.table
    }
    fn budget(&self) -> &std::sync::Arc<super::budget::InstanceBudget> {
        &self.budget
    }
}

impl wasmtime_wasi::WasiView for LinkState {
    fn ctx(&mut self) -> wasmtime_wasi::WasiCtxView<'_> {
        wasmtime_wasi::WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl wasmtime_wasi_http::WasiHttpView for LinkState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            hooks: wasmtime_wasi_http::default_hooks(),
            table: &mut self.table,
            ctx: &mut self.http,
        }
    }
}
