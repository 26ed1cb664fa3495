//! Sockets per instance, under `--max-instance-sockets`: each socket a guest
//! creates (`wasi:sockets` 0.2's `create-tcp-socket` and
//! `create-udp-socket`, 0.3's `tcp-socket.create` and `udp-socket.create`)
//! is an open descriptor of the host process, from the moment it is created.
//! Without a count of their own they were bounded only by the resource table
//! (256 per instance), so the instances at the admission cap could hold a
//! quarter of a million descriptors and leave the listener none.
//!
//! wasmtime-wasi's functions are linked as they are, then shadowed by ones
//! that count before creating (past the count: `new-socket-limit` in 0.2,
//! `other` in 0.3, which has no such code) and whose resource destructors
//! give the count back.

use crate::capabilities::HostState;
use anyhow::Result;
use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource, ResourceType};
use wasmtime_wasi::TrappableError;
use wasmtime_wasi::sockets::WasiSocketsView;

const P2_TCP_CREATE: &str = "wasi:sockets/tcp-create-socket@0.2.12";
const P2_UDP_CREATE: &str = "wasi:sockets/udp-create-socket@0.2.12";
const P2_TCP: &str = "wasi:sockets/tcp@0.2.12";
const P2_UDP: &str = "wasi:sockets/udp@0.2.12";
const P3_TYPES: &str = "wasi:sockets/types@0.3.0";

/// What a 0.3 guest is told past the count (0.3 has no `new-socket-limit`).
fn refusal(limit: usize) -> String {
    format!("this instance has {limit} sockets open, the most it may (--max-instance-sockets)")
}

/// The socket `created` (counted before), or its error, with the count
/// given back when creating failed.
fn settle<T: HostState, R, E>(
    store: &StoreContextMut<'_, T>,
    created: Result<Resource<R>, TrappableError<E>>,
) -> wasmtime::Result<Result<Resource<R>, E>>
where
    E: std::error::Error + Send + Sync + 'static,
{
    match created {
        Ok(socket) => Ok(Ok(socket)),
        Err(error) => {
            store.data().budget().close_socket();
            Ok(Err(error.downcast()?))
        }
    }
}

/// The destructor of a socket resource of type `R`: the socket goes, and its
/// count with it.
fn close<T: HostState, R: 'static>(
    mut store: StoreContextMut<'_, T>,
    rep: u32,
) -> wasmtime::Result<()> {
    store
        .data_mut()
        .table()
        .delete(Resource::<R>::new_own(rep))?;
    store.data().budget().close_socket();
    Ok(())
}

/// Counts the sockets of wasmtime-wasi's 0.2 interfaces, linked before.
pub fn limit_p2<T>(linker: &mut Linker<T>) -> Result<()>
where
    T: HostState + wasmtime_wasi::WasiView,
{
    use wasmtime_wasi::p2::bindings::sockets::network::{ErrorCode, IpAddressFamily};
    use wasmtime_wasi::p2::bindings::sockets::{tcp_create_socket, udp_create_socket};
    use wasmtime_wasi::p2::{TcpSocket, UdpSocket};
    type Created<R> = wasmtime::Result<(Result<Resource<R>, ErrorCode>,)>;

    linker.allow_shadowing(true);
    linker.instance(P2_TCP_CREATE)?.func_wrap(
        "create-tcp-socket",
        |mut store: StoreContextMut<'_, T>, (family,): (IpAddressFamily,)| -> Created<TcpSocket> {
            if !store.data().budget().open_socket() {
                return Ok((Err(ErrorCode::NewSocketLimit),));
            }
            let mut sockets = store.data_mut().sockets();
            let created = tcp_create_socket::Host::create_tcp_socket(&mut sockets, family);
            Ok((settle(&store, created)?,))
        },
    )?;
    linker.instance(P2_UDP_CREATE)?.func_wrap_async(
        "create-udp-socket",
        |mut store: StoreContextMut<'_, T>, (family,): (IpAddressFamily,)| {
            Box::new(async move {
                if !store.data().budget().open_socket() {
                    return Ok((Err(ErrorCode::NewSocketLimit),));
                }
                let mut sockets = store.data_mut().sockets();
                let created =
                    udp_create_socket::Host::create_udp_socket(&mut sockets, family).await;
                Ok((settle(&store, created)?,))
            })
        },
    )?;
    linker.instance(P2_TCP)?.resource(
        "tcp-socket",
        ResourceType::host::<TcpSocket>(),
        close::<T, TcpSocket>,
    )?;
    linker.instance(P2_UDP)?.resource(
        "udp-socket",
        ResourceType::host::<UdpSocket>(),
        close::<T, UdpSocket>,
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// Counts the sockets of wasmtime-wasi's 0.3 interfaces, linked before.
pub fn limit_p3<T>(linker: &mut Linker<T>) -> Result<()>
where
    T: HostState + wasmtime_wasi::WasiView,
{
    use wasmtime_wasi::p3::bindings::sockets::types::{
        ErrorCode, HostTcpSocket, HostUdpSocket, IpAddressFamily,
    };
    use wasmtime_wasi::sockets::{TcpSocket, UdpSocket};
    type Created<R> = wasmtime::Result<(Result<Resource<R>, ErrorCode>,)>;

    linker.allow_shadowing(true);
    let mut types = linker.instance(P3_TYPES)?;
    types.func_wrap(
        "[static]tcp-socket.create",
        |mut store: StoreContextMut<'_, T>, (family,): (IpAddressFamily,)| -> Created<TcpSocket> {
            let budget = store.data().budget().clone();
            if !budget.open_socket() {
                return Ok((Err(ErrorCode::Other(Some(refusal(budget.sockets_used())))),));
            }
            let mut sockets = store.data_mut().sockets();
            let created = HostTcpSocket::create(&mut sockets, family);
            Ok((settle(&store, created)?,))
        },
    )?;
    types.func_wrap_async(
        "[static]udp-socket.create",
        |mut store: StoreContextMut<'_, T>, (family,): (IpAddressFamily,)| {
            Box::new(async move {
                let budget = store.data().budget().clone();
                if !budget.open_socket() {
                    return Ok((Err(ErrorCode::Other(Some(refusal(budget.sockets_used())))),));
                }
                let mut sockets = store.data_mut().sockets();
                let created = HostUdpSocket::create(&mut sockets, family).await;
                Ok((settle(&store, created)?,))
            })
        },
    )?;
    types.resource(
        "tcp-socket",
        ResourceType::host::<TcpSocket>(),
        close::<T, TcpSocket>,
    )?;
    types.resource(
        "udp-socket",
        ResourceType::host::<UdpSocket>(),
        close::<T, UdpSocket>,
    )?;
    linker.allow_shadowing(false);
    Ok(())
}
