//! Loading an application: the components its triggers name (and only those,
//! as Spin loads only triggered components), each prepared, checked against
//! what the runner provides, compiled or loaded from cache, and linked.

use super::{ComponentLoad, HostOptions};
use crate::host::capabilities::runtime_config::RuntimeConfig;
use crate::host::capabilities::{self, AppServices, ComponentContext, Group};
use crate::host::instance::compiled_cache::{self, Origin};
use crate::host::instance::engine::{self, Allocation};
use crate::host::instance::flavour::Flavour;
use crate::host::instance::prepare::{self, Prepared};
use crate::host::instance::reuse::Handler;
use crate::host::instance::slots::Slots;
use crate::host::instance::state::{Limits, RequestState, StoreRecipe};
use crate::host::logger;
use crate::manifest::Manifest;
use anyhow::{Context, Result, anyhow};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use wasmtime::Engine;
use wasmtime::component::Linker;

/// One component ready to serve requests.
pub struct Loaded {
    pub handler: Handler,
    /// What each of its stores is made from.
    pub recipe: StoreRecipe,
    pub load: ComponentLoad,
}

/// Every triggered component, loaded, and what they share.
pub struct Application {
    pub components: BTreeMap<String, Loaded>,
    /// The pool's slots, when any component is a WASIp3 one (then every
    /// instance takes one, so that idle WASIp3 instances can be asked for theirs).
    pub shared_slots: Option<Arc<Slots>>,
    /// `max_concurrent` clamped below the pool's slots.
    pub max_concurrent: usize,
}

/// A triggered component's source, read and prepared.
struct Source {
    id: String,
    path: PathBuf,
    prepared: Prepared<'static>,
    groups: BTreeSet<Group>,
}

/// Loads the components `ids` names (the triggered ones), logging each on stderr.
pub fn load(manifest: &Manifest, ids: &[&str], options: &HostOptions) -> Result<Application> {
    let sources = ids
        .iter()
        .map(|id| read_source(manifest, id))
        .collect::<Result<Vec<_>>>()?;
    let wasip3 = sources.iter().any(|s| s.prepared.flavour == Flavour::P3);
    let groups: BTreeSet<Group> = sources.iter().flat_map(|s| s.groups.clone()).collect();
    let concurrent = wasip3 || groups.iter().any(|group| group.concurrent());
    let (engine, allocation) = engine::build(options.pool, options.allocation, concurrent)?;
    // The cap stays below the pool's slots, so overload is a 503 from the
    // queue, never a failed instantiation.
    let max_concurrent = options.admission.max_concurrent.clamp(
        1,
        (options.pool.max_instances as usize)
            .saturating_sub(1)
            .max(1),
    );
    if allocation == Allocation::Pooling {
        eprintln!(
            "pooling allocator: up to {} live instances; serving at most {max_concurrent} at once, {} more queued for up to {:?}",
            options.pool.max_instances,
            options.admission.max_queued,
            options.admission.queue_timeout
        );
    }
    let slots = Slots::new(
        options.pool.max_instances as usize,
        options.admission.queue_timeout,
    );
    engine::spawn_epoch_ticker(&engine)?;
    let linker = linker(&engine, &groups)?;
    let runtime_config = RuntimeConfig::load(
        options.runtime_config_file.as_deref(),
        &options.state_dir,
        manifest.base_dir(),
    )?;
    let services = Arc::new(AppServices::new(runtime_config));
    let mut contexts = ComponentContext::for_components(
        manifest,
        sources.iter().map(|s| s.id.as_str()),
        &services,
    )?;
    let cache = options
        .cache_dir
        .as_deref()
        .and_then(compiled_cache::CacheDir::open);
    let mut components = BTreeMap::new();
    for source in sources {
        let recipe = StoreRecipe {
            limits: Limits {
                timeout: options.request_timeout,
                max_memory_size: options.pool.max_memory_size,
                guest: options.guest,
                component: logger::component_label(&source.id),
            },
            context: contexts
                .remove(&source.id)
                .ok_or_else(|| anyhow!("no context for component {:?}", source.id))?,
        };
        let loaded = compile_and_link(
            &engine,
            &linker,
            &source,
            recipe,
            options,
            &slots,
            cache.as_ref(),
        )?;
        components.insert(source.id, loaded);
    }
    Ok(Application {
        components,
        shared_slots: wasip3.then_some(slots),
        max_concurrent,
    })
}

fn compile_and_link(
    engine: &Engine,
    linker: &Linker<RequestState>,
    source: &Source,
    recipe: StoreRecipe,
    options: &HostOptions,
    slots: &Arc<Slots>,
    cache: Option<&compiled_cache::CacheDir>,
) -> Result<Loaded> {
    let Source {
        id, path, prepared, ..
    } = source;
    let loaded = compiled_cache::load(engine, &prepared.wasm, path, cache)
        .with_context(|| format!("loading component {id:?}"))?;
    let pre = linker.instantiate_pre(&loaded.component).map_err(|e| {
        let reason = format!("{:#}", anyhow::Error::from(e)).replace('\n', " ");
        anyhow!("component {id:?} cannot be linked ({reason}); `spin up` runs this app")
    })?;
    let handler = Handler::new(pre, prepared.flavour, &recipe, options.reuse, slots)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("linking component {id:?} ({})", path.display()))?;
    let mut how = vec![prepared.flavour.describe()];
    how.extend(prepared.adapted.iter().copied());
    eprintln!(
        "{id}: {} in {:.1?} ({})",
        origin_text(loaded.origin),
        loaded.elapsed,
        how.join(", ")
    );
    Ok(Loaded {
        handler,
        recipe,
        load: ComponentLoad {
            origin: loaded.origin,
            elapsed: loaded.elapsed,
        },
    })
}

/// Reads and prepares component `id`'s source, and refuses it in one line if
/// it imports what nothing here provides: before the engine is built, so
/// nothing else is logged.
fn read_source(manifest: &Manifest, id: &str) -> Result<Source> {
    let component = manifest
        .component
        .get(id)
        .ok_or_else(|| anyhow!("no [component.{id}] in the manifest"))?;
    // `hosting::check` refused every source but a local file.
    let path = manifest
        .source_path(component)
        .with_context(|| format!("component {id:?}: its source is not a local file"))?;
    let wasm = std::fs::read(&path)
        .with_context(|| format!("component {id:?}: reading {}", path.display()))?;
    let prepared = prepare::prepare(&wasm)
        .map(into_owned)
        .with_context(|| format!("component {id:?}: {} is not a component", path.display()))?;
    let groups = capabilities::groups_for(&prepared.imports).map_err(|unprovided| {
        anyhow!(
            "component {id:?} imports `{}`, which spinbench serve does not provide; `spin up` runs this app",
            unprovided.0
        )
    })?;
    Ok(Source {
        id: id.to_string(),
        path,
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
