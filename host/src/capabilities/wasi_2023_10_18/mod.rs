//! WASI's 0.2.0 release candidate of 2023-10-18: the `wasi:http` and `wasi:io`
//! interfaces spin-sdk 2.0 to 2.2 (Spin 2.0 to 2.2) build HTTP components
//! against, served as Spin 4.0.2 serves them (spinframework/spin v4.0.2
//! `crates/factor-outbound-http/src/wasi_2023_10_18.rs`,
//! `crates/factor-wasi/src/wasi_2023_10_18.rs`): bindings generated from the
//! candidate's shapes (`host/wit/wasi-2023-10-18.wit`), every resource mapped
//! onto WASI 0.2's own host type, every function answered by WASI 0.2's
//! implementation. So a request, its body streams and an outgoing request are
//! the same host objects whichever version the guest speaks, and outgoing
//! requests pass the same allow-list (`outbound_http`).
//!
//! The component's `wasi:http/incoming-handler` export of this candidate is
//! renamed to 0.2.0 at load (`instance::prepare`): its one function has the
//! same shape, over these same resources, so it is called as any WASIp2
//! handler is.

mod http;
mod io;

use super::HostState;
use anyhow::{Context, Result};
use wasmtime::component::{HasData, Linker, ResourceTable};

/// The interfaces provided, by the names a component imports them under.
pub const HTTP_TYPES: &str = "wasi:http/types@0.2.0-rc-2023-10-18";
pub const HTTP_OUTGOING_HANDLER: &str = "wasi:http/outgoing-handler@0.2.0-rc-2023-10-18";
pub const IO_POLL: &str = "wasi:io/poll@0.2.0-rc-2023-10-18";
pub const IO_STREAMS: &str = "wasi:io/streams@0.2.0-rc-2023-10-18";

/// The handler export renamed to WASI 0.2.0's at load.
pub const INCOMING_HANDLER: &str = "wasi:http/incoming-handler@0.2.0-rc-2023-10-18";

mod bindings {
    use wasmtime_wasi::p2::bindings as latest_wasi;
    use wasmtime_wasi_http::p2::bindings::http::types as latest;

    wasmtime::component::bindgen!({
        path: "wit/wasi-2023-10-18.wit",
        world: "wasi:http/proxy@0.2.0-rc-2023-10-18",
        imports: {
            "wasi:io/poll.poll-list": async | trappable,
            "wasi:io/poll.poll-one": async | trappable,
            "wasi:io/streams.[method]input-stream.blocking-read": async | trappable,
            "wasi:io/streams.[method]input-stream.blocking-skip": async | trappable,
            "wasi:io/streams.[drop]input-stream": async | trappable,
            "wasi:io/streams.[method]output-stream.blocking-write-and-flush": async | trappable,
            "wasi:io/streams.[method]output-stream.blocking-flush": async | trappable,
            "wasi:io/streams.[method]output-stream.blocking-write-zeroes-and-flush": async | trappable,
            "wasi:io/streams.[method]output-stream.splice": async | trappable,
            "wasi:io/streams.[method]output-stream.blocking-splice": async | trappable,
            "wasi:io/streams.[method]output-stream.forward": async | trappable,
            "wasi:io/streams.[drop]output-stream": async | trappable,
            default: trappable,
        },
        exports: { default: async },
        with: {
            "wasi:io/poll.pollable": latest_wasi::io::poll::Pollable,
            "wasi:io/streams.input-stream": latest_wasi::io::streams::InputStream,
            "wasi:io/streams.output-stream": latest_wasi::io::streams::OutputStream,
            "wasi:io/streams.error": latest_wasi::io::error::Error,
            "wasi:http/types.fields": latest::Fields,
            "wasi:http/types.incoming-request": latest::IncomingRequest,
            "wasi:http/types.outgoing-request": latest::OutgoingRequest,
            "wasi:http/types.response-outparam": latest::ResponseOutparam,
            "wasi:http/types.incoming-response": latest::IncomingResponse,
            "wasi:http/types.incoming-body": latest::IncomingBody,
            "wasi:http/types.future-trailers": latest::FutureTrailers,
            "wasi:http/types.outgoing-response": latest::OutgoingResponse,
            "wasi:http/types.outgoing-body": latest::OutgoingBody,
            "wasi:http/types.future-incoming-response": latest::FutureIncomingResponse,
        },
        trappable_error_type: {
            "wasi:io/streams.stream-error" => wasmtime_wasi::p2::StreamError,
        },
    });
}

use bindings::wasi::http as v2023_10_18_http;
use bindings::wasi::io as v2023_10_18_io;

/// `wasi:io`'s functions reach the store's resource table alone, as WASI 0.2's do.
struct Io;

impl HasData for Io {
    type Data<'a> = &'a mut ResourceTable;
}

/// Adds the candidate's `wasi:http` types and outgoing handler and its
/// `wasi:io` poll and streams to `linker`.
pub fn link<T>(linker: &mut Linker<T>) -> Result<()>
where
    T: HostState + wasmtime_wasi_http::WasiHttpView,
{
    (|| -> wasmtime::Result<()> {
        v2023_10_18_io::poll::add_to_linker::<T, Io>(linker, <T as HostState>::table)?;
        v2023_10_18_io::streams::add_to_linker::<T, Io>(linker, <T as HostState>::table)?;
        v2023_10_18_http::types::add_to_linker::<T, wasmtime_wasi_http::WasiHttp>(linker, T::http)?;
        v2023_10_18_http::outgoing_handler::add_to_linker::<T, wasmtime_wasi_http::WasiHttp>(
            linker,
            T::http,
        )
    })()
    .map_err(anyhow::Error::from)
    .context("adding WASI 0.2.0-rc-2023-10-18 to the linker")
}

#[cfg(test)]
mod tests;
