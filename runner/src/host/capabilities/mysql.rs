//! MySQL (`fermyon:spin/mysql@2.0.0`, `spin:mysql/mysql@3.0.0`): linked, so
//! that apps importing it start as under `spin up`, but no database is
//! reached. `open` answers `error::connection-failed` with Spin's message for
//! an address the component's `allowed_outbound_hosts` do not allow
//! (spinframework/spin `crates/factor-outbound-mysql/src/host.rs`), and says
//! that spinbench does not connect to MySQL for one they allow. No connection
//! ever exists, so the connection methods cannot be reached; they trap if they
//! are. (PostgreSQL is served: [`super::postgres`].)
//!
//! The functions are defined with dynamic types (`func_new`): only `open`'s
//! result is built, and it has the same shape in every version.

use super::HostState;
use super::outbound_hosts::AllowedHosts;
use anyhow::Result;
use wasmtime::component::{Accessor, Linker, ResourceType, Val};

pub const V2: &str = "fermyon:spin/mysql@2.0.0";
pub const V3: &str = "spin:mysql/mysql@3.0.0";
/// The types both 2.0.0 interfaces use: an interface of types only.
pub const RDBMS_TYPES_V2: &str = "fermyon:spin/rdbms-types@2.0.0";

/// The host side of `connection`, never made.
struct Never;

/// What `open(address)` answers: Spin's refusal, or that spinbench does not
/// connect to MySQL.
fn refusal(allowed: &AllowedHosts, address: &str) -> String {
    if allowed.allows_url(address, "mysql") {
        return format!(
            "spinbench serve does not connect to MySQL (address {address} is allowed; `spin up` connects)"
        );
    }
    format!("address {address} is not permitted")
}

fn connection_failed(message: String) -> Val {
    Val::Result(Err(Some(Box::new(Val::Variant(
        "connection-failed".into(),
        Some(Box::new(Val::String(message))),
    )))))
}

fn address_of(params: &[Val]) -> String {
    match params.first() {
        Some(Val::String(address)) => address.clone(),
        _ => String::new(),
    }
}

/// The functions of one interface, by how they are linked.
struct Functions<'a> {
    open: &'a [&'a str],
    open_async: &'a [&'a str],
    /// Reached only through a connection, which never exists: they trap.
    others: &'a [&'a str],
    others_async: &'a [&'a str],
}

fn unreachable(name: &str, function: &str) -> wasmtime::Error {
    wasmtime::format_err!("{name}#{function}: spinbench serve makes no database connections")
}

/// Links `name`: its resources, `open` (sync or async) answering
/// [`refusal`], and the other functions as traps.
fn link<T: HostState>(
    linker: &mut Linker<T>,
    name: &'static str,
    functions: &Functions<'static>,
) -> Result<()> {
    let mut instance = linker.instance(name)?;
    instance.resource("connection", ResourceType::host::<Never>(), |_, _| Ok(()))?;
    for open in functions.open {
        instance.func_new(open, move |store, _, params, results| {
            let allowed = &store.data().context().grants.allowed_outbound_hosts;
            results[0] = connection_failed(refusal(allowed, &address_of(params)));
            Ok(())
        })?;
    }
    for open in functions.open_async {
        instance.func_new_concurrent(open, move |accessor: &Accessor<T>, _, params, results| {
            Box::pin(async move {
                let message = accessor.with(|mut access| {
                    let allowed = &access.get().context().grants.allowed_outbound_hosts;
                    refusal(allowed, &address_of(params))
                });
                results[0] = connection_failed(message);
                Ok(())
            })
        })?;
    }
    for &other in functions.others {
        instance.func_new(other, move |_, _, _, _| Err(unreachable(name, other)))?;
    }
    for &other in functions.others_async {
        instance.func_new_concurrent(other, move |_: &Accessor<T>, _, _, _| {
            Box::pin(async move { Err(unreachable(name, other)) })
        })?;
    }
    Ok(())
}

const OPEN: &[&str] = &["[static]connection.open"];
const METHODS: &[&str] = &["[method]connection.query", "[method]connection.execute"];

pub fn link_v2<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    let functions = Functions {
        open: OPEN,
        open_async: &[],
        others: METHODS,
        others_async: &[],
    };
    link(linker, V2, &functions)
}

pub fn link_v3<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    let functions = Functions {
        open: &[],
        open_async: OPEN,
        others: &[],
        others_async: METHODS,
    };
    link(linker, V3, &functions)
}

/// `fermyon:spin/rdbms-types@2.0.0` has no functions or resources: an empty
/// instance satisfies its import (its types are checked where they are used).
pub fn link_rdbms_types_v2<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    linker.instance(RDBMS_TYPES_V2)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_is_refused_with_spin_s_messages() {
        let none = AllowedHosts::default();
        assert_eq!(
            refusal(&none, "mysql://root@127.0.0.1/app"),
            "address mysql://root@127.0.0.1/app is not permitted"
        );
        let allowed = AllowedHosts::of(&["mysql://db.local"]);
        let message = refusal(&allowed, "mysql://root@db.local/app");
        assert!(message.contains("does not connect"), "{message}");
    }
}
