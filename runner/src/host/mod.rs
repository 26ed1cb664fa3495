//! Hosts a Spin manifest's components on wasmtime the way `spin up` does: one
//! engine, one linker, a pre-instantiated component per manifest entry, and a
//! fresh store and instance for every request; a WASIp3 component (detected from
//! its `wasi:http/handler@0.3` export) has its instances reused instead (`reuse`).
//!
//! [`Host`] is the interface: `spinbench serve` puts it behind an HTTP server
//! ([`serve`]), and in-process measurements call [`Host::handle_timed`] directly.

mod admission;
mod body_limit;
mod compiled_cache;
mod engine;
mod flavour;
mod guest;
mod imports;
mod invoke;
mod logger;
mod reply;
mod reuse;
pub mod router;
mod routes_listing;
mod server;
mod slots;
pub mod spin_headers;
mod state;
mod tether;

pub use admission::AdmissionLimits;
pub use body_limit::{DEFAULT_BODY_READ_TIMEOUT, DEFAULT_MAX_REQUEST_BODY};
pub use compiled_cache::Origin;
pub use engine::{Allocation, PoolSizing};
pub use reuse::ReuseLimits;
pub use server::{
    DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_HEADER_BYTES,
    DEFAULT_RESPONSE_WRITE_TIMEOUT, DEFAULT_SHUTDOWN_GRACE, ServeOptions, serve,
};
pub use state::GuestLimits;

use crate::manifest::Manifest;
use admission::{Admission, Refusal};
use anyhow::{Context, Result, bail};
use body_limit::{BodyFault, BodyLimits, FaultCell, GuardedBody};
use bytes::Bytes;
use flavour::Flavour;
use guest::GuestConfig;
use http::uri::PathAndQuery;
use http::{HeaderMap, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use invoke::{Failure, Holds, Invocation};
use reply::Body;
use reuse::Handler;
use router::{RouteMatch, Router};
use routes_listing::RoutesListing;
use slots::Slots;
use spin_headers::ClientAddr;
use state::{Limits, RequestState};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::Engine;
use wasmtime::component::Linker;

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
            max_request_body: DEFAULT_MAX_REQUEST_BODY,
            reuse: ReuseLimits::default(),
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
        }
    }
}

/// How one component was made ready at startup.
#[derive(Debug, Clone)]
pub struct ComponentLoad {
    pub origin: Origin,
    pub elapsed: Duration,
}

/// A complete response from [`Host::handle_timed`], with where the time went.
#[derive(Debug, Clone)]
pub struct TimedResponse {
    pub status: StatusCode,
    /// Read by tests only: what compare measures is the status, body and times.
    #[cfg(test)]
    pub headers: HeaderMap,
    pub body: Bytes,
    /// Creating the store and instantiating the component (the cold-start cost).
    pub instantiate: Duration,
    /// From calling the guest's handler until the full body was received.
    pub handle: Duration,
}

impl TimedResponse {
    /// `collected`: the status, headers and body of the response.
    fn new(
        (status, headers, body): (StatusCode, HeaderMap, Bytes),
        instantiate: Duration,
        handle: Duration,
    ) -> Self {
        #[cfg(not(test))]
        drop(headers);
        Self {
            status,
            #[cfg(test)]
            headers,
            body,
            instantiate,
            handle,
        }
    }
}

/// The loaded application: engine, router and one pre-instantiated component per id.
pub struct Host {
    router: Router,
    components: BTreeMap<String, Handler>,
    loads: Vec<ComponentLoad>,
    /// Each component's per-request limits (they differ only in its id).
    limits: BTreeMap<String, Limits>,
    admission: Admission,
    /// The pool's slots, taken by fresh instances too when a component is a
    /// WASIp3 one (its idle instances hold slots without permits).
    fresh_slots: Option<Arc<Slots>>,
    body_limits: BodyLimits,
    /// `spin-client-addr` of in-process requests.
    in_process_client: ClientAddr,
    /// What `serve` prints once it listens.
    routes_listing: RoutesListing,
}

/// The client address reported (`spin-client-addr`) for in-process requests.
const IN_PROCESS_CLIENT: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 0);

impl Host {
    /// Checks that the manifest and its components ask for nothing the runner
    /// lacks (refusing the first such thing in one line), builds the engine
    /// (starting its epoch ticker thread), then compiles or loads from cache
    /// every component of `manifest`, logging each on stderr.
    pub fn new(manifest: &Manifest, options: &HostOptions) -> Result<Self> {
        crate::manifest::hosting::check(manifest)?;
        let router = Router::new(&manifest.http_routes())?;
        let mut guests = GuestConfig::all(manifest)?;
        let sources = read_sources(manifest)?;
        let wasip3 = sources.iter().any(|source| source.flavour == Flavour::P3);
        refuse_unprovided_imports(&sources, wasip3)?;
        let (engine, allocation) = engine::build(options.pool, options.allocation, wasip3)?;
        // The cap stays below the pool's slots, so overload is a 503 from the
        // queue, never a failed instantiation.
        let admission = AdmissionLimits {
            max_concurrent: options.admission.max_concurrent.clamp(
                1,
                (options.pool.max_instances as usize)
                    .saturating_sub(1)
                    .max(1),
            ),
            ..options.admission
        };
        if allocation == Allocation::Pooling {
            eprintln!(
                "pooling allocator: up to {} live instances; serving at most {} at once, {} more queued for up to {:?}",
                options.pool.max_instances,
                admission.max_concurrent,
                admission.max_queued,
                admission.queue_timeout
            );
        }
        let slots = Slots::new(options.pool.max_instances as usize, admission.queue_timeout);
        engine::spawn_epoch_ticker(&engine)?;
        let linker = linker(&engine, wasip3)?;
        let cache = options
            .cache_dir
            .as_deref()
            .and_then(compiled_cache::CacheDir::open);
        let mut components = BTreeMap::new();
        let mut limits = BTreeMap::new();
        let mut loads = Vec::new();
        for source in sources {
            let Source {
                id,
                path,
                wasm,
                flavour,
                imports,
            } = source;
            let component_limits = Limits {
                timeout: options.request_timeout,
                max_memory_size: options.pool.max_memory_size,
                guest: options.guest,
                component: logger::component_label(&id),
            };
            let loaded = compiled_cache::load(&engine, &wasm, &path, cache.as_ref())
                .with_context(|| format!("loading component {id:?}"))?;
            let guest = guests.remove(&id).unwrap_or_default();
            let pre = guest.instantiate_pre(&linker, &loaded.component, &imports)?;
            let handler = Handler::new(pre, flavour, component_limits, options.reuse, &slots)
                .map_err(anyhow::Error::from)
                .with_context(|| format!("linking component {id:?} ({})", path.display()))?;
            eprintln!(
                "{id}: {} in {:.1?} ({})",
                origin_text(loaded.origin),
                loaded.elapsed,
                flavour.describe()
            );
            components.insert(id.clone(), handler);
            limits.insert(id.clone(), component_limits);
            loads.push(ComponentLoad {
                origin: loaded.origin,
                elapsed: loaded.elapsed,
            });
        }
        let routes_listing = RoutesListing::new(manifest, &router);
        Ok(Self {
            router,
            components,
            loads,
            limits,
            admission: Admission::new(admission),
            fresh_slots: wasip3.then_some(slots),
            body_limits: BodyLimits {
                max_size: options.max_request_body,
                read_timeout: options.body_read_timeout,
            },
            in_process_client: ClientAddr::new(IN_PROCESS_CLIENT),
            routes_listing,
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
        let path = request.uri().path().to_string();
        let Some(matched) = self.router.route(&path) else {
            return (reply::not_found(&path), None);
        };
        let component = matched.route.component.as_str();
        let max_size = self.body_limits.max_size;
        if declared_length(request.headers()).is_some_and(|n| n > max_size) {
            let error = glue::ApiError::body_too_large(max_size);
            return (reply::to_response(error.to_reply()), Some(component));
        }
        let permit = match self.admission.admit().await {
            Ok(permit) => permit,
            Err(refusal) => return (self.busy(refusal), Some(component)),
        };
        let fault = FaultCell::default();
        let request = with_spin_headers(request, &matched, client)
            .map(|body| GuardedBody::new(body, self.body_limits, fault.clone()));
        let response = match &self.components[component] {
            Handler::Fresh(pre) => self.fresh(pre, request, component, permit).await,
            Handler::Reused(reused) => reused.handle(request, Some(permit)).await,
        };
        let response = response
            .unwrap_or_else(|failure| reply::to_response(failure_reply(component, &failure)));
        // The guest saw a failed body read and answered as it saw fit (a 400 for
        // ours); the client deserves to know what went wrong. The guest's
        // response, and with it a WASIp2 instance, is dropped here.
        let fault_reply = match fault.get() {
            None => return (response, Some(component)),
            Some(BodyFault::TooLarge) => glue::ApiError::body_too_large(max_size),
            Some(BodyFault::Stalled) => glue::ApiError::new(
                408,
                format!(
                    "request body: no data received for {:?}; send the body without pauses",
                    self.body_limits.read_timeout
                ),
            ),
        };
        (reply::to_response(fault_reply.to_reply()), Some(component))
    }

    /// Serves `request` on a fresh instance, which holds `permit` and, when
    /// idle WASIp3 instances share the pool, a slot of it.
    async fn fresh<B>(
        &self,
        pre: &wasmtime_wasi_http::p2::bindings::ProxyPre<RequestState>,
        request: Request<B>,
        component: &str,
        permit: admission::Permit,
    ) -> Result<Response<Body>, Failure>
    where
        B: hyper::body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<wasmtime_wasi_http::Error>,
    {
        let slot = match &self.fresh_slots {
            None => None,
            Some(slots) => Some(
                slots
                    .take()
                    .await
                    .map_err(|none| Failure::Overloaded(wasmtime::Error::new(none)))?,
            ),
        };
        let invocation = invoke::instantiate(pre, request, self.limits[component]).await?;
        invoke::respond(invocation, Holds::new(permit, slot)).await
    }

    /// The `503` for a request that found no free instance.
    fn busy(&self, refusal: Refusal) -> Response<Body> {
        reply::to_response(reply::busy(refusal.message(self.admission.limits())))
    }
}

/// The `Content-Length` a request or response declares, if any (and parseable).
fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(http::header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The in-process API, for measuring without HTTP in between (`compare`).
impl Host {
    /// How each component was made ready (compiled or loaded from cache).
    pub fn loads(&self) -> &[ComponentLoad] {
        &self.loads
    }

    /// Runs `request` on a fresh instance of `component`, bypassing routing, and
    /// returns the complete response with its time split into instantiation and
    /// handling. The request sees the same `spin-*` headers as under `serve` (for
    /// the component's first route, client `127.0.0.1:0`). Guest failures are
    /// responses (500, 504 with a JSON body), as a client would see them; `Err` is
    /// only for an unknown component id.
    ///
    /// Needs a tokio runtime with timers (any flavor).
    pub async fn handle_timed(
        &self,
        component: &str,
        request: Request<Bytes>,
    ) -> Result<TimedResponse> {
        let handler = self
            .components
            .get(component)
            .with_context(|| format!("no component {component:?} in the manifest"))?;
        let route = self
            .router
            .route_of(component)
            .with_context(|| format!("component {component:?} has no route"))?;
        let matched = match self.router.route(request.uri().path()) {
            Some(m) if m.route.component == component => m,
            _ => RouteMatch {
                route,
                path_info: String::new(),
            },
        };
        let request = with_spin_headers(request.map(full_body), &matched, &self.in_process_client);
        let pre = match handler {
            Handler::Fresh(pre) => pre,
            // A reused instance has no instantiation of its own to time: all of
            // it counts as handling (the first request on a new instance pays
            // for instantiating it).
            Handler::Reused(reused) => {
                let start = Instant::now();
                let outcome = match reused.handle(request, None).await {
                    Ok(response) => collect(response).await,
                    Err(failure) => Err(failure),
                };
                let handle = start.elapsed();
                return Ok(match outcome {
                    Ok(collected) => TimedResponse::new(collected, Duration::ZERO, handle),
                    Err(failure) => Self::failed_timed(component, &failure, Duration::ZERO, handle),
                });
            }
        };
        match invoke::instantiate(pre, request, self.limits[component]).await {
            Ok(invocation) => Ok(self.complete_timed(component, invocation).await),
            Err(failure) => Ok(Self::failed_timed(
                component,
                &failure,
                Duration::ZERO,
                Duration::ZERO,
            )),
        }
    }

    async fn complete_timed(&self, component: &str, invocation: Invocation) -> TimedResponse {
        let Invocation {
            instantiate,
            call,
            response,
        } = invocation;
        let start = Instant::now();
        let receive = async {
            let response = response.await.ok()?;
            Some(match response {
                Ok(response) => collect(response).await,
                Err(code) => Err(Failure::GuestError(code)),
            })
        };
        let (called, received) = tokio::join!(call, receive);
        let handle = start.elapsed();
        match (received, called) {
            (Some(Ok(collected)), _) => TimedResponse::new(collected, instantiate, handle),
            // A guest that traps mid-body reports both; its trap says more.
            (_, Err(failure)) | (Some(Err(failure)), Ok(())) => {
                Self::failed_timed(component, &failure, instantiate, handle)
            }
            (None, Ok(())) => {
                Self::failed_timed(component, &Failure::NoResponse, instantiate, handle)
            }
        }
    }

    fn failed_timed(
        component: &str,
        failure: &Failure,
        instantiate: Duration,
        handle: Duration,
    ) -> TimedResponse {
        let reply = failure_reply(component, failure);
        let body = Bytes::from(reply.body.clone());
        let (parts, _) = reply::to_response(reply).into_parts();
        TimedResponse::new((parts.status, parts.headers, body), instantiate, handle)
    }
}

/// A manifest component's bytes, read once: for its flavour, then to load it.
struct Source {
    id: String,
    path: PathBuf,
    wasm: Vec<u8>,
    flavour: Flavour,
    /// Its top-level import names, in order.
    imports: Vec<String>,
}

fn read_sources(manifest: &Manifest) -> Result<Vec<Source>> {
    let mut sources = Vec::new();
    for (id, component) in &manifest.component {
        // `hosting::check` refused every source but a local file.
        let path = manifest
            .source_path(component)
            .with_context(|| format!("component {id:?}: its source is not a local file"))?;
        let wasm = std::fs::read(&path)
            .with_context(|| format!("component {id:?}: reading {}", path.display()))?;
        let not_a_component = || format!("component {id:?}: {} is not a component", path.display());
        let flavour = Flavour::of(&wasm).with_context(not_a_component)?;
        let imports = imports::of(&wasm).with_context(not_a_component)?;
        sources.push(Source {
            id: id.clone(),
            path,
            wasm,
            flavour,
            imports,
        });
    }
    Ok(sources)
}

/// Refuses, in one line, the first import of any component that the runner
/// does not provide: before the engine is built, so nothing else is logged.
fn refuse_unprovided_imports(sources: &[Source], wasip3: bool) -> Result<()> {
    for source in sources {
        if let Some(import) = imports::first_unprovided(&source.imports, wasip3) {
            bail!(
                "component {:?} imports `{import}`, which spinbench serve does not provide; `spin up` runs this app",
                source.id
            );
        }
    }
    Ok(())
}

/// The WASI interfaces a Rust `wasm32-wasip2` component imports (std pulls in
/// more than the proxy world: environment, filesystem preopens, ...), plus wasi:http.
fn linker(engine: &Engine, wasip3: bool) -> Result<Linker<RequestState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)
        .and_then(|()| wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker))
        .map_err(anyhow::Error::from)
        .context("adding WASIp2 to the linker")?;
    if wasip3 {
        // WASIp3 components import the 0.3 interfaces (and Rust std still the 0.2 ones).
        wasmtime_wasi::p3::add_to_linker(&mut linker)
            .and_then(|()| wasmtime_wasi_http::p3::add_to_linker(&mut linker))
            .map_err(anyhow::Error::from)
            .context("adding WASIp3 to the linker")?;
    }
    Ok(linker)
}

/// Logs the failure as one stderr line, through the log queue so that a stalled
/// stderr cannot block the request (a guest's own panic message is already
/// logged above it; timeouts are expected under load tests, so only the
/// response says so) and builds the JSON error reply.
fn failure_reply(component: &str, failure: &Failure) -> glue::Reply {
    let message = failure.message(component);
    if let Failure::Overloaded(_) = failure {
        // Only if the pool runs out despite the admission cap; as busy as a 503 from it.
        return reply::busy(message);
    }
    if !matches!(failure, Failure::Timeout(_)) {
        match failure.cause() {
            Some(cause) => logger::line(format!("error: {message}: {cause}")),
            None => logger::line(format!("error: {message}")),
        }
    }
    reply::server_error(failure.status(), message)
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

fn full_body(
    bytes: Bytes,
) -> http_body_util::combinators::UnsyncBoxBody<Bytes, wasmtime_wasi_http::Error> {
    Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync()
}

async fn collect(response: Response<Body>) -> Result<(StatusCode, HeaderMap, Bytes), Failure> {
    let (parts, body) = response.into_parts();
    let body = body.collect().await.map_err(|e| {
        Failure::Trapped(wasmtime::Error::msg(format!("response body failed: {e}")))
    })?;
    Ok((parts.status, parts.headers, body.to_bytes()))
}

fn origin_text(origin: Origin) -> &'static str {
    match origin {
        Origin::Compiled => "compiled",
        Origin::LoadedFromCache => "loaded from cache",
    }
}

#[cfg(test)]
mod tests;
