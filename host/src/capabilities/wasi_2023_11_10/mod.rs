//! WASI's 0.2.0 release candidate of 2023-11-10, served as Spin 4.0.2 serves
//! it (spinframework/spin v4.0.2 `crates/factor-outbound-http/src/wasi_2023_11_10.rs`,
//! `crates/factor-wasi/src/wasi_2023_11_10.rs`).
//!
//! The candidate is WASI 0.2.0 but for `wasi:http/types`, so only that
//! interface is served here, under its own name: bindings generated from its
//! shape (`host/wit/wasi-2023-11-10.wit`), every resource and every type
//! it shares with 0.2 mapped onto WASI 0.2's own, every function answered by
//! WASI 0.2's implementation. Every other import of the candidate, and the
//! `incoming-handler` export, is renamed to 0.2.0 at load
//! (`instance::prepare`) and served by WASI 0.2 itself; the two `ipv6-only`
//! socket methods 0.2.0 dropped trap, as in Spin ([`super::wasi`]).

mod http;

use super::HostState;
use anyhow::{Context, Result};
use wasmtime::component::Linker;

/// The interface provided under the candidate's name.
pub const HTTP_TYPES: &str = "wasi:http/types@0.2.0-rc-2023-11-10";

/// The version suffix of the candidate's interfaces.
pub const VERSION: &str = "@0.2.0-rc-2023-11-10";

mod bindings {
    use wasmtime_wasi_http::p2::bindings::http::types as latest;

    wasmtime::component::bindgen!({
        path: "wit/wasi-2023-11-10.wit",
        world: "wasi:http/types-only@0.2.0-rc-2023-11-10",
        imports: { default: trappable },
        require_store_data_send: true,
        with: {
            "wasi:io/error@0.2.0": wasmtime_wasi::p2::bindings::io::error,
            "wasi:io/poll@0.2.0": wasmtime_wasi::p2::bindings::io::poll,
            "wasi:io/streams@0.2.0": wasmtime_wasi::p2::bindings::io::streams,
            "wasi:clocks/monotonic-clock@0.2.0": wasmtime_wasi::p2::bindings::clocks::monotonic_clock,
            "wasi:http/types@0.2.0": wasmtime_wasi_http::p2::bindings::http::types,
            "wasi:http/types@0.2.0-rc-2023-11-10.fields": latest::Fields,
            "wasi:http/types@0.2.0-rc-2023-11-10.incoming-request": latest::IncomingRequest,
            "wasi:http/types@0.2.0-rc-2023-11-10.outgoing-request": latest::OutgoingRequest,
            "wasi:http/types@0.2.0-rc-2023-11-10.request-options": latest::RequestOptions,
            "wasi:http/types@0.2.0-rc-2023-11-10.response-outparam": latest::ResponseOutparam,
            "wasi:http/types@0.2.0-rc-2023-11-10.incoming-response": latest::IncomingResponse,
            "wasi:http/types@0.2.0-rc-2023-11-10.incoming-body": latest::IncomingBody,
            "wasi:http/types@0.2.0-rc-2023-11-10.future-trailers": latest::FutureTrailers,
            "wasi:http/types@0.2.0-rc-2023-11-10.outgoing-response": latest::OutgoingResponse,
            "wasi:http/types@0.2.0-rc-2023-11-10.outgoing-body": latest::OutgoingBody,
            "wasi:http/types@0.2.0-rc-2023-11-10.future-incoming-response": latest::FutureIncomingResponse,
        },
    });
}

use bindings::wasi::http0_2_0_rc_2023_11_10 as v2023_11_10_http;

/// Adds the candidate's `wasi:http/types` to `linker`.
pub fn link<T>(linker: &mut Linker<T>) -> Result<()>
where
    T: HostState + wasmtime_wasi_http::WasiHttpView,
{
    v2023_11_10_http::types::add_to_linker::<T, wasmtime_wasi_http::WasiHttp>(linker, T::http)
        .map_err(anyhow::Error::from)
        .context("adding WASI 0.2.0-rc-2023-11-10's wasi:http/types to the linker")
}

#[cfg(test)]
mod tests;
