//! What each request's `Store` holds: a WASI context that grants nothing, the
//! wasi:http state, and a hook refusing outbound HTTP.

use std::time::{Duration, Instant};
use wasmtime::component::ResourceTable;
use wasmtime::{Engine, Store, StoreLimits, StoreLimitsBuilder, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiBody, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView};

pub struct RequestState {
    table: ResourceTable,
    wasi: WasiCtx,
    http: WasiHttpCtx,
    hooks: DenyOutbound,
    limits: StoreLimits,
}

impl RequestState {
    /// No preopened directories, environment, arguments, network or stdin/stdout;
    /// stderr is inherited so a guest's panic message shows up in our log.
    fn new(max_memory_size: usize) -> Self {
        Self {
            table: ResourceTable::new(),
            wasi: WasiCtxBuilder::new().inherit_stderr().build(),
            http: WasiHttpCtx::new(),
            hooks: DenyOutbound,
            // The pool caps memories too; this also caps them under on-demand allocation.
            limits: StoreLimitsBuilder::new()
                .memory_size(max_memory_size)
                .build(),
        }
    }
}

/// A fresh store for one request, whose guest code traps with
/// `Trap::Interrupt` once `timeout` of wall-clock time has passed.
pub fn new_store(
    engine: &Engine,
    max_memory_size: usize,
    timeout: Duration,
) -> Store<RequestState> {
    let mut store = Store::new(engine, RequestState::new(max_memory_size));
    store.limiter(|state| &mut state.limits);
    let deadline = Instant::now() + timeout;
    // Checked at every epoch tick while guest code runs: a busy guest yields to
    // the tokio scheduler each tick (so it cannot starve other requests on its
    // worker thread) and is interrupted once past the deadline.
    store.epoch_deadline_callback(move |_| {
        Ok(if Instant::now() >= deadline {
            UpdateDeadline::Interrupt
        } else {
            UpdateDeadline::Yield(1)
        })
    });
    store.set_epoch_deadline(1);
    store
}

/// A store for a reused (WASIp3) instance, serving many requests: the guest
/// yields to the tokio scheduler at every epoch tick and is never interrupted
/// by the store itself; per-request deadlines are enforced by `reuse`, which
/// drops the whole instance when one passes.
pub fn new_reusable_store(engine: &Engine, max_memory_size: usize) -> Store<RequestState> {
    let mut store = Store::new(engine, RequestState::new(max_memory_size));
    store.limiter(|state| &mut state.limits);
    store.epoch_deadline_callback(|_| Ok(UpdateDeadline::Yield(1)));
    store.set_epoch_deadline(1);
    store
}

impl WasiView for RequestState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for RequestState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.hooks,
        }
    }
}

/// Every component declares `allowed_outbound_hosts = []`, so every outgoing
/// request is refused with `HTTP-request-denied`, as Spin does.
struct DenyOutbound;

type ResponseFuture = Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>;

impl WasiHttpHooks for DenyOutbound {
    fn send_request(
        &mut self,
        _request: http::Request<WasiBody>,
        _options: Option<wasmtime_wasi_http::RequestOptions>,
        _fut: ResponseFuture,
    ) -> Box<
        dyn Future<
                Output = Result<
                    (http::Response<WasiBody>, ResponseFuture),
                    wasmtime_wasi_http::Error,
                >,
            > + Send,
    > {
        Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) })
    }
}
