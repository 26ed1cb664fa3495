//! Hosts a Spin manifest's components on wasmtime the way `spin up` does: one
//! engine, one linker, a pre-instantiated component per manifest entry, and a
//! fresh store and instance for every request; a WASIp3 component (detected from
//! its `wasi:http/handler@0.3` export) has its instances reused instead (`reuse`).
//!
//! [`Host`] is the interface: `spinbench serve` puts it behind an HTTP server
//! ([`serve`]), and in-process measurements call [`Host::handle_timed`] directly.

mod chain;
mod denied;
mod in_process;
mod load;
mod serve;

pub use load::precompile;

use super::capabilities::runtime_config::StateDirArg;
use super::front::admission::{Admission, AdmissionLimits, Refusal};
use super::front::body_limit::{self, BodyLimits};
use super::front::reply;
use super::front::router::{RouteMatch, Router};
use super::front::routes_listing::RoutesListing;
use super::front::spin_headers::{self, ClientAddr};
use super::front::well_known::WellKnown;
use super::instance::compiled_cache::{self, Origin};
use super::instance::engine::{Allocation, PoolSizing};
use super::instance::limits::MemoryFit;
use super::instance::reuse::ReuseLimits;
use super::instance::state::GuestLimits;
use super::instance::{Body, declared_length};
use super::logger;
use crate::manifest::{Manifest, RouteTarget};
use anyhow::{Context, Result};
use bytes::Bytes;
use http::uri::PathAndQuery;
use http::{Request, Response, Uri};
use load::{Application, Plan};
use serve::{serve_component, take_slot};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How to build a [`Host`].
#[derive(Debug, Clone)]
pub struct HostOptions {
    /// Where compiled components are cached; `None` compiles every time.
    pub cache_dir: Option<PathBuf>,
    /// Wall-clock limit per request, instantiation included; past it the
    /// request gets a `504` and the instance is dropped.
    pub request_timeout: Duration,
    pub pool: PoolSizing,
    /// The instance allocator: the pool (falling back to on-demand allocation
    /// when its address space cannot be reserved), or on-demand allocation.
    pub allocation: Allocation,
    /// What each store may hold on the host beyond its linear memory.
    pub guest: GuestLimits,
    /// Concurrent instances and the queue in front of them (`serve` only: the
    /// in-process API is not gated).
    pub admission: AdmissionLimits,
    /// Request bodies larger than this get a `413` from the runner itself.
    pub max_request_body: u64,
    /// How WASIp3 instances are reused.
    pub reuse: ReuseLimits,
    /// A request body that keeps the guest waiting this long for its next
    /// bytes gets a `408` from the runner itself.
    pub body_read_timeout: Duration,
    /// A request body still arriving this long after its request gets a
    /// `408` from the runner itself, however steadily it trickles in.
    pub body_total_timeout: Duration,
    /// Spin's `--runtime-config-file`: stores and databases other than the defaults.
    pub runtime_config_file: Option<PathBuf>,
    /// Spin's `--state-dir`: where the default store and database live.
    pub state_dir: StateDirArg,
    /// With `Allocation::Pooling`: serve at once from an on-demand engine
    /// while the pool is prepared in the background (`serve`), instead of
    /// preparing it first (in-process measurements, which time the pool).
    pub pool_in_background: bool,
    /// The environment application variables are read from
    /// (`SPIN_VARIABLE_<NAME>`): `None`, this process's; the containerd shim
    /// passes the container's, which is not its own.
    pub env: Option<BTreeMap<String, String>>,
    /// Threads SQLite calls run on (`--sqlite-threads`).
    pub sqlite_threads: usize,
    /// The memory the host may use (the containerd shim: its container's
    /// limit): the pool and the admission cap are sized from the app's caps so
    /// that every slot at its cap fits (`instance::limits::fit`).
    pub memory_fit: Option<MemoryFit>,
    /// A directory `files` sources may also come from, besides the app's own
    /// (`--files-root`: Spin's `../sibling` layout); `None`, only the app's.
    pub files_root: Option<PathBuf>,
}

impl Default for HostOptions {
    fn default() -> Self {
        Self {
            cache_dir: compiled_cache::default_dir(),
            request_timeout: Duration::from_secs(30),
            pool: PoolSizing::default(),
            allocation: Allocation::Pooling,
            guest: GuestLimits::default(),
            admission: AdmissionLimits::default(),
            max_request_body: body_limit::DEFAULT_MAX_REQUEST_BODY,
            reuse: ReuseLimits::default(),
            body_read_timeout: body_limit::DEFAULT_BODY_READ_TIMEOUT,
            body_total_timeout: body_limit::DEFAULT_BODY_TOTAL_TIMEOUT,
            runtime_config_file: None,
            state_dir: StateDirArg::Default,
            pool_in_background: false,
            env: None,
            sqlite_threads: crate::capabilities::sqlite::Executor::default_threads(),
            memory_fit: None,
            files_root: None,
        }
    }
}

/// How one component was made ready at startup.
#[derive(Debug, Clone)]
pub struct ComponentLoad {
    pub origin: Origin,
    pub elapsed: Duration,
}

/// The loaded application: its router and one loaded component per triggered id.
pub struct Host {
    router: Router,
    /// The components, loaded once or twice (below).
    apps: Arc<Applications>,
    /// Shared with the pool's setup thread, which opens it fully once the
    /// full pool serves.
    admission: Arc<Admission>,
    body_limits: BodyLimits,
    /// What `<component>.spin.internal` requests go through; the components'
    /// contexts hold it weakly.
    _chain: Arc<dyn crate::capabilities::service_chaining::Dispatch>,
    /// The Redis servers and channels `serve` subscribes to.
    subscriptions: Vec<crate::trigger::redis::Subscription>,
    /// `spin-client-addr` of in-process requests.
    in_process_client: ClientAddr,
    /// What `serve` prints once it listens.
    routes_listing: RoutesListing,
    /// Spin's `/.well-known/spin/` paths.
    well_known: WellKnown,
}

/// What the request log names a request answered by the host itself after.
const WELL_KNOWN_LABEL: &str = "/.well-known/spin";
const STATIC_LABEL: &str = "static response";

/// The client address reported (`spin-client-addr`) for in-process requests.
const IN_PROCESS_CLIENT: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 0);

impl Host {
    /// Checks that the manifest and its triggered components ask for nothing
    /// the runner lacks (refusing the first such thing in one line), builds
    /// the engine (starting its epoch ticker thread), then compiles or loads
    /// from cache every triggered component, logging each on stderr.
    pub fn new(manifest: &Manifest, options: &HostOptions) -> Result<Self> {
        crate::manifest::hosting::check(manifest)?;
        // A trigger's middleware composes a copy of its component of its own.
        let manifest = &crate::manifest::middleware::split(manifest);
        let router = Router::new(manifest.http_base(), &manifest.http_routes())?;
        let triggered = manifest.triggered_components();
        let plan = Arc::new(Plan::new(manifest, &triggered, options)?);
        let limits = AdmissionLimits {
            max_concurrent: plan.max_concurrent,
            ..options.admission
        };
        let background = options.allocation == Allocation::Pooling
            && options.pool_in_background
            && plan.starting_pool().max_instances < plan.full_pool().max_instances;
        let (initial, admission) = if background {
            // Serve at once from a small pool, checked against the same limits
            // per instance; the full pool's setup (one `mprotect` per slot's
            // fiber stack) happens off the start path, and admission lets as
            // many in as the small pool holds until then.
            let initial = plan.build(plan.starting_pool(), Allocation::Pooling, true)?;
            let admission = Arc::new(Admission::starting_with(
                limits,
                plan.concurrent_on(plan.starting_pool()),
            ));
            (initial, admission)
        } else {
            let initial = plan.build(plan.full_pool(), options.allocation, true)?;
            (initial, Arc::new(Admission::new(limits)))
        };
        let apps = Arc::new(Applications {
            initial,
            pooled: OnceLock::new(),
        });
        if background {
            prepare_pool(plan.clone(), apps.clone(), admission.clone())?;
        }
        let body_limits = BodyLimits {
            max_size: options.max_request_body,
            read_timeout: options.body_read_timeout,
            total_timeout: options.body_total_timeout,
        };
        let chain: Arc<dyn crate::capabilities::service_chaining::Dispatch> = Arc::new(
            chain::Chained::new(apps.clone(), admission.clone(), body_limits),
        );
        plan.services().chain.set(&chain);
        let routes_listing = RoutesListing::new(manifest, &router);
        Ok(Self {
            router,
            apps,
            admission,
            body_limits,
            _chain: chain,
            subscriptions: plan.subscriptions.clone(),
            in_process_client: ClientAddr::new(IN_PROCESS_CLIENT),
            routes_listing,
            well_known: WellKnown::new(manifest),
        })
    }

    /// The application requests go to: the pooled one once it is ready.
    fn application(&self) -> &Application {
        self.apps.current()
    }

    /// Tells the application where `serve` listens: where its components'
    /// requests to `self` go. Every context shares the application's services.
    pub fn listening_on(&self, addr: SocketAddr) {
        if let Some(loaded) = self.apps.initial.components.values().next() {
            loaded.recipe.context.services.self_origin.set(addr);
        }
    }

    /// Subscribes to every Redis trigger's channels (an error if a server
    /// cannot be reached), then returns what delivers their messages: it
    /// ends only if a server goes away, with that error (never, without Redis
    /// triggers). `serve` runs it beside the listener.
    pub(crate) async fn start_triggers(
        &self,
    ) -> Result<futures::future::BoxFuture<'static, anyhow::Error>> {
        use futures::FutureExt;
        let mut running = Vec::new();
        for subscription in self.subscriptions.clone() {
            let delivery =
                crate::trigger::redis::subscribe(subscription, self.redis_dispatcher()).await?;
            running.push(delivery.boxed());
        }
        if running.is_empty() {
            return Ok(futures::future::pending().boxed());
        }
        Ok(async move {
            let (ended, _, _) = futures::future::select_all(running).await;
            ended
                .err()
                .unwrap_or_else(|| anyhow::anyhow!("a Redis trigger stopped"))
        }
        .boxed())
    }

    /// Runs one Redis message on a component as a request is run: an
    /// admission permit, a pool slot where WASIp3 instances share the pool,
    /// a fresh instance within the request deadline; failures are logged.
    fn redis_dispatcher(&self) -> crate::trigger::redis::Dispatcher {
        use futures::FutureExt;
        let apps = self.apps.clone();
        let admission = self.admission.clone();
        Arc::new(move |component: String, payload: Vec<u8>| {
            let apps = apps.clone();
            let admission = admission.clone();
            async move {
                let permit = match admission.admit().await {
                    Ok(permit) => permit,
                    Err(refusal) => {
                        logger::line(format!(
                            "error: component {component:?} missed a Redis message: {}",
                            refusal.message(admission.limits())
                        ));
                        return;
                    }
                };
                let application = apps.current();
                let Some(loaded) = application.redis.get(&component) else {
                    return;
                };
                let slot = match take_slot(application.shared_slots.as_ref()).await {
                    Ok(slot) => slot,
                    Err(failure) => {
                        logger::line(format!("error: {}", failure.message(&component)));
                        return;
                    }
                };
                if let Err(error) = loaded.handler.handle(&payload, &loaded.recipe).await {
                    logger::line(format!(
                        "error: component {component:?} failed on a Redis message: {error:#}"
                    ));
                }
                drop((permit, slot));
            }
            .boxed()
        })
    }

    /// What `serve` prints once it listens on `addr`: `spin up`'s route listing.
    pub fn routes_listing(&self, addr: SocketAddr) -> String {
        self.routes_listing.render(addr)
    }

    /// Routes and answers one request from the HTTP server.
    pub(crate) async fn handle<B>(
        &self,
        request: Request<B>,
        client: &ClientAddr,
    ) -> (Response<Body>, Option<&str>)
    where
        B: hyper::body::Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: Into<wasmtime_wasi_http::Error>,
    {
        let path = request.uri().path();
        if let Some(answer) = self.well_known.answer(path) {
            return (answer, Some(WELL_KNOWN_LABEL));
        }
        let Some(matched) = self.router.route(path) else {
            return (reply::no_route(), None);
        };
        let component = match &matched.route.target {
            RouteTarget::Component(id) => id.as_str(),
            RouteTarget::Static(response) => {
                return (reply::static_response(response), Some(STATIC_LABEL));
            }
        };
        let max_size = self.body_limits.max_size;
        if declared_length(request.headers()).is_some_and(|n| n > max_size) {
            let error = glue::ApiError::body_too_large(max_size);
            return (reply::to_response(error.to_reply()), Some(component));
        }
        let permit = match self.admission.admit().await {
            Ok(permit) => permit,
            Err(refusal) => return (self.busy(refusal), Some(component)),
        };
        let request = with_spin_headers(request, &matched, client);
        let response = serve_component(
            self.application(),
            self.body_limits,
            component,
            request,
            permit,
        )
        .await;
        (response, Some(component))
    }

    /// The `503` for a request that found no free instance.
    fn busy(&self, refusal: Refusal) -> Response<Body> {
        reply::to_response(reply::busy(refusal.message(self.admission.limits())))
    }
}

/// The application loaded at start and, under `serve`, the pooled one
/// prepared in the background, which serves once ready.
pub(crate) struct Applications {
    initial: Application,
    pooled: OnceLock<Application>,
}

impl Applications {
    fn current(&self) -> &Application {
        self.pooled.get().unwrap_or(&self.initial)
    }
}

/// Builds the pooled application on a thread of its own and, once it is
/// ready, hands it to the host; if the pool cannot be had, the on-demand
/// engine keeps serving (with the same warning a failed pool gives at start).
fn prepare_pool(plan: Arc<Plan>, apps: Arc<Applications>, admission: Arc<Admission>) -> Result<()> {
    let since = Instant::now();
    std::thread::Builder::new()
        .name("pool-setup".into())
        .spawn(move || {
            lower_priority();
            match plan.build(plan.full_pool(), Allocation::Pooling, false) {
                // On-demand (the pool could not be reserved, as warned) serves
                // as many as the full pool would.
                Ok(application) => {
                    let pool = application.allocation == Allocation::Pooling;
                    let _ = apps.pooled.set(application);
                    admission.open_fully();
                    if pool {
                        plan.log_pool_ready(since);
                    }
                }
                Err(error) => logger::line(format!(
                    "warning: the full pool could not be prepared ({error:#}); serving from the starting pool"
                )),
            }
        })
        .context("starting the pool's setup thread")?;
    Ok(())
}

/// Lowers the calling thread's scheduling priority (Linux: `nice` is per
/// thread), so that on a busy machine the full pool's setup yields to the
/// first requests served from the starting pool.
#[allow(
    unsafe_code,
    reason = "setpriority(2) through libc; sound as the SAFETY comment says"
)]
fn lower_priority() {
    // SAFETY: setpriority(2) only reads its integer arguments; who 0 is the
    // calling thread. Failing to lower it is harmless.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 10);
    }
}

/// Makes the URI absolute (`http://<host><path>`, as Spin passes it) and sets
/// the `spin-*` headers.
fn with_spin_headers<B>(
    request: Request<B>,
    matched: &RouteMatch<'_>,
    client: &ClientAddr,
) -> Request<B> {
    let (mut parts, body) = request.into_parts();
    let authority = parts
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| parts.uri.authority().map(http::uri::Authority::as_str))
        .unwrap_or("localhost")
        .to_string();
    let path_and_query = parts
        .uri
        .path_and_query()
        .cloned()
        .unwrap_or_else(|| PathAndQuery::from_static("/"));
    let full_url = format!("http://{authority}{path_and_query}");
    spin_headers::apply(&mut parts.headers, matched, &full_url, client);
    // Built from its parts: only the authority is parsed again.
    let mut uri = http::uri::Parts::default();
    uri.scheme = Some(http::uri::Scheme::HTTP);
    uri.authority = authority.parse().ok();
    uri.path_and_query = Some(path_and_query);
    if let Ok(uri) = Uri::from_parts(uri) {
        parts.uri = uri;
    }
    Request::from_parts(parts, body)
}

#[cfg(test)]
mod tests;
