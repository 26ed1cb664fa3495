//! What each request's `Store` holds: a WASI context that grants nothing but
//! the sockets the component's `allowed_outbound_hosts` allow and its `files`
//! (read-only), the wasi:http state, a hook sending the outbound requests the
//! list allows, and the component's context for the capabilities' host
//! functions.

use super::engine::{InstanceShape, TABLE_ELEMENTS};
use super::limiter::InstanceLimiter;
use super::ticker::{EpochTicker, Ticking};
use crate::capabilities::budget::{BudgetLimits, InstanceBudget};
use crate::capabilities::{CommandLine, ComponentContext, HostState, outbound_http, sockets};
use crate::logger::GuestOutput;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use wasmtime::component::ResourceTable;
use wasmtime::{Engine, Store, StoreLimitsBuilder, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiBody, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView};

/// Host-side resources one store may hold, beyond its linear memory.
#[derive(Debug, Clone, Copy)]
pub struct GuestLimits {
    /// Live entries in the store's resource table (fields, requests, responses,
    /// bodies, streams, pollables); creating one more fails (`500`).
    pub max_resources: usize,
    /// Bytes one `fields` resource (headers, trailers) may hold; past it the
    /// guest gets a header error (a spin-sdk guest traps on it: `500`).
    pub max_http_fields_size: usize,
    /// Guest stdout and stderr kept per store; the rest is dropped after one marker line.
    pub max_log_bytes: usize,
    /// Live component-model handles in the store (wasmtime's store-wide cap:
    /// resources, and a WASIp3 guest's tasks, streams and futures, its own
    /// too); past it the guest traps.
    pub max_component_handles: usize,
    /// What its capabilities may hold for it (`capabilities::budget`).
    pub budget: BudgetLimits,
    /// Bytes a WAGI program may write to stdout (its response); past it the
    /// request fails (`500`).
    pub max_wagi_output: usize,
}

/// What each store of one component is made from: its limits and its context.
#[derive(Debug, Clone)]
pub struct StoreRecipe {
    pub limits: Limits,
    pub context: Arc<ComponentContext>,
    /// The engine's epoch ticker, which ticks while a store lives.
    pub ticker: EpochTicker,
}

/// Per-request settings of one component.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub timeout: Duration,
    /// This component's linear memory cap, all the memories of an instance
    /// together (`instance::limits`).
    pub max_memory_size: usize,
    /// What one instance may contain, the same for every component of the app.
    pub shape: InstanceShape,
    pub guest: GuestLimits,
    /// The component id, as its guest log lines name it.
    pub component: &'static str,
}

/// Bytes one write to a response body may carry on the host side (wasmtime's
/// default is 1 MiB). A body buffers one such write, so with the fields limit
/// this bounds what each resource can hold.
const BODY_WRITE_BYTES: usize = 64 * 1024;

impl Default for GuestLimits {
    /// Each resource holds at most ~64 KiB on the host (a `fields` at its limit,
    /// a body's buffered write), so a store holds at most ~16 MiB through its
    /// resources, like its linear memory. The functions use a few dozen
    /// resources at a time (a WASIp3 instance: that per concurrent request, up
    /// to 16) and send response headers of well under 1 KiB.
    fn default() -> Self {
        Self {
            max_resources: 256,
            max_http_fields_size: 64 * 1024,
            max_log_bytes: crate::logger::DEFAULT_GUEST_LOG_BYTES,
            max_component_handles: 4_096,
            budget: BudgetLimits::default(),
            max_wagi_output: 64 << 20,
        }
    }
}

/// What a WAGI program gets besides a request's usual store: its command
/// line, its CGI environment, the request body as stdin and a pipe for the
/// response it writes to stdout.
pub struct Cgi {
    pub arguments: Vec<String>,
    pub environment: Vec<(String, String)>,
    pub stdin: bytes::Bytes,
    pub stdout: wasmtime_wasi::p2::pipe::MemoryOutputPipe,
}

pub struct RequestState {
    context: Arc<ComponentContext>,
    /// A WAGI request's arguments and environment (the component's own
    /// `environment` comes first); `None` for every other request.
    command_line: Option<CommandLine>,
    table: ResourceTable,
    wasi: WasiCtx,
    http: WasiHttpCtx,
    hooks: Hooks,
    limits: InstanceLimiter,
    /// Made at its first use: most requests use no capability that counts.
    budget: OnceLock<Arc<InstanceBudget>>,
    budget_limits: BudgetLimits,
    /// The engine's epoch ticks while this store lives.
    _ticking: Ticking,
}

impl RequestState {
    /// No environment, arguments or stdin, no preopened directory but the
    /// component's `files` (read-only at `/`), and only the socket addresses
    /// the component's list allows; stdout and stderr are captured into the
    /// runner's log, prefixed. Fails only if the `files` copy cannot be opened.
    fn new(recipe: &StoreRecipe, cgi: Option<Cgi>) -> wasmtime::Result<Self> {
        let limits = &recipe.limits;
        let guest = limits.guest;
        let mut table = ResourceTable::new();
        table.set_max_capacity(guest.max_resources);
        let output = GuestOutput::new(limits.component, guest.max_log_bytes);
        let mut http = WasiHttpCtx::new();
        http.set_field_size_limit(guest.max_http_fields_size);
        let mut wasi = WasiCtxBuilder::new();
        let command_line = if let Some(cgi) = cgi {
            wasi.stdin(wasmtime_wasi::p2::pipe::MemoryInputPipe::new(cgi.stdin))
                .stdout(cgi.stdout)
                .stderr(output);
            Some(CommandLine {
                arguments: cgi.arguments,
                environment: cgi.environment,
            })
        } else {
            wasi.stdout(output.clone()).stderr(output);
            None
        };
        if let Some(files) = &recipe.context.files {
            files.preopen(&mut wasi)?;
        }
        // Without a grant the default check refuses every address; the
        // closure is only built for components that have one.
        if !recipe.context.grants.allowed_outbound_hosts.is_empty() {
            let context = recipe.context.clone();
            wasi.allow_tcp(true)
                .allow_udp(true)
                .socket_addr_check(move |address, use_| {
                    let allowed =
                        sockets::allows(&context.grants.allowed_outbound_hosts, address, use_);
                    Box::pin(async move { allowed })
                });
        }
        Ok(Self {
            context: recipe.context.clone(),
            command_line,
            table,
            wasi: wasi.build(),
            http,
            hooks: Hooks {
                context: recipe.context.clone(),
            },
            // The pool enforces the same limits per memory; the limiter also
            // enforces them under on-demand allocation, where nothing else
            // would, and holds all the instance's memories together to the cap.
            limits: InstanceLimiter::new(
                StoreLimitsBuilder::new()
                    .memory_size(limits.max_memory_size)
                    .memories(limits.shape.memories as usize)
                    .tables(limits.shape.tables as usize)
                    .table_elements(TABLE_ELEMENTS)
                    .instances(limits.shape.core_instances as usize)
                    .build(),
                limits.max_memory_size,
            ),
            budget: OnceLock::new(),
            budget_limits: guest.budget,
            _ticking: recipe.ticker.ticking(),
        })
    }
}

/// A fresh store for one request, whose guest code traps with
/// `Trap::Interrupt` once `limits.timeout` of wall-clock time has passed.
pub fn new_store(engine: &Engine, recipe: &StoreRecipe) -> wasmtime::Result<Store<RequestState>> {
    Ok(deadline_store(
        engine,
        recipe,
        RequestState::new(recipe, None)?,
    ))
}

/// [`new_store`] for a WAGI request: the program's stdio, arguments and environment are `cgi`'s.
pub fn new_cgi_store(
    engine: &Engine,
    recipe: &StoreRecipe,
    cgi: Cgi,
) -> wasmtime::Result<Store<RequestState>> {
    Ok(deadline_store(
        engine,
        recipe,
        RequestState::new(recipe, Some(cgi))?,
    ))
}

/// A store whose guest yields at every epoch tick and is interrupted once
/// `recipe`'s timeout has passed.
fn deadline_store(
    engine: &Engine,
    recipe: &StoreRecipe,
    state: RequestState,
) -> Store<RequestState> {
    let limits = &recipe.limits;
    let mut store = Store::new(engine, state);
    bound(&mut store, &limits.guest);
    let deadline = Instant::now() + limits.timeout;
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

/// The limits every store gets from wasmtime itself: its limiter (memories,
/// tables, counts), the live handles its guest may have, and the bytes one
/// call may pass the host (wasmtime's "hostcall fuel", 128 MiB by default:
/// here what the instance may have held for it in all, so that no single
/// call's arguments are past it).
fn bound(store: &mut Store<RequestState>, guest: &GuestLimits) {
    store.limiter(|state| &mut state.limits);
    store.set_max_component_handles(guest.max_component_handles);
    store.set_hostcall_fuel(guest.budget.held_bytes);
}

/// A store for a reused (WASIp3) instance, serving many requests: the guest
/// yields to the tokio scheduler at every epoch tick and is never interrupted
/// by the store itself; per-request deadlines are enforced by `reuse`, which
/// drops the whole instance when one passes.
pub fn new_reusable_store(
    engine: &Engine,
    recipe: &StoreRecipe,
) -> wasmtime::Result<Store<RequestState>> {
    let mut store = Store::new(engine, RequestState::new(recipe, None)?);
    bound(&mut store, &recipe.limits.guest);
    store.epoch_deadline_callback(|_| Ok(UpdateDeadline::Yield(1)));
    store.set_epoch_deadline(1);
    Ok(store)
}

impl HostState for RequestState {
    fn context(&self) -> &ComponentContext {
        &self.context
    }

    fn command_line(&self) -> Option<&CommandLine> {
        self.command_line.as_ref()
    }

    fn table(&mut self) -> &mut ResourceTable {
        &mut self.table
    }

    fn budget(&self) -> &Arc<InstanceBudget> {
        self.budget
            .get_or_init(|| InstanceBudget::new(self.budget_limits))
    }
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

/// The headers that never enter or leave a guest: wasmtime-wasi-http's list
/// (hop-by-hop headers and `host`), built once rather than per check.
static FORBIDDEN_HEADERS: [http::HeaderName; 9] = wasmtime_wasi_http::DEFAULT_FORBIDDEN_HEADERS;

/// wasi:http's hooks: outgoing requests go where the component's
/// `allowed_outbound_hosts` allow (`capabilities::outbound_http`), else get
/// `HTTP-request-denied`, as in Spin.
struct Hooks {
    context: Arc<ComponentContext>,
}

impl WasiHttpHooks for Hooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<wasmtime_wasi_http::RequestOptions>,
        _fut: outbound_http::ResponseFuture,
    ) -> outbound_http::SendFuture {
        outbound_http::send(
            &self.context.grants.allowed_outbound_hosts,
            self.context.services.self_origin.get(),
            &self.context.services.chain,
            &self.context.services.http_connections,
            request,
            options,
        )
    }

    /// wasmtime-wasi-http's own list, checked without its default's detour:
    /// in 48.0.8 the default wraps the list in a fresh `Arc`'d closure for
    /// every header checked (13 per `hello` request: the request's headers as
    /// they enter the guest, the response's as it builds them), ~300
    /// instructions each ("Where a hello request's time goes", docs/performance.md).
    fn is_forbidden_header(&mut self, name: &http::HeaderName) -> bool {
        FORBIDDEN_HEADERS.contains(name)
    }

    fn p2_outgoing_body_chunk_size(&mut self) -> usize {
        BODY_WRITE_BYTES
    }

    fn p3_outgoing_body_chunk_size(&mut self) -> usize {
        BODY_WRITE_BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_headers_are_wasi_http_s_list() {
        let mut hooks = Hooks {
            context: Arc::new(ComponentContext::for_test("c", &[])),
        };
        for name in wasmtime_wasi_http::DEFAULT_FORBIDDEN_HEADERS {
            assert!(hooks.is_forbidden_header(&name), "{name} must be forbidden");
        }
        for name in ["content-type", "spin-full-url", "x-custom", "authorization"] {
            let name = http::HeaderName::from_static(name);
            assert!(!hooks.is_forbidden_header(&name), "{name} must pass");
        }
    }

    /// A component that makes `n` handles to a resource of its own
    /// (`resource.new`: no host call, no resource table entry) and keeps them.
    const HANDLE_MAKER: &str = r#"
        (component
          (type $r (resource (rep i32)))
          (core func $new (canon resource.new $r))
          (core module $m
            (import "" "new" (func $new (param i32) (result i32)))
            (func (export "make") (param $n i32)
              (block $done
                (loop $more
                  (br_if $done (i32.eqz (local.get $n)))
                  (drop (call $new (i32.const 0)))
                  (local.set $n (i32.sub (local.get $n) (i32.const 1)))
                  (br $more)))))
          (core instance $i (instantiate $m (with "" (instance (export "new" (func $new))))))
          (func (export "make") (param "n" u32) (canon lift (core func $i "make"))))
    "#;

    #[tokio::test]
    async fn a_store_holds_no_more_component_handles_than_its_limit() {
        let engine = Engine::default();
        let component =
            wasmtime::component::Component::new(&engine, wat::parse_str(HANDLE_MAKER).unwrap())
                .unwrap();
        let recipe = StoreRecipe {
            limits: Limits {
                timeout: Duration::from_secs(30),
                max_memory_size: 1 << 20,
                shape: InstanceShape::DEFAULT,
                guest: GuestLimits {
                    max_component_handles: 64,
                    ..GuestLimits::default()
                },
                component: "c",
            },
            context: Arc::new(ComponentContext::for_test("c", &[])),
            ticker: EpochTicker::default(),
        };
        let cap = recipe.limits.guest.max_component_handles;
        let make = async |n: u32| {
            let mut store = new_store(&engine, &recipe).unwrap();
            let linker = wasmtime::component::Linker::new(&engine);
            let instance = linker
                .instantiate_async(&mut store, &component)
                .await
                .unwrap();
            let make = instance
                .get_typed_func::<(u32,), ()>(&mut store, "make")
                .unwrap();
            make.call_async(&mut store, (n,)).await
        };
        // The call itself holds a handle or two of the store's budget.
        make(u32::try_from(cap / 2).unwrap()).await.unwrap();
        let past = make(u32::try_from(cap + 1).unwrap()).await.unwrap_err();
        assert!(
            format!("{past:?}").contains("handle limit"),
            "a handle past the cap was made or refused otherwise: {past:?}"
        );
    }
}
