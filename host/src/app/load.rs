//! Loading an application: the components its triggers name (and only those,
//! as Spin loads only triggered components), each prepared, checked against
//! what the runner provides, compiled or loaded from cache, and linked.
//!
//! Loading is two steps, so that the second can run twice: a [`Plan`] (sources
//! read and prepared, the components' contexts, the application's services),
//! then [`Plan::build`] on an engine with a pool of a given size. `serve`
//! builds a small pool first ([`START_SLOTS`] slots, checked against the same
//! per-instance limits as the full one) and starts serving, then builds the
//! full pool in the background (`Host::new`): its setup (a guard page per
//! fiber stack, one `mprotect` per slot) stays off the start path.

use super::{ComponentLoad, HostOptions};
use crate::capabilities::runtime_config::RuntimeConfig;
use crate::capabilities::{self, AppServices, ComponentContext, Group};
use crate::instance::compiled_cache::{self, CacheDir, Origin};
use crate::instance::compose;
use crate::instance::engine::{self, Allocation, InstanceShape, PoolSizing};
use crate::instance::flavour::Flavour;
use crate::instance::limits::{self, AppLimits};
use crate::instance::needs::Needs;
use crate::instance::prepare::{self, Prepared};
use crate::instance::remote_source;
use crate::instance::reuse::Handler;
use crate::instance::slots::Slots;
use crate::instance::state::{Limits, RequestState, StoreRecipe};
use crate::instance::ticker::EpochTicker;
use crate::logger;
use crate::manifest::{Digest, Manifest};
use crate::trigger::redis::{self, RedisHandler, Subscription};
use anyhow::{Context, Result, anyhow};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use wasmtime::Engine;
use wasmtime::component::Linker;

/// One component ready to serve requests.
pub struct Loaded {
    pub handler: Handler,
    /// What each of its stores is made from.
    pub recipe: StoreRecipe,
    pub load: ComponentLoad,
}

/// Slots in the pool `serve` starts with while the full pool is prepared in
/// the background: enough for the first requests, few enough that setting
/// them up costs nothing measurable.
pub const START_SLOTS: u32 = 16;

/// A component a `[[trigger.redis]]` runs, ready for messages.
pub struct RedisLoaded {
    pub handler: RedisHandler,
    pub recipe: StoreRecipe,
}

/// Every triggered component, loaded on one engine.
pub struct Application {
    /// The components HTTP triggers name.
    pub components: BTreeMap<String, Loaded>,
    /// The components Redis triggers name.
    pub redis: BTreeMap<String, RedisLoaded>,
    /// Which instance allocator its engine uses.
    pub allocation: Allocation,
    /// Its pool's slots, when any component is a WASIp3 one (then every
    /// instance takes one, so that idle WASIp3 instances can be asked for theirs).
    pub shared_slots: Option<Arc<Slots>>,
}

/// What loading needs that does not depend on the engine, read once.
pub struct Plan {
    sources: Vec<Source>,
    /// Every interface group some component imports.
    groups: BTreeSet<Group>,
    /// Whether the engine needs the component model's async ABI.
    concurrent: bool,
    /// Each component's context, shared by every engine's stores (so an
    /// application's stores and databases are opened once).
    contexts: BTreeMap<String, Arc<ComponentContext>>,
    /// What every component's context shares.
    services: Arc<AppServices>,
    /// Whether any component is a WASIp3 one.
    wasip3: bool,
    /// What each instance may contain and grow to, sized for these components.
    limits: AppLimits,
    /// `max_concurrent` clamped below the pool's slots.
    pub max_concurrent: usize,
    /// The Redis servers and channels the app's `[[trigger.redis]]` subscribe to.
    pub subscriptions: Vec<Subscription>,
    options: HostOptions,
    cache: Option<CacheDir>,
}

/// A triggered component's source, read and prepared.
struct Source {
    id: String,
    path: PathBuf,
    /// Whether an HTTP trigger names it.
    http: bool,
    /// Whether a Redis trigger names it.
    redis: bool,

    /// The `argv` of the WAGI trigger that runs it, if one does.
    wagi_argv: Option<String>,
    prepared: Prepared<'static>,
    groups: BTreeSet<Group>,
}

impl Plan {
    /// Reads and prepares the components `ids` names (the triggered ones),
    /// refusing in one line what the runner does not provide.
    pub fn new(manifest: &Manifest, ids: &[&str], options: &HostOptions) -> Result<Self> {
        let sources = ids
            .iter()
            .map(|id| read_source(manifest, id, options.cache_dir.as_deref()))
            .collect::<Result<Vec<_>>>()?;
        let (wasip3, groups, concurrent) = engine_needs(&sources);
        let needs = sources
            .iter()
            .map(|s| Ok((s.id.as_str(), Needs::of(&s.prepared.wasm)?)))
            .collect::<Result<Vec<_>>>()?;
        let limits = limits::for_app(options.pool, &needs)?;
        let options = &fitted(options, &limits)?;
        let runtime_config = RuntimeConfig::load(
            options.runtime_config_file.as_deref(),
            &options.state_dir,
            manifest.base_dir(),
        )?;
        let services = Arc::new(AppServices::new(runtime_config, options.sqlite_threads)?);
        let env = |key: &str| match &options.env {
            Some(env) => env.get(key).cloned(),
            None => std::env::var(key).ok(),
        };
        let subscriptions = redis::subscriptions(
            manifest,
            &crate::manifest::variables::application_values(&manifest.variables, env)?,
        )?;
        let contexts = ComponentContext::for_components(
            manifest,
            sources.iter().map(|s| s.id.as_str()),
            &services,
            env,
            options.files_root.as_deref(),
        )?;
        // The cap stays below the pool's slots, so overload is a 503 from the
        // queue, never a failed instantiation.
        let max_concurrent = options.admission.max_concurrent.clamp(
            1,
            (options.pool.max_instances as usize)
                .saturating_sub(1)
                .max(1),
        );
        Ok(Self {
            sources,
            groups,
            concurrent,
            contexts,
            services,
            wasip3,
            limits,
            max_concurrent,
            subscriptions,
            options: options.clone(),
            cache: options.cache_dir.as_deref().and_then(CacheDir::open),
        })
    }

    /// What every component's context shares.
    pub fn services(&self) -> &AppServices {
        &self.services
    }

    /// The full pool's sizing, as configured.
    pub fn full_pool(&self) -> PoolSizing {
        self.options.pool
    }

    /// The pool `serve` starts with: [`START_SLOTS`] slots (fewer if so
    /// configured), the same limits per instance.
    pub fn starting_pool(&self) -> PoolSizing {
        PoolSizing {
            max_instances: self.options.pool.max_instances.min(START_SLOTS),
            ..self.options.pool
        }
    }

    /// How many instances may live at once on a pool of `sizing`: one below
    /// its slots, so overload is a 503 from the queue, never a failed
    /// instantiation.
    pub fn concurrent_on(&self, sizing: PoolSizing) -> usize {
        self.max_concurrent
            .min((sizing.max_instances as usize).saturating_sub(1))
            .max(1)
    }

    /// Builds an engine with `allocation` on a pool of `sizing` (pooling falls
    /// back to on-demand allocation, with a warning, where the pool cannot be
    /// reserved), then compiles or loads every component and links it. `log`
    /// prints a line per component and the pool's sizing on stderr.
    pub fn build(
        &self,
        sizing: PoolSizing,
        allocation: Allocation,
        log: bool,
    ) -> Result<Application> {
        let options = &self.options;
        let (engine, allocation) =
            engine::build(sizing, self.limits.shape, allocation, self.concurrent)?;
        if log {
            crate::err_line!("{}", self.limits.line);
            if allocation == Allocation::Pooling {
                self.log_pool(sizing);
            }
        }
        let slots = Slots::new(
            sizing.max_instances as usize,
            options.admission.queue_timeout,
        );
        let ticker = EpochTicker::spawn(&engine)?;
        let linker = linker(&engine, &self.groups)?;
        let mut components = BTreeMap::new();
        let mut redis_components = BTreeMap::new();
        for source in &self.sources {
            let recipe = StoreRecipe {
                ticker: ticker.clone(),
                limits: Limits {
                    timeout: options.request_timeout,
                    max_memory_size: self.limits.memory_caps[&source.id],
                    shape: self.limits.shape,
                    guest: options.guest,
                    component: logger::component_label(&source.id),
                },
                context: self
                    .contexts
                    .get(&source.id)
                    .cloned()
                    .ok_or_else(|| anyhow!("no context for component {:?}", source.id))?,
            };
            let (loaded, redis) =
                self.compile_and_link(&engine, &linker, source, recipe, &slots, log)?;
            if let Some(loaded) = loaded {
                components.insert(source.id.clone(), loaded);
            }
            if let Some(redis) = redis {
                redis_components.insert(source.id.clone(), redis);
            }
        }
        Ok(Application {
            components,
            redis: redis_components,
            allocation,
            shared_slots: self.wasip3.then_some(slots),
        })
    }

    /// The line `serve` prints once the pool is ready, with how long it took
    /// when it was prepared in the background.
    pub fn log_pool_ready(&self, since: Instant) {
        logger::line(format!(
            "pooling allocator ready in {:.1?}: up to {} live instances; serving at most {} at once, {} more queued for up to {:?}",
            since.elapsed(),
            self.options.pool.max_instances,
            self.max_concurrent,
            self.options.admission.max_queued,
            self.options.admission.queue_timeout
        ));
    }

    fn log_pool(&self, sizing: PoolSizing) {
        let full = if sizing.max_instances < self.options.pool.max_instances {
            format!(
                " (the full {}-slot pool is prepared in the background)",
                self.options.pool.max_instances
            )
        } else {
            String::new()
        };
        crate::err_line!(
            "pooling allocator: up to {} live instances; serving at most {} at once, {} more queued for up to {:?}{full}",
            sizing.max_instances,
            self.concurrent_on(sizing),
            self.options.admission.max_queued,
            self.options.admission.queue_timeout
        );
    }

    /// The component `source` as its HTTP triggers and its Redis triggers
    /// run it (each where one names it).
    fn compile_and_link(
        &self,
        engine: &Engine,
        linker: &Linker<RequestState>,
        source: &Source,
        recipe: StoreRecipe,
        slots: &Arc<Slots>,
        log: bool,
    ) -> Result<(Option<Loaded>, Option<RedisLoaded>)> {
        let Source {
            id, path, prepared, ..
        } = source;
        let loaded = compiled_cache::load(engine, &prepared.wasm, path, self.cache.as_ref())
            .with_context(|| format!("loading component {id:?}"))?;
        // Its dependencies' denied imports trap when called: linked so on a
        // linker of its own, every other import checked at start.
        let mut own_linker;
        let denied = prepared
            .imports
            .iter()
            .any(|import| compose::is_denied(import));
        let linker = if denied {
            own_linker = linker.clone();
            super::denied::link_traps(&mut own_linker, engine, &loaded.component)
                .with_context(|| format!("component {id:?}: its dependencies' denied imports"))?;
            &own_linker
        } else {
            linker
        };
        let pre = linker.instantiate_pre(&loaded.component).map_err(|e| {
            let reason = format!("{:#}", anyhow::Error::from(e)).replace('\n', " ");
            anyhow!("component {id:?} cannot be linked ({reason}); `spin up` runs this app")
        })?;
        let redis = if source.redis {
            let handler = RedisHandler::new(pre.clone())
                .with_context(|| format!("component {id:?} ({})", path.display()))?;
            Some(RedisLoaded {
                handler,
                recipe: recipe.clone(),
            })
        } else {
            None
        };
        if !source.http {
            if log {
                crate::err_line!(
                    "{id}: {} in {:.1?} (Redis trigger, fresh instance per message)",
                    origin_text(loaded.origin),
                    loaded.elapsed
                );
            }
            return Ok((None, redis));
        }
        let handler = Handler::new(
            pre,
            prepared.flavour,
            &recipe,
            self.options.reuse,
            slots,
            source.wagi_argv.as_deref(),
        )
        .map_err(anyhow::Error::from)
        .with_context(|| format!("linking component {id:?} ({})", path.display()))?;
        if log {
            let mut how = vec![prepared.flavour.describe()];
            how.extend(prepared.adapted.iter().copied());
            crate::err_line!(
                "{id}: {} in {:.1?} ({})",
                origin_text(loaded.origin),
                loaded.elapsed,
                how.join(", ")
            );
        }
        let http = Loaded {
            handler,
            recipe,
            load: ComponentLoad {
                origin: loaded.origin,
                elapsed: loaded.elapsed,
            },
        };
        Ok((Some(http), redis))
    }
}

/// `options` with the pool and the admission cap sized for `limits` under
/// the memory the host may use, if it was given one.
fn fitted(options: &HostOptions, limits: &AppLimits) -> Result<HostOptions> {
    let Some(memory) = options.memory_fit else {
        return Ok(options.clone());
    };
    let instance_memory = limits.shape.max_memory_size;
    let (pool, max_concurrent) = limits::fit(
        memory,
        instance_memory,
        options.pool,
        options.admission.max_concurrent,
    )?;
    crate::err_line!(
        "memory limit {} MiB: up to {} instances of at most {} MiB linear memory, {} served at once",
        memory.limit >> 20,
        pool.max_instances,
        instance_memory >> 20,
        max_concurrent
    );
    let mut options = options.clone();
    options.pool = pool;
    options.admission.max_concurrent = max_concurrent;
    Ok(options)
}

/// Whether any source is a WASIp3 component, every interface group they
/// import, and whether the engine needs the component model's async ABI.
fn engine_needs(sources: &[Source]) -> (bool, BTreeSet<Group>, bool) {
    let wasip3 = sources.iter().any(|s| s.prepared.flavour == Flavour::P3);
    let groups: BTreeSet<Group> = sources.iter().flat_map(|s| s.groups.clone()).collect();
    let concurrent = wasip3
        || sources
            .iter()
            .any(|s| s.redis && redis::exports_async_handler(&s.prepared.wasm))
        || groups.iter().any(|group| group.concurrent());
    (wasip3, groups, concurrent)
}

/// Compiles the components [`super::Host::new`] would load from `manifest`
/// into the compiled-code cache `cache_dir`, as it would compile them (the
/// same preparation, the same engine settings), without building the
/// application: no contexts, variables, stores or pools. The containerd shim
/// runs it outside the container (its precompile hook), so that the
/// container's start loads code instead of compiling it. Returns each
/// component's id and how it got its code.
pub fn precompile(manifest: &Manifest, cache_dir: &Path) -> Result<Vec<(String, Origin)>> {
    crate::manifest::hosting::check(manifest)?;
    let manifest = &crate::manifest::middleware::split(manifest);
    let sources = manifest
        .triggered_components()
        .iter()
        .map(|id| read_source(manifest, id, Some(cache_dir)))
        .collect::<Result<Vec<_>>>()?;
    let (_, _, concurrent) = engine_needs(&sources);
    let (engine, _) = engine::build(
        PoolSizing::default(),
        InstanceShape::DEFAULT,
        Allocation::OnDemand,
        concurrent,
    )?;
    let cache = CacheDir::open(cache_dir)
        .ok_or_else(|| anyhow!("{} cannot hold compiled code", cache_dir.display()))?;
    sources
        .iter()
        .map(|source| {
            let loaded =
                compiled_cache::load(&engine, &source.prepared.wasm, &source.path, Some(&cache))
                    .with_context(|| format!("compiling component {:?}", source.id))?;
            Ok((source.id.clone(), loaded.origin))
        })
        .collect()
}

/// Reads and prepares component `id`'s source, and refuses it in one line if
/// it imports what nothing here provides: before the engine is built, so
/// nothing else is logged.
fn read_source(manifest: &Manifest, id: &str, cache_dir: Option<&Path>) -> Result<Source> {
    let component = manifest
        .component
        .get(id)
        .ok_or_else(|| anyhow!("no [component.{id}] in the manifest"))?;
    let (path, wasm) = if let crate::manifest::Source::Remote { url, digest } = &component.source {
        // `hosting::check` checked the digest.
        let fetched = remote_source::fetch(url, Digest::parse(digest)?, cache_dir)
            .with_context(|| format!("component {id:?}"))?;
        (fetched.path, fetched.wasm)
    } else {
        // `hosting::check` refused every other source but a local file.
        let path = manifest
            .source_path(component)
            .with_context(|| format!("component {id:?}: its source is not a local file"))?;
        let wasm = std::fs::read(&path)
            .with_context(|| format!("component {id:?}: reading {}", path.display()))?;
        (path, wasm)
    };
    // Dependencies and middleware composed in, before anything else reads it.
    let wasm = match compose::for_component(manifest, id, &wasm, cache_dir)? {
        Some(composed) => composed,
        None => wasm,
    };
    let wagi_argv = manifest
        .trigger
        .http
        .iter()
        .filter(|trigger| trigger.component_id() == Some(id))
        .find_map(|trigger| trigger.wagi())
        .map(|wagi| wagi.argv.clone());
    let prepared = match wagi_argv {
        Some(_) => prepare::prepare_wagi(&wasm),
        None => prepare::prepare(&wasm),
    };
    let prepared = prepared
        .map(into_owned)
        .with_context(|| format!("component {id:?}: {} is not a component", path.display()))?;

    // A dependency's imports of what it does not inherit are linked as traps.
    let imports: Vec<String> = prepared
        .imports
        .iter()
        .filter(|import| !compose::is_denied(import))
        .cloned()
        .collect();
    let groups = capabilities::groups_for(&imports).map_err(|unprovided| {
        anyhow!(
            "component {id:?} imports `{}`, which spinbench serve does not provide; `spin up` runs this app",
            unprovided.0
        )
    })?;
    Ok(Source {
        id: id.to_string(),
        path,
        http: manifest.is_http_component(id),
        redis: manifest.is_redis_component(id),

        wagi_argv,
        prepared,
        groups,
    })
}

fn into_owned(prepared: Prepared<'_>) -> Prepared<'static> {
    Prepared {
        wasm: std::borrow::Cow::Owned(prepared.wasm.into_owned()),
        flavour: prepared.flavour,
        imports: prepared.imports,
        adapted: prepared.adapted,
    }
}

/// The linker: every group of interfaces some component imports, and each
/// component's environment answered from its context.
fn linker(engine: &Engine, groups: &BTreeSet<Group>) -> Result<Linker<RequestState>> {
    let mut linker = Linker::new(engine);
    capabilities::link(&mut linker, groups)?;
    if groups.contains(&Group::WasiP2) {
        capabilities::environment::link(&mut linker, capabilities::environment::ENVIRONMENT_P2)?;
    }
    if groups.contains(&Group::WasiP3) {
        capabilities::environment::link(&mut linker, capabilities::environment::ENVIRONMENT_P3)?;
    }
    Ok(linker)
}

fn origin_text(origin: Origin) -> &'static str {
    match origin {
        Origin::Compiled => "compiled",
        Origin::LoadedFromCache => "loaded from cache",
    }
}
