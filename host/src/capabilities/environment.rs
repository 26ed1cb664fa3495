//! A component's `environment` (its manifest's table), answered from its
//! context: `wasi:cli/environment`'s functions are defined again over
//! wasmtime-wasi's, which would read the store's WASI context. So each store's
//! WASI context stays the same empty one, built without copying the
//! environment, and no component needs a linker of its own.

use super::HostState;
use anyhow::Result;
use wasmtime::StoreContextMut;
use wasmtime::component::Linker;

/// The `wasi:cli/environment` instance wasmtime-wasi 48 links for WASIp2 and
/// WASIp3, under the exact version it provides.
pub const ENVIRONMENT_P2: &str = "wasi:cli/environment@0.2.12";
pub const ENVIRONMENT_P3: &str = "wasi:cli/environment@0.3.0";

/// Defines `instance`'s functions over the ones already linked: the
/// component's environment and no arguments (a WAGI request's CGI variables
/// and command line added), no working directory (the function
/// is `initial-cwd` in 0.2 and `get-initial-cwd` in 0.3; defining both is harmless).
pub fn link<T: HostState>(linker: &mut Linker<T>, instance: &str) -> Result<()> {
    linker.allow_shadowing(true);
    let mut instance = linker.instance(instance)?;
    instance.func_wrap(
        "get-environment",
        |store: StoreContextMut<'_, T>, (): ()| {
            let state = store.data();
            let mut environment = state.context().environment.clone();
            if let Some(command_line) = state.command_line() {
                environment.extend_from_slice(&command_line.environment);
            }
            Ok((environment,))
        },
    )?;
    instance.func_wrap("get-arguments", |store: StoreContextMut<'_, T>, (): ()| {
        let arguments = store
            .data()
            .command_line()
            .map(|command_line| command_line.arguments.clone())
            .unwrap_or_default();
        Ok((arguments,))
    })?;
    for cwd in ["initial-cwd", "get-initial-cwd"] {
        instance.func_wrap(cwd, |_: StoreContextMut<'_, T>, (): ()| {
            Ok((None::<String>,))
        })?;
    }
    linker.allow_shadowing(false);
    Ok(())
}
